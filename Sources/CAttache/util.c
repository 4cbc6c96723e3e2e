// Small helpers shared by the shims.
#include "attache_shim.h"

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

uint64_t att_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}
