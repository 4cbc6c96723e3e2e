// The perceptual score a quality search aims at: SSIMULACRA2 (Jon Sneyers, Cloudinary; the
// metric of libjxl's tools/ssimulacra2.cc), computed the way a search needs it.
//
// The same colour space (XYB), the same five-scale pyramid in linear RGB (the sixth has no
// weight), the same SSIM and edge-difference maps, the same 1- and 4-norm pooling, weights and
// final mapping. What differs, each measured against the public implementation
// (docs/quality.md):
//   - only the (channel, scale) pairs with a weight above 0.01 are computed (X and B at full
//     scale weigh nothing in a picture of six scales), and terms below 0.01 are dropped;
//   - the Gaussian (sigma 1.5) is an 11-tap separable filter, zero-padded at the top and bottom
//     and mirrored at the sides, as the public Python implementation does;
//   - each scale runs in bands of rows, so memory is a few rows of the picture per plane plus
//     the smaller scales' linear RGB (a third of a picture's floats per image), not a dozen
//     whole planes;
//   - the two largest scales pool a sample of their rows: every fourth band of 16 (docs/quality.md).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quality_private.h"
#include "ssimulacra2_weights.h"

enum { RADIUS = 5, TAPS = 2 * RADIUS + 1, BAND = 64 };
// The two largest scales pool SAMPLE rows of every SAMPLE * EVERY: short bands, spread evenly,
// read each part of a picture where one long band in two missed whole regions (the score of a
// photo whose artefacts sit in a few rows moved by up to 2 points; by under 0.6 so, with half
// as many rows pooled, docs/quality.md).
enum { SAMPLE = 16, EVERY = 4 };
// The vertical pass runs over STRIP columns of ROWS rows at a time, so that the eleven rows each
// output reads stay in the first-level cache (the same sums, in the same order, as row by row).
enum { ROWS = 16, STRIP = 256 };

// The weight of (channel, scale, norm 0 or 1, term) for a picture of `scales` scales.
static double weight_of(int scales, int channel, int scale, int norm, int term) {
    return weights[(channel * scales + scale) * 6 + norm * 3 + term];
}

// Below this a weight is left out, and a (channel, scale) pair with all six of its weights
// under it is never computed. Of six scales: X and B at full scale and the sixth scale. A picture
// of fewer (a short side under 256 px, whose weights shift) keeps fewer still; of five: B alone at
// full scale, X and Y below it. What is left out weighs under 0.02 of the 300-890 the weights
// sum to, and moved no score of the photo benchmark's pictures at 64-320 px by more than 0.01
// (docs/quality.md).
static const double threshold = 0.01;

// Whether (channel, scale) has a weight above the threshold.
static int needed(int scales, int channel, int scale) {
    for (int k = 0; k < 6; k++)
        if (weight_of(scales, channel, scale, k / 3, k % 3) > threshold) return 1;
    return 0;
}

// Four blurred quantities per channel: the two images' means, the mean of their squares' sum
// and their mean product. SSIM's denominator takes the two mean squares only as a sum, and the
// blur is linear: one blur of the sum where there were two (the same score but for rounding,
// docs/quality.md).
enum { Q_A, Q_B, Q_SQUARES, Q_AB, QUANTITIES };

struct att_quality_ref {
    // The picture's scales (as SSIMULACRA2 counts them, at most six) and those computed.
    int width, height, scales, levels;
    int sizes[SCALES][2];
    // The reference's planes from scale 1 (its scale 0 is read from its pixels).
    source reference[SCALES];
    // The candidate's planes from scale 1.
    float *candidate[SCALES][3];
    float kernel[TAPS];
    // Band scratch, sized for scale 0: linear rows of both images, the XYB rows of both per
    // channel (with the blur's margin), their squares' sum and product for one channel at a time, a
    // row of zeros, ROWS rows of the vertical pass and a blurred row of each quantity (the
    // vertical with the horizontal pass's margins).
    float *rows_linear[2][3];
    float *xyb[3][2];
    float *zeros;
    float *squares[2];
    float *vertical[QUANTITIES];
    float *blurred[QUANTITIES];
};

