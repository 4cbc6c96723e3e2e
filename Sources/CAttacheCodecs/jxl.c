#include "attache_codecs.h"

#include <jxl/decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct att_jxl {
    JxlDecoder *decoder;
    const uint8_t *data;
    size_t length;
    size_t consumed;  // input bytes libjxl is done with
    size_t given;     // input bytes handed to libjxl so far
    JxlBasicInfo info;
    uint8_t *icc;
};

// Input is handed over in slices so the deadline is checked between them: libjxl 0.7 cannot
// be interrupted inside a call.
#define ATT_JXL_SLICE ((size_t)256 << 10)

static void set(att_error *error, int32_t status, const char *message) {
    if (!error) return;
    error->status = status;
    snprintf(error->message, sizeof error->message, "%s", message);
}

// Gives libjxl the next slice of input after it asked for more; 0 when there is none left.
static int feed(att_jxl *j) {
    size_t left = JxlDecoderReleaseInput(j->decoder);
    j->consumed = j->given - left;
    if (j->given >= j->length) return 0;
    j->given = j->given + ATT_JXL_SLICE < j->length ? j->given + ATT_JXL_SLICE : j->length;
    JxlDecoderSetInput(j->decoder, j->data + j->consumed, j->given - j->consumed);
    // The input is not closed: libjxl then asks for more where a cut file ends (truncated),
    // where a closed input would make it fail as corrupt.
    return 1;
}

/* The header's size, alpha, orientation and colour model, from libjxl's basic info. */
static void read_basic_info(const att_jxl *j, att_jxl_header *header) {
    header->width = (int32_t)(j->info.xsize > INT32_MAX ? INT32_MAX : j->info.xsize);
    header->height = (int32_t)(j->info.ysize > INT32_MAX ? INT32_MAX : j->info.ysize);
    header->has_alpha = j->info.alpha_bits > 0;
    header->orientation = (int32_t)j->info.orientation;
    header->animated = j->info.have_animation ? 1 : 0;
    header->bits = (int32_t)j->info.bits_per_sample;
    header->xyb = j->info.uses_original_profile ? 0 : 1;
    header->gray = j->info.num_color_channels == 1;
}

/* The colour space the pixels come in: XYB turned by libjxl into the original space when it
   has a name (else sRGB), and an ICC profile of any space that is not sRGB for the caller. */
