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

// Luma of a pixel in integers (BT.601 weights in 1/256ths).
static inline int luma256(const uint8_t *p, int channels) {
    return channels < 3 ? p[0] << 8 : 77 * p[0] + 150 * p[1] + 29 * p[2];
}

// A flat segment of the reference's block grid: where its first pixel is (the pixel after the
// edge), whether the edge is vertical (the step is across x) and the reference's own mean step.
typedef struct {
    uint32_t x, y;
    uint8_t vertical;
    float own;
} att_segment;

void att_blocking_free(att_blocking_ref *ref);

struct att_blocking_ref {
    uint32_t width, height;
    int channels;
    size_t count, segments;
    att_segment *flat;
};

// The mean signed step across the segment (luma levels).
static float step_across(const uint8_t *pixels, size_t stride, int channels, const att_segment *segment) {
    int sum = 0;
    for (int k = 0; k < BLOCK; k++) {
        size_t x = segment->vertical ? segment->x : segment->x + k;
        size_t y = segment->vertical ? segment->y + k : segment->y;
        const uint8_t *at = pixels + y * stride + x * channels;
        const uint8_t *before = segment->vertical ? at - channels : at - stride;
        sum += luma256(at, channels) - luma256(before, channels);
    }
    return (float)sum / (256.0f * BLOCK);
}

att_blocking_ref *att_blocking_prepare(const uint8_t *reference, size_t stride, uint32_t width, uint32_t height,
                                       int32_t channels, double flat) {
    att_blocking_ref *ref = calloc(1, sizeof *ref);
    if (!ref) return NULL;
    ref->width = width;
    ref->height = height;
    ref->channels = channels;
    if (width < 2 * BLOCK || height < 2 * BLOCK) return ref;
    int bw = (int)width / BLOCK, bh = (int)height / BLOCK;
    size_t blocks = (size_t)bw * bh;
    // Luma once (1/256 levels), then each block's sums of steps between neighbours inside it,
    // across (h) and down (v): a segment's area (two blocks) is their sums and the steps
    // between the two blocks, so each pixel is read a few times, not once per segment.
    uint16_t *luma = malloc(sizeof(uint16_t) * (size_t)bw * BLOCK * bh * BLOCK);
    int32_t *inner_h = malloc(sizeof(int32_t) * blocks), *inner_v = malloc(sizeof(int32_t) * blocks);
    ref->flat = malloc(sizeof(att_segment) * blocks * 2);
    if (!luma || !inner_h || !inner_v || !ref->flat) {
        free(luma);
        free(inner_h);
        free(inner_v);
        att_blocking_free(ref);
        return NULL;
    }
    size_t lw = (size_t)bw * BLOCK;
    for (int y = 0; y < bh * BLOCK; y++) {
        const uint8_t *row = reference + (size_t)y * stride;
        for (size_t x = 0; x < lw; x++) luma[y * lw + x] = (uint16_t)luma256(row + x * channels, channels);
    }
    for (int by = 0; by < bh; by++) {
        for (int bx = 0; bx < bw; bx++) {
            int32_t h = 0, v = 0;
            const uint16_t *top = luma + (size_t)by * BLOCK * lw + (size_t)bx * BLOCK;
            for (int j = 0; j < BLOCK; j++) {
                const uint16_t *row = top + (size_t)j * lw;
                for (int i = 0; i + 1 < BLOCK; i++) h += abs(row[i + 1] - row[i]);
                if (j + 1 < BLOCK)
                    for (int i = 0; i < BLOCK; i++) v += abs(row[i + lw] - row[i]);
            }
            inner_h[(size_t)by * bw + bx] = h;
            inner_v[(size_t)by * bw + bx] = v;
        }
    }
    // A two-block area's mean step: 8 x 7 + 8 x 7 inside, 8 between them, and 7 x 8 x 2 the
    // other way.
    const float per = 1.0f / (256.0f * (2 * BLOCK * (BLOCK - 1) + BLOCK + 2 * BLOCK * (BLOCK - 1)));
    for (int by = 0; by < bh; by++) {
        for (int bx = 0; bx < bw; bx++) {
            size_t here = (size_t)by * bw + bx;
            const uint16_t *top = luma + (size_t)by * BLOCK * lw + (size_t)bx * BLOCK;
            // The edge to the left (between block bx-1 and bx), then the edge above.
            for (int edge = 0; edge < 2; edge++) {
                if ((edge == 0 && bx == 0) || (edge == 1 && by == 0)) continue;
                ref->segments++;
                size_t other = edge == 0 ? here - 1 : here - (size_t)bw;
                int32_t between = 0;
                for (int k = 0; k < BLOCK; k++) {
                    const uint16_t *at = edge == 0 ? top + (size_t)k * lw : top + k;
                    between += abs(at[0] - (edge == 0 ? at[-1] : at[-(ptrdiff_t)lw]));
                }
                int32_t sum = inner_h[here] + inner_h[other] + inner_v[here] + inner_v[other] + between;
                if ((float)sum * per >= flat) continue;
                att_segment segment = {(uint32_t)(bx * BLOCK), (uint32_t)(by * BLOCK), (uint8_t)(edge == 0), 0};
                segment.own = fabsf(step_across(reference, stride, channels, &segment));
                ref->flat[ref->count++] = segment;
            }
        }
    }
    free(luma);
    free(inner_h);
    free(inner_v);
    return ref;
}

