// Blocking in flat areas: what a pooled perceptual score averages away. A coarse quantiser
// turns a smooth sky, a gradient or a bokeh into 8 x 8 tiles of one tone each, and the step
// from one tile to the next is seen at once, however well the rest of the picture scores.
//
// Measured on luma (BT.601 weights, as the encoder's Y), along every 8-pixel segment of the
// encoder's block grid (the vertical edges x = 8k and the horizontal edges y = 8k): where the
// reference is flat across the two blocks the edge joins (its mean step between neighbours
// in them is under `flat`), the candidate's step across the edge, averaged over the segment's
// eight pixels (so noise cancels and a straight line of a tone change remains), less the
// reference's own step there. The result is a high percentile of those excess steps over every
// flat segment: how large the steps are that the flat parts of the picture show (0 when fewer
// than 64 segments, or a twentieth of them, are flat: too few to say).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attache_codecs.h"

enum { BLOCK = 8 };

static float luma_at(const uint8_t *p, int channels) {
    if (channels < 3) return p[0];
    return 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
}

// One plane of luma.
static float *luma_plane(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int channels) {
    float *plane = malloc(sizeof(float) * (size_t)width * height);
    if (!plane) return NULL;
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *row = pixels + (size_t)y * stride;
        for (uint32_t x = 0; x < width; x++)
            plane[(size_t)y * width + x] = luma_at(row + (size_t)x * channels, channels);
    }
    return plane;
}

// The mean absolute step between horizontal and vertical neighbours in the w x h area at (x, y).
static float activity(const float *plane, uint32_t width, int x, int y, int w, int h) {
    float sum = 0;
    int count = 0;
    for (int j = y; j < y + h; j++) {
        const float *row = plane + (size_t)j * width;
        for (int i = x; i < x + w; i++) {
            if (i + 1 < x + w) {
                sum += fabsf(row[i + 1] - row[i]);
                count++;
            }
            if (j + 1 < y + h) {
                sum += fabsf(row[i + width] - row[i]);
                count++;
            }
        }
    }
    return count ? sum / count : 0;
}

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int32_t att_blocking(const uint8_t *reference, size_t reference_stride, const uint8_t *candidate,
                     size_t candidate_stride, uint32_t width, uint32_t height, int32_t channels, double flat,
                     double percentile, double *result, double *flat_share, att_error *error) {
    *result = 0;
    *flat_share = 0;
    if (width < 2 * BLOCK || height < 2 * BLOCK) return ATT_OK;
    float *a = luma_plane(reference, width, height, reference_stride, channels);
    float *b = luma_plane(candidate, width, height, candidate_stride, channels);
    size_t most = (size_t)(width / BLOCK + 1) * (height / BLOCK + 1) * 2;
    float *excess = malloc(sizeof(float) * most);
    if (!a || !b || !excess) {
        free(a);
        free(b);
        free(excess);
        att_set_error(error, ATT_ERR_MEMORY_LIMIT, "no memory to measure blocking");
        return ATT_ERR_MEMORY_LIMIT;
    }
    size_t flats = 0, segments = 0;
    int bw = (int)width / BLOCK, bh = (int)height / BLOCK;
    for (int by = 0; by < bh; by++) {
        for (int bx = 0; bx < bw; bx++) {
            int x0 = bx * BLOCK, y0 = by * BLOCK;
            // The edge to the left (between block bx-1 and bx), then the edge above.
            for (int edge = 0; edge < 2; edge++) {
                if ((edge == 0 && bx == 0) || (edge == 1 && by == 0)) continue;
                segments++;
                int ax = edge == 0 ? x0 - BLOCK : x0, ay = edge == 0 ? y0 : y0 - BLOCK;
                int aw = edge == 0 ? 2 * BLOCK : BLOCK, ah = edge == 0 ? BLOCK : 2 * BLOCK;
                if (activity(a, width, ax, ay, aw, ah) >= flat) continue;
                float own = 0, made = 0;
                for (int k = 0; k < BLOCK; k++) {
                    size_t at = edge == 0 ? (size_t)(y0 + k) * width + x0 : (size_t)y0 * width + x0 + k;
                    size_t before = edge == 0 ? at - 1 : at - width;
                    own += a[at] - a[before];
                    made += b[at] - b[before];
                }
                float step = fabsf(made / BLOCK) - fabsf(own / BLOCK);
                excess[flats++] = step > 0 ? step : 0;
            }
        }
    }
    // A percentile of a few segments says nothing: at least 64, and a twentieth of them.
    if (flats >= 64 && flats * 20 >= segments) {
        qsort(excess, flats, sizeof(float), compare_floats);
        size_t at = (size_t)(percentile / 100.0 * (double)(flats - 1) + 0.5);
        *result = excess[at < flats ? at : flats - 1];
        *flat_share = segments ? (double)flats / (double)segments : 0;
    }
    free(a);
    free(b);
    free(excess);
    return ATT_OK;
}

