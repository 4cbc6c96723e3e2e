// giflib shim: see attache_gif.h. giflib reports errors by return code (no longjmp); the
// shim maps them to att_status and keeps the memory reader and writer out of Swift.
#include "attache_gif.h"

#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct att_gif_decoder {
    GifFileType *gif;
    const uint8_t *data;
    size_t size;
    size_t offset;
    int width, height, interlaced;
    int pending_disposal, pending_delay, pending_transparent;
};

static int read_memory(GifFileType *gif, GifByteType *out, int length) {
    att_gif_decoder *d = gif->UserData;
    size_t available = d->size - d->offset;
    size_t n = (size_t)length < available ? (size_t)length : available;
    memcpy(out, d->data + d->offset, n);
    d->offset += n;
    return (int)n;
}

static void fail(att_error *error, int code, const char *what) {
    const char *reason = GifErrorString(code);
    int truncated = code == D_GIF_ERR_READ_FAILED || code == D_GIF_ERR_EOF_TOO_SOON;
    error->status = truncated                          ? ATT_ERR_TRUNCATED
                    : code == D_GIF_ERR_NOT_ENOUGH_MEM ? ATT_ERR_MEMORY_LIMIT
                                                       : ATT_ERR_CORRUPT;
    snprintf(error->message, sizeof error->message, "%s: %s", what, reason ? reason : "error");
}

/* A colour map's RGB triples into `palette`; its colour count, 0 when it has none usable. */
static int copy_palette(const ColorMapObject *map, uint8_t *palette) {
    if (map == NULL || map->ColorCount <= 0 || map->ColorCount > 256) return 0;
    for (int i = 0; i < map->ColorCount; i++) {
        palette[3 * i] = map->Colors[i].Red;
        palette[3 * i + 1] = map->Colors[i].Green;
        palette[3 * i + 2] = map->Colors[i].Blue;
    }
    return map->ColorCount;
}

att_gif_decoder *att_gif_open(const uint8_t *data, size_t size, att_gif_screen *screen, att_error *error) {
    att_gif_decoder *d = calloc(1, sizeof *d);
    if (d == NULL) {
        error->status = ATT_ERR_INTERNAL;
        snprintf(error->message, sizeof error->message, "out of memory");
        return NULL;
    }
    d->data = data;
    d->size = size;
    d->pending_transparent = -1;
    int code = 0;
    d->gif = DGifOpen(d, read_memory, &code);
    if (d->gif == NULL) {
        fail(error, code, "header");
        free(d);
        return NULL;
    }
    memset(screen, 0, sizeof *screen);
    screen->width = d->gif->SWidth;
    screen->height = d->gif->SHeight;
    screen->background = d->gif->SBackGroundColor;
    screen->colors = copy_palette(d->gif->SColorMap, screen->palette);
    return d;
}

/* An extension record: a graphic control block is kept for the next frame, a NETSCAPE2.0
   (or ANIMEXTS1.0) block gives the loop count. 0, or -1 with `error` set. */
static int32_t read_extension(att_gif_decoder *d, int32_t *loop_count, att_error *error) {
    int code = 0;
    GifByteType *block = NULL;
    if (DGifGetExtension(d->gif, &code, &block) == GIF_ERROR) {
        fail(error, d->gif->Error, "extension");
        return -1;
    }
    int netscape = 0;
    if (code == GRAPHICS_EXT_FUNC_CODE && block != NULL && block[0] >= 4) {
        d->pending_disposal = (block[1] >> 2) & 7;
        d->pending_delay = block[2] | block[3] << 8;
        d->pending_transparent = (block[1] & 1) ? block[4] : -1;
    } else if (code == APPLICATION_EXT_FUNC_CODE && block != NULL && block[0] == 11 &&
               (memcmp(block + 1, "NETSCAPE2.0", 11) == 0 || memcmp(block + 1, "ANIMEXTS1.0", 11) == 0)) {
        netscape = 1;
    }
    while (block != NULL) {
        if (DGifGetExtensionNext(d->gif, &block) == GIF_ERROR) {
            fail(error, d->gif->Error, "extension");
            return -1;
        }
        if (netscape && block != NULL && block[0] >= 3 && block[1] == 1) {
            *loop_count = block[2] | block[3] << 8;
            netscape = 0;
        }
    }
    return 0;
}

/* An image descriptor: the frame's rectangle, palette and the pending control block. 1, or
   -1 with `error` set. */
