// A compact store for a multi-scan JPEG's coefficients, behind libjpeg's virtual block arrays.
// Private to the JPEG shim.
#ifndef ATTACHE_JPEG_COEFFICIENTS_H
#define ATTACHE_JPEG_COEFFICIENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

typedef struct att_coef_store att_coef_store;

/// Bytes the whole-image coefficient arrays take in libjpeg's own (dense) layout.
uint64_t att_coef_dense_bytes(j_decompress_ptr cinfo);

/// The most the compact store can hold for this file, its working rows included, or 0 when it
/// cannot be used (a single scan, or arithmetic coding).
/// `length` is the whole file's length: every nonzero coefficient a Huffman-coded scan sets
/// costs at least two bits of it.
uint64_t att_coef_compact_bound(j_decompress_ptr cinfo, size_t length);

/// Replaces the memory manager's virtual block arrays with the compact store before
/// `jpeg_start_decompress`; the store never holds more than `bound` bytes (past it the decode
/// fails with a memory error). Returns NULL when out of memory (libjpeg's arrays stay).
att_coef_store *att_coef_store_install(j_decompress_ptr cinfo, uint64_t bound);

/// Bytes the store holds now, and the most it held.
uint64_t att_coef_store_peak(const att_coef_store *store);

/// Frees the store and everything it holds; NULL is allowed.
void att_coef_store_free(att_coef_store *store);

/// Ends the decode with `status` and `message` (jpeg.c: through its error manager's jump).
void att_jpeg_fail(j_common_ptr cinfo, int32_t status, const char *message);

#endif
