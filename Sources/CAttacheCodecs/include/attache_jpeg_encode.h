// The JPEG encoder's shim over libjpeg-turbo (jpeg_encode.c and the files it calls): encodes,
// their tables and their read-back for a quality search.
#ifndef ATTACHE_JPEG_ENCODE_H
#define ATTACHE_JPEG_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "attache_codecs.h"

// MARK: - JPEG encoding

/// The quantisation tables an encode scales by its quality: the IJG's (ITU-T T.81 Annex K, what
/// libjpeg and most encoders write), or N. Robidoux's perceptual table for luma and chroma alike
/// (ImageMagick's, one of mozjpeg's): 5-6% fewer bytes at an equal SSIMULACRA2 on photos; or
/// jpegli's (libjxl's), steeper as the quality falls, with chroma steps halved at 4:2:0: 5-6%
/// fewer bytes than Robidoux's at an equal SSIMULACRA2 (docs/quality.md).
enum { ATT_JPEG_TABLES_IJG = 0, ATT_JPEG_TABLES_ROBIDOUX = 1, ATT_JPEG_TABLES_JPEGLI = 2 };

/// A colour JPEG's chroma: 4:2:0, each sample the mean of its 2x2 (libjpeg's); 4:4:4; or 4:2:0
/// with each sample sharpened for a decoder's fancy upsampling (jpeg_chroma.c: saturated edges
/// come back less smeared, luma the same to the bit).
enum { ATT_JPEG_CHROMA_HALF = 0, ATT_JPEG_CHROMA_FULL = 1, ATT_JPEG_CHROMA_SHARP = 2 };

/// att_jpeg_encode's flags: ATT_JPEG_TRELLIS (trellis quantisation, the smaller of progressive
/// scans and one baseline scan); ATT_JPEG_PROGRESSIVE (libjpeg's coefficients as those scans).
/// The shim writes the scans (jpeg_scan_writer.c: libjpeg's file in less time);
/// ATT_JPEG_LIBJPEG_SCANS has libjpeg write them, the reference the shim is checked against.
enum { ATT_JPEG_TRELLIS = 1, ATT_JPEG_PROGRESSIVE = 2, ATT_JPEG_LIBJPEG_SCANS = 4 };

/// Encodes `height` rows of 1 (gray) or 3 (RGB) channel pixels as a JPEG with optimised
/// Huffman tables and `chroma` (`ATT_JPEG_CHROMA_…`), its tables (`ATT_JPEG_TABLES_…`) scaled
/// by `quality` as libjpeg scales its own, one baseline scan unless `flags` (`ATT_JPEG_TRELLIS`,
/// `ATT_JPEG_PROGRESSIVE`) say otherwise. On success `*output` is malloc'd (att_free).
int32_t att_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                        int32_t quality, int32_t tables, int32_t chroma, int32_t flags, uint8_t **output,
                        size_t *output_length, att_error *error);

/// An encode's quantised coefficients, held for its read-back (jpeg_held.c).
typedef struct att_jpeg_held att_jpeg_held;
/// att_jpeg_encode that also hands over, in `*held`, the coefficients the file was written from
/// when the fast encoder wrote progressive scans (NULL otherwise, or without the memory for
/// them): att_jpeg_held_decode reads the encode back from them (att_jpeg_held_free).
int32_t att_jpeg_encode_held(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                             int32_t quality, int32_t tables, int32_t chroma, int32_t flags, uint8_t **output,
                             size_t *output_length, att_jpeg_held **held, att_error *error);
/// The pixels a decoder makes of the file the held coefficients were written as (`width` ×
/// `height`, `channels` 1 or 3, as att_jpeg_decode_into reads it), without reading the file.
int32_t att_jpeg_held_decode(const att_jpeg_held *held, uint32_t width, uint32_t height, int32_t channels,
                             uint8_t *output, size_t stride, att_error *error);
void att_jpeg_held_free(att_jpeg_held *held);

/// jpegli's luma and chroma steps at `quality` (chroma for 4:2:0 with `half_chroma`), natural
/// order, each 1-255.
void att_jpeg_jpegli_tables(int32_t quality, int32_t half_chroma, unsigned luma[64], unsigned chroma[64]);
/// The quality whose scaling of `tables` gives the same mean quantiser as the IJG tables at
/// `ijg_quality` (the same quality for the IJG's own).
int32_t att_jpeg_equivalent_quality(int32_t ijg_quality, int32_t tables);
/// Decodes a JPEG this process just encoded (`width` × `height`, `channels` 1 or 3) into
/// `output`: how a quality search reads a candidate back to score it.
int32_t att_jpeg_decode_into(const uint8_t *data, size_t length, uint32_t width, uint32_t height, int32_t channels,
                             uint8_t *output, size_t stride, att_error *error);

#endif
