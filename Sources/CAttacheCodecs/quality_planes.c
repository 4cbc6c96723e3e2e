// The score's planes (quality.c): 8-bit sRGB to linear RGB and to SSIMULACRA2's XYB, and the
// 2 x 2 halving that makes each scale of the pyramid from the one above.
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "quality_private.h"

static float srgb_linear[256];

static void fill_tables(void) {
    for (int i = 0; i < 256; i++) {
        double v = i / 255.0;
        srgb_linear[i] = (float)(v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4));
    }
}

// The table is filled once, whichever thread scores first.
void att_quality_tables(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_tables);
}

// Cube root of x > 0 (x is at least the opsin bias here): a bit-level first guess (within 4%)
// and one Halley step (within 3e-5 relative; one division, where two Newton steps take two),
// free of branches so that it vectorises.
static inline float cube_root(float x) {
    union {
        float f;
        uint32_t i;
    } u = {x};
    u.i = u.i / 3 + 709921077u;
    float y = u.f, y3 = y * y * y;
    return y * (y3 + 2.0f * x) / (2.0f * y3 + x);
}

// Row `y` of `image` as linear RGB: `out` points at it (in the image's planes, or in `buffer`,
// filled from its grey or RGBA pixels; RGB pixels go straight to XYB and to the halving,
// rgb8_to_xyb and halve_rgb, and never here).
static void linear_row(const source *image, int y, int width, float *buffer[3], const float *out[3]) {
    if (image->pixels == NULL) {
        for (int c = 0; c < 3; c++) out[c] = image->linear[c] + (size_t)y * width;
        return;
    }
    for (int c = 0; c < 3; c++) out[c] = buffer[c];
    float *dst[3] = {buffer[0], buffer[1], buffer[2]};
    const uint8_t *src = image->pixels + (size_t)y * image->stride;
    switch (image->channels) {
    case 1:
        for (int x = 0; x < width; x++) dst[0][x] = dst[1][x] = dst[2][x] = srgb_linear[src[x]];
        break;
    default:
        // Over mid grey, as SSIMULACRA2 compares pictures with transparency.
        for (int x = 0; x < width; x++) {
            float alpha = src[4 * x + 3] / 255.0f;
            for (int c = 0; c < 3; c++) dst[c][x] = alpha * srgb_linear[src[4 * x + c]] + (1 - alpha) * 0.5f;
        }
    }
}

// SSIMULACRA2's positive XYB of one pixel of linear RGB, from its three mixed channels: the
// opsin bias, the two (or three) mixes and their cube roots, one definition for both loops.
static const float opsin_bias = 0.0037930732552754493f;

static inline float mix0(float r, float g, float b) {
    return fmaxf(0.30f * r + 0.622f * g + 0.078f * b + opsin_bias, opsin_bias);
}
static inline float mix1(float r, float g, float b) {
    return fmaxf(0.23f * r + 0.692f * g + 0.078f * b + opsin_bias, opsin_bias);
}
static inline float mix2(float r, float g, float b) {
    return fmaxf(0.24342268924547819f * r + 0.20476744424496821f * g + 0.55180986651f * b + opsin_bias, opsin_bias);
}

// The XYB of pixel `i` into `xyb` for the channels `want` names (Y always): its Y alone, X and
// Y, or all three (`root` the bias's cube root).
static inline void xyb_pixel(float r, float g, float b, float *restrict xyb[3], int i, int which, float root) {
    if (which == 0) {
        xyb[1][i] = 0.5f * (cube_root(mix0(r, g, b)) + cube_root(mix1(r, g, b))) - root + 0.01f;
        return;
    }
    float m0 = cube_root(mix0(r, g, b)), m1 = cube_root(mix1(r, g, b));
    xyb[0][i] = 7.0f * (m0 - m1) + 0.42f;
    if (which == 1) {
        xyb[1][i] = 0.5f * (m0 + m1) - root + 0.01f;
        return;
    }
    float m2 = cube_root(mix2(r, g, b));
    float y = 0.5f * (m0 + m1) - root;
    xyb[1][i] = y + 0.01f;
    xyb[2][i] = (m2 - root - y) + 0.55f;
}

// Which of xyb_pixel's three forms `want` asks for.
static int xyb_form(const int want[3]) { return !want[0] && !want[2] ? 0 : !want[2] ? 1 : 2; }

// Linear RGB to SSIMULACRA2's positive XYB for the channels `want` names (Y always).
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
to_xyb(const float *const linear[3], float *xyb[3], int count, const int want[3]) {
    const float root = cube_root(opsin_bias);
    const float *restrict r = linear[0], *restrict g = linear[1], *restrict b = linear[2];
    float *restrict out[3] = {xyb[0], xyb[1], xyb[2]};
    switch (xyb_form(want)) {
    case 0:
        for (int i = 0; i < count; i++) xyb_pixel(r[i], g[i], b[i], out, i, 0, root);
        break;
    case 1:
        for (int i = 0; i < count; i++) xyb_pixel(r[i], g[i], b[i], out, i, 1, root);
        break;
    default:
        for (int i = 0; i < count; i++) xyb_pixel(r[i], g[i], b[i], out, i, 2, root);
    }
}

