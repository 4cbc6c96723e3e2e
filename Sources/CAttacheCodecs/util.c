// Small helpers shared by the shims.
#include "attache_codecs.h"

#include <malloc.h>
#include <stdlib.h>

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
