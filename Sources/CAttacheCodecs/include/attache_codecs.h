// Thin C shims over the still-image codecs: libjpeg-turbo, libpng, libwebp, libheif, libjxl
// and lcms2 (giflib's are in attache_gif.h, the JPEG encoder's in attache_jpeg_encode.h).
//
// libjpeg and libpng report errors by longjmp. Every function here that calls into them sets its
// own jump point first, so a longjmp never crosses a Swift frame; failures come back as an
// att_status code plus a message in att_error.
#ifndef ATTACHE_CODECS_H
#define ATTACHE_CODECS_H

#include <stddef.h>
#include <stdint.h>

#include "attache_shim.h"

// att_status, att_error and the deadline cells: attache_shim.h (CAttacheShim), shared by every shim.

/// Frees memory returned by the encoders.
void att_free(void *pointer);

/// Replaces C's `stderr` (once) with a stream that writes each line to descriptor 2: as it is
/// (`how` 0), or as a log line (`attache.library`, level debug) hidden (1) or shown (2); a fatal
/// error is always shown. Called again, it only changes `how`.
void att_route_library_output(int how);

// MARK: - JPEG decoding

typedef struct att_jpeg_decoder att_jpeg_decoder;

enum {
    ATT_JPEG_COEFFICIENTS_AUTOMATIC = 0,
    ATT_JPEG_COEFFICIENTS_LIBJPEG = 1,
    ATT_JPEG_COEFFICIENTS_COMPACT = 2,
};
enum {
    ATT_JPEG_SCANS_SHIM = 0,
    ATT_JPEG_SCANS_LIBJPEG = 1,
};
#define ATT_JPEG_COMPACT_FROM ((uint64_t)16 << 20)
#define ATT_JPEG_CHECKPOINT_CALLS 16

typedef struct {
    /// Limit on libjpeg's own allocations (whole-image coefficient buffers); 0 = none.
    uint64_t max_memory;
    /// Progressive scans allowed before the decode is refused; 0 = none.
    int32_t max_scans;
    /// A deadline cell (see att_deadline_load) checked by the progress monitor; NULL = none.
    const uint64_t *deadline;
    /// Called by the progress monitor every ATT_JPEG_CHECKPOINT_CALLS of its calls (one each
    /// iMCU row of a scan, a fraction of a millisecond): where the decode may give its core up
    /// while libjpeg reads a multi-scan file's scans, which happens before the first row comes
    /// out. It may block the thread; it must return. NULL = none.
    void (*checkpoint)(void *context);
    void *checkpoint_context;
    /// Where a multi-scan file keeps its coefficients: ATT_JPEG_COEFFICIENTS_AUTOMATIC packs
    /// them (nonzero coefficients only, see jpeg_coefficients.c) when libjpeg's arrays would
    /// take ATT_JPEG_COMPACT_FROM bytes or more and the packed bound is three quarters of that
    /// or less; _LIBJPEG keeps libjpeg's arrays; _COMPACT packs them whenever it can (Huffman
    /// coding).
    int32_t coefficients;
    /// Who reads a progressive file's scans: ATT_JPEG_SCANS_SHIM reads them from the first
    /// libjpeg can hand over (jpeg_scans.c; the same coefficients, several times faster), where
    /// the file allows; _LIBJPEG leaves every scan to libjpeg.
    int32_t scans;
} att_jpeg_limits;

typedef struct {
    uint32_t width;
    uint32_t height;
    int32_t components;
    /// 1 gray, 3 colour (YCbCr or RGB), 4 CMYK or YCCK.
    int32_t color_family;
    int32_t progressive;
    int32_t multi_scan;
    int32_t data_precision;
    int32_t saw_adobe_marker;
    /// Bytes the whole-image coefficients can take when the file has several scans: libjpeg's
    /// arrays, or the bound of the compact store.
    uint64_t coefficient_bytes;
    /// 1 when the coefficients go to the compact store.
    int32_t compact_coefficients;
    /// The first APP1 segment that starts with "Exif\0\0" (owned by the decoder), or NULL.
    const uint8_t *exif;
    size_t exif_length;
    /// The ICC profile from the APP2 "ICC_PROFILE" chunks, reassembled in order (owned by the
    /// decoder), or NULL when there is none or its chunks are incomplete, repeated or too big.
    const uint8_t *icc;
    size_t icc_length;
    /// The IJG quality (1-100) whose scaling of the standard luminance table its own first table
    /// is nearest on average; 0 when the file has none.
    int32_t quality;
} att_jpeg_header;

