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

int32_t att_webp_decode(
    const uint8_t *data, size_t length, int32_t width, int32_t height, int32_t channels, uint8_t *output,
    size_t stride, att_error *error) {
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
    case VP8_STATUS_UNSUPPORTED_FEATURE: set(error, ATT_ERR_UNSUPPORTED, "a WebP feature libwebp does not decode"); return ATT_ERR_UNSUPPORTED;
    default: set(error, ATT_ERR_CORRUPT, "corrupt image data"); return ATT_ERR_CORRUPT;
    }
}