static int32_t read_descriptor(att_gif_decoder *d, att_gif_frame *frame, att_error *error) {
    // giflib 5.2.1 frees the previous frame's local palette only while SavedImages is
    // empty, so from the second frame on each local palette leaked (its copy in
    // SavedImages is freed, the original is not). The previous frame's palette was
    // already copied out: free it here before giflib reads the next descriptor.
    if (d->gif->Image.ColorMap != NULL) {
        GifFreeMapObject(d->gif->Image.ColorMap);
        d->gif->Image.ColorMap = NULL;
    }
    if (DGifGetImageDesc(d->gif) == GIF_ERROR) {
        fail(error, d->gif->Error, "image descriptor");
        return -1;
    }
    // giflib keeps a descriptor per frame in SavedImages; drop them as we go so a
    // many-frame file does not grow that array.
    if (d->gif->ImageCount > 0 && d->gif->SavedImages != NULL) {
        SavedImage *saved = &d->gif->SavedImages[d->gif->ImageCount - 1];
        if (saved->ImageDesc.ColorMap != NULL) GifFreeMapObject(saved->ImageDesc.ColorMap);
        saved->ImageDesc.ColorMap = NULL;
    }
    GifImageDesc *desc = &d->gif->Image;
    memset(frame, 0, sizeof *frame);
    frame->left = desc->Left;
    frame->top = desc->Top;
    frame->width = desc->Width;
    frame->height = desc->Height;
    frame->interlaced = desc->Interlace ? 1 : 0;
    frame->colors = copy_palette(desc->ColorMap, frame->palette);
    frame->disposal = d->pending_disposal;
    frame->delay_cs = d->pending_delay;
    frame->transparent = d->pending_transparent;
    d->pending_disposal = 0;
    d->pending_delay = 0;
    d->pending_transparent = -1;
    d->width = desc->Width;
    d->height = desc->Height;
    d->interlaced = desc->Interlace;
    return 1;
}

int32_t att_gif_next_frame(att_gif_decoder *d, att_gif_frame *frame, int32_t *loop_count, att_error *error) {
    GifRecordType type;
    for (;;) {
        if (DGifGetRecordType(d->gif, &type) == GIF_ERROR) {
            fail(error, d->gif->Error, "record");
            return -1;
        }
        if (type == TERMINATE_RECORD_TYPE) return 0;
        if (type == EXTENSION_RECORD_TYPE) {
            if (read_extension(d, loop_count, error) != 0) return -1;
            continue;
        }
        if (type == IMAGE_DESC_RECORD_TYPE) return read_descriptor(d, frame, error);
        error->status = ATT_ERR_CORRUPT;
        snprintf(error->message, sizeof error->message, "unknown record type");
        return -1;
    }
}

int32_t att_gif_skip_pixels(att_gif_decoder *d, att_error *error) {
    int code_size = 0;
    GifByteType *block = NULL;
    if (DGifGetCode(d->gif, &code_size, &block) == GIF_ERROR) {
        fail(error, d->gif->Error, "pixels");
        return -1;
    }
    while (block != NULL) {
        if (DGifGetCodeNext(d->gif, &block) == GIF_ERROR) {
            fail(error, d->gif->Error, "pixels");
            return -1;
        }
    }
    return 0;
}

int32_t att_gif_read_pixels(att_gif_decoder *d, uint8_t *indices, int (*checkpoint)(void *), void *context,
                            att_error *error) {
    static const int offsets[4] = {0, 4, 2, 1}, steps[4] = {8, 8, 4, 2};
    int passes = d->interlaced ? 4 : 1;
    long rows = 0;
    for (int pass = 0; pass < passes; pass++) {
        int first = d->interlaced ? offsets[pass] : 0, step = d->interlaced ? steps[pass] : 1;
        for (int y = first; y < d->height; y += step) {
            if (checkpoint != NULL && (++rows & 63) == 0 && checkpoint(context) != 0) {
                error->status = ATT_ERR_TIMEOUT;
                snprintf(error->message, sizeof error->message, "decode deadline passed");
                return -1;
            }
            if (DGifGetLine(d->gif, indices + (size_t)y * d->width, d->width) == GIF_ERROR) {
                fail(error, d->gif->Error, "pixels");
                return -1;
            }
        }
    }
    return 0;
}

void att_gif_close(att_gif_decoder *d) {
    if (d == NULL) return;
    int code = 0;
    if (d->gif != NULL) DGifCloseFile(d->gif, &code);
    free(d);
}

// MARK: - Encoder

struct att_gif_encoder {
    GifFileType *gif;
    uint8_t *out;
    size_t size;
    size_t capacity;
    int failed;
};

static int write_memory(GifFileType *gif, const GifByteType *bytes, int length) {
    att_gif_encoder *e = gif->UserData;
    if (e->size + (size_t)length > e->capacity) {
        size_t capacity = e->capacity ? e->capacity * 2 : 64 * 1024;
        while (capacity < e->size + (size_t)length) capacity *= 2;
        uint8_t *grown = realloc(e->out, capacity);
        if (grown == NULL) {
            e->failed = 1;
            return 0;
        }
        e->out = grown;
        e->capacity = capacity;
    }
    memcpy(e->out + e->size, bytes, (size_t)length);
    e->size += (size_t)length;
    return length;
}

