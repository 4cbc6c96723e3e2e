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
