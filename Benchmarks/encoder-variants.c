// Encoder variants against libjpeg's own encode with Robidoux's tables at 4:2:0 (the baseline):
// each photo cut to 1024 px (photo_1024.h) and encoded by every variant at each quality; a line
// per encode: photo, variant, quality, bytes, and the in-process SSIMULACRA2 against the 1024 px
// pixels (encoder_variants.py compares the curves). A variant is NAME:CHROMA_SCALE:PROGRESSIVE:
// ENCODER:CHROMA — the chroma table's scale against the luma's (1 = the same table), 0 or 1,
// fast or thorough, half (libjpeg's 4:2:0), full (4:4:4) or sharp, and optionally the tables:
// robidoux (the default) or jpegli; the baseline is the variant "base:1:0:fast:half", libjpeg's
// own 4:2:0 with Robidoux's tables.
//   encoder-variants OUT_DIR QUALITIES VARIANTS(;-separated) PHOTO...
#include <stdint.h>

#include "attache_jpeg_encode.h"
#include "photo_1024.h"

static const unsigned robidoux[DCTSIZE2] = {16, 16, 16, 18,  25,  37,  56,  85,  16, 17, 20,  27,  34,  40,  53,  75,
                                            16, 20, 24, 31,  43,  62,  91,  135, 18, 27, 31,  40,  53,  74,  106, 156,
                                            25, 34, 43, 53,  69,  94,  131, 189, 37, 40, 62,  74,  94,  124, 169, 238,
                                            56, 53, 91, 106, 131, 169, 226, 311, 85, 75, 135, 156, 189, 238, 311, 418};

typedef struct {
    char name[32], encoder[16], chroma[16], tables[16];
    double chroma_scale;
    int progressive;
} variant;

// libjpeg's own encode with the chroma table scaled and progressive as asked.
static size_t plain(const uint8_t *pixels, int w, int h, int quality, const variant *v, uint8_t **out) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *buffer = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &buffer, &size);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    const int scale = jpeg_quality_scaling(quality);
    jpeg_add_quant_table(&c, 0, robidoux, scale, TRUE);
    jpeg_add_quant_table(&c, 1, robidoux, (int)(scale * v->chroma_scale + 0.5), TRUE);
    c.optimize_coding = TRUE;
    c.dct_method = JDCT_ISLOW;
    const int full = strcmp(v->chroma, "full") == 0;
    c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = full ? 1 : 2;
    if (v->progressive) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * (size_t)w * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    *out = buffer;
    return size;
}

// Attache's encoder (att_jpeg_encode) where the variant is one it writes (the same table for
// both, baseline), else libjpeg's own with the chroma table scaled or progressive.
static size_t encode(const uint8_t *pixels, int w, int h, int quality, const variant *v, uint8_t **out) {
    if (v->chroma_scale != 1 || v->progressive) return plain(pixels, w, h, quality, v, out);
    const int chroma = strcmp(v->chroma, "sharp") == 0  ? ATT_JPEG_CHROMA_SHARP
                       : strcmp(v->chroma, "full") == 0 ? ATT_JPEG_CHROMA_FULL
                                                        : ATT_JPEG_CHROMA_HALF;
    size_t length = 0;
    att_error error;
    const int tables = strcmp(v->tables, "jpegli") == 0 ? ATT_JPEG_TABLES_JPEGLI : ATT_JPEG_TABLES_ROBIDOUX;
    if (att_jpeg_encode(pixels, (uint32_t)w, (uint32_t)h, (size_t)w * 3, 3, quality, tables, chroma,
                        strcmp(v->encoder, "thorough") == 0, out, &length, &error) != 0) {
        fprintf(stderr, "%s\n", error.message);
        exit(1);
    }
    return length;
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    int qualities[32], count = 0;
    for (char *q = strtok(argv[2], ","); q && count < 32; q = strtok(NULL, ",")) qualities[count++] = atoi(q);
    variant variants[16];
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(argv[3], ";", &save); t && n < 16; t = strtok_r(NULL, ";", &save)) {
        variant *v = &variants[n];
        strcpy(v->tables, "robidoux");
        if (sscanf(t, "%31[^:]:%lf:%d:%15[^:]:%15[^:]:%15s", v->name, &v->chroma_scale, &v->progressive, v->encoder,
                   v->chroma, v->tables) >= 5)
            n++;
    }
    for (int i = 4; i < argc; i++) {
        int w, h;
        uint8_t *pixels = load(argv[i], &w, &h);
        if (!pixels) continue;
        att_error error;
        att_quality_ref *ref = att_quality_prepare(pixels, (uint32_t)w, (uint32_t)h, (size_t)w * 3, 3, &error);
        uint8_t *decoded = malloc((size_t)w * h * 3);
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.ppm", argv[1], i - 4);
        FILE *f = fopen(path, "wb");
        fprintf(f, "P6\n%d %d\n255\n", w, h);
        fwrite(pixels, 1, (size_t)w * h * 3, f);
        fclose(f);
        for (int v = 0; v < n; v++) {
            for (int k = 0; k < count; k++) {
                uint8_t *data = NULL;
                const size_t length = encode(pixels, w, h, qualities[k], &variants[v], &data);
                snprintf(path, sizeof path, "%s/%d-%s-%d.jpg", argv[1], i - 4, variants[v].name, qualities[k]);
                f = fopen(path, "wb");
                fwrite(data, 1, length, f);
                fclose(f);
                double score = 0;
                att_jpeg_decode_into(data, length, (uint32_t)w, (uint32_t)h, 3, decoded, (size_t)w * 3, &error);
                att_quality_score(ref, pixels, (size_t)w * 3, decoded, (size_t)w * 3, 3, &score, &error);
                printf("%d\t%s\t%d\t%zu\t%.3f\n", i - 4, variants[v].name, qualities[k], length, score);
                free(data);
            }
        }
        free(decoded);
        att_quality_free(ref);
        free(pixels);
    }
    return 0;
}