static void encode_fail(att_error *error, int code, const char *what) {
    const char *reason = GifErrorString(code);
    error->status = ATT_ERR_INTERNAL;
    snprintf(error->message, sizeof error->message, "encode %s: %s", what, reason ? reason : "error");
}

static ColorMapObject *make_map(const uint8_t *palette, int32_t colors) {
    int size = 2;
    while (size < colors) size *= 2;
    GifColorType table[256];
    memset(table, 0, sizeof table);
    for (int i = 0; i < colors && i < 256; i++) {
        table[i].Red = palette[3 * i];
        table[i].Green = palette[3 * i + 1];
        table[i].Blue = palette[3 * i + 2];
    }
    return GifMakeMapObject(size, table);
}

att_gif_encoder *att_gif_encoder_new(int32_t width, int32_t height, int32_t loop_count, const uint8_t *palette,
                                     int32_t colors, att_error *error) {
    att_gif_encoder *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    int code = 0;
    e->gif = EGifOpen(e, write_memory, &code);
    if (e->gif == NULL) {
        encode_fail(error, code, "open");
        free(e);
        return NULL;
    }
    EGifSetGifVersion(e->gif, true);
    ColorMapObject *global = palette != NULL ? make_map(palette, colors) : NULL;
    int rc = EGifPutScreenDesc(e->gif, width, height, 8, 0, global);
    if (global != NULL) GifFreeMapObject(global);
    if (rc == GIF_ERROR) {
        encode_fail(error, e->gif->Error, "screen");
        att_gif_encoder_free(e);
        return NULL;
    }
    if (loop_count >= 0) {
        GifByteType loop[3] = {1, (GifByteType)(loop_count & 0xFF), (GifByteType)(loop_count >> 8)};
        if (EGifPutExtensionLeader(e->gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
            EGifPutExtensionBlock(e->gif, 11, "NETSCAPE2.0") == GIF_ERROR ||
            EGifPutExtensionBlock(e->gif, 3, loop) == GIF_ERROR || EGifPutExtensionTrailer(e->gif) == GIF_ERROR) {
            encode_fail(error, e->gif->Error, "loop");
            att_gif_encoder_free(e);
            return NULL;
        }
    }
    return e;
}

int32_t att_gif_encoder_add(att_gif_encoder *e, int32_t left, int32_t top, int32_t width, int32_t height,
                            const uint8_t *indices, const uint8_t *palette, int32_t colors, int32_t delay_cs,
                            int32_t disposal, int32_t transparent, att_error *error) {
    ColorMapObject *map = palette != NULL ? make_map(palette, colors) : NULL;
    if (palette != NULL && map == NULL) {
        encode_fail(error, E_GIF_ERR_NOT_ENOUGH_MEM, "palette");
        return -1;
    }
    GifByteType control[4] = {
        (GifByteType)(((disposal & 7) << 2) | (transparent >= 0 ? 1 : 0)),
        (GifByteType)(delay_cs & 0xFF),
        (GifByteType)((delay_cs >> 8) & 0xFF),
        (GifByteType)(transparent >= 0 ? transparent : 0),
    };
    int rc = EGifPutExtension(e->gif, GRAPHICS_EXT_FUNC_CODE, 4, control);
    // giflib 5.2.1's EGifPutImageDesc drops (without freeing) the previous frame's copy of its
    // local palette when this frame has none; it is not needed past that frame, so free it.
    if (map == NULL && e->gif->Image.ColorMap != NULL) {
        GifFreeMapObject(e->gif->Image.ColorMap);
        e->gif->Image.ColorMap = NULL;
    }
    if (rc != GIF_ERROR) rc = EGifPutImageDesc(e->gif, left, top, width, height, false, map);
    for (int y = 0; rc != GIF_ERROR && y < height; y++) {
        rc = EGifPutLine(e->gif, (GifPixelType *)indices + (size_t)y * width, width);
    }
    if (map != NULL) GifFreeMapObject(map);
    if (rc == GIF_ERROR || e->failed) {
        encode_fail(error, e->gif->Error, "frame");
        return -1;
    }
    return 0;
}

uint8_t *att_gif_encoder_finish(att_gif_encoder *e, size_t *size, att_error *error) {
    int code = 0;
    if (EGifCloseFile(e->gif, &code) == GIF_ERROR || e->failed) {
        e->gif = NULL;
        encode_fail(error, code, "close");
        return NULL;
    }
    e->gif = NULL;
    uint8_t *out = e->out;
    *size = e->size;
    e->out = NULL;
    return out;
}

void att_gif_encoder_free(att_gif_encoder *e) {
    if (e == NULL) return;
    int code = 0;
    if (e->gif != NULL) EGifCloseFile(e->gif, &code);
    free(e->out);
    free(e);
}