// The kernel over eleven rows (`rows[k]` the k-th tap's), its symmetry taken: each pair of rows
// summed, then weighed. The vertical pass gives it a quantity's rows (a row past the image's
// ends a row of zeros), the horizontal one the same row shifted.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
kernel_row(const float *const rows[TAPS], const float kernel[TAPS], int width, float *restrict out) {
    const float *c = rows[RADIUS];
    const float k0 = kernel[RADIUS], k1 = kernel[RADIUS + 1], k2 = kernel[RADIUS + 2], k3 = kernel[RADIUS + 3],
                k4 = kernel[RADIUS + 4], k5 = kernel[RADIUS + 5];
    const float *u1 = rows[RADIUS - 1], *d1 = rows[RADIUS + 1], *u2 = rows[RADIUS - 2], *d2 = rows[RADIUS + 2];
    const float *u3 = rows[RADIUS - 3], *d3 = rows[RADIUS + 3], *u4 = rows[RADIUS - 4], *d4 = rows[RADIUS + 4];
    const float *u5 = rows[RADIUS - 5], *d5 = rows[RADIUS + 5];
    for (int x = 0; x < width; x++)
        out[x] = k0 * c[x] + k1 * (u1[x] + d1[x]) + k2 * (u2[x] + d2[x]) + k3 * (u3[x] + d3[x]) + k4 * (u4[x] + d4[x]) +
                 k5 * (u5[x] + d5[x]);
}

// The horizontal pass of the blur over `mid` (width floats with RADIUS free on each side) into
// `out`, mirrored at the sides (scipy's "reflect": d c b a | a b c d | d c b a).
static void blur_row(float *mid, float *restrict out, int width, const float kernel[TAPS]) {
    for (int i = 0; i < RADIUS; i++) {
        mid[-1 - i] = mid[i < width ? i : width - 1];
        mid[width + i] = mid[width - 1 - i >= 0 ? width - 1 - i : 0];
    }
    const float *taps[TAPS];
    for (int k = -RADIUS; k <= RADIUS; k++) taps[k + RADIUS] = mid + k;
    kernel_row(taps, kernel, width, out);
}

// The products of a band's rows of both images (`count` values): the sum of their squares and
// their product, made once for the eleven rows of the vertical pass that read each.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
products(const float *restrict a, const float *restrict b, float *restrict squares, float *restrict ab, size_t count) {
    for (size_t i = 0; i < count; i++) {
        squares[i] = a[i] * a[i] + b[i] * b[i];
        ab[i] = a[i] * b[i];
    }
}

// One band's rows of the pooled sums: ssim, artifact and detail lost, 1- and 4-norm.
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
pool_row(const float *restrict blurred[QUANTITIES], const float *restrict a, const float *restrict b, int width,
         double sum[3], double sum4[3]) {
#pragma clang fp reassociate(on)
    const float c2 = 0.0009f;
    const float *mu1 = blurred[Q_A], *mu2 = blurred[Q_B], *squares = blurred[Q_SQUARES], *s12 = blurred[Q_AB];
    float rs0 = 0, rs1 = 0, rs2 = 0, r40 = 0, r41 = 0, r42 = 0;
    for (int i = 0; i < width; i++) {
        float m11 = mu1[i] * mu1[i], m22 = mu2[i] * mu2[i], m12 = mu1[i] * mu2[i];
        float diff = mu1[i] - mu2[i];
        float num_m = 1.0f - diff * diff;
        float num_s = 2.0f * (s12[i] - m12) + c2;
        float den_s = (squares[i] - (m11 + m22)) + c2;
        float d = fmaxf(1.0f - num_m * num_s / den_s, 0.0f);
        float edge = (1.0f + fabsf(b[i] - mu2[i])) / (1.0f + fabsf(a[i] - mu1[i])) - 1.0f;
        float artifact = fmaxf(edge, 0.0f), lost = fmaxf(-edge, 0.0f);
        float d2 = d * d, a2 = artifact * artifact, l2 = lost * lost;
        rs0 += d;
        rs1 += artifact;
        rs2 += lost;
        r40 += d2 * d2;
        r41 += a2 * a2;
        r42 += l2 * l2;
    }
    sum[0] += rs0;
    sum[1] += rs1;
    sum[2] += rs2;
    sum4[0] += r40;
    sum4[1] += r41;
    sum4[2] += r42;
}

void att_quality_free(att_quality_ref *ref) {
    if (ref == NULL) return;
    for (int s = 0; s < SCALES; s++) {
        for (int c = 0; c < 3; c++) {
            free(ref->reference[s].linear[c]);
            free(ref->candidate[s][c]);
        }
    }
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++) free(ref->rows_linear[i][c]);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 2; i++) free(ref->xyb[c][i]);
    for (int i = 0; i < 2; i++) free(ref->squares[i]);
    for (int q = 0; q < QUANTITIES; q++) {
        free(ref->blurred[q]);
        free(ref->vertical[q]);
    }
    free(ref->zeros);

    free(ref);
}

static float *floats(size_t count) { return malloc(sizeof(float) * (count ? count : 1)); }

