// Private to the JPEG shim (jpeg.c, jpeg_encode.c, jpeg_common.c, jpeg_trellis.c,
// jpeg_progressive.c): the error manager every entry point sets up before calling libjpeg, the
// progressive scans the encoders write, and the standard luminance table.
#ifndef ATTACHE_JPEG_PRIVATE_H
#define ATTACHE_JPEG_PRIVATE_H

#include "attache_codecs.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    int32_t status;
    char message[240];
} att_jpeg_error_mgr;

/// Sets `err` up: libjpeg's errors and warnings end the call through `err->jump`.
void att_jpeg_install_errors(att_jpeg_error_mgr *err);
/// The error `err` caught, into `error`.
void att_jpeg_copy_error(const att_jpeg_error_mgr *err, att_error *error);
void att_jpeg_set_error(att_error *error, int32_t status, const char *message);

/// Sets `cinfo` to write the progressive scans both encoders use (jpeg_progressive.c): a grey
/// or colour picture's, nothing for another.
void att_jpeg_progressive_scans(j_compress_ptr cinfo);

/// The standard luminance table (ITU-T T.81 Annex K), in natural order as libjpeg keeps it.
extern const unsigned att_jpeg_std_luminance[DCTSIZE2];

#endif
