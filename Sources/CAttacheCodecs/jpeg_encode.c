// libjpeg-turbo encode (the fast encoder, and the thorough one's set-up), and reading an encode
// back for scoring. Every entry point sets its own setjmp before calling libjpeg.
#include "jpeg_private.h"
#include "jpeg_chroma.h"
#include "jpeg_coefficients.h"
#include "jpeg_trellis.h"

#include <jpegint.h>

#include <math.h>
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

// jpegli's base tables for YCbCr (libjxl's lib/jpegli/quant.cc, kBaseQuantMatrixYCbCr, in the
// version the jpeg-encoder crate carries), natural order: luma, then chroma. Each step is
// 1.7397 × its base × a scale of the distance (linear to 1.5, then growing with the power
// jpegli gives each frequency: the low ones slower), so the tables get steeper, not just
// coarser, as the quality falls.
static const float jpegli_luma[DCTSIZE2] = {
    1.2397409f, 1.7227115f, 2.9212167f, 2.8127374f, 3.3398197f, 3.4636038f, 3.8409152f, 3.8695600f,
    1.7227115f, 2.0928894f, 2.8456761f, 2.7045068f, 3.4407674f, 3.1662324f, 4.0252087f, 4.0353245f,
    2.9212167f, 2.8456761f, 2.9587404f, 3.3862949f, 3.6195238f, 3.9046280f, 3.7578358f, 4.0496073f,
    2.8127374f, 2.7045068f, 3.3862949f, 3.1295824f, 3.7035120f, 4.3547106f, 4.2037473f, 3.9457080f,
    3.3398197f, 3.4407674f, 3.6195238f, 3.7035120f, 4.0587358f, 4.8218517f, 4.8176765f, 4.1348114f,
    3.4636038f, 3.1662324f, 3.9046280f, 4.3547106f, 4.8218517f, 5.3049545f, 5.0859237f, 4.6540699f,
    3.8409152f, 4.0252087f, 3.7578358f, 4.2037473f, 4.8176765f, 5.0859237f, 5.2007284f, 5.1318064f,
    3.8695600f, 4.0353245f, 4.0496073f, 3.9457080f, 4.1348114f, 4.6540699f, 5.1318064f, 5.3104744f};
static const float jpegli_chroma[DCTSIZE2] = {
    1.4173750f, 3.4363859f, 3.7492752f, 4.2684789f, 4.8839750f, 5.1342621f, 5.3053384f, 5.2941780f,
    3.4363859f, 3.3934350f, 3.7151461f, 4.4069610f, 5.0667987f, 5.0575762f, 5.3007593f, 5.2948112f,
    3.7492752f, 3.7151461f, 4.0639019f, 4.7990928f, 5.0091391f, 5.1409049f, 5.2947245f, 5.2915106f,
    4.2684789f, 4.4069610f, 4.7990928f, 4.7969780f, 5.1343479f, 5.1429081f, 5.3214135f, 5.4269948f,
    4.8839750f, 5.0667987f, 5.0091391f, 5.1343479f, 5.2924175f, 5.2911520f, 5.4630551f, 5.5700078f,
    5.1342621f, 5.0575762f, 5.1409049f, 5.1429081f, 5.2911520f, 5.3632350f, 5.5484371f, 5.5723948f,
    5.3053384f, 5.3007593f, 5.2947245f, 5.3214135f, 5.4630551f, 5.5484371f, 5.5720239f, 5.5726733f,
    5.2941780f, 5.2948112f, 5.2915106f, 5.4269948f, 5.5700078f, 5.5723948f, 5.5726733f, 5.5728049f};
static const float jpegli_exponent[DCTSIZE2] = {
    1.00f, 0.51f, 0.67f, 0.74f, 1.00f, 1.00f, 1.00f, 1.00f, 0.51f, 0.66f, 0.69f, 0.87f, 1.00f, 1.00f, 1.00f, 1.00f,
    0.67f, 0.69f, 0.84f, 0.83f, 0.96f, 1.00f, 1.00f, 1.00f, 0.74f, 0.87f, 0.83f, 1.00f, 1.00f, 0.91f, 0.91f, 1.00f,
    1.00f, 1.00f, 0.96f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 0.91f, 1.00f, 1.00f, 1.00f, 1.00f,
    1.00f, 1.00f, 1.00f, 0.91f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f, 1.00f};

