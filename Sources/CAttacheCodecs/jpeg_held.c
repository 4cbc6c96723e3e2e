// An encode read back from the coefficients it was written from, not from its file: what a
// quality search scores. The fast encoder's progressive file holds the quantised coefficients
// libjpeg made (jpeg_scan_writer.c writes them losslessly), so a decoder of the file gets the
// pixels libjpeg's inverse DCT, upsampling and colour conversion make from them. Here libjpeg
// makes those pixels from the coefficients themselves: it is given a header of one baseline
// scan with the encode's size, sampling and quantisation tables, and its entropy decoder's
// `decode_mcu` (jpegint.h) is replaced by a copy of each MCU's blocks. Reading ten scans back
// (their Huffman codes, bit by bit) is skipped, and with one scan libjpeg needs no whole-image
// arrays. The pixels are the file's to the byte (HeldReadBackTests).
#include "jpeg_private.h"

#include <jpegint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    JDIMENSION per_row, rows;
    JBLOCK *blocks;
} held_component;

struct att_jpeg_held {
    uint32_t width, height;
    int components;
    held_component comp[MAX_COMPS_IN_SCAN];
    // What libjpeg reads before the MCUs are handed to it (header_for below).
    uint8_t *header;
    size_t header_length;
};

void att_jpeg_held_free(att_jpeg_held *held) {
    if (!held) return;
    for (int c = 0; c < held->components; c++) free(held->comp[c].blocks);
    free(held->header);
    free(held);
}

// The header libjpeg reads for the read-back: the frame as the file's (SOI, JFIF, DQT, jcmarker.c's,
// jpeg_scan_writer.c) with SOF0 for SOF2, one code per Huffman table (nothing is decoded with
// them), an SOS of every component with its tables 0, EOI. 0 without the memory.
static int header_for(j_compress_ptr cinfo, att_jpeg_held *held) {
    unsigned char *frame = NULL;
    size_t length = 0;
    if (!att_jpeg_write_frame(cinfo, 0xFFC0, &frame, &length)) return 0;
    enum { TAIL = 2 * (4 + 1 + 16 + 1) + 5 + 2 * MAX_COMPS_IN_SCAN + 3 + 2 };
    uint8_t *bytes = realloc(frame, length + TAIL);
    if (!bytes) {
        free(frame);
        return 0;
    }
    uint8_t *at = bytes + length;
    for (unsigned kind = 0; kind < 2; kind++) {
        const uint8_t dht[] = {0xFF, 0xC4, 0, 20, (uint8_t)(kind << 4), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                               0,    0,    0, 0};
        memcpy(at, dht, sizeof dht);
        at += sizeof dht;
    }
    const int n = cinfo->num_components;
    const uint8_t sos[] = {0xFF, 0xDA, 0, (uint8_t)(6 + 2 * n), (uint8_t)n};
    memcpy(at, sos, sizeof sos);
    at += sizeof sos;
    for (int c = 0; c < n; c++) {
        *at++ = (uint8_t)cinfo->comp_info[c].component_id;
        *at++ = 0;
    }
    const uint8_t spectrum_eoi[] = {0, DCTSIZE2 - 1, 0, 0xFF, 0xD9};
    memcpy(at, spectrum_eoi, sizeof spectrum_eoi);
    at += sizeof spectrum_eoi;
    held->header = bytes;
    held->header_length = (size_t)(at - bytes);
    return 1;
}

void att_jpeg_hold(j_compress_ptr cinfo, att_jpeg_block_row row, void *context, att_jpeg_held *volatile *out) {
    *out = NULL;
    if (cinfo->num_components > MAX_COMPS_IN_SCAN) return;
    att_jpeg_held *held = calloc(1, sizeof *held);
    if (!held) return;
    // Handed over before the first access, which may end the encode (the caller frees it then).
    *out = held;
    held->width = cinfo->image_width;
    held->height = cinfo->image_height;
    int ok = header_for(cinfo, held);
    for (int c = 0; ok && c < cinfo->num_components; c++) {
        const jpeg_component_info *comp = &cinfo->comp_info[c];
        held_component *h = &held->comp[c];
        held->components = c + 1;
        *h = (held_component){comp->width_in_blocks, comp->height_in_blocks, NULL};
        h->blocks = malloc(sizeof(JBLOCK) * (size_t)h->per_row * h->rows);
        ok = h->blocks != NULL;
        for (JDIMENSION y = 0; ok && y < h->rows; y++)
            memcpy(h->blocks + (size_t)y * h->per_row, row(cinfo, context, c, y), sizeof(JBLOCK) * h->per_row);
    }
    if (!ok) {
        // Without memory the encode is read back from its file.
        *out = NULL;
        att_jpeg_held_free(held);
    }
}

