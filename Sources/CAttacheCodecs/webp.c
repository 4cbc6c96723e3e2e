#include "attache_codecs.h"

#include <stdio.h>
#include <string.h>
#include <webp/decode.h>

static void set(att_error *error, int32_t status, const char *message) {
    if (!error) return;
    error->status = status;
    snprintf(error->message, sizeof error->message, "%s", message);
}

int32_t att_webp_probe(const uint8_t *data, size_t length, att_webp_header *header, att_error *error) {
    memset(header, 0, sizeof *header);
    WebPBitstreamFeatures features;
    VP8StatusCode status = WebPGetFeatures(data, length, &features);
    if (status == VP8_STATUS_NOT_ENOUGH_DATA) {
        set(error, ATT_ERR_TRUNCATED, "the header is cut short");
        return ATT_ERR_TRUNCATED;
    }
    if (status != VP8_STATUS_OK) {
        set(error, ATT_ERR_CORRUPT, "not a WebP bitstream libwebp reads");
        return ATT_ERR_CORRUPT;
    }
    header->width = features.width;
    header->height = features.height;
    header->has_alpha = features.has_alpha ? 1 : 0;
    header->has_animation = features.has_animation ? 1 : 0;
    header->lossless = features.format == 2 ? 1 : 0;
    return ATT_OK;
}

int32_t att_webp_decode(const uint8_t *data, size_t length, int32_t width, int32_t height, int32_t channels,
                        uint8_t *output, size_t stride, att_error *error) {
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) {
        set(error, ATT_ERR_INTERNAL, "libwebp version mismatch");
        return ATT_ERR_INTERNAL;
    }
    // Scaled while it decodes, into the caller's buffer: memory is the output's (plus, for a
    // lossless file, libwebp's own whole-image buffer, which the caller bounded first).
    config.options.use_scaling = 1;
    config.options.scaled_width = width;
    config.options.scaled_height = height;
    config.options.use_threads = 0;
    config.output.colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = output;
    config.output.u.RGBA.stride = (int)stride;
    config.output.u.RGBA.size = stride * (size_t)height;
    VP8StatusCode status = WebPDecode(data, length, &config);
    WebPFreeDecBuffer(&config.output);
    switch (status) {
    case VP8_STATUS_OK: return ATT_OK;
    case VP8_STATUS_NOT_ENOUGH_DATA: set(error, ATT_ERR_TRUNCATED, "image data ended early"); return ATT_ERR_TRUNCATED;
    case VP8_STATUS_OUT_OF_MEMORY: set(error, ATT_ERR_MEMORY_LIMIT, "out of memory"); return ATT_ERR_MEMORY_LIMIT;
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        set(error, ATT_ERR_UNSUPPORTED, "a WebP feature libwebp does not decode");
        return ATT_ERR_UNSUPPORTED;
    default: set(error, ATT_ERR_CORRUPT, "corrupt image data"); return ATT_ERR_CORRUPT;
    }
}

// MARK: - Animations (libwebpdemux)

#include <stdlib.h>
#include <webp/demux.h>

struct att_webp_anim {
    WebPAnimDecoder *decoder;
    WebPData data;
};

// A failure on a file whose RIFF header says it is longer than it is: the file was cut short.
static int32_t anim_failed(const WebPData *data, att_error *error, const char *message) {
    const uint8_t *p = data->bytes;
    uint64_t riff =
        data->size >= 8 ? (uint64_t)p[4] | (uint64_t)p[5] << 8 | (uint64_t)p[6] << 16 | (uint64_t)p[7] << 24 : 0;
    if (data->size < 12 || riff + 8 > data->size) {
        set(error, ATT_ERR_TRUNCATED, "the file ends before its RIFF size says");
        return ATT_ERR_TRUNCATED;
    }
    set(error, ATT_ERR_CORRUPT, message);
    return ATT_ERR_CORRUPT;
}

