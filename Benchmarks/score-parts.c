// The parts of one `--quality auto` encode timed alone, from the C functions the search calls
// (Sources/CAttacheCodecs): the reference's preparation, the blocking gate's (with the picture
// statistics), one encode (quality 80, Robidoux's tables, 4:2:0), the candidate's decode, its
// score and its blocking. Each photo is decoded, cut to 1024 px on its longer side (2 x 2 ... n x n
// means after libjpeg's DCT scaling) and timed ROUNDS times. Built and run by score-parts.sh.
//   score-parts ROUNDS FILE...
#include <stdio.h>
#include <stdlib.h>
// After stdio.h, which it needs.
#include <jpeglib.h>
#include <string.h>
#include <time.h>

#include "attache_codecs.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// The photo at `path` as RGB, its longer side 1024 px (area means), or NULL.
static uint8_t *load(const char *path, int *width, int *height) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr err;
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, file);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    unsigned denom = 1;
    while (cinfo.image_width / (denom * 2) >= 1024 && denom < 8) denom *= 2;
    cinfo.scale_num = 1;
    cinfo.scale_denom = denom;
    jpeg_start_decompress(&cinfo);
    int w = (int)cinfo.output_width, h = (int)cinfo.output_height;
    uint8_t *big = malloc((size_t)w * h * 3);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = big + (size_t)cinfo.output_scanline * w * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    fclose(file);
    int longer = w > h ? w : h;
    if (longer <= 1024) {
        *width = w;
        *height = h;
        return big;
    }
    int ow = (int)((long)w * 1024 / longer), oh = (int)((long)h * 1024 / longer);
    uint8_t *out = malloc((size_t)ow * oh * 3);
    for (int y = 0; y < oh; y++) {
        int y0 = (int)((long)y * h / oh), y1 = (int)((long)(y + 1) * h / oh);
        if (y1 <= y0) y1 = y0 + 1;
        for (int x = 0; x < ow; x++) {
            int x0 = (int)((long)x * w / ow), x1 = (int)((long)(x + 1) * w / ow);
            if (x1 <= x0) x1 = x0 + 1;
            long sum[3] = {0, 0, 0}, n = 0;
            for (int yy = y0; yy < y1; yy++)
                for (int xx = x0; xx < x1; xx++, n++)
                    for (int c = 0; c < 3; c++) sum[c] += big[((size_t)yy * w + xx) * 3 + c];
            for (int c = 0; c < 3; c++) out[((size_t)y * ow + x) * 3 + c] = (uint8_t)((sum[c] + n / 2) / n);
        }
    }
    free(big);
    *width = ow;
    *height = oh;
    return out;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: score-parts ROUNDS FILE...\n");
        return 2;
    }
    int rounds = atoi(argv[1]), pictures = 0;
    enum { PARTS = 6, ENCODE = 2 };
    const char *names[PARTS] = {"prepare the reference",
                                "the gate and statistics",
                                "encode (q80)",
                                "decode the candidate",
                                "score",
                                "blocking"};
    double spent[PARTS] = {0};
    for (int i = 2; i < argc; i++) {
        int w, h;
        uint8_t *pixels = load(argv[i], &w, &h);
        if (!pixels) continue;
        pictures++;
        size_t stride = (size_t)w * 3;
        uint8_t *decoded = malloc(stride * h);
        for (int r = 0; r < rounds; r++) {
            att_error error;
            double t[PARTS + 1], features[ATT_PICTURE_FEATURES], score;
            uint8_t *data;
            size_t length;
            t[0] = now();
            att_quality_ref *ref = att_quality_prepare(pixels, w, h, stride, 3, &error);
            t[1] = now();
            att_blocking_ref *flat = att_blocking_prepare(pixels, stride, w, h, 3, 1.0, features);
            t[2] = now();
            att_jpeg_encode(pixels, w, h, stride, 3, 80, ATT_JPEG_TABLES_ROBIDOUX, 0, &data, &length, &error);
            t[3] = now();
            att_jpeg_decode_into(data, length, w, h, 3, decoded, stride, &error);
            t[4] = now();
            att_quality_score(ref, pixels, stride, decoded, stride, 3, &score, &error);
            t[5] = now();
            att_blocking_measure(flat, decoded, stride, 95.0);
            t[6] = now();
            for (int p = 0; p < PARTS; p++) spent[p] += t[p + 1] - t[p];
            free(data);
            att_quality_free(ref);
            att_blocking_free(flat);
        }
        free(decoded);
        free(pixels);
    }
    if (!pictures) return 1;
    double over = 0;
    for (int p = 0; p < PARTS; p++) {
        printf("%-26s %6.2f ms a picture\n", names[p], 1e3 * spent[p] / (pictures * rounds));
        if (p != ENCODE) over += spent[p];
    }
    printf("%d pictures, %d rounds: the score's parts are %.2fx the encode\n", pictures, rounds, over / spent[ENCODE]);
    return 0;
}
