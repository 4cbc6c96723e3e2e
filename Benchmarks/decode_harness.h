// What the decode harnesses (coefficients.c, scans.c) share: a clock, the file read whole, the
// heap kept as Attache keeps it, and the pixels' digest.
#ifndef ATTACHE_DECODE_HARNESS_H
#define ATTACHE_DECODE_HARNESS_H

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

// The file at `path`, whole (malloc'd), or NULL; its length in `*length`. The heap is then kept
// as `attache resize`, `batch` and `serve` keep theirs: freed arrays are reused, not unmapped
// and faulted in again.
static unsigned char *read_whole(const char *path, long *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    *length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *data = *length > 0 ? malloc((size_t)*length) : NULL;
    if (data && fread(data, 1, (size_t)*length, file) != (size_t)*length) {
        free(data);
        data = NULL;
    }
    fclose(file);
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return data;
}

// FNV-1a over `count` bytes, from `digest`.
static uint64_t digest_bytes(uint64_t digest, const unsigned char *bytes, size_t count) {
    for (size_t i = 0; i < count; i++) digest = (digest ^ bytes[i]) * UINT64_C(1099511628211);
    return digest;
}

#endif
