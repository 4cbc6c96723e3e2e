// What the thorough JPEG encoder (trellis quantisation) saves: each photo cut to 1024 px
// (photo_1024.h) is written as PPM (the reference) and encoded by both encoders at each quality
// given, with jpegli's tables and sharpened 4:2:0 chroma, as --quality auto's encodes are
// (TABLES=robidoux: Robidoux's, auto's tables before 2026-12-06); a line per
// encode: photo, encoder, quality, bytes, milliseconds, and the in-process SSIMULACRA2 against
// the 1024 px pixels. encoder_gain.py scores them with the public one.
//   encoder-gain OUT_DIR QUALITIES(comma-separated) PHOTO...
#include <stdint.h>

#include "attache_jpeg_encode.h"
#include "photo_1024.h"

static void write_file(const char *path, const uint8_t *data, size_t length) {
    FILE *f = fopen(path, "wb");
    if (!f) exit(1);
    fwrite(data, 1, length, f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *named = getenv("TABLES");
    int tables = named && strcmp(named, "robidoux") == 0 ? ATT_JPEG_TABLES_ROBIDOUX : ATT_JPEG_TABLES_JPEGLI;
    int qualities[32], count = 0;
    for (char *q = strtok(argv[2], ","); q && count < 32; q = strtok(NULL, ",")) qualities[count++] = atoi(q);
    for (int i = 3; i < argc; i++) {
        int w, h;
        uint8_t *pixels = load(argv[i], &w, &h);
        if (!pixels) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.ppm", argv[1], i - 3);
        FILE *f = fopen(path, "wb");
        fprintf(f, "P6\n%d %d\n255\n", w, h);
        fwrite(pixels, 1, (size_t)w * h * 3, f);
        fclose(f);
        att_error error;
        att_quality_ref *ref = att_quality_prepare(pixels, w, h, (size_t)w * 3, 3, &error);
        uint8_t *decoded = malloc((size_t)w * h * 3);
        for (int k = 0; k < count; k++) {
            for (int trellis = 0; trellis <= 1; trellis++) {
                uint8_t *data = NULL;
                size_t length = 0;
                double start = now();
                int status = att_jpeg_encode(pixels, w, h, (size_t)w * 3, 3, qualities[k], tables,
                                             ATT_JPEG_CHROMA_SHARP, trellis, &data, &length, &error);
                double ms = (now() - start) * 1000;
                if (status != 0) {
                    fprintf(stderr, "%s: %s\n", argv[i], error.message);
                    return 1;
                }
                snprintf(path, sizeof path, "%s/%d-%s-%d.jpg", argv[1], i - 3, trellis ? "trellis" : "fast",
                         qualities[k]);
                write_file(path, data, length);
                double score = 0;
                att_jpeg_decode_into(data, length, w, h, 3, decoded, (size_t)w * 3, &error);
                att_quality_score(ref, pixels, (size_t)w * 3, decoded, (size_t)w * 3, 3, &score, &error);
                printf("%d\t%s\t%d\t%zu\t%.2f\t%.3f\n", i - 3, trellis ? "trellis" : "fast", qualities[k], length, ms,
                       score);
                att_free(data);
            }
        }
        free(decoded);
        att_quality_free(ref);
        free(pixels);
    }
    return 0;
}