// The chroma steps against jpegli's at 4:2:0: half (a chroma sample covers 2 × 2 pixels; the
// best of 0.3-1.5 on the calibration photos at an equal SSIMULACRA2, docs/quality.md). At
// 4:4:4 its own.
static const double jpegli_chroma_420 = 0.5;

void att_jpeg_jpegli_tables(int32_t quality, int32_t half_chroma, unsigned luma[DCTSIZE2], unsigned chroma[DCTSIZE2]) {
    int q = quality < 1 ? 1 : (quality > 100 ? 100 : quality);
    // A distance for the quality number on libjpeg's scale of its tables, fitted so that a number
    // gives the SSIMULACRA2 Robidoux's tables give at it (the median photo of the calibration
    // set, qualities 68-94; docs/quality.md): the search's first guess and its steps then hold
    // for both, and these tables reach each score in fewer bytes. (jpegli's own scale reads
    // about 14 numbers higher at a score of 80.)
    const int libjpeg_scale = jpeg_quality_scaling(q);
    double distance = fmax(0.05, 0.087 * libjpeg_scale - 0.1);
    for (int k = 0; k < DCTSIZE2; k++) {
        double e = jpegli_exponent[k];
        double scale = distance < 1.5 ? distance : fmax(0.5 * distance, pow(1.5, 1.0 - e) * pow(distance, e));
        double l = 1.7396601 * jpegli_luma[k] * scale;
        double c = 1.7396601 * jpegli_chroma[k] * scale * (half_chroma ? jpegli_chroma_420 : 1.0);
        // The lowest luma frequencies (u + v <= 2) no coarser than Robidoux's: jpegli's are up to
        // twice as coarse there (its tables count on adaptive quantisation, which a baseline
        // file's one table cannot do), and flat skies then show their 8 × 8 tiles at the
        // blocking gate, which costs the search two more encodes (docs/quality.md).
        if (k / DCTSIZE + k % DCTSIZE <= 2) l = fmin(l, att_robidoux[k] * libjpeg_scale / 100.0);
        luma[k] = l < 1 ? 1 : (l > 255 ? 255 : (unsigned)(l + 0.5));
        chroma[k] = c < 1 ? 1 : (c > 255 ? 255 : (unsigned)(c + 0.5));
    }
}

// The mean step of jpegli's luma table at `quality`.
static double jpegli_mean_luma_step(int q) {
    unsigned luma[DCTSIZE2], chroma[DCTSIZE2];
    att_jpeg_jpegli_tables(q, 1, luma, chroma);
    return table_sum(luma) / DCTSIZE2;
}

int32_t att_jpeg_equivalent_quality(int32_t ijg_quality, int32_t tables) {
    if (tables != ATT_JPEG_TABLES_ROBIDOUX && tables != ATT_JPEG_TABLES_JPEGLI) return ijg_quality;
    int q = ijg_quality < 1 ? 1 : (ijg_quality > 100 ? 100 : ijg_quality);
    const double ijg_scale = q < 50 ? 5000.0 / q : 200.0 - 2.0 * q;
    if (tables == ATT_JPEG_TABLES_ROBIDOUX) {
        double scale = ijg_scale * table_sum(att_jpeg_std_luminance) / table_sum(att_robidoux);
        double quality = scale <= 100.0 ? (200.0 - scale) / 2.0 : 5000.0 / scale;
        int32_t rounded = (int32_t)(quality + 0.5);
        return rounded < 1 ? 1 : (rounded > 100 ? 100 : rounded);
    }
    // jpegli's tables are not one table scaled: the quality whose mean luma step is nearest.
    const double want = ijg_scale * table_sum(att_jpeg_std_luminance) / (100.0 * DCTSIZE2);
    int best = 1;
    double best_gap = INFINITY;
    for (int candidate = 1; candidate <= 100; candidate++) {
        double gap = fabs(jpegli_mean_luma_step(candidate) - want);
        if (gap < best_gap) {
            best = candidate;
            best_gap = gap;
        }
    }
    return best;
}