/// Reads the header of an in-memory JPEG. `data` must stay valid until the decoder is
/// destroyed. Returns NULL and fills `error` on failure.
att_jpeg_decoder *att_jpeg_open(const uint8_t *data, size_t length, att_jpeg_limits limits, att_jpeg_header *header,
                                att_error *error);

/// Starts decompression at scale `scale_num`/8 with 1 (gray) or 3 (RGB) output channels.
/// `fancy_upsampling` 0 selects libjpeg's merged (box) chroma upsampling, which is faster.
int32_t att_jpeg_start(att_jpeg_decoder *decoder, int32_t scale_num, int32_t channels, int32_t fancy_upsampling,
                       uint32_t *out_width, uint32_t *out_height, att_error *error);

/// Reads up to `max_rows` rows of `channels` bytes per pixel into `buffer`.
int32_t att_jpeg_read_rows(att_jpeg_decoder *decoder, uint8_t *buffer, size_t stride, int32_t max_rows,
                           int32_t *rows_read, att_error *error);

/// Reads to the end of the image, reporting corrupt or missing trailing data.
int32_t att_jpeg_finish(att_jpeg_decoder *decoder, att_error *error);

void att_jpeg_close(att_jpeg_decoder *decoder);

/// 1 when the shim read the file's scans from one of them on (ATT_JPEG_SCANS_SHIM), 2 when it
/// began to and the data ended the decode, 0 when libjpeg read them all.
int32_t att_jpeg_shim_read_scans(const att_jpeg_decoder *decoder);

/// Packs `count` 8 × 8 blocks of coefficients (64 int16 values each) the way a multi-scan
/// decode keeps them, with each packing this CPU can run (scalar, SSSE3 shuffles, AVX-512
/// compress), and unpacks each: the number of ways compared, or -1 when two packed the blocks
/// to different bytes or one did not give them back.
int32_t att_coef_packings_agree(const int16_t *blocks, uint32_t count);

// MARK: - PNG decoding

typedef struct att_png_decoder att_png_decoder;

typedef struct {
    uint32_t width;
    uint32_t height;
    int32_t bit_depth;
    int32_t color_type;
    int32_t interlaced;
    /// Channels per decoded pixel after expansion to 8 bits: 1 G, 2 GA, 3 RGB, 4 RGBA.
    int32_t channels;
    /// EXIF orientation from an eXIf chunk before the image data, 0 when absent.
    int32_t orientation;
    /// The iCCP profile (owned by the decoder), or NULL; none when an sRGB chunk says sRGB.
    const uint8_t *icc;
    size_t icc_length;
    /// An sRGB chunk is present.
    int32_t srgb;
    /// A cICP chunk: its colour primaries and transfer characteristics (ITU-T H.273).
    int32_t has_cicp;
    int32_t cicp_primaries;
    int32_t cicp_transfer;
    /// gAMA (the file gamma, e.g. 0.45455; 0 when absent) and cHRM (red x, y, green x, y, blue
    /// x, y, white x, y).
    double gamma;
    int32_t has_chromaticities;
    double chromaticities[8];
} att_png_header;

/// Reads the PNG signature and every chunk up to the image data. `data` must stay valid until
/// the decoder is destroyed.
att_png_decoder *att_png_open(const uint8_t *data, size_t length, uint32_t max_width, uint32_t max_height,
                              att_png_header *header, att_error *error);

/// Reads the next row of a non-interlaced image (`width * channels` bytes).
int32_t att_png_read_row(att_png_decoder *decoder, uint8_t *row, att_error *error);

