// The libjpeg-turbo floor for the JPEG table: what libjpeg-turbo alone costs for the work
// `attache resize` asks of it, with no resampling. Per file: DCT-scaled decode at the scale
// attache picks (the smallest of 1/8, 1/4, 1/2, 1 whose output covers the target), then a
// baseline, optimised-Huffman, 4:2:0, quality 85 encode of a target-sized crop of it.
// With --decode-only the encode is skipped and nothing is written: the decode alone.
//   floor [--decode-only] MAX_SIDE OUT_DIR FILE...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

static unsigned char *read_file(const char *path, long *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *length = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)*length);
    if (data && fread(data, 1, (size_t)*length, f) != (size_t)*length) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

// Decodes `data` at the DCT scale that covers a `side` target; the pixels (RGB, `*stride` bytes a
// row) and the target's size.
static unsigned char *decode(const unsigned char *data, long length, int side, size_t *stride, long *tw, long *th) {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr derr;
    d.err = jpeg_std_error(&derr);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, data, (unsigned long)length);
    jpeg_read_header(&d, TRUE);
    long w = d.image_width, h = d.image_height;
    long longest = w > h ? w : h;
    *tw = longest > side ? (w * side + longest / 2) / longest : w;
    *th = longest > side ? (h * side + longest / 2) / longest : h;
    if (*tw < 1) *tw = 1;
    if (*th < 1) *th = 1;
    int n = 8;
    for (int c = 1; c <= 8; c *= 2) {
        if ((w * c + 7) / 8 >= *tw && (h * c + 7) / 8 >= *th) {
            n = c;
            break;
        }
    }
    d.scale_num = (unsigned)n;
    d.scale_denom = 8;
    d.dct_method = JDCT_ISLOW;
    d.out_color_space = JCS_RGB;
    jpeg_start_decompress(&d);
    *stride = (size_t)d.output_width * 3;
    unsigned char *pixels = malloc(*stride * d.output_height);
    while (d.output_scanline < d.output_height) {
        unsigned char *row = pixels + *stride * d.output_scanline;
        jpeg_read_scanlines(&d, &row, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    return pixels;
}

// Encodes the top-left `tw` x `th` of `pixels` (baseline, optimised Huffman, 4:2:0, quality 85)
// and writes it to `path`; 0, or 1 when it cannot be written.
static int encode(const unsigned char *pixels, size_t stride, long tw, long th, const char *path) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr cerr;
    c.err = jpeg_std_error(&cerr);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long out_length = 0;
    jpeg_mem_dest(&c, &out, &out_length);
    c.image_width = (JDIMENSION)tw;
    c.image_height = (JDIMENSION)th;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 85, TRUE);
    c.optimize_coding = TRUE;
    c.dct_method = JDCT_ISLOW;
    c.comp_info[0].h_samp_factor = 2;
    c.comp_info[0].v_samp_factor = 2;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + stride * c.next_scanline);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    FILE *f = fopen(path, "wb");
    int failed = !f || fwrite(out, 1, out_length, f) != out_length;
    if (f) fclose(f);
    free(out);
    if (failed) fprintf(stderr, "cannot write %s\n", path);
    return failed;
}

int main(int argc, char **argv) {
    int decode_only = argc > 1 && strcmp(argv[1], "--decode-only") == 0;
    if (decode_only) {
        argv++;
        argc--;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: floor [--decode-only] MAX_SIDE OUT_DIR FILE...\n");
        return 2;
    }
    int side = atoi(argv[1]);
    for (int i = 3; i < argc; i++) {
        long length = 0;
        unsigned char *data = read_file(argv[i], &length);
        if (!data) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            return 1;
        }
        size_t stride = 0;
        long tw = 0, th = 0;
        unsigned char *pixels = decode(data, length, side, &stride, &tw, &th);
        free(data);
        if (!decode_only) {
            const char *name = strrchr(argv[i], '/');
            name = name ? name + 1 : argv[i];
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[2], name);
            if (encode(pixels, stride, tw, th, path)) {
                free(pixels);
                return 1;
            }
        }
        free(pixels);
    }
    return 0;
}