// The quantisation tables of `tables` at `quality` (clamped to 1-100).
static void set_tables(j_compress_ptr cinfo, int32_t quality, int32_t tables, int32_t chroma) {
    int clamped = quality < 1 ? 1 : (quality > 100 ? 100 : quality);
    jpeg_set_quality(cinfo, clamped, TRUE);
    if (tables == ATT_JPEG_TABLES_ROBIDOUX) {
        int scale = jpeg_quality_scaling(clamped);
        jpeg_add_quant_table(cinfo, 0, att_robidoux, scale, TRUE);
        jpeg_add_quant_table(cinfo, 1, att_robidoux, scale, TRUE);
    } else if (tables == ATT_JPEG_TABLES_JPEGLI) {
        unsigned luma[DCTSIZE2], chroma_steps[DCTSIZE2];
        att_jpeg_jpegli_tables(clamped, chroma != ATT_JPEG_CHROMA_FULL, luma, chroma_steps);
        jpeg_add_quant_table(cinfo, 0, luma, 100, TRUE);
        jpeg_add_quant_table(cinfo, 1, chroma_steps, 100, TRUE);
    }
}

// MARK: - The fast encoder's progressive scans

// libjpeg's whole-image coefficient arrays, recorded as its coefficient controller asks for them
// (one a component, in order, at jpeg_start_compress); `cinfo->client_data` points here.
typedef struct {
    jvirt_barray_ptr arrays[MAX_COMPONENTS];
    int count;
    jvirt_barray_ptr (*request)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
} recorded_arrays;

static jvirt_barray_ptr request_recorded(j_common_ptr cinfo, int pool_id, boolean pre_zero, JDIMENSION blocks_per_row,
                                         JDIMENSION rows, JDIMENSION max_access) {
    recorded_arrays *recorded = cinfo->client_data;
    jvirt_barray_ptr array = recorded->request(cinfo, pool_id, pre_zero, blocks_per_row, rows, max_access);
    if (recorded->count < MAX_COMPONENTS) recorded->arrays[recorded->count] = array;
    recorded->count++;
    return array;
}

static JBLOCKROW recorded_row(j_compress_ptr cinfo, void *context, int component, JDIMENSION row) {
    recorded_arrays *recorded = context;
    return cinfo->mem->access_virt_barray((j_common_ptr)cinfo, recorded->arrays[component], row, 1, FALSE)[0];
}

// A destination that keeps nothing (libjpeg writes only its file header to it here).
typedef struct {
    struct jpeg_destination_mgr base;
    JOCTET bytes[256];
} discard_destination;

static void discard_init(j_compress_ptr cinfo) {
    discard_destination *d = (discard_destination *)cinfo->dest;
    d->base.next_output_byte = d->bytes;
    d->base.free_in_buffer = sizeof d->bytes;
}

static boolean discard_empty(j_compress_ptr cinfo) {
    discard_init(cinfo);
    return TRUE;
}

static void discard_term(j_compress_ptr cinfo) { (void)cinfo; }

// libjpeg's first pass hands each MCU to its entropy encoder to count its symbols for the
// second; with the shim writing the file there is nothing to count.
static boolean skip_mcu(j_compress_ptr cinfo, JBLOCKROW *blocks) {
    (void)cinfo;
    (void)blocks;
    return TRUE;
}

// Every row of `pixels` into libjpeg, from jpeg_start_compress on (not finished); `encode_mcu`,
// when given, in place of its entropy encoder's (jpegint.h).
static void write_rows(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride, int sharp,
                       boolean (*encode_mcu)(j_compress_ptr, JBLOCKROW *)) {
    cinfo->raw_data_in = sharp ? TRUE : FALSE;
    jpeg_start_compress(cinfo, TRUE);
    if (encode_mcu) cinfo->entropy->encode_mcu = encode_mcu;
    if (sharp) {
        att_jpeg_write_sharp(cinfo, pixels, stride);
        return;
    }
    while (cinfo->next_scanline < cinfo->image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo->next_scanline * stride);
        jpeg_write_scanlines(cinfo, &row, 1);
    }
}