/// Reads a whole interlaced image into `buffer` (`height` rows of `stride` bytes).
int32_t att_png_read_image(att_png_decoder *decoder, uint8_t *buffer, size_t stride, att_error *error);

/// Reads the chunks after the image data up to IEND.
int32_t att_png_finish(att_png_decoder *decoder, att_error *error);

void att_png_close(att_png_decoder *decoder);

// MARK: - PNG encoding

/// Encodes 8-bit pixels with 1, 2, 3 or 4 channels (G, GA, RGB, RGBA) at zlib `level` with
/// libpng's adaptive filters. On success `*output` is malloc'd (att_free).
int32_t att_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                       int32_t level, uint8_t **output, size_t *output_length, att_error *error);

// MARK: - WebP decoding (libwebp)

typedef struct {
    int32_t width;
    int32_t height;
    int32_t has_alpha;
    int32_t has_animation;
    int32_t lossless;
} att_webp_header;

/// Reads a WebP file's header (its RIFF chunks up to the bitstream's size): nothing decoded.
int32_t att_webp_probe(const uint8_t *data, size_t length, att_webp_header *header, att_error *error);

/// Decodes a still WebP scaled to `width` x `height`, 3 (RGB) or 4 (RGBA) channels, into
/// `output` (rows `stride` bytes apart). Not for animations.
int32_t att_webp_decode(const uint8_t *data, size_t length, int32_t width, int32_t height, int32_t channels,
                        uint8_t *output, size_t stride, att_error *error);

/// Lossy WebP at `quality` (0-100) from 1-4 channel pixels (alpha kept, lossless). The file is
/// malloc'ed (att_free).
int32_t att_webp_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                        int32_t quality, uint8_t **output, size_t *length, att_error *error);

typedef struct att_webp_anim att_webp_anim;

typedef struct {
    int32_t width;
    int32_t height;
    int32_t frames;
    /// 0 = forever.
    int32_t loop_count;
    /// The frames' durations added (milliseconds), from the frame headers.
    int64_t duration_ms;
} att_webp_anim_header;

/// Reads an animated WebP's canvas size, frame count and loop count (nothing decoded).
att_webp_anim *att_webp_anim_open(const uint8_t *data, size_t length, att_webp_anim_header *header, att_error *error);
/// Makes the frame decoder (two RGBA canvases): call once the header's limits are checked.
int32_t att_webp_anim_start(att_webp_anim *animation, att_error *error);
/// The next frame composed on the canvas (RGBA, lent until the next call) and the time it ends
/// in milliseconds; `*rgba` is NULL after the last frame.
int32_t att_webp_anim_next(att_webp_anim *animation, const uint8_t **rgba, int32_t *timestamp, att_error *error);
void att_webp_anim_close(att_webp_anim *animation);

// MARK: - HEIF and AVIF decoding (libheif 1.19 with libde265, dav1d and aom)

typedef struct att_heif att_heif;

typedef struct {
    /// Largest image (width x height) libheif may open; larger is refused from the boxes.
    uint64_t max_pixels;
    /// Largest single allocation libheif may make for the file's structure.
    uint64_t max_memory;
    /// Most grid tiles.
    uint64_t max_tiles;
    /// A deadline cell (see att_deadline_load) libheif's decoders poll; NULL = none.
    const uint64_t *deadline;
    /// The file is AVIF: a second AV1 decoder (aom) takes over when the first (dav1d) fails.
    int32_t av1;
} att_heif_limits;

