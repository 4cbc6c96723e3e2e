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
    int is_srgb = JxlDecoderGetColorAsEncodedProfile(j->decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &data) ==
                      JXL_DEC_SUCCESS &&
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

att_jxl *att_jxl_open(const uint8_t *data, size_t length, att_jxl_header *header, att_error *error) {
    memset(header, 0, sizeof *header);
    att_jxl *j = calloc(1, sizeof *j);
    if (j == NULL || (j->decoder = JxlDecoderCreate(NULL)) == NULL) {
        free(j);
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return NULL;
    }
    j->data = data;
    j->length = length;
    // Orientation is applied by the caller after the downscale, as a JPEG's EXIF orientation is.
    JxlDecoderSetKeepOrientation(j->decoder, JXL_TRUE);
    JxlDecoderSetUnpremultiplyAlpha(j->decoder, JXL_TRUE);
    if (JxlDecoderSubscribeEvents(j->decoder, JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | JXL_DEC_FULL_IMAGE) !=
        JXL_DEC_SUCCESS) {
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

int32_t att_jxl_decode(
    att_jxl *j, int32_t channels, att_row_sink sink, void *context, const uint64_t *deadline, att_error *error) {
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
