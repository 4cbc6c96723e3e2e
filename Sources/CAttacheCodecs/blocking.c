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

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// Sixteen RGB pixels' 48 bytes sorted into red, green and blue by byte shuffles.
__attribute__((target("avx2"))) static inline void split_rgb(const uint8_t *row, __m128i *r, __m128i *g, __m128i *b) {
#define LANES(...) _mm_setr_epi8(__VA_ARGS__)
    const __m128i red[3] = {LANES(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                            LANES(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1),
                            LANES(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13)};
    const __m128i green[3] = {LANES(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                              LANES(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1),
                              LANES(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14)};
    const __m128i blue[3] = {LANES(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                             LANES(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1),
                             LANES(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15)};
#undef LANES
    __m128i part[3];
    for (int k = 0; k < 3; k++) part[k] = _mm_loadu_si128((const __m128i *)(const void *)(row + 16 * k));
    *r = *g = *b = _mm_setzero_si128();
    for (int k = 0; k < 3; k++) {
        *r = _mm_or_si128(*r, _mm_shuffle_epi8(part[k], red[k]));
        *g = _mm_or_si128(*g, _mm_shuffle_epi8(part[k], green[k]));
        *b = _mm_or_si128(*b, _mm_shuffle_epi8(part[k], blue[k]));
    }
}

// `wr`·red + `wg`·green + `wb`·blue of sixteen pixels in 16-bit lanes (each partial sum within
// ±32640 for the weights used here: the same integers as one at a time).
__attribute__((target("avx2"))) static inline __m256i weigh(__m128i r, __m128i g, __m128i b, short wr, short wg,
                                                            short wb) {
    return _mm256_add_epi16(_mm256_add_epi16(_mm256_mullo_epi16(_mm256_cvtepu8_epi16(r), _mm256_set1_epi16(wr)),
                                             _mm256_mullo_epi16(_mm256_cvtepu8_epi16(g), _mm256_set1_epi16(wg))),
                            _mm256_mullo_epi16(_mm256_cvtepu8_epi16(b), _mm256_set1_epi16(wb)));
}

// Sixteen RGB pixels a step, widened and weighed in 16-bit lanes (the sums are at most
// 256 x 255): the same integers.
__attribute__((target("avx2"))) static size_t luma_rgb_avx2(const uint8_t *row, uint16_t *out, size_t count) {
    size_t x = 0;
    for (; x + 16 <= count; x += 16) {
        __m128i r, g, b;
        split_rgb(row + 3 * x, &r, &g, &b);
        _mm256_storeu_si256((__m256i *)(void *)(out + x), weigh(r, g, b, 77, 150, 29));
    }
    return x;
}

// The chroma (Cb and Cr, unscaled) of sixteen RGB pixels a step.
__attribute__((target("avx2"))) static size_t chroma_rgb_avx2(const uint8_t *row, int16_t *cb, int16_t *cr,
                                                              size_t count) {
    size_t x = 0;
    for (; x + 16 <= count; x += 16) {
        __m128i r, g, b;
        split_rgb(row + 3 * x, &r, &g, &b);
        _mm256_storeu_si256((__m256i *)(void *)(cb + x), weigh(r, g, b, -43, -85, 128));
        _mm256_storeu_si256((__m256i *)(void *)(cr + x), weigh(r, g, b, 128, -107, -21));
    }
    return x;
}
#endif

// A row of luma (1/256 levels) from `count` pixels.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
luma_row(const uint8_t *restrict row, uint16_t *restrict out, size_t count, int channels) {
#if defined(__x86_64__)
    if (channels == 3 && __builtin_cpu_supports("avx2")) {
        size_t done = luma_rgb_avx2(row, out, count);
        row += 3 * done;
        out += done;
        count -= done;
    }
#endif
    if (channels >= 3) {
        for (size_t x = 0; x < count; x++) out[x] = (uint16_t)luma256(row + x * channels, 3);
    } else {
        for (size_t x = 0; x < count; x++) out[x] = (uint16_t)luma256(row + x * channels, 1);
    }
}

// A row's chroma steps: for each pixel but the last, the sizes of the steps in Cb and in Cr
// (BT.601 weights in 1/256ths, unscaled) to the pixel on its right. `cb` and `cr` hold `count`
// values each.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
chroma_steps(const uint8_t *restrict row, size_t count, int channels, int16_t *restrict cb, int16_t *restrict cr,
             int32_t *restrict steps) {
    size_t x = 0;
#if defined(__x86_64__)
    if (channels == 3 && __builtin_cpu_supports("avx2")) x = chroma_rgb_avx2(row, cb, cr, count);
#endif
    for (; x < count; x++) {
        const uint8_t *p = row + x * (size_t)channels;
        cb[x] = (int16_t)(-43 * p[0] - 85 * p[1] + 128 * p[2]);
        cr[x] = (int16_t)(128 * p[0] - 107 * p[1] - 21 * p[2]);
    }
    for (x = 0; x + 1 < count; x++) steps[x] = abs(cb[x + 1] - cb[x]) + abs(cr[x + 1] - cr[x]);
}

int32_t att_blocking_rows_agree(const uint8_t *rgb, size_t count) {
    uint16_t *fast = malloc(sizeof(uint16_t) * (count ? count : 1));
    int16_t *chroma = malloc(sizeof(int16_t) * 2 * (count ? count : 1));
    int32_t *steps = malloc(sizeof(int32_t) * (count ? count : 1));
    if (!fast || !chroma || !steps) {
        free(fast);
        free(chroma);
        free(steps);
        return -1;
    }
    luma_row(rgb, fast, count, 3);
    chroma_steps(rgb, count, 3, chroma, chroma + count, steps);
    int32_t same = 1;
    for (size_t x = 0; x < count; x++) same &= fast[x] == luma256(rgb + 3 * x, 3);
    for (size_t x = 0; x + 1 < count; x++) {
        const uint8_t *p = rgb + 3 * x, *q = p + 3;
        int cb = (-43 * q[0] - 85 * q[1] + 128 * q[2]) - (-43 * p[0] - 85 * p[1] + 128 * p[2]);
        int cr = (128 * q[0] - 107 * q[1] - 21 * q[2]) - (128 * p[0] - 107 * p[1] - 21 * p[2]);
        same &= steps[x] == abs(cb) + abs(cr);
    }
    free(fast);
    free(chroma);
    free(steps);
    return same;
}

// Each block's sum of the steps between neighbours inside it, across and down, for one row of
// `blocks` blocks (`width` luma values a row): the steps of each column summed down the block's
// rows first (in `across` and `down`, `width` each), so the inner loops run along whole rows.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
inner_steps(const uint16_t *restrict top, size_t width, int blocks, int32_t *restrict across, int32_t *restrict down,
            int32_t *restrict inner) {
    memset(across, 0, sizeof(int32_t) * width);
    memset(down, 0, sizeof(int32_t) * width);
    for (int j = 0; j < BLOCK; j++) {
        const uint16_t *row = top + (size_t)j * width;
        // The step to the right of x (none across a block's right edge).
        for (size_t x = 0; x + 1 < width; x++) across[x] += (x % BLOCK != BLOCK - 1) * abs(row[x + 1] - row[x]);
        if (j + 1 < BLOCK)
            for (size_t x = 0; x < width; x++) down[x] += abs(row[x + width] - row[x]);
    }
    for (int b = 0; b < blocks; b++) {
        int32_t sum = 0;
        for (int i = 0; i < BLOCK; i++) sum += across[b * BLOCK + i] + down[b * BLOCK + i];
        inner[b] = sum;
    }
}

// What att_blocking_prepare's picture statistics sum over the blocks they read.
typedef struct {
    double gradient, chroma, detail;
    size_t steps, flats, blocks;
} feature_sums;

// One block's part of the picture statistics: its luma steps between neighbours (`inner`, from
// inner_steps), its fine detail (what is left after its 2 x 2 means), whether it is flat (a luma
// spread under 1.5 levels) and its chroma steps (its rows' from chroma_steps, `steps` its first
// row's first, rows `width` apart; NULL for grey); `top` is its first row of luma (`width`
// values a row).
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
block_features(const uint16_t *top, size_t width, int32_t inner, const int32_t *steps, feature_sums *sums) {
    int values[BLOCK * BLOCK], mean = 0;
    for (int j = 0; j < BLOCK; j++)
        for (int i = 0; i < BLOCK; i++) {
            values[j * BLOCK + i] = top[(size_t)j * width + i];
            mean += values[j * BLOCK + i];
        }
    if (steps) {
        int chroma = 0;
        for (int j = 0; j < BLOCK; j++)
            for (int i = 0; i + 1 < BLOCK; i++) chroma += steps[(size_t)j * width + i];
        sums->chroma += chroma;
    }
    mean /= BLOCK * BLOCK;
    int spread = 0, fine = 0;
    for (int i = 0; i < BLOCK * BLOCK; i++) spread += abs(values[i] - mean);
    sums->gradient += inner;
    for (int j = 0; j < BLOCK; j += 2)
        for (int i = 0; i < BLOCK; i += 2) {
            int a = values[j * BLOCK + i], b = values[j * BLOCK + i + 1];
            int c = values[(j + 1) * BLOCK + i], d = values[(j + 1) * BLOCK + i + 1];
            int quad = (a + b + c + d) / 4;
            fine += abs(a - quad) + abs(b - quad) + abs(c - quad) + abs(d - quad);
        }
    sums->steps += 2 * BLOCK * (BLOCK - 1);
    sums->detail += fine / (256.0 * BLOCK * BLOCK);
    if (spread < 1.5 * 256 * BLOCK * BLOCK) sums->flats++;
    sums->blocks++;
}

// The flat segments of row `by` of blocks (its `bw` blocks' luma from `top`, `lw` values a
// row, the row above before it; the blocks' inner sums of steps in `inner`, the row above's in
// `above`) into `ref`: an edge whose two blocks' mean step (`per` a unit of their sum) is under
// `flat`.
static void flat_segments(att_blocking_ref *ref, const uint16_t *top_row, size_t lw, int bw, int by,
                          const int32_t *inner, const int32_t *above, float per, double flat) {
    for (int bx = 0; bx < bw; bx++) {
        const uint16_t *top = top_row + (size_t)bx * BLOCK;
        // The edge to the left (between block bx-1 and bx), then the edge above.
        for (int edge = 0; edge < 2; edge++) {
            if ((edge == 0 && bx == 0) || (edge == 1 && by == 0)) continue;
            ref->segments++;
            // The steps across the edge: their sizes for the area's flatness, their signed
            // mean for the reference's own step.
            int32_t between = 0, across = 0;
            for (int k = 0; k < BLOCK; k++) {
                const uint16_t *at = edge == 0 ? top + (size_t)k * lw : top + k;
                int step = at[0] - (edge == 0 ? at[-1] : at[-(ptrdiff_t)lw]);
                between += abs(step);
                across += step;
            }
            int32_t sum = inner[bx] + (edge == 0 ? inner[bx - 1] : above[bx]) + between;
            if ((float)sum * per >= flat) continue;
            att_segment segment = {(uint32_t)(bx * BLOCK), (uint32_t)(by * BLOCK), (uint8_t)(edge == 0), 0};
            segment.own = fabsf((float)across / (256.0f * BLOCK));
            ref->flat[ref->count++] = segment;
        }
    }
}

att_blocking_ref *att_blocking_prepare(const uint8_t *reference, size_t stride, uint32_t width, uint32_t height,
                                       int32_t channels, double flat, double features[ATT_PICTURE_FEATURES]) {
    for (int i = 0; i < ATT_PICTURE_FEATURES; i++) features[i] = 0;
    att_blocking_ref *ref = calloc(1, sizeof *ref);
    if (!ref) return NULL;
    ref->width = width;
    ref->height = height;
    ref->channels = channels;
    if (width < 2 * BLOCK || height < 2 * BLOCK) return ref;
    int bw = (int)width / BLOCK, bh = (int)height / BLOCK;
    size_t lw = (size_t)bw * BLOCK;
    // One row of blocks at a time: its luma (1/256 levels) with the row above it, then each
    // block's sum of steps between neighbours inside it, kept for this row of blocks and the one
    // above: a segment's area (two blocks) is their sums and the steps between the two blocks, so
    // each pixel is read a few times, not once per segment.
    uint16_t *rows = malloc(sizeof(uint16_t) * (BLOCK + 1) * lw);
    int32_t *sums = malloc(sizeof(int32_t) * 2 * (size_t)bw), *columns = malloc(sizeof(int32_t) * 2 * lw);
    // A row of blocks' chroma steps (colour only), from a row's Cb and Cr.
    const int colour = channels >= 3;
    int32_t *steps = colour ? malloc(sizeof(int32_t) * BLOCK * lw) : NULL;
    int16_t *chroma = colour ? malloc(sizeof(int16_t) * 2 * lw) : NULL;
    ref->flat = malloc(sizeof(att_segment) * (size_t)bw * bh * 2);
    if (!rows || !sums || !columns || !ref->flat || (colour && (!steps || !chroma))) {
        free(rows);
        free(sums);
        free(columns);
        free(steps);
        free(chroma);
        att_blocking_free(ref);
        return NULL;
    }
    // A two-block area's mean step: 8 x 7 + 8 x 7 inside, 8 between them, and 7 x 8 x 2 the
    // other way.
    const float per = 1.0f / (256.0f * (2 * BLOCK * (BLOCK - 1) + BLOCK + 2 * BLOCK * (BLOCK - 1)));
    feature_sums stats = {0};
    for (int by = 0; by < bh; by++) {
        // This row's sums and the row above's swap places.
        int32_t *inner = sums + (size_t)(by % 2) * bw, *above = sums + (size_t)((by + 1) % 2) * bw;
        if (by > 0) memcpy(rows, rows + BLOCK * lw, sizeof(uint16_t) * lw);
        for (int j = 0; j < BLOCK; j++)
            luma_row(reference + (size_t)(by * BLOCK + j) * stride, rows + (size_t)(j + 1) * lw, lw, channels);
        inner_steps(rows + lw, lw, bw, columns, columns + lw, inner);
        // The statistics read a quarter of the blocks (every other one across and down).
        if (by % 2 == 0) {
            for (int j = 0; colour && j < BLOCK; j++)
                chroma_steps(reference + (size_t)(by * BLOCK + j) * stride, lw, channels, chroma, chroma + lw,
                             steps + (size_t)j * lw);
            for (int bx = 0; bx < bw; bx += 2)
                block_features(rows + lw + (size_t)bx * BLOCK, lw, inner[bx],
                               colour ? steps + (size_t)bx * BLOCK : NULL, &stats);
        }
        flat_segments(ref, rows + lw, lw, bw, by, inner, above, per, flat);
    }
    free(rows);
    free(sums);
    free(columns);
    free(steps);
    free(chroma);
    features[0] = stats.steps ? stats.gradient / (256.0 * stats.steps) : 0;
    features[1] = stats.blocks ? stats.detail / stats.blocks : 0;
    features[2] = stats.blocks ? (double)stats.flats / stats.blocks : 0;
    features[3] = stats.blocks ? stats.chroma / (256.0 * stats.blocks * BLOCK * (BLOCK - 1) * 2) : 0;
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