enum { BINS = 512, PER_LEVEL = 32 };

double att_blocking_measure(const att_blocking_ref *ref, const uint8_t *candidate, size_t stride, double percentile) {
    // A percentile of a few segments says nothing: at least 64, and a twentieth of them.
    if (!ref || ref->count < 64 || ref->count * 20 < ref->segments) return 0;
    // The excess steps in 1/32 of a level (16 levels and more in the last bin).
    unsigned histogram[BINS] = {0};
    for (size_t i = 0; i < ref->count; i++) {
        float excess = fabsf(step_across(candidate, stride, ref->channels, &ref->flat[i])) - ref->flat[i].own;
        int bin = excess <= 0 ? 0 : (int)(excess * PER_LEVEL);
        histogram[bin < BINS ? bin : BINS - 1]++;
    }
    size_t wanted = (size_t)(percentile / 100.0 * (double)(ref->count - 1) + 0.5), seen = 0;
    for (int bin = 0; bin < BINS; bin++) {
        seen += histogram[bin];
        if (seen > wanted) return (double)bin / PER_LEVEL;
    }
    return (double)(BINS - 1) / PER_LEVEL;
}

void att_blocking_free(att_blocking_ref *ref) {
    if (!ref) return;
    free(ref->flat);
    free(ref);
}

int32_t att_picture_features(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                             double features[ATT_PICTURE_FEATURES]) {
    for (int i = 0; i < ATT_PICTURE_FEATURES; i++) features[i] = 0;
    if (width < 2 * BLOCK || height < 2 * BLOCK) return ATT_OK;
    double gradient = 0, chroma = 0, detail = 0;
    size_t steps = 0, flats = 0, blocks = 0;
    // A quarter of the blocks (every other one across and down) stands for the picture: what is
    // measured is each block's own luma and chroma steps, its fine detail (what is left after
    // its 2 x 2 means) and whether it is flat (a luma spread under 1.5 levels).
    for (uint32_t by = 0; by + BLOCK <= height; by += 2 * BLOCK) {
        for (uint32_t bx = 0; bx + BLOCK <= width; bx += 2 * BLOCK) {
            int values[BLOCK * BLOCK], mean = 0;
            for (int j = 0; j < BLOCK; j++) {
                const uint8_t *row = pixels + (size_t)(by + j) * stride + (size_t)bx * channels;
                for (int i = 0; i < BLOCK; i++) {
                    values[j * BLOCK + i] = luma256(row + (size_t)i * channels, channels);
                    mean += values[j * BLOCK + i];
                    if (channels >= 3 && i + 1 < BLOCK) {
                        const uint8_t *p = row + (size_t)i * channels, *r = p + channels;
                        int cb = -43 * p[0] - 85 * p[1] + 128 * p[2], cr = 128 * p[0] - 107 * p[1] - 21 * p[2];
                        int cbr = -43 * r[0] - 85 * r[1] + 128 * r[2], crr = 128 * r[0] - 107 * r[1] - 21 * r[2];
                        chroma += abs(cbr - cb) + abs(crr - cr);
                    }
                }
            }
            mean /= BLOCK * BLOCK;
            int spread = 0, fine = 0;
            for (int j = 0; j < BLOCK; j++)
                for (int i = 0; i < BLOCK; i++) {
                    int v = values[j * BLOCK + i];
                    spread += abs(v - mean);
                    if (i + 1 < BLOCK) gradient += abs(values[j * BLOCK + i + 1] - v);
                    if (j + 1 < BLOCK) gradient += abs(values[(j + 1) * BLOCK + i] - v);
                }
            for (int j = 0; j < BLOCK; j += 2)
                for (int i = 0; i < BLOCK; i += 2) {
                    int a = values[j * BLOCK + i], b = values[j * BLOCK + i + 1];
                    int c = values[(j + 1) * BLOCK + i], d = values[(j + 1) * BLOCK + i + 1];
                    int quad = (a + b + c + d) / 4;
                    fine += abs(a - quad) + abs(b - quad) + abs(c - quad) + abs(d - quad);
                }
            steps += 2 * BLOCK * (BLOCK - 1);
            detail += fine / (256.0 * BLOCK * BLOCK);
            if (spread < 1.5 * 256 * BLOCK * BLOCK) flats++;
            blocks++;
        }
    }
    features[0] = steps ? gradient / (256.0 * steps) : 0;
    features[1] = blocks ? detail / blocks : 0;
    features[2] = blocks ? (double)flats / blocks : 0;
    features[3] = blocks ? chroma / (256.0 * blocks * BLOCK * (BLOCK - 1) * 2) : 0;
    return ATT_OK;
}
