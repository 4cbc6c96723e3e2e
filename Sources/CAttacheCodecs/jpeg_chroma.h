// 4:2:0 JPEG with sharpened chroma (jpeg_chroma.c), written as raw data. Private to the JPEG
// shim.
#ifndef ATTACHE_JPEG_CHROMA_H
#define ATTACHE_JPEG_CHROMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

/// Writes `cinfo`'s picture from 3-channel RGB `pixels` (`cinfo` set up for it: its size, 4:2:0
/// sampling, quantisation tables; started with `raw_data_in`), luma converted as libjpeg
/// converts it and each chroma sample sharpened for the decoder's fancy upsampling: every row;
/// the caller finishes the compression. Errors leave through `cinfo`'s error manager; what it
/// allocates is in libjpeg's image pool.
void att_jpeg_write_sharp(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride);

/// The sharpened Cb and Cr samples of `cinfo`'s picture (3-channel RGB `pixels`, 4:2:0): two
/// planes of ⌈width/2⌉ × ⌈height/2⌉ floats (0-255) one after the other, in libjpeg's image
/// pool (the thorough encoder reads its chroma blocks from them).
float *att_jpeg_sharp_chroma(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride);

#endif