int32_t att_picture_features(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                             double features[ATT_PICTURE_FEATURES]) {
    for (int i = 0; i < ATT_PICTURE_FEATURES; i++) features[i] = 0;
    if (width < 2 * BLOCK || height < 2 * BLOCK) return ATT_OK;
    double gradient = 0, chroma = 0, detail = 0;
    size_t steps = 0, flats = 0, blocks = 0;
    // Luma and chroma steps between neighbours, every other row (enough for a mean).
    for (uint32_t y = 0; y + 1 < height; y += 2) {
        const uint8_t *row = pixels + (size_t)y * stride, *below = row + stride;
        for (uint32_t x = 0; x + 1 < width; x++) {
            const uint8_t *p = row + (size_t)x * channels, *r = p + channels, *d = below + (size_t)x * channels;
            float l = luma_at(p, channels), lr = luma_at(r, channels), ld = luma_at(d, channels);
            gradient += fabsf(lr - l) + fabsf(ld - l);
            if (channels >= 3) {
                float cb = -0.1687f * p[0] - 0.3313f * p[1] + 0.5f * p[2];
                float cr = 0.5f * p[0] - 0.4187f * p[1] - 0.0813f * p[2];
                float cbr = -0.1687f * r[0] - 0.3313f * r[1] + 0.5f * r[2];
                float crr = 0.5f * r[0] - 0.4187f * r[1] - 0.0813f * r[2];
                chroma += fabsf(cbr - cb) + fabsf(crr - cr);
            }
            steps++;
        }
    }
    // Per 8 x 8 block: its luma's spread, and what is left after its 2 x 2 means (fine detail).
    for (uint32_t by = 0; by + BLOCK <= height; by += BLOCK) {
        for (uint32_t bx = 0; bx + BLOCK <= width; bx += BLOCK) {
            float values[BLOCK * BLOCK], mean = 0;
            for (int j = 0; j < BLOCK; j++)
                for (int i = 0; i < BLOCK; i++) {
                    values[j * BLOCK + i] =
                        luma_at(pixels + (size_t)(by + j) * stride + (size_t)(bx + i) * channels, channels);
                    mean += values[j * BLOCK + i];
                }
            mean /= BLOCK * BLOCK;
            float spread = 0, fine = 0;
            for (int j = 0; j < BLOCK; j += 2)
                for (int i = 0; i < BLOCK; i += 2) {
                    float a = values[j * BLOCK + i], b = values[j * BLOCK + i + 1];
                    float c = values[(j + 1) * BLOCK + i], d = values[(j + 1) * BLOCK + i + 1];
                    float quad = 0.25f * (a + b + c + d);
                    fine += fabsf(a - quad) + fabsf(b - quad) + fabsf(c - quad) + fabsf(d - quad);
                    spread += fabsf(a - mean) + fabsf(b - mean) + fabsf(c - mean) + fabsf(d - mean);
                }
            detail += fine / (BLOCK * BLOCK);
            if (spread / (BLOCK * BLOCK) < 1.5f) flats++;
            blocks++;
        }
    }
    features[0] = steps ? gradient / (2.0 * steps) : 0;
    features[1] = blocks ? detail / blocks : 0;
    features[2] = blocks ? (double)flats / blocks : 0;
    features[3] = steps ? chroma / (2.0 * steps) : 0;
    return ATT_OK;
}
