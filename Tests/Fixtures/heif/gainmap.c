// Writes gainmap.heic: an iOS 18-shaped HEIC made with libheif's item API: a primary image
// with EXIF; a gain map (half size, monochrome) attached to it as an auxiliary image of
// Apple's type (auxl reference, auxC "urn:com:apple:photo:2020:aux:hdrgainmap") carrying its
// own XMP (the metadata libheif 1.15-1.17 could not assign: "Metadata not correctly assigned
// to image"); and an ISO 21496-1 `tmap` item derived from both. Built and run by make.sh.
#include <libheif/heif.h>
#include <libheif/heif_items.h>
#include <libheif/heif_properties.h>
#include <stdio.h>
#include <string.h>

static struct heif_image *gradient(int w, int h, int grey) {
    struct heif_image *image = NULL;
    heif_image_create(w, h, grey ? heif_colorspace_monochrome : heif_colorspace_RGB,
                      grey ? heif_chroma_monochrome : heif_chroma_interleaved_RGB, &image);
    enum heif_channel channel = grey ? heif_channel_Y : heif_channel_interleaved;
    heif_image_add_plane(image, channel, w, h, 8);
    int stride = 0;
    uint8_t *p = heif_image_get_plane(image, channel, &stride);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (grey) {
                p[y * stride + x] = (uint8_t)(x * 255 / w);
            } else {
                p[y * stride + 3 * x] = (uint8_t)(x * 255 / w);      // red grows to the right
                p[y * stride + 3 * x + 1] = (uint8_t)(y * 255 / h);  // green downwards
                p[y * stride + 3 * x + 2] = 64;
            }
        }
    return image;
}

#define CHECK(e)                                                                                                       \
    if ((e).code != heif_error_Ok) {                                                                                   \
        fprintf(stderr, "%s\n", (e).message);                                                                          \
        return 1;                                                                                                      \
    }

int main(int argc, char **argv) {
    heif_init(NULL);
    struct heif_context *ctx = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    CHECK(heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &encoder));
    heif_encoder_set_lossy_quality(encoder, 70);
    struct heif_image_handle *primary = NULL, *gain = NULL;
    CHECK(heif_context_encode_image(ctx, gradient(256, 192, 0), encoder, NULL, &primary));
    CHECK(heif_context_encode_image(ctx, gradient(128, 96, 1), encoder, NULL, &gain));
    CHECK(heif_context_set_primary_image(ctx, primary));
    heif_item_id primary_id = heif_image_handle_get_item_id(primary), gain_id = heif_image_handle_get_item_id(gain);
    CHECK(heif_context_add_item_reference(ctx, heif_fourcc('a', 'u', 'x', 'l'), gain_id, primary_id));
    const char urn[] = "urn:com:apple:photo:2020:aux:hdrgainmap";
    uint8_t auxc[4 + sizeof urn] = {0};
    memcpy(auxc + 4, urn, sizeof urn);
    CHECK(heif_item_add_raw_property(ctx, gain_id, heif_fourcc('a', 'u', 'x', 'C'), NULL, auxc, sizeof auxc, 0, NULL));
    const char xmp[] =
        "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">"
        "<rdf:Description xmlns:HDRGainMap=\"http://ns.apple.com/HDRGainMap/1.0/\" "
        "HDRGainMap:HDRGainMapVersion=\"131072\"/>"
        "</rdf:RDF></x:xmpmeta>";
    CHECK(heif_context_add_XMP_metadata(ctx, gain, xmp, (int)strlen(xmp)));
    // EXIF: a TIFF header saying orientation 1 (HEIF's own turns decide).
    const uint8_t exif[] = {0,    0, 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01,
                            0x12, 0, 3, 0, 0,   0,   1, 0,  1, 0, 0, 0, 0, 0, 0};
    CHECK(heif_context_add_exif_metadata(ctx, primary, exif + 4, (int)sizeof exif - 4));
    // tmap (ISO 21496-1): version 0 and a minimal body; derived from the primary and the gain map.
    const uint8_t tmap[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    heif_item_id tmap_id = 0;
    CHECK(heif_context_add_item(ctx, "tmap", tmap, (int)sizeof tmap, &tmap_id));
    const heif_item_id sources[2] = {primary_id, gain_id};
    CHECK(heif_context_add_item_references(ctx, heif_fourcc('d', 'i', 'm', 'g'), tmap_id, sources, 2));
    CHECK(heif_context_write_to_file(ctx, argc > 1 ? argv[1] : "gainmap.heic"));
    return 0;
}
