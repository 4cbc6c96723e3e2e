// libjpeg-turbo (classic libjpeg API) decode. Every entry point sets its own setjmp before
// calling libjpeg; warnings are fatal (djpeg -strict semantics).
#include "jpeg_coefficients.h"
#include "jpeg_private.h"
#include "jpeg_scans.h"

#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>
#include <jerror.h>

// MARK: - Decoder

// Decoders opened and not yet closed (a refusal must close its decoder too).
static atomic_long open_decoders;

// The quality libjpeg's jpeg_set_quality would have been given for a file's first table: its
// scale of the standard table (the ratio of the sums), through jpeg_quality_scaling's inverse.
static int32_t estimate_quality(const j_decompress_ptr cinfo) {
    const JQUANT_TBL *table = cinfo->quant_tbl_ptrs[0];
    if (!table) return 0;
    double own = 0, standard = 0;
    for (int i = 0; i < DCTSIZE2; i++) {
        own += table->quantval[i];
        standard += att_jpeg_std_luminance[i];
    }
    double scale = 100.0 * own / standard;
    double quality = scale <= 100.0 ? (200.0 - scale) / 2.0 : 5000.0 / scale;
    int32_t rounded = (int32_t)(quality + 0.5);
    return rounded < 1 ? 1 : (rounded > 100 ? 100 : rounded);
}

long att_jpeg_open_decoders(void) { return atomic_load(&open_decoders); }

typedef struct {
    struct jpeg_progress_mgr base;
    int32_t max_scans;
    const uint64_t *deadline;
    void (*checkpoint)(void *context);
    void *checkpoint_context;
    unsigned calls;
    // A progressive file's scans read by the shim (jpeg_scans.c): the arrays as libjpeg asks
    // for them (through `request`, the method it replaces), and the last scan offered (the
    // one being read while the shim's reading calls this monitor back).
    int32_t shim_scans;
    int offered_scan;
    jvirt_barray_ptr (*request)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    att_scans scans;
} att_progress_mgr;

struct att_jpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    att_jpeg_error_mgr err;
    att_progress_mgr progress;
    int32_t channels;
    int32_t cmyk;
    int32_t inverted_cmyk;
    uint8_t *scratch;
    JSAMPROW *rows;
    int32_t rows_capacity;
    uint8_t *icc;
    size_t icc_length;
    // A CMYK file's profile: its transform once decoding starts, or why it is not used.
    att_icc_transform *cmyk_icc;
    int32_t colour_state;
    char colour_message[160];
    // A multi-scan file's coefficients in the compact store: its bound (0 = libjpeg's own
    // arrays), and the store once decoding starts.
    uint64_t compact_bound;
    att_coef_store *coefficients;
};

static void on_progress(j_common_ptr cinfo) {
    att_progress_mgr *progress = (att_progress_mgr *)cinfo->progress;
    j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
    if (progress->max_scans > 0 && dinfo->input_scan_number > progress->max_scans) {
        att_jpeg_error_mgr *err = (att_jpeg_error_mgr *)cinfo->err;
        err->status = ATT_ERR_SCAN_LIMIT;
        snprintf(err->message, sizeof err->message, "more than %d progressive scans", progress->max_scans);
        longjmp(err->jump, 1);
    }
    ++progress->calls;
    if (progress->checkpoint != NULL && progress->calls % ATT_JPEG_CHECKPOINT_CALLS == 0) {
        progress->checkpoint(progress->checkpoint_context);
    }
    if (progress->deadline != NULL && (progress->calls & 63) == 0 && att_deadline_passed(progress->deadline)) {
        att_jpeg_error_mgr *err = (att_jpeg_error_mgr *)cinfo->err;
        err->status = ATT_ERR_TIMEOUT;
        snprintf(err->message, sizeof err->message, "decode deadline passed");
        longjmp(err->jump, 1);
    }
    // At the start of each scan, before libjpeg reads any of it.
    if (progress->shim_scans && dinfo->input_scan_number != progress->offered_scan &&
        dinfo->global_state == 203 /* DSTATE_PRELOAD: within jpeg_start_decompress */) {
        progress->offered_scan = dinfo->input_scan_number;
        att_scans_take_over(dinfo, &progress->scans);
    }
}