// The fast encoder's progressive file: libjpeg converts, downsamples and quantises the picture
// as for one baseline scan with optimised tables (its first pass, which holds the coefficients
// of the whole picture for the second), and the shim writes the scans from those coefficients
// (jpeg_scan_writer.c) instead of libjpeg's second pass: the file libjpeg writes with the same
// scans, in less time. Into `*data` (malloc'd).
static void write_shim_scans(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride, int sharp,
                             const jpeg_scan_info *scans, int count, unsigned char **data, unsigned long *length,
                             att_jpeg_held *volatile *held) {
    recorded_arrays recorded = {.request = cinfo->mem->request_virt_barray};
    discard_destination discard = {.base = {.init_destination = discard_init,
                                            .empty_output_buffer = discard_empty,
                                            .term_destination = discard_term}};
    struct jpeg_destination_mgr *destination = cinfo->dest;
    cinfo->dest = &discard.base;
    cinfo->client_data = &recorded;
    cinfo->mem->request_virt_barray = request_recorded;
    write_rows(cinfo, pixels, stride, sharp, skip_mcu);
    cinfo->mem->request_virt_barray = recorded.request;
    if (recorded.count != cinfo->num_components)
        att_jpeg_fail((j_common_ptr)cinfo, ATT_ERR_INTERNAL, "libjpeg held its coefficients in an unexpected shape");
    if (!att_jpeg_write_scans(cinfo, scans, count, recorded_row, &recorded, data, length))
        att_jpeg_fail((j_common_ptr)cinfo, ATT_ERR_MEMORY_LIMIT, "no memory for the progressive scans");
    if (held) att_jpeg_hold(cinfo, recorded_row, &recorded, held);
    jpeg_abort_compress(cinfo);
    cinfo->dest = destination;
    cinfo->client_data = NULL;
}

// MARK: - Encoding

// `cinfo`'s picture, tables, chroma sampling and optimised Huffman tables.
static void set_up(j_compress_ptr cinfo, uint32_t width, uint32_t height, int32_t channels, int32_t quality,
                   int32_t tables, int32_t chroma) {
    cinfo->image_width = width;
    cinfo->image_height = height;
    cinfo->input_components = channels;
    cinfo->in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    set_tables(cinfo, quality, tables, chroma);
    cinfo->optimize_coding = TRUE;
    cinfo->dct_method = JDCT_ISLOW;
    const int full_chroma = chroma == ATT_JPEG_CHROMA_FULL;
    if (channels == 3) {
        // 4:2:0: luma 2x2, chroma 1x1 (4:4:4: all 1x1).
        cinfo->comp_info[0].h_samp_factor = full_chroma ? 1 : 2;
        cinfo->comp_info[0].v_samp_factor = full_chroma ? 1 : 2;
        cinfo->comp_info[1].h_samp_factor = 1;
        cinfo->comp_info[1].v_samp_factor = 1;
        cinfo->comp_info[2].h_samp_factor = 1;
        cinfo->comp_info[2].v_samp_factor = 1;
    }
    cinfo->write_JFIF_header = TRUE;
}

int32_t att_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                        int32_t quality, int32_t tables, int32_t chroma, int32_t flags, uint8_t **output,
                        size_t *output_length, att_error *error) {
    return att_jpeg_encode_held(pixels, width, height, stride, channels, quality, tables, chroma, flags, output,
                                output_length, NULL, error);
}