// The sources of `pixels` at every scale: 0 read from the pixels, and from scale 1 the planes
// `planes[s]` (filled here by halving the scale above).
static void scales_of(att_quality_ref *ref, const uint8_t *pixels, size_t stride, int channels, source out[SCALES],
                      float *planes[SCALES][3]) {
    out[0] = (source){pixels, stride, channels, {NULL, NULL, NULL}};
    for (int s = 1; s < ref->levels; s++) {
        out[s] = (source){NULL, 0, channels, {planes[s][0], planes[s][1], planes[s][2]}};
        att_quality_halve(&out[s - 1], ref->sizes[s - 1][0], ref->sizes[s - 1][1], out[s].linear, ref->rows_linear[0]);
    }
}

att_quality_ref *att_quality_prepare(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                                     int32_t channels, att_error *error) {
    att_quality_tables();
    if (width < 8 || height < 8 || channels < 1 || channels > 4 || channels == 2) {
        att_set_error(error, ATT_ERR_INTERNAL, "a %ux%u picture of %d channels has no score", width, height, channels);
        return NULL;
    }
    att_quality_ref *ref = calloc(1, sizeof *ref);
    if (ref == NULL) goto no_memory;
    ref->width = (int)width;
    ref->height = (int)height;
    double total = 0;
    for (int k = -RADIUS; k <= RADIUS; k++) total += exp(-(double)(k * k) / 4.5);
    for (int k = -RADIUS; k <= RADIUS; k++) ref->kernel[k + RADIUS] = (float)(exp(-(double)(k * k) / 4.5) / total);
    // Band scratch: two rows of linear RGB per image (halving reads two), the band's rows of
    // each quantity, and the rows the passes write.
    size_t band = (size_t)(BAND + 2 * RADIUS) * width;
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++)
            if (!(ref->rows_linear[i][c] = floats(2 * (size_t)width))) goto no_memory;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 2; i++)
            if (!(ref->xyb[c][i] = floats(band))) goto no_memory;
    for (int i = 0; i < 2; i++)
        if (!(ref->squares[i] = floats(band))) goto no_memory;
    for (int q = 0; q < QUANTITIES; q++)
        if (!(ref->blurred[q] = floats(width)) || !(ref->vertical[q] = floats((size_t)ROWS * (width + 2 * RADIUS))))
            goto no_memory;
    if (!(ref->zeros = calloc(width, sizeof(float)))) goto no_memory;

    int w = (int)width, h = (int)height;
    for (int cw = w, ch = h; ref->scales < SCALES && cw >= 8 && ch >= 8; cw = (cw + 1) / 2, ch = (ch + 1) / 2) {
        ref->scales++;
    }
    int last = 0;
    for (int s = 0; s < ref->scales; s++)
        for (int c = 0; c < 3; c++)
            if (needed(ref->scales, c, s)) last = s;
    for (int s = 0; s <= last; s++) {
        ref->sizes[s][0] = w;
        ref->sizes[s][1] = h;
        ref->levels = s + 1;
        int half_w = (w + 1) / 2, half_h = (h + 1) / 2;
        if (s == last) break;
        w = half_w;
        h = half_h;
        for (int c = 0; c < 3; c++) {
            ref->reference[s + 1].linear[c] = floats((size_t)half_w * half_h);
            ref->candidate[s + 1][c] = floats((size_t)half_w * half_h);
            if (!ref->reference[s + 1].linear[c] || !ref->candidate[s + 1][c]) goto no_memory;
        }
    }
    // The reference's planes from scale 1, made once from its pixels.
    ref->reference[0].channels = channels;
    source levels[SCALES];
    float *planes[SCALES][3] = {{NULL}};
    for (int s = 1; s < ref->levels; s++)
        for (int c = 0; c < 3; c++) planes[s][c] = ref->reference[s].linear[c];
    scales_of(ref, pixels, stride, channels, levels, planes);
    return ref;
no_memory:
    att_quality_free(ref);
    att_set_error(error, ATT_ERR_MEMORY_LIMIT, "no memory for the quality score's planes");
    return NULL;
}