att_webp_anim *att_webp_anim_open(const uint8_t *data, size_t length, att_webp_anim_header *header, att_error *error) {
    memset(header, 0, sizeof *header);
    att_webp_anim *a = calloc(1, sizeof *a);
    if (a == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return NULL;
    }
    a->data.bytes = data;
    a->data.size = length;
    // The canvas size and frame count are read from the headers (demux) before the decoder,
    // which allocates two canvases, is made: the caller checks them first.
    WebPDemuxer *demux = WebPDemux(&a->data);
    if (demux == NULL) {
        anim_failed(&a->data, error, "not an animated WebP libwebp reads");
        free(a);
        return NULL;
    }
    header->width = (int32_t)WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH);
    header->height = (int32_t)WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT);
    header->frames = (int32_t)WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT);
    header->loop_count = (int32_t)WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT);
    WebPIterator frame;
    if (WebPDemuxGetFrame(demux, 1, &frame)) {
        do header->duration_ms += frame.duration;
        while (WebPDemuxNextFrame(&frame));
        WebPDemuxReleaseIterator(&frame);
    }
    WebPDemuxDelete(demux);
    return a;
}

int32_t att_webp_anim_start(att_webp_anim *a, att_error *error) {
    WebPAnimDecoderOptions options;
    if (!WebPAnimDecoderOptionsInit(&options)) {
        set(error, ATT_ERR_INTERNAL, "libwebpdemux version mismatch");
        return ATT_ERR_INTERNAL;
    }
    // Straight (not premultiplied) RGBA, on the calling thread.
    options.color_mode = MODE_RGBA;
    options.use_threads = 0;
    a->decoder = WebPAnimDecoderNew(&a->data, &options);
    if (a->decoder == NULL) return anim_failed(&a->data, error, "libwebp cannot decode this animation");
    return ATT_OK;
}

int32_t att_webp_anim_next(att_webp_anim *a, const uint8_t **rgba, int32_t *timestamp, att_error *error) {
    *rgba = NULL;
    if (a->decoder == NULL || !WebPAnimDecoderHasMoreFrames(a->decoder)) return ATT_OK;
    uint8_t *frame = NULL;
    int time = 0;
    if (!WebPAnimDecoderGetNext(a->decoder, &frame, &time))
        return anim_failed(&a->data, error, "a frame cannot be decoded");
    *rgba = frame;
    *timestamp = time;
    return ATT_OK;
}

void att_webp_anim_close(att_webp_anim *a) {
    if (!a) return;
    if (a->decoder) WebPAnimDecoderDelete(a->decoder);
    free(a);
}

// MARK: - Encoding

#include <webp/encode.h>

int32_t att_webp_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int32_t channels,
                        int32_t quality, uint8_t **output, size_t *length, att_error *error) {
    *output = NULL;
    *length = 0;
    // Grey (and grey + alpha) is widened to RGB(A): libwebp takes only those.
    const uint8_t *rgb = pixels;
    uint8_t *widened = NULL;
    size_t rgb_stride = stride;
    int alpha = channels == 2 || channels == 4;
    if (channels == 1 || channels == 2) {
        int out = alpha ? 4 : 3;
        widened = malloc((size_t)width * height * (size_t)out);
        if (widened == NULL) {
            set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
            return ATT_ERR_MEMORY_LIMIT;
        }
        for (uint32_t y = 0; y < height; y++) {
            const uint8_t *in = pixels + y * stride;
            uint8_t *o = widened + (size_t)y * width * (size_t)out;
            for (uint32_t x = 0; x < width; x++) {
                o[x * out] = o[x * out + 1] = o[x * out + 2] = in[x * channels];
                if (alpha) o[x * out + 3] = in[x * channels + 1];
            }
        }
        rgb = widened;
        rgb_stride = (size_t)width * (size_t)out;
    }
    uint8_t *encoded = NULL;
    size_t size = alpha ? WebPEncodeRGBA(rgb, (int)width, (int)height, (int)rgb_stride, (float)quality, &encoded)
                        : WebPEncodeRGB(rgb, (int)width, (int)height, (int)rgb_stride, (float)quality, &encoded);
    free(widened);
    if (size == 0 || encoded == NULL) {
        WebPFree(encoded);
        set(error, ATT_ERR_INTERNAL, "libwebp could not encode the image");
        return ATT_ERR_INTERNAL;
    }
    // Handed back in memory att_free releases.
    *output = malloc(size);
    if (*output == NULL) {
        WebPFree(encoded);
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return ATT_ERR_MEMORY_LIMIT;
    }
    memcpy(*output, encoded, size);
    *length = size;
    WebPFree(encoded);
    return ATT_OK;
}