int32_t att_jpeg_encode_held(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                             int32_t quality, int32_t tables, int32_t chroma, int32_t flags, uint8_t **output,
                             size_t *output_length, att_jpeg_held **held, att_error *error) {
    *output = NULL;
    *output_length = 0;
    if (held) *held = NULL;
    if (channels != 1 && channels != 3) {
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "channels must be 1 or 3");
        return ATT_ERR_INTERNAL;
    }
    struct jpeg_compress_struct cinfo;
    att_jpeg_error_mgr err;
    // Volatile: these change after setjmp and are read after a longjmp.
    unsigned char *volatile buffer = NULL;
    volatile unsigned long size = 0;
    // The thorough encoder's second file (its progressive scans or its baseline scan, see
    // att_jpeg_write_trellis), or the shim's scans: the smaller of the two is kept.
    unsigned char *volatile other = NULL;
    volatile unsigned long other_size = 0;
    att_jpeg_held *volatile kept = NULL;
    att_jpeg_install_errors(&err);
    cinfo.err = &err.base;
    if (setjmp(err.jump)) {
        att_jpeg_copy_error(&err, error);
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        free(other);
        att_jpeg_held_free(kept);
        return error->status;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, (unsigned char **)&buffer, (unsigned long *)&size);
    set_up(&cinfo, width, height, channels, quality, tables, chroma);
    const int trellis = flags & ATT_JPEG_TRELLIS;
    const int sharp = chroma == ATT_JPEG_CHROMA_SHARP && channels == 3;
    int count = 0;
    const jpeg_scan_info *scans = att_jpeg_scan_script(channels, &count);
    // The shim writes the progressive scans unless told to leave them to libjpeg.
    const int shim_scans = !(flags & ATT_JPEG_LIBJPEG_SCANS) && att_jpeg_scans_writable(&cinfo, scans, count);
    int other_is_scans = 0;
    if (trellis) {
        att_jpeg_write_trellis(&cinfo, pixels, stride, sharp, shim_scans, (unsigned char **)&other,
                               (unsigned long *)&other_size);
        other_is_scans = shim_scans;
    } else if (flags & ATT_JPEG_PROGRESSIVE && shim_scans) {
        unsigned char *data = NULL;
        unsigned long length = 0;
        write_shim_scans(&cinfo, pixels, stride, sharp, scans, count, &data, &length, held ? &kept : NULL);
        free(buffer);
        buffer = data;
        size = length;
    } else {
        if (flags & ATT_JPEG_PROGRESSIVE) att_jpeg_progressive_scans(&cinfo);
        write_rows(&cinfo, pixels, stride, sharp, NULL);
        jpeg_finish_compress(&cinfo);
    }
    jpeg_destroy_compress(&cinfo);
    // The thorough encoder's two files: the progressive one unless the baseline one is smaller.
    const int keep_other = other && (other_is_scans ? other_size <= size : other_size < size);
    if (keep_other) {
        free(buffer);
        buffer = other;
        size = other_size;
    } else {
        free(other);
    }
    *output = buffer;
    *output_length = size;
    if (held) *held = kept;
    return ATT_OK;
}

// MARK: - Reading back an encode

// A progressive encode through the shim's decoder, whose scan reader (jpeg_scans.c) reads its
// scans in a fraction of libjpeg's time: the same coefficients, so the same pixels.
static int32_t decode_scans_into(const uint8_t *data, size_t length, uint32_t width, uint32_t height, int32_t channels,
                                 uint8_t *output, size_t stride, att_error *error) {
    const att_jpeg_limits limits = {.coefficients = ATT_JPEG_COEFFICIENTS_LIBJPEG, .scans = ATT_JPEG_SCANS_SHIM};
    att_jpeg_header header;
    att_jpeg_decoder *decoder = att_jpeg_open(data, length, limits, &header, error);
    if (!decoder) return error->status;
    uint32_t out_width = 0, out_height = 0;
    int32_t status = att_jpeg_start(decoder, 8, channels, 1, &out_width, &out_height, error);
    if (status == ATT_OK && (out_width != width || out_height != height)) {
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "the encode read back is not the size it was written at");
        status = ATT_ERR_INTERNAL;
    }
    for (uint32_t row = 0; status == ATT_OK && row < height;) {
        int32_t rows = 0;
        status =
            att_jpeg_read_rows(decoder, output + (size_t)row * stride, stride, (int32_t)(height - row), &rows, error);
        if (status == ATT_OK && rows <= 0) {
            att_jpeg_set_error(error, ATT_ERR_TRUNCATED, "the encode read back ended early");
            status = ATT_ERR_TRUNCATED;
        }
        row += (uint32_t)rows;
    }
    if (status == ATT_OK) status = att_jpeg_finish(decoder, error);
    att_jpeg_close(decoder);
    return status;
}

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
    if (cinfo.progressive_mode) {
        jpeg_destroy_decompress(&cinfo);
        return decode_scans_into(data, length, width, height, channels, output, stride, error);
    }
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
