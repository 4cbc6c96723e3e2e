// Decodes a JPEG at a DCT scale with its coefficients in libjpeg's arrays or packed
// (Sources/CAttacheCodecs/jpeg_coefficients.c), best of RUNS, and prints the time and the bytes
// held. Built and run by coefficients.sh.
//   coefficients FILE packed(0|1) [NUMERATOR=2] [RUNS=7]
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

#include "jpeg_coefficients.h"

#include "decode_harness.h"

static jmp_buf failed;

void att_jpeg_fail(j_common_ptr cinfo, int32_t status, const char *message) {
    (void)cinfo;
    fprintf(stderr, "failed (%d): %s\n", status, message);
    longjmp(failed, 1);
}

static void on_error(j_common_ptr cinfo) {
    char message[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, message);
    att_jpeg_fail(cinfo, -1, message);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    long length = 0;
    unsigned char *data = read_whole(argv[1], &length);
    if (!data) return 2;
    int packed = atoi(argv[2]);
    int numerator = argc > 3 ? atoi(argv[3]) : 2;
    int runs = argc > 4 ? atoi(argv[4]) : 7;
    double best = 1e9;
    // The decoded pixels' FNV-1a digest (of the first run, which the best time leaves out when
    // there are more): the same for both ways.
    uint64_t dense = 0, bound = 0, peak = 0, digest = UINT64_C(14695981039346656037);
    for (int run = 0; run < runs; run++) {
        struct jpeg_decompress_struct cinfo;
        struct jpeg_error_mgr err;
        cinfo.err = jpeg_std_error(&err);
        err.error_exit = on_error;
        if (setjmp(failed)) return 1;
        double start = seconds();
        jpeg_create_decompress(&cinfo);
        jpeg_mem_src(&cinfo, data, (unsigned long)length);
        jpeg_read_header(&cinfo, TRUE);
        cinfo.scale_num = (unsigned)numerator;
        cinfo.scale_denom = 8;
        cinfo.dct_method = JDCT_ISLOW;
        dense = jpeg_has_multiple_scans(&cinfo) ? att_coef_dense_bytes(&cinfo) : 0;
        bound = att_coef_compact_bound(&cinfo, (size_t)length);
        att_coef_store *store = packed && bound ? att_coef_store_install(&cinfo, bound) : NULL;
        jpeg_start_decompress(&cinfo);
        JSAMPROW row = malloc((size_t)cinfo.output_width * (size_t)cinfo.output_components);
        while (cinfo.output_scanline < cinfo.output_height) {
            jpeg_read_scanlines(&cinfo, &row, 1);
            if (run == 0)
                digest = digest_bytes(digest, row, (size_t)cinfo.output_width * (size_t)cinfo.output_components);
        }
        jpeg_finish_decompress(&cinfo);
        peak = att_coef_store_peak(store);
        jpeg_destroy_decompress(&cinfo);
        att_coef_store_free(store);
        free(row);
        double took = seconds() - start;
        if (took < best) best = took;
    }
    printf("%s\t%s\t%.1f ms\tlibjpeg's arrays %.1f MB\tbound %.1f MB\theld %.1f MB\tpixels %016llx\n", argv[1],
           packed ? "packed" : "libjpeg", best * 1000, (double)dense / 1e6, (double)bound / 1e6, (double)peak / 1e6,
           (unsigned long long)digest);
    free(data);
    return 0;
}
