// The thorough JPEG encoder: coefficients chosen for rate and distortion together (trellis
// quantisation), written through libjpeg's coefficient API. Private to the JPEG shim.
#ifndef ATTACHE_JPEG_TRELLIS_H
#define ATTACHE_JPEG_TRELLIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

/// Writes `cinfo`'s picture from `pixels` (1 or 3 channels, as `cinfo` was set up: its size,
/// components, sampling factors and quantisation tables), its coefficients chosen by trellis
/// quantisation, twice: as progressive scans and as one baseline scan, the caller keeping the
/// smaller. With `shim_scans` the shim writes the scans (jpeg_scan_writer.c) into `*other`
/// (malloc'd) and libjpeg the baseline scan to `cinfo`'s destination; without, libjpeg writes
/// the scans to `cinfo`'s destination, then the baseline scan to a memory destination at
/// `*other` (jpeg_mem_dest's). The caller frees `*other`. With `sharp_chroma`, 4:2:0 chroma from
/// the sharpened samples of jpeg_chroma.c. Errors leave through `cinfo`'s error manager; what it
/// allocates is in libjpeg's pools.
void att_jpeg_write_trellis(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride, int sharp_chroma,
                            int shim_scans, unsigned char **other, unsigned long *other_size);

#endif
