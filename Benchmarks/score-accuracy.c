// The in-process score against the public SSIMULACRA2: each photo cut to 1024 px
// (photo_1024.h) is written to DIR as N.ppm, and encoded at quality 50, 65, 80 and 90 (Robidoux's
// tables, 4:2:0) as N_Q.jpg; a line per encode says "N Q SCORE" (the in-process score before
// the search's calibration). Built twice by score-accuracy.sh: as quality.c is, and with every
// row pooled.
//   score-accuracy DIR FILE...
#include "attache_jpeg_encode.h"
#include "photo_1024.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: score-accuracy DIR FILE...\n");
        return 2;
    }
    const int qualities[] = {50, 65, 80, 90};
    for (int i = 2; i < argc; i++) {
        int w, h;
        uint8_t *pixels = load(argv[i], &w, &h);
        if (!pixels) continue;
        size_t stride = (size_t)w * 3;
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.ppm", argv[1], i - 1);
        FILE *file = fopen(path, "wb");
        if (!file) return 1;
        fprintf(file, "P6\n%d %d\n255\n", w, h);
        fwrite(pixels, 1, stride * h, file);
        fclose(file);
        att_error error;
        att_quality_ref *ref = att_quality_prepare(pixels, w, h, stride, 3, &error);
        uint8_t *decoded = malloc(stride * h);
        for (int k = 0; k < 4; k++) {
            uint8_t *data;
            size_t length;
            double score;
            att_jpeg_encode(pixels, w, h, stride, 3, qualities[k], ATT_JPEG_TABLES_ROBIDOUX, ATT_JPEG_CHROMA_SHARP, 0,
                            &data, &length, &error);
            snprintf(path, sizeof path, "%s/%d_%d.jpg", argv[1], i - 1, qualities[k]);
            file = fopen(path, "wb");
            if (!file) return 1;
            fwrite(data, 1, length, file);
            fclose(file);
            att_jpeg_decode_into(data, length, w, h, 3, decoded, stride, &error);
            att_quality_score(ref, pixels, stride, decoded, stride, 3, &score, &error);
            printf("%d %d %.3f\n", i - 1, qualities[k], score);
            free(data);
        }
        free(decoded);
        att_quality_free(ref);
        free(pixels);
    }
    return 0;
}
