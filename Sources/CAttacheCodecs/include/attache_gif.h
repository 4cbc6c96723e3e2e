// Thin C shim over giflib's record API (never DGifSlurp, which has no limits): the caller
// sees every frame descriptor before any pixel memory is allocated, and the encoder writes
// frames one at a time into memory.
#ifndef ATTACHE_GIF_H
#define ATTACHE_GIF_H

#include <stddef.h>
#include <stdint.h>

#include "attache_codecs.h"

typedef struct att_gif_decoder att_gif_decoder;

typedef struct {
    int32_t width;
    int32_t height;
    int32_t background;
    /// Colours in the global palette (0 = none).
    int32_t colors;
    uint8_t palette[768];
} att_gif_screen;

typedef struct {
    int32_t left, top, width, height;
    int32_t interlaced;
    /// Colours in the local palette (0 = none: the global one applies).
    int32_t colors;
    uint8_t palette[768];
    /// From the graphic control extension before the frame (0 / -1 when absent).
    int32_t disposal;
    int32_t delay_cs;
    int32_t transparent;
} att_gif_frame;

/// Opens a GIF held in memory (which must outlive the decoder) and reads its screen.
att_gif_decoder *att_gif_open(const uint8_t *data, size_t size, att_gif_screen *screen, att_error *error);
/// Reads records up to the next image descriptor. Returns 1 with `frame` filled, 0 at the
/// trailer, or -1 with `error`. `loop_count` is updated when a NETSCAPE2.0 block is seen.
int32_t att_gif_next_frame(att_gif_decoder *decoder, att_gif_frame *frame, int32_t *loop_count, att_error *error);
/// Skips the current frame's compressed data without decoding it (frame scans).
int32_t att_gif_skip_pixels(att_gif_decoder *decoder, att_error *error);
/// Reads the current frame's width × height palette indices in display row order.
/// `checkpoint` (when not NULL) is called with `context` every 64 rows; a non-zero answer stops
/// the read with ATT_ERR_TIMEOUT. giflib never longjmps, so the callback may be Swift's.
int32_t att_gif_read_pixels(att_gif_decoder *decoder, uint8_t *indices, int (*checkpoint)(void *), void *context,
                            att_error *error);
void att_gif_close(att_gif_decoder *decoder);

typedef struct att_gif_encoder att_gif_encoder;

/// Starts a GIF89a of `width` × `height` with a global palette (`palette` NULL: none);
/// `loop_count` < 0 writes no NETSCAPE2.0 block (play once), 0 loops forever.
att_gif_encoder *att_gif_encoder_new(int32_t width, int32_t height, int32_t loop_count, const uint8_t *palette,
                                     int32_t colors, att_error *error);
/// Adds one frame, with a local palette (`colors` ≤ 256 RGB triples) or, when `palette` is
/// NULL, using the global one.
int32_t att_gif_encoder_add(att_gif_encoder *encoder, int32_t left, int32_t top, int32_t width, int32_t height,
                            const uint8_t *indices, const uint8_t *palette, int32_t colors, int32_t delay_cs,
                            int32_t disposal, int32_t transparent, att_error *error);
/// Writes the trailer and returns the file (malloc'd, free with att_free).
uint8_t *att_gif_encoder_finish(att_gif_encoder *encoder, size_t *size, att_error *error);
void att_gif_encoder_free(att_gif_encoder *encoder);

#endif
