#include "attache_test_support.h"

#include <malloc.h>

uint64_t att_test_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}
