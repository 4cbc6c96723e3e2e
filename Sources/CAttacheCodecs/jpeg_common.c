// What the JPEG shim's decoder and encoders share: the error manager every entry point sets up
// before calling libjpeg (warnings are fatal, djpeg -strict semantics), and the standard table.
#include "jpeg_private.h"

#include <setjmp.h>
#include <stdio.h>

#include <jerror.h>

// MARK: - Error manager

static int32_t status_for_code(int code) {
    switch (code) {
    case JWRN_JPEG_EOF:
    case JERR_INPUT_EOF:
    case JERR_INPUT_EMPTY: return ATT_ERR_TRUNCATED;
    case JERR_BAD_PRECISION:
    case JERR_SOF_UNSUPPORTED:
    case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL: return ATT_ERR_UNSUPPORTED;
    case JERR_NO_BACKING_STORE:
    case JERR_OUT_OF_MEMORY: return ATT_ERR_MEMORY_LIMIT;
    default: return ATT_ERR_CORRUPT;
    }
}

static void fail_with(j_common_ptr cinfo, int32_t status) {
    att_jpeg_error_mgr *err = (att_jpeg_error_mgr *)cinfo->err;
    if (err->status == ATT_OK) {
        err->status = status;
        (*cinfo->err->format_message)(cinfo, err->message);
    }
    longjmp(err->jump, 1);
}

static void on_error_exit(j_common_ptr cinfo) { fail_with(cinfo, status_for_code(cinfo->err->msg_code)); }

void att_jpeg_fail(j_common_ptr cinfo, int32_t status, const char *message) {
    att_jpeg_error_mgr *err = (att_jpeg_error_mgr *)cinfo->err;
    if (err->status == ATT_OK) {
        err->status = status;
        snprintf(err->message, sizeof err->message, "%s", message);
    }
    longjmp(err->jump, 1);
}

static void on_emit_message(j_common_ptr cinfo, int msg_level) {
    // Level -1 is a warning: corrupt entropy data, premature end of file, bad progression.
    // libjpeg would pad the image with grey and carry on; we refuse instead.
    if (msg_level < 0) {
        fail_with(cinfo, status_for_code(cinfo->err->msg_code));
    }
}

static void on_output_message(j_common_ptr cinfo) { (void)cinfo; }

void att_jpeg_install_errors(att_jpeg_error_mgr *err) {
    jpeg_std_error(&err->base);
    err->base.error_exit = on_error_exit;
    err->base.emit_message = on_emit_message;
    err->base.output_message = on_output_message;
    err->status = ATT_OK;
    err->message[0] = 0;
}

void att_jpeg_copy_error(const att_jpeg_error_mgr *err, att_error *error) {
    if (!error) return;
    error->status = err->status == ATT_OK ? ATT_ERR_INTERNAL : err->status;
    snprintf(error->message, sizeof error->message, "%s", err->message);
}

void att_jpeg_set_error(att_error *error, int32_t status, const char *message) {
    if (!error) return;
    error->status = status;
    snprintf(error->message, sizeof error->message, "%s", message);
}

void att_jpeg_max_sampling(j_compress_ptr cinfo, int *max_h, int *max_v) {
    *max_h = 1;
    *max_v = 1;
    for (int c = 0; c < cinfo->num_components; c++) {
        if (cinfo->comp_info[c].h_samp_factor > *max_h) *max_h = cinfo->comp_info[c].h_samp_factor;
        if (cinfo->comp_info[c].v_samp_factor > *max_v) *max_v = cinfo->comp_info[c].v_samp_factor;
    }
}

// The standard luminance table (ITU-T T.81 Annex K), in natural order as libjpeg keeps it.
const unsigned att_jpeg_std_luminance[DCTSIZE2] = {
    16, 11,  10,  16, 24, 40, 51, 61, 12,  12,  14,  19,  26, 58, 60, 55,  14,  13,  16,  24, 40, 57,
    69, 56,  14,  17, 22, 29, 51, 87, 80,  62,  18,  22,  37, 56, 68, 109, 103, 77,  24,  35, 55, 64,
    81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98,  112, 100, 103, 99};
