// Private to the score (quality.c, quality_planes.c): an image at one scale and the planes'
// functions the score calls.
#ifndef ATTACHE_QUALITY_PRIVATE_H
#define ATTACHE_QUALITY_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "attache_codecs.h"

// The scales of SSIMULACRA2's pyramid.
enum { SCALES = 6 };

// One image at one scale: its 8-bit pixels (scale 0) or three planes of linear RGB (the
// smaller scales).
typedef struct {
    const uint8_t *pixels;
    size_t stride;
    int channels;
    float *linear[3];
} source;

/// Fills the table of 8-bit sRGB to linear (once, whichever thread scores first).
void att_quality_tables(void);
/// Row `y` of `image` (`width` pixels) as XYB into `xyb`, for the channels `want` names (Y
/// always); `buffer` holds three rows of linear RGB where the image is not already planes.
void att_quality_row_xyb(const source *image, int y, int width, float *buffer[3], float *xyb[3], const int want[3]);
/// 2 x 2 means of `in` (`width` x `height`) as three planes of linear RGB into `out` (a block at
/// an edge averages the pixels it has, counting a missing row or column as its neighbour);
/// `buffer` holds two rows of linear RGB.
void att_quality_halve(const source *in, int width, int height, float *out[3], float *buffer[3]);

#endif
