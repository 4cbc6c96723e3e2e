// 4:2:0 with sharpened chroma: libjpeg averages each 2x2 of Cb and Cr, and a decoder's fancy
// upsampling (libjpeg-turbo's, so browsers', Android's and PIL's) spreads each sample over its
// neighbours with a triangle filter, so a saturated edge comes back smeared and dulled. Here the
// chroma samples are chosen so that the decoder's upsampled chroma, averaged back over each 2x2,
// gives libjpeg's average: the 2x2 mean of the fancy upsampling is the separable filter
// [1 6 1]/8 of the samples (edges repeated, as the decoder repeats them), and one step of the
// fixed-point iteration s += m - F(s) from s = m undoes most of it (more steps moved no score of
// the photo sets by more: docs/quality.md). Luma is libjpeg's own, to the bit (its fixed-point
// colour conversion); the planes go to libjpeg as raw data.
#include "jpeg_chroma.h"

#include <string.h>

// The conversions vectorise; an AVX2 clone is taken where the processor has it.
#if defined(__x86_64__)
#define CLONED __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CLONED
#endif

enum { SCALEBITS = 16 };
#define FIX(x) ((int32_t)((x) * (1L << SCALEBITS) + 0.5))
static const int32_t ONE_HALF = 1 << (SCALEBITS - 1), CBCR_OFFSET = 128 << SCALEBITS;

// One row of Cb and Cr as libjpeg converts them, `count` pixels, into `cb` and `cr`.
CLONED static void chroma_row(const uint8_t *p, uint32_t count, int32_t *restrict cb, int32_t *restrict cr) {
    for (uint32_t x = 0; x < count; x++, p += 3) {
        const int32_t r = p[0], g = p[1], b = p[2];
        cb[x] = (-FIX(0.16874) * r - FIX(0.33126) * g + FIX(0.50000) * b + CBCR_OFFSET + ONE_HALF - 1) >> SCALEBITS;
        cr[x] = (FIX(0.50000) * r - FIX(0.41869) * g - FIX(0.08131) * b + CBCR_OFFSET + ONE_HALF - 1) >> SCALEBITS;
    }
}

// Each 2x2's mean of Cb and Cr as libjpeg converts and averages them (past the picture's right
// and bottom edges the last pixel repeats, as its edge expansion does), into `cb` and `cr`;
// `rows` holds four rows of 2 * `cw` integers.
static void chroma_means(const uint8_t *pixels, size_t stride, uint32_t width, uint32_t height, uint32_t cw,
                         uint32_t ch, int32_t *rows, float *cb, float *cr) {
    const uint32_t span = 2 * cw;
    for (uint32_t y = 0; y < ch; y++) {
        for (uint32_t j = 0; j < 2; j++) {
            const uint32_t source = 2 * y + j < height ? 2 * y + j : height - 1;
            int32_t *b = rows + (size_t)(2 * j) * span, *r = b + span;
            chroma_row(pixels + (size_t)source * stride, width, b, r);
            if (span > width) b[width] = b[width - 1], r[width] = r[width - 1];
        }
        const int32_t *b0 = rows, *r0 = rows + span, *b1 = rows + 2 * span, *r1 = rows + 3 * span;
        float *out_b = cb + (size_t)y * cw, *out_r = cr + (size_t)y * cw;
        for (uint32_t x = 0; x < cw; x++) {
            out_b[x] = (float)(b0[2 * x] + b0[2 * x + 1] + b1[2 * x] + b1[2 * x + 1]) * 0.25f;
            out_r[x] = (float)(r0[2 * x] + r0[2 * x + 1] + r1[2 * x] + r1[2 * x + 1]) * 0.25f;
        }
    }
}

// The samples `m` sharpened once, in place: 2m - F(m), F the [1 6 1]/8 filter down and across
// (`tmp` holds the pass across; a row of `m` is read only for the same row out), clamped to 0-255.
static void sharpen(float *m, float *tmp, uint32_t cw, uint32_t ch) {
    for (uint32_t y = 0; y < ch; y++) {
        const float *row = m + (size_t)y * cw;
        float *t = tmp + (size_t)y * cw;
        t[0] = (7.0f * row[0] + row[cw > 1 ? 1 : 0]) * 0.125f;
        for (uint32_t x = 1; x + 1 < cw; x++) t[x] = (row[x - 1] + 6.0f * row[x] + row[x + 1]) * 0.125f;
        if (cw > 1) t[cw - 1] = (row[cw - 2] + 7.0f * row[cw - 1]) * 0.125f;
    }
    for (uint32_t y = 0; y < ch; y++) {
        const float *up = tmp + (size_t)(y > 0 ? y - 1 : 0) * cw, *mid = tmp + (size_t)y * cw;
        const float *down = tmp + (size_t)(y + 1 < ch ? y + 1 : ch - 1) * cw;
        float *row = m + (size_t)y * cw;
        for (uint32_t x = 0; x < cw; x++) {
            const float v = 2.0f * row[x] - (up[x] + 6.0f * mid[x] + down[x]) * 0.125f;
            row[x] = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
        }
    }
}

