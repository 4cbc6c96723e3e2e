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
    int id, h, v;
    UINT16 quant[DCTSIZE2];
    JDIMENSION per_row, rows;
    JBLOCK *blocks;
} held_component;

struct att_jpeg_held {
    uint32_t width, height;
    int components;
    held_component comp[MAX_COMPS_IN_SCAN];
};

void att_jpeg_held_free(att_jpeg_held *held) {
    if (!held) return;
    for (int c = 0; c < held->components; c++) free(held->comp[c].blocks);
    free(held);
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
    for (int c = 0; c < cinfo->num_components; c++) {
        const jpeg_component_info *comp = &cinfo->comp_info[c];
        const JQUANT_TBL *table = cinfo->quant_tbl_ptrs[comp->quant_tbl_no];
        held_component *h = &held->comp[c];
        held->components = c + 1;
        *h = (held_component){comp->component_id,
                              comp->h_samp_factor,
                              comp->v_samp_factor,
                              {0},
                              comp->width_in_blocks,
                              comp->height_in_blocks,
                              NULL};
        if (table) h->blocks = malloc(sizeof(JBLOCK) * (size_t)h->per_row * h->rows);
        if (!h->blocks) {
            // Without memory the encode is read back from its file.
            *out = NULL;
            att_jpeg_held_free(held);
            return;
        }
        memcpy(h->quant, table->quantval, sizeof h->quant);
        for (JDIMENSION y = 0; y < h->rows; y++)
            memcpy(h->blocks + (size_t)y * h->per_row, row(cinfo, context, c, y), sizeof(JBLOCK) * h->per_row);
    }
}

// MARK: - The header libjpeg reads

// The largest header, three components each with a table of 16-bit steps, is 498 bytes.
typedef struct {
    uint8_t bytes[512];
    size_t length;
} header;

static void put(header *out, const uint8_t *bytes, size_t count) {
    memcpy(out->bytes + out->length, bytes, count);
    out->length += count;
}

static void put_byte(header *out, unsigned value) { out->bytes[out->length++] = (uint8_t)value; }

static void put_two(header *out, unsigned value) {
    put_byte(out, value >> 8);
    put_byte(out, value & 0xFF);
}

// SOI, JFIF, a table per component, SOF0, one code per Huffman table (nothing is decoded with
// them), an SOS of every component with its tables 0, EOI.
static void write_header(const att_jpeg_held *held, header *out) {
    static const uint8_t soi_jfif[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0};
    put(out, soi_jfif, sizeof soi_jfif);
    for (int c = 0; c < held->components; c++) {
        int wide = 0;
        for (int k = 0; k < DCTSIZE2; k++) wide |= held->comp[c].quant[k] > 255;
        put_two(out, 0xFFDB);
        put_two(out, 3 + DCTSIZE2 * (wide ? 2 : 1));
        put_byte(out, (unsigned)(wide << 4 | c));
        for (int k = 0; k < DCTSIZE2; k++) {
            unsigned q = held->comp[c].quant[jpeg_natural_order[k]];
            if (wide) put_byte(out, q >> 8);
            put_byte(out, q & 0xFF);
        }
    }
    put_two(out, 0xFFC0);
    put_two(out, 8 + 3 * held->components);
    put_byte(out, 8);
    put_two(out, held->height);
    put_two(out, held->width);
    put_byte(out, (unsigned)held->components);
    for (int c = 0; c < held->components; c++) {
        put_byte(out, (unsigned)held->comp[c].id);
        put_byte(out, (unsigned)(held->comp[c].h << 4 | held->comp[c].v));
        put_byte(out, (unsigned)c);
    }
    for (unsigned kind = 0; kind < 2; kind++) {
        static const uint8_t one_code[17] = {0, 1};
        put_two(out, 0xFFC4);
        put_two(out, 2 + 1 + 16 + 1);
        put_byte(out, kind << 4);
        put(out, one_code + 1, 16);
        put_byte(out, 0);
    }
    put_two(out, 0xFFDA);
    put_two(out, 6 + 2 * held->components);
    put_byte(out, (unsigned)held->components);
    for (int c = 0; c < held->components; c++) {
        put_byte(out, (unsigned)held->comp[c].id);
        put_byte(out, 0);
    }
    put_byte(out, 0);
    put_byte(out, DCTSIZE2 - 1);
    put_byte(out, 0);
    put_two(out, 0xFFD9);
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
    header head = {.length = 0};
    write_header(held, &head);
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
    jpeg_mem_src(&cinfo, head.bytes, (unsigned long)head.length);
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