typedef struct {
    /// The primary image as stored (its grid's size; tiles are decoded as stored).
    int32_t width;
    int32_t height;
    /// Its size as shown (rotation, mirroring and cropping applied).
    int32_t shown_width;
    int32_t shown_height;
    /// The turns as EXIF orientations (2 or 4 for imir, 3, 6 or 8 for irot), in order.
    int32_t step[8];
    int32_t steps;
    /// A clap crop's borders in stored pixels; crop_after_turn when it came after a turn.
    int32_t crop_left;
    int32_t crop_top;
    int32_t crop_right;
    int32_t crop_bottom;
    int32_t crop_after_turn;
    /// A transformation this code does not know, or a turn libheif reports as invalid.
    int32_t unknown_step;
    int32_t has_alpha;
    /// Luma bits per sample (8, 10 or 12); decoded to 8.
    int32_t bit_depth;
    /// 420, 422, 444 or 400 (monochrome), as coded.
    int32_t chroma;
    /// The grid as stored (1 x 1 for an image coded whole): tiles are decoded one at a time.
    uint32_t tile_columns;
    uint32_t tile_rows;
    uint32_t tile_width;
    uint32_t tile_height;
    /// The embedded ICC profile (owned by the decoder), or NULL.
    const uint8_t *icc;
    size_t icc_length;
    /// An nclx colour box instead: code points (ITU-T H.273) and the primaries' xy values.
    int32_t primaries;
    int32_t transfer;
    double primaries_xy[8];
} att_heif_header;

/// Reads a HEIF/AVIF file's boxes (no image data) with the limits set first.
att_heif *att_heif_open(const uint8_t *data, size_t length, att_heif_limits limits, att_heif_header *header,
                        att_error *error);

/// Decodes one tile of the primary image (as stored, not turned) to 8-bit RGB (3 channels) or
/// RGBA (4). The pixels are lent until the next call or att_heif_close.
int32_t att_heif_decode_tile(att_heif *decoder, uint32_t column, uint32_t row, int32_t channels, const uint8_t **pixels,
                             size_t *stride, int32_t *width, int32_t *height, att_error *error);

void att_heif_close(att_heif *decoder);

// MARK: - JPEG XL decoding (libjxl)

typedef struct att_jxl att_jxl;

/// Receives decoded rows, top to bottom.
typedef void (*att_row_sink)(void *context, const uint8_t *row);

/// Rows held at most while libjxl fills them piece by piece (its largest group is 1024 rows).
#define ATT_JXL_BAND ((size_t)1024)

typedef struct {
    int32_t width;
    int32_t height;
    int32_t has_alpha;
    int32_t gray;
    /// EXIF-style orientation (1-8) from the codestream; applied by the caller.
    int32_t orientation;
    int32_t animated;
    int32_t bits;
    /// Lossy (XYB). `icc` describes the pixels as decoded when they are not sRGB (owned by the
    /// decoder).
    int32_t xyb;
    /// XYB from a colour space without a name (an ICC profile): libjxl converts to sRGB.
    int32_t converted_by_decoder;
    const uint8_t *icc;
    size_t icc_length;
} att_jxl_header;

/// Reads the header and colour encoding (no image data) of a JPEG XL codestream or container.
att_jxl *att_jxl_open(const uint8_t *data, size_t length, att_jxl_header *header, att_error *error);

/// Decodes the first frame to 8-bit rows of `channels` (1-4: gray, gray+alpha, RGB, RGBA)
/// handed to `sink` in order. The deadline is checked between input slices of 256 KiB.
int32_t att_jxl_decode(att_jxl *decoder, int32_t channels, att_row_sink sink, void *context, const uint64_t *deadline,
                       att_error *error);

void att_jxl_close(att_jxl *decoder);

/// A JPEG XL animation: the frames composed and turned upright by libjxl, RGBA 8-bit.
typedef struct att_jxl_anim att_jxl_anim;

typedef struct {
    /// The canvas, upright.
    int32_t width;
    int32_t height;
    int32_t has_alpha;
    /// Frames shown, counted from their headers, and their ticks summed (`att_jxl_anim_count`).
    int32_t frames;
    uint64_t ticks;
    /// The frames' durations summed, in centiseconds.
    int64_t duration_cs;
    /// Plays (0 = forever), as the file says.
    int32_t loop_count;
    /// The pixels' colour space when not sRGB (owned by the animation).
    const uint8_t *icc;
    size_t icc_length;
} att_jxl_anim_header;

