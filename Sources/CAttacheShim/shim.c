// The error record and the deadline cells every shim shares (attache_shim.h), and the calling
// thread's name, id and nice value, and the process's allocator bounds.
#define _GNU_SOURCE
#include "attache_shim.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void att_set_error(att_error *error, int32_t status, const char *format, ...) {
    if (error == NULL) return;
    error->status = status;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->message, sizeof error->message, format, arguments);
    va_end(arguments);
}

uint64_t att_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t att_deadline_load(const uint64_t *cell) { return __atomic_load_n(cell, __ATOMIC_RELAXED); }

void att_deadline_store(uint64_t *cell, uint64_t value) { __atomic_store_n(cell, value, __ATOMIC_RELAXED); }

int att_deadline_passed(const uint64_t *cell) {
    if (cell == NULL) return 0;
    uint64_t deadline = __atomic_load_n(cell, __ATOMIC_RELAXED);
    return deadline != 0 && att_monotonic_ns() > deadline;
}

void att_thread_name(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = 0;
    pthread_setname_np(pthread_self(), cut);
}

int32_t att_thread_id(void) { return (int32_t)syscall(SYS_gettid); }

int32_t att_thread_nice(int32_t nice) { return setpriority(PRIO_PROCESS, 0, nice) == 0 ? 0 : errno; }

void att_tune_allocator_for_batch(void) {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

void att_bound_allocator(int arenas, long large, long trim) {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, (int)large);
    mallopt(M_TRIM_THRESHOLD, (int)trim);
    mallopt(M_ARENA_MAX, arenas);
#endif
}

void att_release_free_memory(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
