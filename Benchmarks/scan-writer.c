// The progressive scans written by the shim (jpeg_scan_writer.c) against libjpeg writing them
// (ATT_JPEG_LIBJPEG_SCANS), beside one baseline scan (a fixed quality's encode): each photo at
// 1024 px as `auto` encodes it (jpegli's tables, sharpened 4:2:0, quality 80), the fast encoder
// and the thorough one, the best of ROUNDS each; every pair of files compared byte for byte.
//   work/scan-writer ROUNDS PHOTO...
#include <stdint.h>

#include "photo_1024.h"

#include "attache_jpeg_encode.h"

enum { BASELINE, SHIM, LIBJPEG, THOROUGH_SHIM, THOROUGH_LIBJPEG, KINDS };
static const char *names[KINDS] = {"fast, one baseline scan", "fast, scans by the shim", "fast, scans by libjpeg",
                                   "thorough, scans by the shim", "thorough, scans by libjpeg"};
static const int flags[KINDS] = {0, ATT_JPEG_PROGRESSIVE, ATT_JPEG_PROGRESSIVE | ATT_JPEG_LIBJPEG_SCANS,
                                 ATT_JPEG_TRELLIS, ATT_JPEG_TRELLIS | ATT_JPEG_LIBJPEG_SCANS};

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const int rounds = atoi(argv[1]);
    double total[KINDS] = {0};
    size_t bytes[KINDS] = {0};
    int photos = 0, same = 0;
    for (int i = 2; i < argc; i++) {
        int w, h;
        uint8_t *pixels = load(argv[i], &w, &h);
        if (!pixels) continue;
        photos++;
        uint8_t *file[KINDS] = {0};
        size_t length[KINDS] = {0};
        double best[KINDS];
        for (int k = 0; k < KINDS; k++) best[k] = 1e9;
        // Interleaved rounds: the machine's drift falls on every kind alike.
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < KINDS; k++) {
                uint8_t *data = NULL;
                size_t n = 0;
                att_error error;
                const double start = now();
                int status =
                    att_jpeg_encode(pixels, (uint32_t)w, (uint32_t)h, (size_t)w * 3, 3, 80, ATT_JPEG_TABLES_JPEGLI,
                                    ATT_JPEG_CHROMA_SHARP, flags[k], &data, &n, &error);
                const double took = now() - start;
                if (status != 0) {
                    fprintf(stderr, "%s: %s\n", argv[i], error.message);
                    return 1;
                }
                if (took < best[k]) best[k] = took;
                if (r == 0) {
                    file[k] = data;
                    length[k] = n;
                } else {
                    att_free(data);
                }
            }
        }
        const int fast = length[SHIM] == length[LIBJPEG] && !memcmp(file[SHIM], file[LIBJPEG], length[SHIM]);
        const int thorough = length[THOROUGH_SHIM] == length[THOROUGH_LIBJPEG] &&
                             !memcmp(file[THOROUGH_SHIM], file[THOROUGH_LIBJPEG], length[THOROUGH_SHIM]);
        same += fast && thorough;
        printf("%-40s %4dx%-4d", strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i], w, h);
        for (int k = 0; k < KINDS; k++) {
            total[k] += best[k];
            bytes[k] += length[k];
            printf(" %7.2f", best[k] * 1e3);
            att_free(file[k]);
        }
        printf(" ms%s\n", fast && thorough ? "" : "  FILES DIFFER");
        free(pixels);
    }
    printf("\n%d photos, %d of them the same files both ways; per photo, the best of %d:\n", photos, same, rounds);
    for (int k = 0; k < KINDS; k++)
        printf("  %-30s %7.2f ms  %9zu bytes\n", names[k], total[k] * 1e3 / photos, bytes[k]);
    return same == photos ? 0 : 1;
}