static void scans_tick(j_decompress_ptr cinfo) { on_progress((j_common_ptr)cinfo); }

// libjpeg's request for a component's whole-image array, recorded for the shim's scans.
static jvirt_barray_ptr request_recorded(j_common_ptr cinfo, int pool_id, boolean pre_zero, JDIMENSION blocks_per_row,
                                         JDIMENSION rows, JDIMENSION max_access) {
    att_progress_mgr *progress = (att_progress_mgr *)cinfo->progress;
    jvirt_barray_ptr array = progress->request(cinfo, pool_id, pre_zero, blocks_per_row, rows, max_access);
    att_scans *scans = &progress->scans;
    if (scans->count < MAX_COMPONENTS) scans->arrays[scans->count] = array;
    scans->count++;
    return array;
}

static const uint8_t *find_exif(j_decompress_ptr cinfo, size_t *length) {
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != NULL; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0) {
            *length = m->data_length;
            return m->data;
        }
    }
    *length = 0;
    return NULL;
}

// The ICC profile split over APP2 "ICC_PROFILE\0" segments (sequence number, count, data),
// joined in sequence order; NULL unless every chunk 1...count is there exactly once.
static uint8_t *assemble_icc(j_decompress_ptr cinfo, size_t *length) {
    enum { HEAD = 14 };
    const JOCTET *parts[256] = {0};
    unsigned sizes[256] = {0};
    int count = 0;
    size_t total = 0;
    *length = 0;
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != NULL; m = m->next) {
        if (m->marker != JPEG_APP0 + 2 || m->data_length < HEAD || memcmp(m->data, "ICC_PROFILE\0", 12) != 0) {
            continue;
        }
        int seq = m->data[12], n = m->data[13];
        if (n == 0 || seq == 0 || seq > n || (count != 0 && n != count) || parts[seq] != NULL) return NULL;
        count = n;
        parts[seq] = m->data + HEAD;
        sizes[seq] = m->data_length - HEAD;
        total += sizes[seq];
    }
    if (count == 0 || total == 0 || total > ATT_ICC_MAX_BYTES) return NULL;
    for (int i = 1; i <= count; i++) {
        if (parts[i] == NULL) return NULL;
    }
    uint8_t *out = malloc(total);
    if (!out) return NULL;
    size_t at = 0;
    for (int i = 1; i <= count; i++) {
        memcpy(out + at, parts[i], sizes[i]);
        at += sizes[i];
    }
    *length = total;
    return out;
}