static void read_colour(att_jxl *j, att_jxl_header *header) {
    // XYB (lossy) images are turned into sRGB by libjxl itself; others come in the colour
    // space they were stored in, and an ICC profile of it is handed to the caller.
    JxlColorEncoding srgb;
    memset(&srgb, 0, sizeof srgb);
    srgb.color_space = header->gray ? JXL_COLOR_SPACE_GRAY : JXL_COLOR_SPACE_RGB;
    srgb.white_point = JXL_WHITE_POINT_D65;
    srgb.primaries = JXL_PRIMARIES_SRGB;
    srgb.transfer_function = JXL_TRANSFER_FUNCTION_SRGB;
    srgb.rendering_intent = JXL_RENDERING_INTENT_PERCEPTUAL;
    if (header->xyb) {
        // XYB is turned by libjxl into the original colour space when that has a name
        // (then lcms2 converts it, perceptual like every other profile: libjxl itself
        // would clip out-of-gamut colours), otherwise straight into sRGB.
        JxlColorEncoding original;
        int named = JxlDecoderGetColorAsEncodedProfile(j->decoder, NULL, JXL_COLOR_PROFILE_TARGET_ORIGINAL,
                                                       &original) == JXL_DEC_SUCCESS;
        if (!named || JxlDecoderSetPreferredColorProfile(j->decoder, &original) != JXL_DEC_SUCCESS) {
            header->converted_by_decoder = 1;
            JxlDecoderSetPreferredColorProfile(j->decoder, &srgb);
        }
    }
    JxlColorEncoding data;
    int is_srgb =
        JxlDecoderGetColorAsEncodedProfile(j->decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &data) == JXL_DEC_SUCCESS &&
        data.white_point == JXL_WHITE_POINT_D65 &&
        (data.color_space == JXL_COLOR_SPACE_GRAY || data.primaries == JXL_PRIMARIES_SRGB) &&
        data.transfer_function == JXL_TRANSFER_FUNCTION_SRGB;
    size_t size = 0;
    if (!is_srgb &&
        JxlDecoderGetICCProfileSize(j->decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS &&
        size > 0 && size <= ATT_ICC_MAX_BYTES && (j->icc = malloc(size)) != NULL &&
        JxlDecoderGetColorAsICCProfile(j->decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, j->icc, size) ==
            JXL_DEC_SUCCESS) {
        header->icc = j->icc;
        header->icc_length = size;
    }
}

/* A decoder that has read the header and colour encoding. A still keeps its orientation (the
   caller turns it after the downscale) and decodes its first frame; an animation is turned by
   libjxl and reports each frame. */
static att_jxl *open_decoder(const uint8_t *data, size_t length, int animation, att_jxl_header *header,
                             att_error *error) {
    memset(header, 0, sizeof *header);
    att_jxl *j = calloc(1, sizeof *j);
    if (j == NULL || (j->decoder = JxlDecoderCreate(NULL)) == NULL) {
        free(j);
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return NULL;
    }
    j->data = data;
    j->length = length;
    // A still's orientation is applied by the caller after the downscale, as a JPEG's EXIF
    // orientation is.
    JxlDecoderSetKeepOrientation(j->decoder, animation ? JXL_FALSE : JXL_TRUE);
    JxlDecoderSetUnpremultiplyAlpha(j->decoder, JXL_TRUE);
    int events = JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | JXL_DEC_FULL_IMAGE | (animation ? JXL_DEC_FRAME : 0);
    if (JxlDecoderSubscribeEvents(j->decoder, events) != JXL_DEC_SUCCESS) {
        set(error, ATT_ERR_INTERNAL, "libjxl refused its events");
        att_jxl_close(j);
        return NULL;
    }
    feed(j);
    for (;;) {
        JxlDecoderStatus status = JxlDecoderProcessInput(j->decoder);
        if (status == JXL_DEC_NEED_MORE_INPUT) {
            if (!feed(j)) {
                set(error, ATT_ERR_TRUNCATED, "the header is cut short");
                att_jxl_close(j);
                return NULL;
            }
            continue;
        }
        if (status == JXL_DEC_BASIC_INFO) {
            if (JxlDecoderGetBasicInfo(j->decoder, &j->info) != JXL_DEC_SUCCESS) break;
            read_basic_info(j, header);
            continue;
        }
        if (status == JXL_DEC_COLOR_ENCODING) {
            read_colour(j, header);
            return j;
        }
        break;
    }
    set(error, ATT_ERR_CORRUPT, "not a JPEG XL image libjxl reads");
    att_jxl_close(j);
    return NULL;
}

att_jxl *att_jxl_open(const uint8_t *data, size_t length, att_jxl_header *header, att_error *error) {
    return open_decoder(data, length, 0, header, error);
}

// Rows arrive as pieces (x, y, count); whole rows go to the sink in order, held meanwhile in a
// ring of `band` rows.
typedef struct {
    att_row_sink sink;
    void *context;
    uint8_t *ring;
    size_t *filled;
    size_t band;
    size_t width;
    size_t height;
    size_t channels;
    size_t next;  // the next row to hand on
    int out_of_order;
} att_jxl_rows;

static void take(void *opaque, size_t x, size_t y, size_t count, const void *pixels) {
    att_jxl_rows *r = opaque;
    if (r->out_of_order || y < r->next || y >= r->height || x + count > r->width || y >= r->next + r->band) {
        r->out_of_order = 1;
        return;
    }
    size_t slot = y % r->band;
    memcpy(r->ring + (slot * r->width + x) * r->channels, pixels, count * r->channels);
    r->filled[slot] += count;
    while (r->next < r->height && r->filled[r->next % r->band] >= r->width) {
        size_t s = r->next % r->band;
        r->sink(r->context, r->ring + s * r->width * r->channels);
        r->filled[s] = 0;
        r->next++;
    }
}

int32_t att_jxl_decode(att_jxl *j, int32_t channels, att_row_sink sink, void *context, const uint64_t *deadline,
                       att_error *error) {
    att_jxl_rows rows;
    memset(&rows, 0, sizeof rows);
    rows.sink = sink;
    rows.context = context;
    rows.width = j->info.xsize;
    rows.height = j->info.ysize;
    rows.channels = (size_t)channels;
    rows.band = rows.height < ATT_JXL_BAND ? rows.height : ATT_JXL_BAND;
    rows.ring = malloc(rows.band * rows.width * rows.channels);
    rows.filled = calloc(rows.band, sizeof(size_t));
    int32_t result = ATT_OK;
    if (rows.ring == NULL || rows.filled == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        result = ATT_ERR_MEMORY_LIMIT;
    }
    JxlPixelFormat format = {(uint32_t)channels, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    while (result == ATT_OK) {
        if (deadline && att_deadline_passed(deadline)) {
            set(error, ATT_ERR_TIMEOUT, "decode deadline passed");
            result = ATT_ERR_TIMEOUT;
            break;
        }
        JxlDecoderStatus status = JxlDecoderProcessInput(j->decoder);
        if (status == JXL_DEC_NEED_MORE_INPUT) {
            if (!feed(j)) {
                set(error, ATT_ERR_TRUNCATED, "image data ended early");
                result = ATT_ERR_TRUNCATED;
            }
        } else if (status == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            if (JxlDecoderSetImageOutCallback(j->decoder, &format, take, &rows) != JXL_DEC_SUCCESS) {
                set(error, ATT_ERR_UNSUPPORTED, "libjxl cannot give this image as 8-bit rows");
                result = ATT_ERR_UNSUPPORTED;
            }
        } else if (status == JXL_DEC_FULL_IMAGE) {
            // The first frame is the image (an animation shows its first frame).
            if (rows.out_of_order || rows.next != rows.height) {
                set(error, ATT_ERR_INTERNAL, "libjxl gave rows out of order or too few");
                result = ATT_ERR_INTERNAL;
            }
            break;
        } else if (status == JXL_DEC_SUCCESS) {
            set(error, ATT_ERR_CORRUPT, "the file holds no image");
            result = ATT_ERR_CORRUPT;
        } else {
            set(error, ATT_ERR_CORRUPT, "corrupt image data");
            result = ATT_ERR_CORRUPT;
        }
    }
    free(rows.ring);
    free(rows.filled);
    return result;
}

void att_jxl_close(att_jxl *j) {
    if (!j) return;
    if (j->decoder) JxlDecoderDestroy(j->decoder);
    free(j->icc);
    free(j);
}

// MARK: - Animations

struct att_jxl_anim {
    att_jxl *frames;  // the decoder of the frames, composed by libjxl (coalescing)
    uint8_t *canvas;  // RGBA, width x height
    size_t canvas_size;
    double centiseconds_per_tick;
    uint64_t ticks;    // the end of the frames handed out so far
    int32_t ended_at;  // in centiseconds, from `ticks`, so rounding never adds up
    int32_t pending_delay;
};

/* Counts the frames and their ticks from the frame headers alone (no pixel is decoded); more
   than `max_frames` stops the count. 0, or an att_status with `error` set. */
static int32_t scan_frames(const uint8_t *data, size_t length, int32_t max_frames, att_jxl_anim_header *header,
                           const uint64_t *deadline, att_error *error) {
    att_jxl scan = {.data = data, .length = length};
    if ((scan.decoder = JxlDecoderCreate(NULL)) == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return ATT_ERR_MEMORY_LIMIT;
    }
    JxlDecoderSubscribeEvents(scan.decoder, JXL_DEC_FRAME);
    feed(&scan);
    int32_t result = ATT_OK;
    for (;;) {
        if (deadline && att_deadline_passed(deadline)) {
            set(error, result = ATT_ERR_TIMEOUT, "decode deadline passed");
            break;
        }
        JxlDecoderStatus status = JxlDecoderProcessInput(scan.decoder);
        if (status == JXL_DEC_NEED_MORE_INPUT) {
            if (feed(&scan)) continue;
            set(error, result = ATT_ERR_TRUNCATED, "the animation is cut short");
        } else if (status == JXL_DEC_FRAME) {
            JxlFrameHeader frame;
            if (JxlDecoderGetFrameHeader(scan.decoder, &frame) == JXL_DEC_SUCCESS) header->ticks += frame.duration;
            if (++header->frames <= max_frames) continue;
            set(error, result = ATT_ERR_SCAN_LIMIT, "more frames than the limit");
        } else if (status != JXL_DEC_SUCCESS) {
            set(error, result = ATT_ERR_CORRUPT, "corrupt animation");
        }
        break;
    }
    JxlDecoderDestroy(scan.decoder);
    return result;
}

att_jxl_anim *att_jxl_anim_open(const uint8_t *data, size_t length, att_jxl_anim_header *header, att_error *error) {
    memset(header, 0, sizeof *header);
    att_jxl_anim *a = calloc(1, sizeof *a);
    if (a == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return NULL;
    }
    att_jxl_header still;
    if ((a->frames = open_decoder(data, length, 1, &still, error)) == NULL) {
        free(a);
        return NULL;
    }
    const JxlBasicInfo *info = &a->frames->info;
    if (!info->have_animation || info->animation.tps_numerator == 0) {
        set(error, ATT_ERR_UNSUPPORTED, "not an animation");
        att_jxl_anim_close(a);
        return NULL;
    }
    // libjxl turns the frames: the canvas is the upright size.
    int turned = still.orientation > 4;
    header->width = turned ? still.height : still.width;
    header->height = turned ? still.width : still.height;
    header->has_alpha = still.has_alpha;
    header->loop_count = (int32_t)info->animation.num_loops;
    header->icc = still.icc;
    header->icc_length = still.icc_length;
    a->centiseconds_per_tick = 100.0 * info->animation.tps_denominator / info->animation.tps_numerator;
    return a;
}

int32_t att_jxl_anim_count(att_jxl_anim *a, int32_t max_frames, att_jxl_anim_header *header, const uint64_t *deadline,
                           att_error *error) {
    int32_t status = scan_frames(a->frames->data, a->frames->length, max_frames, header, deadline, error);
    header->duration_cs = (int64_t)(header->ticks * a->centiseconds_per_tick + 0.5);
    return status;
}

int32_t att_jxl_anim_next(att_jxl_anim *a, const uint8_t **rgba, int32_t *delay_cs, const uint64_t *deadline,
                          att_error *error) {
    JxlDecoder *decoder = a->frames->decoder;
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    for (;;) {
        if (deadline && att_deadline_passed(deadline)) {
            set(error, ATT_ERR_TIMEOUT, "decode deadline passed");
            return -1;
        }
        JxlDecoderStatus status = JxlDecoderProcessInput(decoder);
        if (status == JXL_DEC_NEED_MORE_INPUT) {
            if (feed(a->frames)) continue;
            set(error, ATT_ERR_TRUNCATED, "the animation is cut short");
            return -1;
        }
        if (status == JXL_DEC_FRAME) {
            JxlFrameHeader frame;
            if (JxlDecoderGetFrameHeader(decoder, &frame) != JXL_DEC_SUCCESS) frame.duration = 0;
            a->ticks += frame.duration;
            int32_t end = (int32_t)(a->ticks * a->centiseconds_per_tick + 0.5);
            a->pending_delay = end > a->ended_at ? end - a->ended_at : 0;
            a->ended_at = end;
            continue;
        }
        if (status == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t size = 0;
            if (JxlDecoderImageOutBufferSize(decoder, &format, &size) != JXL_DEC_SUCCESS) break;
            if (a->canvas == NULL) {
                a->canvas = malloc(size);
                a->canvas_size = size;
            }
            if (a->canvas == NULL || size != a->canvas_size ||
                JxlDecoderSetImageOutBuffer(decoder, &format, a->canvas, size) != JXL_DEC_SUCCESS) {
                set(error, ATT_ERR_CORRUPT, "a frame is not the size of the canvas");
                return -1;
            }
            continue;
        }
        if (status == JXL_DEC_FULL_IMAGE) {
            *rgba = a->canvas;
            *delay_cs = a->pending_delay;
            return 1;
        }
        if (status == JXL_DEC_SUCCESS) return 0;
        break;
    }
    set(error, ATT_ERR_CORRUPT, "corrupt animation");
    return -1;
}

void att_jxl_anim_close(att_jxl_anim *a) {
    if (!a) return;
    att_jxl_close(a->frames);
    free(a->canvas);
    free(a);
}