/// Reads the header (the frames are not counted: `att_jxl_anim_count`).
att_jxl_anim *att_jxl_anim_open(const uint8_t *data, size_t length, att_jxl_anim_header *header, att_error *error);

/// Counts the frames and sums their durations into `header` from the frame headers alone (no
/// pixel decoded, with a decoder of its own); more than `max_frames` is ATT_ERR_SCAN_LIMIT.
int32_t att_jxl_anim_count(att_jxl_anim *animation, int32_t max_frames, att_jxl_anim_header *header,
                           const uint64_t *deadline, att_error *error);

/// The next frame: 1 with the canvas (valid until the next call) and its delay in centiseconds,
/// 0 after the last, -1 with `error` set.
int32_t att_jxl_anim_next(att_jxl_anim *animation, const uint8_t **rgba, int32_t *delay_cs, const uint64_t *deadline,
                          att_error *error);

void att_jxl_anim_close(att_jxl_anim *animation);

// MARK: - Colour (lcms2)

/// Profiles larger than this are not used (a display profile is a few kilobytes).
#define ATT_ICC_MAX_BYTES ((size_t)1 << 20)
/// What lcms2 may allocate for one profile and its transform (a table declared larger is
/// refused before it is allocated, and the profile is not used).
#define ATT_ICC_MAX_MEMORY ((size_t)16 << 20)

typedef struct att_icc_transform att_icc_transform;

/// A transform from `profile` (an RGB ICC profile) to sRGB for 3 (RGB) or 4 (RGBA, alpha kept)
/// channel 8-bit pixels, perceptual with black-point compensation. NULL (with the reason in
/// `error`) when the profile cannot be read, is not RGB or is over ATT_ICC_MAX_BYTES.
/// `allow_fast` lets a matrix-shaper profile take the direct path (curves, one matrix, a
/// table) instead of lcms2's general one; tests compare the two.
att_icc_transform *att_icc_new(const uint8_t *profile, size_t length, int32_t channels, int32_t allow_fast,
                               att_error *error);

/// A transform from a CMYK `profile` to 3-channel sRGB; `inverted` for Adobe's CMYK JPEGs,
/// which store 255 - ink. NULL (with the reason) when the profile cannot be used.
att_icc_transform *att_icc_new_cmyk(const uint8_t *profile, size_t length, int32_t inverted, att_error *error);

/// Converts `count` pixels from `in` to `out` (a CMYK transform: 4 bytes in, 3 out).
void att_icc_convert(att_icc_transform *transform, const uint8_t *in, uint8_t *out, size_t count);

/// Reports what became of a CMYK JPEG's embedded profile once decoding started: 0 none,
/// 1 converted with it, 2 not used (the reason in `message`).
int32_t att_jpeg_colour(att_jpeg_decoder *decoder, char *message, size_t capacity);

/// JPEG decoders opened and not yet closed, in this process.
long att_jpeg_open_decoders(void);

/// The most the compact coefficient store has held so far (0 when it is not used).
uint64_t att_jpeg_coefficient_peak(const att_jpeg_decoder *decoder);

/// Converts `count` pixels in place.
void att_icc_apply(att_icc_transform *transform, uint8_t *pixels, size_t count);

void att_icc_free(att_icc_transform *transform);

/// An RGB profile made from primaries and a white point (`xy`: red x, y, green x, y, blue
/// x, y, white x, y) and a transfer curve: 0 sRGB, 1 BT.709, 2 gamma 2.2, 3 gamma 2.8, 4 linear,
/// 5 a pure power `gamma` (the display exponent, e.g. 2.2). For files that name their colours
/// by code points (HEIF/AVIF `nclx`, PNG `cICP`) or by `cHRM` + `gAMA` instead of embedding a
/// profile. malloc'ed (free with att_free); NULL on failure.
uint8_t *att_icc_rgb_profile(const double xy[8], int32_t transfer, double gamma, size_t *length);

// MARK: - Perceptual score (quality.c)

