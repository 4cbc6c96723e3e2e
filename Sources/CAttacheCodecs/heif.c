#include "attache_codecs.h"

#include <libheif/heif.h>
#include <libheif/heif_properties.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct att_heif {
    struct heif_context *context;
    struct heif_image_handle *handle;
    struct heif_image *tile;  // the tile last decoded (its pixels are lent to the caller)
    struct heif_decoding_options *options;
    const char *fallback;  // another decoder to try when the first one fails, or NULL
    uint8_t *icc;
    const uint8_t *data;  // the file (the caller keeps it alive until att_heif_close)
    size_t length;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void start(void) { heif_init(NULL); }

static void set(att_error *error, int32_t status, const char *what, const char *message) {
    if (!error) return;
    error->status = status;
    snprintf(error->message, sizeof error->message, "%s%s%s", what, message && *message ? ": " : "",
             message ? message : "");
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// The size and header length of the ISO box at `at` (a size of 0 runs to `end`); 0 when fewer
// bytes than its header are left.
static int box(const uint8_t *data, size_t at, size_t end, uint64_t *size, size_t *header) {
    if (at + 8 > end) return 0;
    *size = be32(data + at);
    *header = 8;
    if (*size == 1) {
        if (at + 16 > end) return 0;
        *size = (uint64_t)be32(data + at + 8) << 32 | be32(data + at + 12);
        *header = 16;
    } else if (*size == 0) {
        *size = end - at;
    }
    return 1;
}

// Whether a top-level box says it is longer than the file holds: the file was cut short.
static int cut_short(const uint8_t *data, size_t length) {
    uint64_t size;
    size_t header;
    for (size_t at = 0; at < length; at += (size_t)size) {
        if (!box(data, at, length, &size, &header)) return 1;
        if (size < header) return 0;  // malformed, not cut
        if (size > length - at) return 1;
    }
    return 0;
}

// libheif's error codes as the shim's. A failure on a file cut short is `truncated`, whatever
// libheif made of the missing bytes; a security limit is named by what it counts.
static int32_t failed(struct heif_error e, const uint8_t *data, size_t length, att_error *error, const char *what) {
    int32_t status = ATT_ERR_CORRUPT;
    switch (e.code) {
    case heif_error_Unsupported_filetype:
    case heif_error_Unsupported_feature:
    case heif_error_Plugin_loading_error: status = ATT_ERR_UNSUPPORTED; break;
    case heif_error_Memory_allocation_error: status = ATT_ERR_MEMORY_LIMIT; break;
    case heif_error_Canceled: status = ATT_ERR_TIMEOUT; break;
    case heif_error_Invalid_input:
        status = e.subcode == heif_suberror_End_of_data ? ATT_ERR_TRUNCATED : ATT_ERR_CORRUPT;
        break;
    default: break;
    }
    if (e.subcode == heif_suberror_Security_limit_exceeded) {
        const char *m = e.message ? e.message : "";
        if (strstr(m, "image size") || strstr(m, "pixels"))
            status = ATT_ERR_PIXELS;
        else if (strstr(m, "bytes") && !strstr(m, "profile"))
            status = ATT_ERR_MEMORY_LIMIT;
        else
            status = ATT_ERR_STRUCTURE;  // items, tiles, children, nesting, components
    } else if (status != ATT_ERR_TIMEOUT && status != ATT_ERR_UNSUPPORTED && cut_short(data, length)) {
        status = ATT_ERR_TRUNCATED;
    }
    set(error, status, what, e.message);
    return status;
}

static int has_decoder(enum heif_compression_format format, const char *name) {
    const struct heif_decoder_descriptor *found[16];
    int count = heif_get_decoder_descriptors(format, found, 16);
    for (int i = 0; i < count; i++) {
        if (strcmp(heif_decoder_descriptor_get_id_name(found[i]), name) == 0) return 1;
    }
    return 0;
}

// Finds the child box `type` in [at, end): its payload range, 0 when absent or malformed.
static int child(const uint8_t *data, size_t at, size_t end, const char *type, size_t *from, size_t *to) {
    uint64_t size;
    size_t header;
    while (box(data, at, end, &size, &header)) {
        if (size < header || size > end - at) return 0;
        if (memcmp(data + at + 4, type, 4) == 0) {
            *from = at + header;
            *to = at + (size_t)size;
            return 1;
        }
        at += (size_t)size;
    }
    return 0;
}

// libheif 1.19.7 (as Debian builds it, assertions on) aborts the process on a `clap` box whose
// fractions do not fit a signed 32-bit number (found by fuzz-modern): such boxes are looked
// for in meta/iprp/ipco before libheif is given the file, and the file refused.
static int clap_is_safe(const uint8_t *data, size_t length) {
    size_t meta_from, meta_to, iprp_from, iprp_to, ipco_from, ipco_to;
    if (!child(data, 0, length, "meta", &meta_from, &meta_to)) return 1;
    if (!child(data, meta_from + 4, meta_to, "iprp", &iprp_from, &iprp_to)) return 1;
    if (!child(data, iprp_from, iprp_to, "ipco", &ipco_from, &ipco_to)) return 1;
    size_t at = ipco_from;
    while (at + 8 <= ipco_to) {
        uint32_t size = be32(data + at);
        if (size < 8 || size > ipco_to - at) return 1;  // libheif refuses the structure itself
        if (memcmp(data + at + 4, "clap", 4) == 0) {
            if (size < 40) return 0;
            const uint8_t *f = data + at + 8;
            // width N/D, height N/D, horizontal offset N/D, vertical offset N/D
            for (int i = 0; i < 8; i++) {
                uint32_t v = be32(f + 4 * i);
                int denominator = i & 1, offset_numerator = (i == 4 || i == 6);
                if (!offset_numerator && v > 0x7FFFFFFFu) return 0;
                if (denominator && v == 0) return 0;
            }
        }
        at += size;
    }
    return 1;
}

static int cancelled(void *cell) { return cell != NULL && att_deadline_passed(cell); }

// A grid's tiles checked, and the size of one (from the first tile's ispe box) in `header`;
// -1, error set, when the grid is refused.
static int check_grid(att_heif *h, const struct heif_image_tiling *tiling_in, att_heif_limits limits,
                      att_heif_header *header, att_error *error) {
    const struct heif_image_tiling tiling = *tiling_in;
    const uint8_t *data = h->data;
    size_t length = h->length;
    struct heif_error e;
    uint32_t tile_width = (uint32_t)header->width, tile_height = (uint32_t)header->height;
    heif_item_id first = 0;
    struct heif_image_handle *tile = NULL;
    // libheif 1.19 checks its tile limit for 'tili' images, not for grids.
    if (tiling.num_columns * (uint64_t)tiling.num_rows > limits.max_tiles) {
        char message[96];
        snprintf(message, sizeof message, "%u x %u tiles, over the limit of %llu", tiling.num_columns, tiling.num_rows,
                 (unsigned long long)limits.max_tiles);
        set(error, ATT_ERR_STRUCTURE, "the grid has too many tiles", message);
        return -1;
    }
    if (tiling.num_columns * (uint64_t)tiling.num_rows > 1) {
        e = heif_image_handle_get_grid_image_tile_id(h->handle, 0, 0, 0, &first);
        if (e.code == heif_error_Ok) e = heif_context_get_image_handle(h->context, first, &tile);
        if (e.code != heif_error_Ok) {
            failed(e, data, length, error, "cannot read the grid's first tile");
            return -1;
        }
        tile_width = (uint32_t)heif_image_handle_get_ispe_width(tile);
        tile_height = (uint32_t)heif_image_handle_get_ispe_height(tile);
        heif_image_handle_release(tile);
        // Every tile must be an image: libheif 1.19.7 dereferences a null image when a grid
        // names an item that is not one (found by fuzz-modern), so the grid is checked first.
        uint64_t tiles = (uint64_t)tiling.num_columns * tiling.num_rows;
        for (uint64_t t = 0; t < tiles; t++) {  // tiles <= max_tiles, checked above
            heif_item_id id = 0;
            struct heif_image_handle *each = NULL;
            e = heif_image_handle_get_grid_image_tile_id(h->handle, 0, (uint32_t)(t % tiling.num_columns),
                                                         (uint32_t)(t / tiling.num_columns), &id);
            if (e.code == heif_error_Ok) e = heif_context_get_image_handle(h->context, id, &each);
            if (e.code == heif_error_Ok && each == NULL) e.code = heif_error_Invalid_input;
            if (each) heif_image_handle_release(each);
            if (e.code != heif_error_Ok) {
                set(error, ATT_ERR_CORRUPT, "a grid tile is not an image", NULL);
                return -1;
            }
        }
    }
    header->tile_width = tile_width;
    header->tile_height = tile_height;
    return 0;
}

// irot, imir and clap in the order they apply, as EXIF-style steps and a crop.
static void read_transformations(att_heif *h, att_heif_header *header) {
    heif_item_id id = heif_image_handle_get_item_id(h->handle);
    heif_property_id properties[8];
    int count = heif_item_get_transformation_properties(h->context, id, properties, 8);
    int w = header->width, ht = header->height;
    for (int i = 0; i < count && i < 8; i++) {
        int32_t step = -1;
        switch (heif_item_get_property_type(h->context, id, properties[i])) {
        case heif_item_property_type_transform_rotation:
            switch (heif_item_get_property_transform_rotation_ccw(h->context, id, properties[i])) {
            case 0: step = 1; break;
            case 90: step = 8; break;
            case 180: step = 3; break;
            case 270: step = 6; break;
            default: break;
            }
            if (step == 8 || step == 6) {
                int t = w;
                w = ht;
                ht = t;
            }
            break;
        case heif_item_property_type_transform_mirror:
            switch (heif_item_get_property_transform_mirror(h->context, id, properties[i])) {
            case heif_transform_mirror_direction_horizontal: step = 2; break;
            case heif_transform_mirror_direction_vertical: step = 4; break;
            default: break;
            }
            break;
        case heif_item_property_type_transform_crop: {
            int l = 0, t = 0, r = 0, b = 0;
            if (w <= 0 || ht <= 0) {
                header->unknown_step = 1;
                break;
            }
            heif_item_get_property_transform_crop_borders(h->context, id, properties[i], w, ht, &l, &t, &r, &b);
            if (header->steps > 0) header->crop_after_turn = 1;
            header->crop_left = l;
            header->crop_top = t;
            header->crop_right = r;
            header->crop_bottom = b;
            w -= l + r;
            ht -= t + b;
            step = 0;
            break;
        }
        default: break;
        }
        if (step > 0 && header->steps < 8) header->step[header->steps++] = step;
        if (step < 0) header->unknown_step = 1;
    }
}

// The chroma subsampling, and the colour: an ICC profile (prof, rICC) or nclx code points.
static void read_colour(att_heif *h, att_heif_header *header) {
    enum heif_colorspace space;
    enum heif_chroma chroma;
    if (heif_image_handle_get_preferred_decoding_colorspace(h->handle, &space, &chroma).code == heif_error_Ok) {
        header->chroma = chroma == heif_chroma_420          ? 420
                         : chroma == heif_chroma_422        ? 422
                         : chroma == heif_chroma_monochrome ? 400
                                                            : 444;
    }
    switch (heif_image_handle_get_color_profile_type(h->handle)) {
    case heif_color_profile_type_prof:
    case heif_color_profile_type_rICC: {
        size_t size = heif_image_handle_get_raw_color_profile_size(h->handle);
        if (size > 0 && size <= ATT_ICC_MAX_BYTES && (h->icc = malloc(size)) != NULL &&
            heif_image_handle_get_raw_color_profile(h->handle, h->icc).code == heif_error_Ok) {
            header->icc = h->icc;
            header->icc_length = size;
        }
        break;
    }
    case heif_color_profile_type_nclx: {
        struct heif_color_profile_nclx *nclx = NULL;
        if (heif_image_handle_get_nclx_color_profile(h->handle, &nclx).code == heif_error_Ok && nclx) {
            header->primaries = nclx->color_primaries;
            header->transfer = nclx->transfer_characteristics;
            const float xy[8] = {nclx->color_primary_red_x,   nclx->color_primary_red_y,  nclx->color_primary_green_x,
                                 nclx->color_primary_green_y, nclx->color_primary_blue_x, nclx->color_primary_blue_y,
                                 nclx->color_primary_white_x, nclx->color_primary_white_y};
            for (int i = 0; i < 8; i++) header->primaries_xy[i] = xy[i];
            heif_nclx_color_profile_free(nclx);
        }
        break;
    }
    default: break;
    }
}

/* Limits from the caller, checked by libheif as it reads the boxes, before it allocates. */
static void set_limits(struct heif_context *context, att_heif_limits limits) {
    struct heif_security_limits *security = heif_context_get_security_limits(context);
    security->max_image_size_pixels = limits.max_pixels;
    security->max_memory_block_size = limits.max_memory;
    security->max_number_of_tiles = limits.max_tiles;
    // Items: every tile (and its alpha tile) is one, with room for the image, metadata and a
    // thumbnail; libheif's default (1,000) would refuse grids the tile limit allows.
    security->max_items = (uint32_t)(2 * limits.max_tiles + 64);
    security->max_color_profile_size = ATT_ICC_MAX_BYTES;
    // Tiles are decoded on the calling thread: the pipeline runs its own workers.
    heif_context_set_max_decoding_threads(context, 0);
}

att_heif *att_heif_open(const uint8_t *data, size_t length, att_heif_limits limits, att_heif_header *header,
                        att_error *error) {
    pthread_once(&once, start);
    memset(header, 0, sizeof *header);
    att_heif *h = calloc(1, sizeof *h);
    if (h == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", NULL);
        return NULL;
    }
    h->data = data;
    h->length = length;
    if (!clap_is_safe(data, length)) {
        set(error, ATT_ERR_CORRUPT, "a clean-aperture (clap) box out of range", NULL);
        free(h);
        return NULL;
    }
    h->context = heif_context_alloc();
    if (h->context == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", NULL);
        att_heif_close(h);
        return NULL;
    }
    set_limits(h->context, limits);
    struct heif_error e = heif_context_read_from_memory_without_copy(h->context, data, length, NULL);
    if (e.code == heif_error_Ok) e = heif_context_get_primary_image_handle(h->context, &h->handle);
    // The tiles as stored: libheif 1.19's tiling of a turned grid reports tiles of the wrong
    // shape, so the grid is read as stored and turned here (after the downscale, like EXIF).
    struct heif_image_tiling tiling;
    memset(&tiling, 0, sizeof tiling);
    if (e.code == heif_error_Ok) e = heif_image_handle_get_image_tiling(h->handle, 0, &tiling);
    if (e.code != heif_error_Ok) {
        failed(e, data, length, error, "cannot read the file");
        att_heif_close(h);
        return NULL;
    }
    // Sizes from the ispe boxes (libheif 1.19's tiling mixes turned and stored sizes): the
    // image's, and for a grid its first tile's.
    header->width = heif_image_handle_get_ispe_width(h->handle);
    header->height = heif_image_handle_get_ispe_height(h->handle);
    // No ispe (or a zero one): nothing to size a decode by, and libheif 1.19.7 aborts on a crop
    // computed against it (found by fuzz-modern).
    if (header->width <= 0 || header->height <= 0) {
        set(error, ATT_ERR_CORRUPT, "the image has no size (ispe)", NULL);
        att_heif_close(h);
        return NULL;
    }
    if (check_grid(h, &tiling, limits, header, error) < 0) {
        att_heif_close(h);
        return NULL;
    }
    header->shown_width = heif_image_handle_get_width(h->handle);
    header->shown_height = heif_image_handle_get_height(h->handle);
    header->has_alpha = heif_image_handle_has_alpha_channel(h->handle);
    header->bit_depth = heif_image_handle_get_luma_bits_per_pixel(h->handle);
    header->tile_columns = tiling.num_columns;
    header->tile_rows = tiling.num_rows;
    read_transformations(h, header);
    read_colour(h, header);
    h->options = heif_decoding_options_alloc();
    if (h->options == NULL) {
        set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", NULL);
        att_heif_close(h);
        return NULL;
    }
    h->options->convert_hdr_to_8bit = 1;
    h->options->ignore_transformations = 1;
    h->options->progress_user_data = (void *)limits.deadline;
    h->options->cancel_decoding = cancelled;
    // AV1 (AVIF): libheif picks dav1d first; aom's decoder takes over what dav1d refuses.
    if (limits.av1 && has_decoder(heif_compression_AV1, "aom")) h->fallback = "aom";
    return h;
}

int32_t att_heif_decode_tile(att_heif *h, uint32_t column, uint32_t row, int32_t channels, const uint8_t **pixels,
                             size_t *stride, int32_t *width, int32_t *height, att_error *error) {
    if (h->tile) {
        heif_image_release(h->tile);
        h->tile = NULL;
    }
    const enum heif_chroma chroma = channels == 4 ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB;
    struct heif_error e =
        heif_image_handle_decode_image_tile(h->handle, &h->tile, heif_colorspace_RGB, chroma, h->options, column, row);
    if (e.code == heif_error_Decoder_plugin_error && h->fallback != NULL) {
        // Once failed, every later tile goes to the other decoder too.
        h->options->decoder_id = h->fallback;
        h->fallback = NULL;
        e = heif_image_handle_decode_image_tile(h->handle, &h->tile, heif_colorspace_RGB, chroma, h->options, column,
                                                row);
    }
    if (e.code != heif_error_Ok) {
        if (h->tile) heif_image_release(h->tile);
        h->tile = NULL;
        if (e.code != heif_error_Canceled && cancelled((void *)h->options->progress_user_data)) {
            set(error, ATT_ERR_TIMEOUT, "decode deadline passed", NULL);
            return ATT_ERR_TIMEOUT;
        }
        return failed(e, h->data, h->length, error, "cannot decode the image");
    }
    int s = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(h->tile, heif_channel_interleaved, &s);
    if (plane == NULL || s <= 0) {
        set(error, ATT_ERR_INTERNAL, "libheif gave no interleaved plane", NULL);
        return ATT_ERR_INTERNAL;
    }
    *pixels = plane;
    *stride = (size_t)s;
    *width = heif_image_get_width(h->tile, heif_channel_interleaved);
    *height = heif_image_get_height(h->tile, heif_channel_interleaved);
    return ATT_OK;
}

void att_heif_close(att_heif *h) {
    if (!h) return;
    if (h->tile) heif_image_release(h->tile);
    if (h->options) heif_decoding_options_free(h->options);
    if (h->handle) heif_image_handle_release(h->handle);
    if (h->context) heif_context_free(h->context);
    free(h->icc);
    free(h);
}
