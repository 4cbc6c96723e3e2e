// Private to the JPEG shim (jpeg.c, jpeg_encode.c, jpeg_common.c, jpeg_trellis.c,
// jpeg_progressive.c, jpeg_scan_writer.c, jpeg_held.c): the error manager every entry point sets up before
// calling libjpeg, the progressive scans the encoders write and the shim's writer of them, and
// the standard luminance table.
#ifndef ATTACHE_JPEG_PRIVATE_H
#define ATTACHE_JPEG_PRIVATE_H

#include "attache_jpeg_encode.h"

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
/// Those scans for a picture of `components` (1 or 3), their number in `*count`; NULL for another.
const jpeg_scan_info *att_jpeg_scan_script(int components, int *count);

/// Block row `row` of component `component` of the coefficients being written.
typedef JBLOCKROW (*att_jpeg_block_row)(j_compress_ptr cinfo, void *context, int component, JDIMENSION row);
/// Whether att_jpeg_write_scans writes `scans` with `cinfo`'s settings: 8-bit samples, Huffman
/// coding, no restarts, no successive approximation, interleaved scans of 1 x 1 components only.
int att_jpeg_scans_writable(j_compress_ptr cinfo, const jpeg_scan_info *scans, int count);
/// The file libjpeg would write from the quantised coefficients that `row` hands out (each
/// component's blocks, as libjpeg's whole-image arrays hold them) with `cinfo`'s settings,
/// optimised Huffman tables and `scans` (jpeg_scan_writer.c): into `*data` (malloc'd), 1; 0
/// without a file where memory runs out or a coefficient is out of an 8-bit file's range.
int att_jpeg_write_scans(j_compress_ptr cinfo, const jpeg_scan_info *scans, int count, att_jpeg_block_row row,
                         void *context, unsigned char **data, unsigned long *length);
/// SOI, JFIF, DQT and an SOF marker `sof` (0xFFC0, 0xFFC2) for `cinfo`'s picture, as libjpeg
/// writes them (jpeg_scan_writer.c), into `*data` (malloc'd); 0 without the memory.
int att_jpeg_write_frame(j_compress_ptr cinfo, unsigned sof, unsigned char **data, size_t *length);
/// The coefficients `row` hands out, copied into `*out` for the encode's read-back
/// (jpeg_held.c); `*out` NULL without the memory. Set before the first access, which may end
/// the encode: the caller frees what it holds then.
void att_jpeg_hold(j_compress_ptr cinfo, att_jpeg_block_row row, void *context, att_jpeg_held *volatile *out);
/// libjpeg's own optimal Huffman table for the counts `freq` (257 of them, which it changes):
/// exported by libjpeg-turbo (jchuff.c) though not in jpeglib.h; the same tables it writes.
void jpeg_gen_optimal_table(j_compress_ptr cinfo, JHUFF_TBL *htbl, long freq[]);

/// The largest horizontal and vertical sampling factors of `cinfo`'s components.
void att_jpeg_max_sampling(j_compress_ptr cinfo, int *max_h, int *max_v);

/// The standard luminance table (ITU-T T.81 Annex K), in natural order as libjpeg keeps it.
extern const unsigned att_jpeg_std_luminance[DCTSIZE2];

#endif
