// Small helpers shared by the shims.
#include "attache_codecs.h"

#include <malloc.h>
#include <stdlib.h>
#include <time.h>

uint64_t att_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void att_free(void *pointer) { free(pointer); }

void att_tune_allocator_for_batch(void) {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

void att_bound_allocator(void) {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 4 << 20);
    mallopt(M_ARENA_MAX, 4);
#endif
}

void att_release_free_memory(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

uint64_t att_deadline_load(const uint64_t *cell) { return __atomic_load_n(cell, __ATOMIC_RELAXED); }

void att_deadline_store(uint64_t *cell, uint64_t value) { __atomic_store_n(cell, value, __ATOMIC_RELAXED); }

int att_deadline_passed(const uint64_t *cell) {
    uint64_t deadline = __atomic_load_n(cell, __ATOMIC_RELAXED);
    return deadline != 0 && att_monotonic_ns() > deadline;
}
