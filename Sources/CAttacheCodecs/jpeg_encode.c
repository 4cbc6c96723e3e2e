// libjpeg-turbo encode (the fast encoder, and the thorough one's set-up), and reading an encode
// back for scoring. Every entry point sets its own setjmp before calling libjpeg.
#include "jpeg_private.h"
#include "jpeg_chroma.h"
#include "jpeg_trellis.h"

#include <setjmp.h>
#include <stdlib.h>

// MARK: - Encoder

// N. Robidoux's table (ImageMagick's; mozjpeg's "ImageMagick" table), natural order. Steps over
// 255 are clamped by libjpeg for a baseline file.
static const unsigned att_robidoux[DCTSIZE2] = {
    16, 16,  16,  18,  25, 37, 56, 85,  16,  17,  20,  27,  34, 40, 53,  75,  16,  20,  24,  31, 43, 62,
    91, 135, 18,  27,  31, 40, 53, 74,  106, 156, 25,  34,  43, 53, 69,  94,  131, 189, 37,  40, 62, 74,
    94, 124, 169, 238, 56, 53, 91, 106, 131, 169, 226, 311, 85, 75, 135, 156, 189, 238, 311, 418};

static double table_sum(const unsigned table[DCTSIZE2]) {
    double sum = 0;
    for (int i = 0; i < DCTSIZE2; i++) sum += table[i];
    return sum;
}

int32_t att_jpeg_equivalent_quality(int32_t ijg_quality, int32_t tables) {
    if (tables != ATT_JPEG_TABLES_ROBIDOUX) return ijg_quality;
    int q = ijg_quality < 1 ? 1 : (ijg_quality > 100 ? 100 : ijg_quality);
    double scale =
        (q < 50 ? 5000.0 / q : 200.0 - 2.0 * q) * table_sum(att_jpeg_std_luminance) / table_sum(att_robidoux);
    double quality = scale <= 100.0 ? (200.0 - scale) / 2.0 : 5000.0 / scale;
    int32_t rounded = (int32_t)(quality + 0.5);
    return rounded < 1 ? 1 : (rounded > 100 ? 100 : rounded);
}

int32_t att_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                        int32_t quality, int32_t tables, int32_t chroma, int32_t trellis, uint8_t **output,
                        size_t *output_length, att_error *error) {
    *output = NULL;
    *output_length = 0;
    if (channels != 1 && channels != 3) {
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "channels must be 1 or 3");
        return ATT_ERR_INTERNAL;
    }
    struct jpeg_compress_struct cinfo;
    att_jpeg_error_mgr err;
    // Volatile: these change after setjmp and are read after a longjmp.
    unsigned char *volatile buffer = NULL;
    volatile unsigned long size = 0;
    att_jpeg_install_errors(&err);
    cinfo.err = &err.base;
    if (setjmp(err.jump)) {
        att_jpeg_copy_error(&err, error);
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        return error->status;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, (unsigned char **)&buffer, (unsigned long *)&size);
    cinfo.image_width = width;
    cinfo.image_height = height;
    cinfo.input_components = channels;
    cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    int clamped = quality < 1 ? 1 : (quality > 100 ? 100 : quality);
    jpeg_set_quality(&cinfo, clamped, TRUE);
    if (tables == ATT_JPEG_TABLES_ROBIDOUX) {
        int scale = jpeg_quality_scaling(clamped);
        jpeg_add_quant_table(&cinfo, 0, att_robidoux, scale, TRUE);
        jpeg_add_quant_table(&cinfo, 1, att_robidoux, scale, TRUE);
    }
    cinfo.optimize_coding = TRUE;
    cinfo.dct_method = JDCT_ISLOW;
    const int full_chroma = chroma == ATT_JPEG_CHROMA_FULL;
    if (channels == 3) {
        // 4:2:0: luma 2x2, chroma 1x1 (4:4:4: all 1x1).
        cinfo.comp_info[0].h_samp_factor = full_chroma ? 1 : 2;
        cinfo.comp_info[0].v_samp_factor = full_chroma ? 1 : 2;
        cinfo.comp_info[1].h_samp_factor = 1;
        cinfo.comp_info[1].v_samp_factor = 1;
        cinfo.comp_info[2].h_samp_factor = 1;
        cinfo.comp_info[2].v_samp_factor = 1;
    }
    cinfo.write_JFIF_header = TRUE;
    if (trellis) {
        att_jpeg_write_trellis(&cinfo, pixels, stride, chroma == ATT_JPEG_CHROMA_SHARP);
    } else if (chroma == ATT_JPEG_CHROMA_SHARP && channels == 3) {
        att_jpeg_write_sharp(&cinfo, pixels, stride);
    } else {
        jpeg_start_compress(&cinfo, TRUE);
        while (cinfo.next_scanline < cinfo.image_height) {
            JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * stride);
            jpeg_write_scanlines(&cinfo, &row, 1);
        }
        jpeg_finish_compress(&cinfo);
    }
    jpeg_destroy_compress(&cinfo);
    *output = buffer;
    *output_length = size;
    return ATT_OK;
}

// MARK: - Reading back an encode

int32_t att_jpeg_decode_into(const uint8_t *data, size_t length, uint32_t width, uint32_t height, int32_t channels,
                             uint8_t *output, size_t stride, att_error *error) {
    struct jpeg_decompress_struct cinfo;
    att_jpeg_error_mgr err;
    att_jpeg_install_errors(&err);
    cinfo.err = &err.base;
    if (setjmp(err.jump)) {
        att_jpeg_copy_error(&err, error);
        jpeg_destroy_decompress(&cinfo);
        return error->status;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_width != width || cinfo.output_height != height || cinfo.output_components != channels) {
        jpeg_destroy_decompress(&cinfo);
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "the encode read back is not the size it was written at");
        return ATT_ERR_INTERNAL;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = (JSAMPROW)(output + (size_t)cinfo.output_scanline * stride);
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return ATT_OK;
}
