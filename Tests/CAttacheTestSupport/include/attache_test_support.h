// What the tests read from glibc that Swift's Glibc module does not offer.
#ifndef ATTACHE_TEST_SUPPORT_H
#define ATTACHE_TEST_SUPPORT_H

#include <stdint.h>

/// Bytes the C heap has handed out and not taken back (glibc mallinfo2: arena + mmapped).
uint64_t att_test_heap_in_use(void);

#endif