// 8-bit RGB straight to XYB: to_xyb of rgb_linear's planes without writing them.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
rgb8_to_xyb(const uint8_t *restrict src, float *xyb[3], int count, const int want[3]) {
    const float root = cube_root(opsin_bias);
    float *restrict out[3] = {xyb[0], xyb[1], xyb[2]};
#define PIXEL(form)                                                                                                    \
    for (int i = 0; i < count; i++)                                                                                    \
        xyb_pixel(srgb_linear[src[3 * i]], srgb_linear[src[3 * i + 1]], srgb_linear[src[3 * i + 2]], out, i, form,     \
                  root);
    switch (xyb_form(want)) {
    case 0: PIXEL(0) break;
    case 1: PIXEL(1) break;
    default: PIXEL(2)
    }
#undef PIXEL
}

void att_quality_row_xyb(const source *image, int y, int width, float *buffer[3], float *xyb[3], const int want[3]) {
    if (image->pixels != NULL && image->channels == 3) {
        rgb8_to_xyb(image->pixels + (size_t)y * image->stride, xyb, width, want);
        return;
    }
    const float *linear[3];
    linear_row(image, y, width, buffer, linear);
    to_xyb(linear, xyb, width, want);
}

// halve's means of 8-bit RGB read from the pixels: its sums in its order, no linear rows between.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
halve_rgb(const uint8_t *pixels, size_t stride, int width, int height, float *out[3]) {
    int w = (width + 1) / 2, h = (height + 1) / 2;
    for (int y = 0; y < h; y++) {
        const uint8_t *top = pixels + (size_t)(2 * y) * stride;
        const uint8_t *bottom = 2 * y + 1 < height ? top + stride : top;
        int x = 0;
        // Two pixels of a row as one word (its bytes by shifts, not loads) while it ends in the row.
        for (; 6 * x + 8 <= 3 * width; x++) {
            uint64_t a, c;
            memcpy(&a, top + 6 * x, sizeof a);
            memcpy(&c, bottom + 6 * x, sizeof c);
            for (int k = 0; k < 3; k++)
                out[k][(size_t)y * w + x] =
                    0.25f * (srgb_linear[a >> 8 * k & 0xFF] + srgb_linear[a >> 8 * (k + 3) & 0xFF] +
                             srgb_linear[c >> 8 * k & 0xFF] + srgb_linear[c >> 8 * (k + 3) & 0xFF]);
        }
        for (; x < w; x++) {
            const uint8_t *a = top + 6 * x, *c = bottom + 6 * x;
            int right = 2 * x + 1 < width ? 3 : 0;
            for (int k = 0; k < 3; k++)
                out[k][(size_t)y * w + x] = 0.25f * (srgb_linear[a[k]] + srgb_linear[a[right + k]] + srgb_linear[c[k]] +
                                                     srgb_linear[c[right + k]]);
        }
    }
}

// One row of 2 × 2 means from rows `a` and `b` of `width` floats (an odd last column counted
// twice): the pairs in vector lanes, the same sums in the same order as one at a time.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
halve_row(const float *restrict a, const float *restrict b, int width, float *restrict out) {
    const int pairs = width / 2;
    for (int x = 0; x < pairs; x++) out[x] = 0.25f * (a[2 * x] + a[2 * x + 1] + b[2 * x] + b[2 * x + 1]);
    if (width % 2) out[pairs] = 0.25f * (a[width - 1] + a[width - 1] + b[width - 1] + b[width - 1]);
}

// 2 × 2 means of three planes of `width` × `height` into `out` (a block at an edge averages the
// pixels it has, counting a missing row or column as its neighbour, as repeated halving does).
void att_quality_halve(const source *in, int width, int height, float *out[3], float *buffer[3]) {
    if (in->pixels != NULL && in->channels == 3) {
        halve_rgb(in->pixels, in->stride, width, height, out);
        return;
    }
    int w = (width + 1) / 2, h = (height + 1) / 2;
    float *buffer2[3] = {buffer[0] + width, buffer[1] + width, buffer[2] + width};
    const float *rows[3], *second[3];
    for (int y = 0; y < h; y++) {
        linear_row(in, 2 * y, width, buffer, rows);
        linear_row(in, 2 * y + 1 < height ? 2 * y + 1 : 2 * y, width, buffer2, second);
        for (int c = 0; c < 3; c++) halve_row(rows[c], second[c], width, out[c] + (size_t)y * w);
    }
}
