// What the quality harnesses (score-parts.c, score-accuracy.c) share: a clock, and a photo
// decoded and cut to 1024 px on its longer side (area means after libjpeg's DCT scaling).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
// After stdio.h, which it needs.
#include <jpeglib.h>

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// The photo at `path` as RGB, its longer side 1024 px (area means), or NULL.
static inline uint8_t *load(const char *path, int *width, int *height) {
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