// MARK: - The MCUs, copied

typedef struct {
    const att_jpeg_held *held;
    JDIMENSION row;
    JDIMENSION count;
} copier;

// In place of libjpeg's decode_mcu: the next MCU's blocks from the held coefficients. MCUs come
// in order, a row of them an iMCU row in an interleaved scan; a grey picture's scan has one block
// an MCU, its v_samp_factor rows of them an iMCU row.
static boolean copy_mcu(j_decompress_ptr cinfo, JBLOCKROW *blocks) {
    copier *at = cinfo->client_data;
    if (cinfo->input_iMCU_row != at->row) {
        at->row = cinfo->input_iMCU_row;
        at->count = 0;
    }
    JDIMENSION column = at->count % cinfo->MCUs_per_row, offset = at->count / cinfo->MCUs_per_row;
    at->count++;
    int n = 0;
    for (int ci = 0; ci < cinfo->comps_in_scan; ci++) {
        const jpeg_component_info *comp = cinfo->cur_comp_info[ci];
        const held_component *h = &at->held->comp[comp->component_index];
        JDIMENSION top = cinfo->input_iMCU_row * (JDIMENSION)comp->v_samp_factor + offset;
        for (int y = 0; y < comp->MCU_height; y++)
            for (int x = 0; x < comp->MCU_width; x++, n++) {
                JDIMENSION by = top + (JDIMENSION)y, bx = column * (JDIMENSION)comp->MCU_width + (JDIMENSION)x;
                // A dummy block past the picture's edge is not shown (libjpeg zeroed it).
                if (by < h->rows && bx < h->per_row)
                    memcpy(blocks[n], h->blocks + (size_t)by * h->per_row + bx, sizeof(JBLOCK));
            }
    }
    return TRUE;
}

int32_t att_jpeg_held_decode(const att_jpeg_held *held, uint32_t width, uint32_t height, int32_t channels,
                             uint8_t *output, size_t stride, att_error *error) {
    if (!held || held->width != width || held->height != height || (channels == 1) != (held->components == 1)) {
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "the held coefficients are not the encode read back");
        return ATT_ERR_INTERNAL;
    }
    struct jpeg_decompress_struct cinfo;
    att_jpeg_error_mgr err;
    copier at = {held, (JDIMENSION)-1, 0};
    att_jpeg_install_errors(&err);
    cinfo.err = &err.base;
    if (setjmp(err.jump)) {
        att_jpeg_copy_error(&err, error);
        jpeg_destroy_decompress(&cinfo);
        return error->status;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, held->header, (unsigned long)held->header_length);
    jpeg_read_header(&cinfo, TRUE);
    // As the file is read back (att_jpeg_decode_into).
    cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_width != width || cinfo.output_height != height || cinfo.output_components != channels) {
        jpeg_destroy_decompress(&cinfo);
        att_jpeg_set_error(error, ATT_ERR_INTERNAL, "the held coefficients are not the encode read back");
        return ATT_ERR_INTERNAL;
    }
    cinfo.client_data = &at;
    cinfo.entropy->decode_mcu = copy_mcu;
    // An iMCU row's rows a call (libjpeg's output is made that many at a time).
    enum { ROWS = 16 };
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[ROWS];
        JDIMENSION count =
            cinfo.output_height - cinfo.output_scanline < ROWS ? cinfo.output_height - cinfo.output_scanline : ROWS;
        for (JDIMENSION r = 0; r < count; r++)
            rows[r] = (JSAMPROW)(output + (size_t)(cinfo.output_scanline + r) * stride);
        jpeg_read_scanlines(&cinfo, rows, count);
    }
    // Nothing more to read: the scan's data was never there.
    jpeg_destroy_decompress(&cinfo);
    return ATT_OK;
}
