// Decodes a JPEG through the shim's decoder (Sources/CAttacheCodecs/jpeg.c) at a DCT scale, its
// progressive scans read by libjpeg or by the shim (jpeg_scans.c), best of RUNS; prints the time,
// who read the scans and a digest of the pixels (the same both ways). Built and run by scans.sh.
//   scans FILE shim(0|1) [NUMERATOR=2] [RUNS=7]
#include <stdio.h>
#include <stdlib.h>

#include "attache_codecs.h"
#include "decode_harness.h"

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    long length = 0;
    unsigned char *data = read_whole(argv[1], &length);
    if (!data) return 2;
    int shim = atoi(argv[2]);
    int numerator = argc > 3 ? atoi(argv[3]) : 2;
    int runs = argc > 4 ? atoi(argv[4]) : 7;
    double best = 1e9;
    int32_t read_by = 0;
    uint64_t digest = UINT64_C(14695981039346656037);
    for (int run = 0; run < runs; run++) {
        att_jpeg_limits limits = {0};
        limits.scans = shim ? ATT_JPEG_SCANS_SHIM : ATT_JPEG_SCANS_LIBJPEG;
        att_jpeg_header header;
        att_error error = {0};
        double start = seconds();
        att_jpeg_decoder *decoder = att_jpeg_open(data, (size_t)length, limits, &header, &error);
        uint32_t width = 0, height = 0;
        if (!decoder || att_jpeg_start(decoder, numerator, 3, 1, &width, &height, &error) != ATT_OK) {
            printf("%s\tfailed: %s\n", argv[1], error.message);
            return 1;
        }
        size_t stride = (size_t)width * 3;
        uint8_t *rows = malloc(stride * 16);
        for (uint32_t done = 0; done < height;) {
            int32_t got = 0;
            if (att_jpeg_read_rows(decoder, rows, stride, 16, &got, &error) != ATT_OK || got <= 0) return 1;
            if (run == 0) digest = digest_bytes(digest, rows, stride * (size_t)got);
            done += (uint32_t)got;
        }
        read_by = att_jpeg_shim_read_scans(decoder);
        att_jpeg_close(decoder);
        free(rows);
        double took = seconds() - start;
        if (took < best) best = took;
    }
    printf("%s\t%s\t%.1f ms\tscans read by %s\tpixels %016llx\n", argv[1], shim ? "shim" : "libjpeg", best * 1000,
           read_by == 1 ? "the shim" : "libjpeg", (unsigned long long)digest);
    free(data);
    return 0;
}