/// A reference picture's planes for SSIMULACRA2 scores of candidate encodes of it.
typedef struct att_quality_ref att_quality_ref;
/// Prepares `pixels` (1 gray, 3 RGB or 4 RGBA channels, at least 8 × 8) as the reference: its
/// smaller scales, made once. The pixels are not kept: each score is handed them again.
att_quality_ref *att_quality_prepare(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                                     int32_t channels, att_error *error);
/// The SSIMULACRA2 score (100 identical, 90 visually lossless, 70 high, 50 medium) of `pixels`
/// (the reference's size, `channels` 1, 3 or 4) against `reference` (the pixels it was prepared
/// from).
int32_t att_quality_score(att_quality_ref *ref, const uint8_t *reference, size_t reference_stride,
                          const uint8_t *pixels, size_t stride, int32_t channels, double *score, att_error *error);
void att_quality_free(att_quality_ref *ref);

/// Blocking in the flat parts of an encode: the reference's flat segments of the 8 x 8 block
/// grid (where its mean step between neighbours is under `flat` luma levels) are found once;
/// for each candidate (an encode of the reference, decoded: same size, stride and channels 1, 3
/// or 4, colour first), the `percentile`-th percentile of its steps across them, averaged along
/// each, less the reference's own (0 with fewer than 64 flat segments, or a twentieth of them).
/// blocking.c.
typedef struct att_blocking_ref att_blocking_ref;
/// Statistics of a picture that say how hard it is to encode, for the quality search's first
/// guess, written by att_blocking_prepare from the luma it reads (a quarter of the blocks: every
/// other one across and down): the mean luma step between neighbours, the mean fine detail in
/// 8 x 8 blocks (what is left after 2 x 2 means), the share of flat blocks (luma spread under
/// 1.5), the mean chroma step; zeros for a picture under 16 px on a side.
enum { ATT_PICTURE_FEATURES = 4 };
att_blocking_ref *att_blocking_prepare(const uint8_t *reference, size_t stride, uint32_t width, uint32_t height,
                                       int32_t channels, double flat, double features[ATT_PICTURE_FEATURES]);
double att_blocking_measure(const att_blocking_ref *ref, const uint8_t *candidate, size_t stride, double percentile);
void att_blocking_free(att_blocking_ref *ref);
/// Whether the gate's luma and the statistics' chroma steps of `count` RGB pixels (read sixteen at
/// a time where the CPU has AVX2) are the scalar formulas' for every pixel: 1, else 0 (-1 when out
/// of memory).
int32_t att_blocking_rows_agree(const uint8_t *rgb, size_t count);

// MARK: - Resampling loops (resample.c)
//
// Each takes `vectorized`: nonzero for the AVX2 and FMA form where the processor has it
// (att_resample_vectorized), 0 for the portable form (tests compare the two).

/// One row filtered along its length: pixel `x` of `out` (four floats) is the sum over `t` below
/// `stride` of pixel `starts[x] + t` of `src` times `weights[x * stride + t]`, for `count` pixels.
void att_resample_row(int32_t vectorized, const float *src, const intptr_t *starts, const float *weights,
                      intptr_t stride, intptr_t count, float *out);
/// Rows summed: `out[i]` is the sum over `t` below `taps` of `rows[t][i] * weights[t]`, for
/// `floats` values.
void att_resample_column(int32_t vectorized, const float *const *rows, const float *weights, intptr_t taps,
                         intptr_t floats, float *out);
/// `width` RGB pixels of bytes as four floats each, the fourth 0.
void att_resample_widen_rgb(int32_t vectorized, const uint8_t *row, intptr_t width, float *out);
/// `width` pixels of four floats as RGB bytes (the fourth dropped), clamped to 0-255 and
/// rounded to the nearest, halves to even.
void att_resample_narrow_rgb(int32_t vectorized, const float *in, intptr_t width, uint8_t *out);
/// 1 when the processor has AVX2 and FMA (x86-64), so the loops above have their vector form.
int32_t att_resample_vectorized(void);

#endif