float *att_jpeg_sharp_chroma(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride) {
    const uint32_t width = cinfo->image_width, height = cinfo->image_height;
    const uint32_t cw = (width + 1) / 2, ch = (height + 1) / 2;
    const j_common_ptr common = (j_common_ptr)cinfo;
    float *planes = cinfo->mem->alloc_large(common, JPOOL_IMAGE, sizeof(float) * (size_t)cw * ch * 3);
    int32_t *rows = cinfo->mem->alloc_large(common, JPOOL_IMAGE, sizeof(int32_t) * 8 * (size_t)cw);
    float *cb = planes, *cr = planes + (size_t)cw * ch, *tmp = planes + 2 * (size_t)cw * ch;
    chroma_means(pixels, stride, width, height, cw, ch, rows, cb, cr);
    sharpen(cb, tmp, cw, ch);
    sharpen(cr, tmp, cw, ch);
    return planes;
}

// The `cw` × `ch` samples `m` rounded into the plane `plane` (`pw` × `ph`, edges repeated).
static void to_plane(const float *m, uint32_t cw, uint32_t ch, JSAMPLE *plane, uint32_t pw, uint32_t ph) {
    for (uint32_t y = 0; y < ch; y++) {
        const float *row = m + (size_t)y * cw;
        JSAMPLE *out = plane + (size_t)y * pw;
        for (uint32_t x = 0; x < cw; x++) out[x] = (JSAMPLE)(row[x] + 0.5f);
        memset(out + cw, out[cw - 1], pw - cw);
    }
    for (uint32_t y = ch; y < ph; y++) memcpy(plane + (size_t)y * pw, plane + (size_t)(ch - 1) * pw, pw);
}

// One row of luma as libjpeg converts it, `count` pixels.
CLONED static void luma_row(const uint8_t *restrict p, uint32_t count, JSAMPLE *restrict out) {
    for (uint32_t x = 0; x < count; x++)
        out[x] = (JSAMPLE)((FIX(0.29900) * p[3 * x] + FIX(0.58700) * p[3 * x + 1] + FIX(0.11400) * p[3 * x + 2] +
                            ONE_HALF) >>
                           SCALEBITS);
}

// Sixteen rows of luma from picture row `top` (the last row repeating past the bottom), each
// `pw` wide (the last pixel repeating past the right edge).
static void luma_rows(const uint8_t *pixels, size_t stride, uint32_t width, uint32_t height, uint32_t top,
                      JSAMPLE *rows, uint32_t pw) {
    for (uint32_t k = 0; k < 16; k++) {
        const uint32_t y = top + k < height ? top + k : height - 1;
        JSAMPLE *out = rows + (size_t)k * pw;
        luma_row(pixels + (size_t)y * stride, width, out);
        memset(out + width, out[width - 1], pw - width);
    }
}

void att_jpeg_write_sharp(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride) {
    const uint32_t width = cinfo->image_width, height = cinfo->image_height;
    const uint32_t cw = (width + 1) / 2, ch = (height + 1) / 2;
    // Whole MCUs of 16 x 16: libjpeg reads every block of an MCU row.
    const uint32_t pw = (width + 15) / 16 * 16, ph = (height + 15) / 16 * 16;
    const float *chroma = att_jpeg_sharp_chroma(cinfo, pixels, stride);
    JSAMPLE *planes = cinfo->mem->alloc_large((j_common_ptr)cinfo, JPOOL_IMAGE, (size_t)pw * ph / 2 + (size_t)pw * 16);
    JSAMPLE *cb_plane = planes, *cr_plane = planes + (size_t)pw / 2 * (ph / 2), *luma = planes + (size_t)pw * ph / 2;
    to_plane(chroma, cw, ch, cb_plane, pw / 2, ph / 2);
    to_plane(chroma + (size_t)cw * ch, cw, ch, cr_plane, pw / 2, ph / 2);

    JSAMPROW y_rows[16], cb_rows[8], cr_rows[8];
    JSAMPARRAY data[3] = {y_rows, cb_rows, cr_rows};
    while (cinfo->next_scanline < cinfo->image_height) {
        const uint32_t top = cinfo->next_scanline;
        luma_rows(pixels, stride, width, height, top, luma, pw);
        for (int k = 0; k < 16; k++) y_rows[k] = luma + (size_t)k * pw;
        for (int k = 0; k < 8; k++) {
            cb_rows[k] = cb_plane + (size_t)(top / 2 + (uint32_t)k) * (pw / 2);
            cr_rows[k] = cr_plane + (size_t)(top / 2 + (uint32_t)k) * (pw / 2);
        }
        jpeg_write_raw_data(cinfo, data, 16);
    }
}
