// The parts of one `--quality auto` encode timed alone, from the C functions the search calls
// (Sources/CAttacheCodecs): the reference's preparation, the blocking gate's (with the picture
// statistics), one encode as `auto` makes a candidate (quality 80, jpegli's tables, sharpened
// 4:2:0, progressive scans, its coefficients held), its read-back from the held coefficients
// (and, beside it and not counted, from its file), its score and its blocking. Each photo is cut to 1024 px
// (photo_1024.h) and timed ROUNDS times. Built and run by score-parts.sh.
//   score-parts ROUNDS FILE...
#include "attache_jpeg_encode.h"
#include "photo_1024.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: score-parts ROUNDS FILE...\n");
        return 2;
    }
    int rounds = atoi(argv[1]), pictures = 0;
    enum { PARTS = 7, ENCODE = 2, FILE_READ = 4 };
    const char *names[PARTS] = {"prepare the reference",
                                "the gate and statistics",
                                "encode (q80)",
                                "read back (held)",
                                "(read back the file)",
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
            att_jpeg_held *held = NULL;
            t[0] = now();
            att_quality_ref *ref = att_quality_prepare(pixels, w, h, stride, 3, &error);
            t[1] = now();
            att_blocking_ref *flat = att_blocking_prepare(pixels, stride, w, h, 3, 1.0, features);
            t[2] = now();
            att_jpeg_encode_held(pixels, w, h, stride, 3, 80, ATT_JPEG_TABLES_JPEGLI, ATT_JPEG_CHROMA_SHARP,
                                 ATT_JPEG_PROGRESSIVE, &data, &length, &held, &error);
            t[3] = now();
            att_jpeg_held_decode(held, w, h, 3, decoded, stride, &error);
            t[4] = now();
            att_jpeg_decode_into(data, length, w, h, 3, decoded, stride, &error);
            t[5] = now();
            att_quality_score(ref, pixels, stride, decoded, stride, 3, &score, &error);
            t[6] = now();
            att_blocking_measure(flat, decoded, stride, 95.0);
            t[7] = now();
            att_jpeg_held_free(held);
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
        if (p != ENCODE && p != FILE_READ) over += spent[p];
    }
    printf("%d pictures, %d rounds: the score's parts are %.2fx the encode\n", pictures, rounds, over / spent[ENCODE]);
    return 0;
}