att_jpeg_decoder *att_jpeg_open(const uint8_t *data, size_t length, att_jpeg_limits limits, att_jpeg_header *header,
                                att_error *error) {
    if (length == 0) {
        att_jpeg_set_error(error, ATT_ERR_TRUNCATED, "empty input");
        return NULL;
    }
    att_jpeg_decoder *d = calloc(1, sizeof *d);
    if (!d) {
        att_jpeg_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return NULL;
    }
    atomic_fetch_add(&open_decoders, 1);
    att_jpeg_install_errors(&d->err);
    d->cinfo.err = &d->err.base;
    if (setjmp(d->err.jump)) {
        att_jpeg_copy_error(&d->err, error);
        att_jpeg_close(d);
        return NULL;
    }
    jpeg_create_decompress(&d->cinfo);
    if (limits.max_memory > 0) {
        d->cinfo.mem->max_memory_to_use = (long)limits.max_memory;
    }
    d->progress.base.progress_monitor = on_progress;
    d->progress.max_scans = limits.max_scans;
    d->progress.deadline = limits.deadline;
    d->progress.checkpoint = limits.checkpoint;
    d->progress.checkpoint_context = limits.checkpoint_context;
    d->progress.shim_scans = limits.scans == ATT_JPEG_SCANS_SHIM;
    d->cinfo.progress = &d->progress.base;
    jpeg_mem_src(&d->cinfo, data, (unsigned long)length);
    // Only EXIF (for orientation) and ICC profile chunks are kept; every other marker is
    // skipped unread.
    jpeg_save_markers(&d->cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(&d->cinfo, JPEG_APP0 + 2, 0xFFFF);
    jpeg_read_header(&d->cinfo, TRUE);

    memset(header, 0, sizeof *header);
    header->width = d->cinfo.image_width;
    header->height = d->cinfo.image_height;
    header->components = d->cinfo.num_components;
    switch (d->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE: header->color_family = 1; break;
    case JCS_CMYK:
    case JCS_YCCK: header->color_family = 4; break;
    default: header->color_family = 3; break;
    }
    header->progressive = d->cinfo.progressive_mode ? 1 : 0;
    header->multi_scan = jpeg_has_multiple_scans(&d->cinfo) ? 1 : 0;
    header->data_precision = d->cinfo.data_precision;
    header->saw_adobe_marker = d->cinfo.saw_Adobe_marker ? 1 : 0;
    header->quality = estimate_quality(&d->cinfo);
    if (header->multi_scan) {
        uint64_t dense = att_coef_dense_bytes(&d->cinfo);
        uint64_t bound = att_coef_compact_bound(&d->cinfo, length);
        if (limits.coefficients == ATT_JPEG_COEFFICIENTS_COMPACT ||
            (limits.coefficients == ATT_JPEG_COEFFICIENTS_AUTOMATIC && dense >= ATT_JPEG_COMPACT_FROM &&
             bound <= dense / 4 * 3)) {
            d->compact_bound = bound;
        }
        header->coefficient_bytes = d->compact_bound > 0 ? d->compact_bound : dense;
        header->compact_coefficients = d->compact_bound > 0;
    }
    header->exif = find_exif(&d->cinfo, &header->exif_length);
    d->icc = assemble_icc(&d->cinfo, &header->icc_length);
    d->icc_length = header->icc_length;
    header->icc = d->icc;
    d->cmyk = header->color_family == 4;
    d->inverted_cmyk = d->cmyk && d->cinfo.saw_Adobe_marker;
    return d;
}

int32_t att_jpeg_start(att_jpeg_decoder *d, int32_t scale_num, int32_t channels, int32_t fancy_upsampling,
                       uint32_t *out_width, uint32_t *out_height, att_error *error) {
    if (channels != 1 && channels != 3) {
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "channels must be 1 or 3");
        return ATT_ERR_INTERNAL;
    }
    if (setjmp(d->err.jump)) {
        att_jpeg_copy_error(&d->err, error);
        return error->status;
    }
    d->channels = channels;
    d->cinfo.scale_num = (unsigned)(scale_num < 1 ? 1 : (scale_num > 8 ? 8 : scale_num));
    d->cinfo.scale_denom = 8;
    d->cinfo.dct_method = JDCT_ISLOW;
    d->cinfo.do_fancy_upsampling = fancy_upsampling ? TRUE : FALSE;
    if (channels == 1) {
        d->cinfo.out_color_space = JCS_GRAYSCALE;
    } else if (d->cmyk) {
        d->cinfo.out_color_space = JCS_CMYK;
    } else {
        d->cinfo.out_color_space = JCS_RGB;
    }
    if (d->compact_bound > 0 && d->coefficients == NULL) {
        d->coefficients = att_coef_store_install(&d->cinfo, d->compact_bound);
        if (!d->coefficients) {
            att_jpeg_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
            return ATT_ERR_MEMORY_LIMIT;
        }
    }
    if (d->progress.shim_scans && d->cinfo.progressive_mode && d->progress.request == NULL) {
        d->progress.request = d->cinfo.mem->request_virt_barray;
        d->cinfo.mem->request_virt_barray = request_recorded;
        d->progress.scans.max_scans = d->progress.max_scans;
        d->progress.scans.tick = scans_tick;
    }
    jpeg_start_decompress(&d->cinfo);
    *out_width = d->cinfo.output_width;
    *out_height = d->cinfo.output_height;
    if (d->cinfo.out_color_space == JCS_CMYK && d->icc != NULL && d->cmyk_icc == NULL && d->colour_state == 0) {
        att_error reason = {0};
        d->cmyk_icc = att_icc_new_cmyk(d->icc, d->icc_length, d->inverted_cmyk, &reason);
        d->colour_state = d->cmyk_icc ? 1 : 2;
        snprintf(d->colour_message, sizeof d->colour_message, "%s", d->cmyk_icc ? "" : reason.message);
    }
    if (d->cinfo.out_color_space == JCS_CMYK) {
        d->scratch = malloc((size_t)d->cinfo.output_width * 4);
        if (!d->scratch) {
            att_jpeg_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
            return ATT_ERR_MEMORY_LIMIT;
        }
    }
    return ATT_OK;
}