// One scale of both images, in bands: the weighted sum of its pooled terms.
static double score_scale(att_quality_ref *ref, int s, const source *a, const source *b) {
    int w = ref->sizes[s][0], h = ref->sizes[s][1];
    int want[3];
    for (int c = 0; c < 3; c++) want[c] = needed(ref->scales, c, s);
    double sum[3][3] = {{0}}, sum4[3][3] = {{0}};
    double counted = 0;
    // The two largest scales are sampled (SAMPLE, EVERY) from 256 rows (a smaller one pools too
    // few rows of too few places to stand for the picture).
    int sampled = s <= 1 && h >= 4 * BAND;
    int band = sampled ? SAMPLE : BAND, step = sampled ? SAMPLE * EVERY : BAND;
    for (int y0 = 0; y0 < h; y0 += step) {
        int y1 = y0 + band < h ? y0 + band : h;
        counted += (double)(y1 - y0) * w;
        int r0 = y0 - RADIUS > 0 ? y0 - RADIUS : 0, r1 = y1 + RADIUS < h ? y1 + RADIUS : h;
        // XYB rows of both images.
        for (int r = r0; r < r1; r++) {
            size_t at = (size_t)(r - r0) * w;
            for (int i = 0; i < 2; i++) {
                const source *image = i == 0 ? a : b;
                float *xyb[3] = {ref->xyb[0][i] + at, ref->xyb[1][i] + at, ref->xyb[2][i] + at};
                att_quality_row_xyb(image, r, w, ref->rows_linear[i], xyb, want);
            }
        }
        for (int c = 0; c < 3; c++) {
            if (!want[c]) continue;
            // The band's four quantities before the blur: both images, their squares' sum, their
            // product.
            const float *plane[QUANTITIES] = {ref->xyb[c][0], ref->xyb[c][1], ref->squares[0], ref->squares[1]};
            products(ref->xyb[c][0], ref->xyb[c][1], ref->squares[0], ref->squares[1], (size_t)(r1 - r0) * w);
            size_t pitch = (size_t)w + 2 * RADIUS;
            for (int top = y0; top < y1; top += ROWS) {
                int rows = y1 - top < ROWS ? y1 - top : ROWS;
                // Vertical pass (rows past the ends are zero), a strip of columns at a time.
                for (int q = 0; q < QUANTITIES; q++)
                    for (int x0 = 0; x0 < w; x0 += STRIP)
                        for (int i = 0; i < rows; i++) {
                            const float *taps[TAPS];
                            for (int k = -RADIUS; k <= RADIUS; k++) {
                                int from = top + i + k;
                                taps[k + RADIUS] =
                                    (from >= 0 && from < h ? plane[q] + (size_t)(from - r0) * w : ref->zeros) + x0;
                            }
                            kernel_row(taps, ref->kernel, w - x0 < STRIP ? w - x0 : STRIP,
                                       ref->vertical[q] + i * pitch + RADIUS + x0);
                        }
                // Then horizontal, per quantity, and the row's pooled terms.
                for (int i = 0; i < rows; i++) {
                    for (int q = 0; q < QUANTITIES; q++)
                        blur_row(ref->vertical[q] + i * pitch + RADIUS, ref->blurred[q], w, ref->kernel);
                    size_t at = (size_t)(top + i - r0) * w;
                    pool_row((const float **)ref->blurred, ref->xyb[c][0] + at, ref->xyb[c][1] + at, w, sum[c],
                             sum4[c]);
                }
            }
        }
    }
    double total = 0, n = counted;
    for (int c = 0; c < 3; c++) {
        if (!want[c]) continue;
        for (int k = 0; k < 6; k++) {
            double w8 = weight_of(ref->scales, c, s, k / 3, k % 3);
            if (w8 <= threshold) continue;
            total += w8 * (k < 3 ? sum[c][k % 3] / n : pow(sum4[c][k % 3] / n, 0.25));
        }
    }
    return total;
}

int32_t att_quality_score(att_quality_ref *ref, const uint8_t *reference, size_t reference_stride,
                          const uint8_t *pixels, size_t stride, int32_t channels, double *score, att_error *error) {
    if (channels < 1 || channels > 4 || channels == 2) {
        att_set_error(error, ATT_ERR_INTERNAL, "a picture of %d channels has no score", channels);
        return ATT_ERR_INTERNAL;
    }
    source mine[SCALES], theirs[SCALES];
    scales_of(ref, pixels, stride, channels, mine, ref->candidate);
    // The reference's scale 0 from its pixels, its smaller ones from its planes.
    for (int s = 0; s < SCALES; s++) theirs[s] = ref->reference[s];
    theirs[0] = (source){reference, reference_stride, ref->reference[0].channels, {NULL, NULL, NULL}};
    double total = 0;
    for (int s = 0; s < ref->levels; s++) total += score_scale(ref, s, &theirs[s], &mine[s]);
    double v = total * 0.9562382616834844;
    v = 2.326765642916932 * v - 0.020884521182843837 * v * v + 6.248496625763138e-05 * v * v * v;
    *score = v > 0 ? 100.0 - 10.0 * pow(v, 0.6276336467831387) : 100.0;
    return ATT_OK;
}