static void cmyk_to_rgb(const uint8_t *src, uint8_t *dst, uint32_t width, int inverted) {
    for (uint32_t x = 0; x < width; x++) {
        unsigned c = src[4 * x], m = src[4 * x + 1], y = src[4 * x + 2], k = src[4 * x + 3];
        if (!inverted) {
            c = 255 - c;
            m = 255 - m;
            y = 255 - y;
            k = 255 - k;
        }
        // Adobe CMYK is stored inverted: the stored value is 255 - ink.
        dst[3 * x] = (uint8_t)((c * k + 127) / 255);
        dst[3 * x + 1] = (uint8_t)((m * k + 127) / 255);
        dst[3 * x + 2] = (uint8_t)((y * k + 127) / 255);
    }
}

uint64_t att_jpeg_coefficient_peak(const att_jpeg_decoder *d) { return att_coef_store_peak(d->coefficients); }

int32_t att_jpeg_shim_read_scans(const att_jpeg_decoder *d) {
    return d->progress.scans.taken ? 1 : d->progress.scans.started ? 2 : 0;
}

int32_t att_jpeg_colour(att_jpeg_decoder *d, char *message, size_t capacity) {
    if (message && capacity > 0) snprintf(message, capacity, "%s", d->colour_message);
    return d->colour_state;
}

int32_t att_jpeg_read_rows(att_jpeg_decoder *d, uint8_t *buffer, size_t stride, int32_t max_rows, int32_t *rows_read,
                           att_error *error) {
    *rows_read = 0;
    if (setjmp(d->err.jump)) {
        att_jpeg_copy_error(&d->err, error);
        return error->status;
    }
    if (d->cmyk && d->channels == 3) {
        int32_t done = 0;
        while (done < max_rows && d->cinfo.output_scanline < d->cinfo.output_height) {
            JSAMPROW row = d->scratch;
            JDIMENSION got = jpeg_read_scanlines(&d->cinfo, &row, 1);
            if (got == 0) break;
            if (d->cmyk_icc) {
                att_icc_convert(d->cmyk_icc, d->scratch, buffer + (size_t)done * stride, d->cinfo.output_width);
            } else {
                cmyk_to_rgb(d->scratch, buffer + (size_t)done * stride, d->cinfo.output_width, d->inverted_cmyk);
            }
            done++;
        }
        *rows_read = done;
        return ATT_OK;
    }
    if (d->rows_capacity < max_rows) {
        free(d->rows);
        d->rows = malloc(sizeof(JSAMPROW) * (size_t)max_rows);
        if (!d->rows) {
            d->rows_capacity = 0;
            att_jpeg_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
            return ATT_ERR_MEMORY_LIMIT;
        }
        d->rows_capacity = max_rows;
    }
    int32_t done = 0;
    while (done < max_rows && d->cinfo.output_scanline < d->cinfo.output_height) {
        for (int32_t i = done; i < max_rows; i++) d->rows[i] = buffer + (size_t)i * stride;
        JDIMENSION got = jpeg_read_scanlines(&d->cinfo, d->rows + done, (JDIMENSION)(max_rows - done));
        if (got == 0) break;
        done += (int32_t)got;
    }
    *rows_read = done;
    return ATT_OK;
}

int32_t att_jpeg_finish(att_jpeg_decoder *d, att_error *error) {
    if (setjmp(d->err.jump)) {
        att_jpeg_copy_error(&d->err, error);
        return error->status;
    }
    jpeg_finish_decompress(&d->cinfo);
    return ATT_OK;
}

void att_jpeg_close(att_jpeg_decoder *d) {
    if (!d) return;
    atomic_fetch_sub(&open_decoders, 1);
    // jpeg_destroy cannot fail, but guard anyway: an error here must not escape.
    if (setjmp(d->err.jump) == 0) {
        jpeg_destroy_decompress(&d->cinfo);
    }
    att_coef_store_free(d->coefficients);
    free(d->progress.scans.stand_in);
    free(d->progress.scans.reader);
    free(d->scratch);
    free(d->rows);
    free(d->icc);
    att_icc_free(d->cmyk_icc);
    free(d);
}
