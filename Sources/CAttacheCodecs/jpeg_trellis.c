// Trellis quantisation, after mozjpeg's quantize_trellis (jcdctmgr.c, its "mode 1"): in each
// block the AC coefficients, in zigzag order, are chosen by dynamic programming over where each
// run of zeros ends, minimising bits + λ·distortion. The bits are the Huffman code of each
// (run, size) symbol and its magnitude bits; the distortion is each coefficient's squared error
// over its quantiser squared; λ falls as the block's AC energy rises (mozjpeg's
// 2^14.75 / (2^16.5 + energy)), so a busy block, where the eye forgives more, gives up more.
// Where the block ends (its EOB) is chosen the same way. DC is rounded, as libjpeg rounds it,
// and so are luma's five lowest AC frequencies (u + v <= 2, the first five in zigzag order):
// they carry a flat area's gentle slope across the block, and zeroing them left 8x8 steps in
// skies that the blocking gate refused (docs/quality.md, "The thorough encoder").
//
// The symbols are priced in two passes: the first prices them by the standard tables and
// counts what it chose on a quarter of the block rows, the second by -log2 of each symbol's
// share of those counts, which the optimised tables libjpeg then writes come close to.
//
// The DCT is computed here in floating point on libjpeg's scale (8x the orthonormal DCT), from
// samples converted and downsampled as libjpeg does (JFIF YCbCr, means of 2x2, edges repeated;
// or 4:2:0 chroma sharpened as the fast encoder writes it, jpeg_chroma.c);
// libjpeg writes the coefficients (jpeg_write_coefficients) with optimised Huffman tables, as
// progressive scans and as one baseline scan, and the smaller file is kept. What is held is the
// chosen coefficients, as libjpeg's optimising encoder holds them, which libjpeg reads in place.
#include "jpeg_trellis.h"
#include "jpeg_private.h"

#include "jpeg_chroma.h"

#include <jerror.h>
#include <math.h>
#include <string.h>

enum {
    MAX_AC = 1023,  // an 8-bit baseline file's AC magnitudes have at most 10 bits
    MAX_DC = 1023,
    EOB = 0x00,
    ZRL = 0xF0,
    SYMBOLS = 256,
    // The first pass counts symbols on one block row in this many.
    COUNT_EVERY = 4,
    // Luma's AC coefficients up to this zigzag position are rounded, never chosen.
    ROUNDED_LUMA = 5,
};

// λ = LAMBDA_SCALE / (LAMBDA_FLOOR + the block's mean squared AC coefficient). mozjpeg's
// 2^14.75 / (2^16.5 + energy) for a flat block, falling more slowly as the energy rises:
// 2^16.25 / (2^18 + energy) saved the most bytes at an equal SSIMULACRA2 on the photo benchmark
// (lomiri, 19 photos at 1024 px, scores 70-88: 0.965x the fast encoder's bytes, against 0.968x
// with mozjpeg's; docs/quality.md).
static const float LAMBDA_SCALE = 77935.0f;   // 2^16.25
static const float LAMBDA_FLOOR = 262144.0f;  // 2^18

// Zigzag position -> natural (row-major) index.
static const uint8_t zigzag[DCTSIZE2] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
                                         12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
                                         35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
                                         58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

// What each AC symbol costs in bits, per Huffman table, and what a pass chose.
typedef struct {
    float bits[NUM_HUFF_TBLS][SYMBOLS];
    uint32_t counts[NUM_HUFF_TBLS][SYMBOLS];
} rate_model;

// One component as the encoder samples it.
typedef struct {
    const uint8_t *pixels;
    size_t stride;
    int channels;
    uint32_t width, height;         // the picture's
    uint32_t sx, sy;                // picture pixels per sample across and down (1 or 2)
    uint32_t samples_w, samples_h;  // samples that hold the picture
    int which;                      // 0 Y (or gray), 1 Cb, 2 Cr
    const float *sharp;             // the sharpened chroma samples (jpeg_chroma.c), or NULL
} plane;

static int magnitude_bits(int value) {
    int bits = 0;
    while (value) {
        bits++;
        value >>= 1;
    }
    return bits;
}

static float pixel_value(const uint8_t *p, int channels, int which) {
    if (channels == 1) return p[0];
    float r = p[0], g = p[1], b = p[2];
    switch (which) {
    case 0: return 0.299f * r + 0.587f * g + 0.114f * b;
    case 1: return -0.168736f * r - 0.331264f * g + 0.5f * b + 128.0f;
    default: return 0.5f * r - 0.418688f * g - 0.081312f * b + 128.0f;
    }
}

// The 8x8 samples of block (bx, by), level-shifted; past the picture the last sample repeats.
static void block_samples(const plane *p, uint32_t bx, uint32_t by, float out[DCTSIZE2]) {
    for (uint32_t y = 0; y < DCTSIZE; y++) {
        uint32_t sy = by * DCTSIZE + y;
        if (sy >= p->samples_h) sy = p->samples_h - 1;
        for (uint32_t x = 0; x < DCTSIZE; x++) {
            uint32_t sx = bx * DCTSIZE + x;
            if (sx >= p->samples_w) sx = p->samples_w - 1;
            if (p->sharp) {
                out[y * DCTSIZE + x] = p->sharp[(size_t)sy * p->samples_w + sx] - 128.0f;
                continue;
            }
            float sum = 0;
            for (uint32_t j = 0; j < p->sy; j++) {
                uint32_t py = sy * p->sy + j;
                if (py >= p->height) py = p->height - 1;
                const uint8_t *row = p->pixels + (size_t)py * p->stride;
                for (uint32_t i = 0; i < p->sx; i++) {
                    uint32_t px = sx * p->sx + i;
                    if (px >= p->width) px = p->width - 1;
                    sum += pixel_value(row + (size_t)px * (size_t)p->channels, p->channels, p->which);
                }
            }
            out[y * DCTSIZE + x] = sum / (float)(p->sx * p->sy) - 128.0f;
        }
    }
}

// The orthonormal 2-D DCT of `in`, times 8 (libjpeg's scale), with `basis[u][x]`.
static void forward_dct(const float in[DCTSIZE2], const float basis[DCTSIZE][DCTSIZE], float out[DCTSIZE2]) {
    float rows[DCTSIZE2];
    for (int y = 0; y < DCTSIZE; y++) {
        for (int u = 0; u < DCTSIZE; u++) {
            float sum = 0;
            for (int x = 0; x < DCTSIZE; x++) sum += basis[u][x] * in[y * DCTSIZE + x];
            rows[y * DCTSIZE + u] = sum;
        }
    }
    for (int v = 0; v < DCTSIZE; v++) {
        for (int u = 0; u < DCTSIZE; u++) {
            float sum = 0;
            for (int y = 0; y < DCTSIZE; y++) sum += basis[v][y] * rows[y * DCTSIZE + u];
            out[v * DCTSIZE + u] = 8.0f * sum;
        }
    }
}

// Counts the symbols the block's coefficients (natural order) are written with.
static void count_symbols(const JCOEF *block, uint32_t counts[SYMBOLS]) {
    int run = 0;
    for (int i = 1; i < DCTSIZE2; i++) {
        int value = block[zigzag[i]];
        if (value == 0) {
            run++;
            continue;
        }
        for (; run > 15; run -= 16) counts[ZRL]++;
        counts[16 * run + magnitude_bits(value < 0 ? -value : value)]++;
        run = 0;
    }
    if (run > 0) counts[EOB]++;
}

// Where the block ends: after its last nonzero coefficient (at or after `kept`, the last rounded
// one that is not zero), an EOB unless that is the 63rd; 0 when every AC coefficient is zero.
static int block_end(const float zero_dist[DCTSIZE2], const float cost[DCTSIZE2], const int chosen[DCTSIZE2], int kept,
                     float eob_bits) {
    int last = kept;
    float best = kept == 0 ? zero_dist[DCTSIZE2 - 1] + eob_bits : 1e38f;
    for (int i = kept > 0 ? kept : 1; i < DCTSIZE2; i++) {
        if (chosen[i] == 0) continue;
        float total = cost[i] + zero_dist[DCTSIZE2 - 1] - zero_dist[i];
        if (i < DCTSIZE2 - 1) total += eob_bits;
        if (total < best) {
            best = total;
            last = i;
        }
    }
    return last;
}

// The block's coefficients (natural order) for `src` (libjpeg's scale), with `quant`'s steps
// and `bits` the price of each AC symbol; `rounded_up_to`: the zigzag positions from 1 to it
// are rounded (0: none).
static void trellis_block(const float src[DCTSIZE2], const UINT16 *quant, const float bits[SYMBOLS], int rounded_up_to,
                          JCOEF out[DCTSIZE2]) {
    float norm = 0;
    for (int i = 1; i < DCTSIZE2; i++) norm += src[i] * src[i];
    const float lambda = LAMBDA_SCALE / (LAMBDA_FLOOR + norm / 63.0f);

    const float dc_step = 8.0f * quant[0];
    int dc = (int)(fabsf(src[0]) / dc_step + 0.5f);
    if (dc > MAX_DC) dc = MAX_DC;
    memset(out, 0, sizeof(JCOEF) * DCTSIZE2);
    out[0] = (JCOEF)(src[0] < 0 ? -dc : dc);

    // By zigzag position: the cost of zeroing every coefficient up to it, the best cost of a
    // path ending with a nonzero coefficient there, where that path's zero run began, and the
    // coefficient it chose.
    // A path may not pass over a rounded coefficient that is not zero: `kept` is the last one
    // before position i, where every path to i starts at or after.
    float zero_dist[DCTSIZE2], cost[DCTSIZE2];
    int run_start[DCTSIZE2], chosen[DCTSIZE2];
    int kept = 0;
    zero_dist[0] = 0;
    cost[0] = 0;
    chosen[0] = 0;
    run_start[0] = 0;
    for (int i = 1; i < DCTSIZE2; i++) {
        const int z = zigzag[i];
        const float x = fabsf(src[z]);
        const float step = 8.0f * quant[z];
        const float weight = lambda / ((float)quant[z] * (float)quant[z]);
        zero_dist[i] = zero_dist[i - 1] + x * x * weight;
        chosen[i] = 0;
        cost[i] = 1e38f;
        int rounded = (int)(x / step + 0.5f);
        if (rounded == 0) continue;
        if (rounded > MAX_AC) rounded = MAX_AC;
        // Candidates: the largest value of each size up to the rounded one, and that one (a
        // rounded position: that one alone).
        const int sizes = magnitude_bits(rounded);
        const int first = i <= rounded_up_to ? sizes - 1 : 0;
        int candidate[16];
        float candidate_dist[16];
        for (int k = first; k < sizes; k++) {
            candidate[k] = k < sizes - 1 ? (2 << k) - 1 : rounded;
            const float delta = (float)candidate[k] * step - x;
            candidate_dist[k] = delta * delta * weight;
        }
        for (int j = kept; j < i; j++) {
            if (j != 0 && chosen[j] == 0) continue;
            const float zeros = zero_dist[i - 1] - zero_dist[j] + cost[j];
            const int run = i - 1 - j;
            const float before = (float)(run >> 4) * bits[ZRL] + zeros;
            const float *symbol = bits + 16 * (run & 15);
            for (int k = first; k < sizes; k++) {
                const float total = before + symbol[k + 1] + (float)(k + 1) + candidate_dist[k];
                if (total < cost[i]) {
                    cost[i] = total;
                    chosen[i] = candidate[k];
                    run_start[i] = j;
                }
            }
        }
        if (i <= rounded_up_to) kept = i;
    }
    for (int i = block_end(zero_dist, cost, chosen, kept, bits[EOB]); i > 0; i = run_start[i]) {
        const int z = zigzag[i];
        out[z] = (JCOEF)(src[z] < 0 ? -chosen[i] : chosen[i]);
    }
}

// The standard table's code lengths (what jpeg_set_defaults installed); a symbol it lacks is
// priced out of reach.
static void prices_from_table(const JHUFF_TBL *table, float bits[SYMBOLS]) {
    for (int s = 0; s < SYMBOLS; s++) bits[s] = 64.0f;
    if (!table) return;
    int p = 0;
    for (int length = 1; length <= 16; length++) {
        for (int k = 0; k < table->bits[length] && p < SYMBOLS; k++, p++) bits[table->huffval[p]] = (float)length;
    }
}

// -log2 of each symbol's share of what the first pass chose (half a count for one unseen),
// between 1 and 16 bits as a Huffman code's length is.
static void prices_from_counts(const uint32_t counts[SYMBOLS], float bits[SYMBOLS]) {
    double total = 0;
    for (int s = 0; s < SYMBOLS; s++) total += counts[s] + 0.5;
    for (int s = 0; s < SYMBOLS; s++) {
        float price = (float)-log2((counts[s] + 0.5) / total);
        bits[s] = price < 1.0f ? 1.0f : (price > 16.0f ? 16.0f : price);
    }
}

// Each component's plane, its blocks (whole MCUs: libjpeg reads v_samp_factor block rows at a
// time), its quantiser and Huffman table, and its chosen coefficients (held for both files
// written from them) by block row, as libjpeg's arrays hand them out.
typedef struct {
    plane plane;
    JDIMENSION blocks_w, blocks_h;
    const UINT16 *quant;
    int table;
    JBLOCKROW *rows;
} component;

static void set_up(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride, const float *sharp, component *out) {
    int max_h, max_v;
    att_jpeg_max_sampling(cinfo, &max_h, &max_v);
    for (int c = 0; c < cinfo->num_components; c++) {
        const jpeg_component_info *comp = &cinfo->comp_info[c];
        const uint32_t h = (uint32_t)comp->h_samp_factor, v = (uint32_t)comp->v_samp_factor;
        component *k = &out[c];
        k->plane = (plane){
            .pixels = pixels,
            .stride = stride,
            .channels = cinfo->input_components,
            .width = cinfo->image_width,
            .height = cinfo->image_height,
            .sx = (uint32_t)max_h / h,
            .sy = (uint32_t)max_v / v,
            .samples_w = (cinfo->image_width * h + (uint32_t)max_h - 1) / (uint32_t)max_h,
            .samples_h = (cinfo->image_height * v + (uint32_t)max_v - 1) / (uint32_t)max_v,
            .which = c,
        };
        // The sharpened samples are 4:2:0's: ⌈width/2⌉ × ⌈height/2⌉ a plane.
        if (sharp && c > 0 && k->plane.sx == 2 && k->plane.sy == 2)
            k->plane.sharp = sharp + (size_t)(c - 1) * k->plane.samples_w * k->plane.samples_h;
        k->blocks_w = ((k->plane.samples_w + DCTSIZE - 1) / DCTSIZE + h - 1) / h * h;
        k->blocks_h = ((k->plane.samples_h + DCTSIZE - 1) / DCTSIZE + v - 1) / v * v;
        k->quant = cinfo->quant_tbl_ptrs[comp->quant_tbl_no]->quantval;
        k->table = comp->ac_tbl_no;
        // In the permanent pool: they outlive the first file's image pool, and go with the encoder.
        JBLOCK *blocks = cinfo->mem->alloc_large((j_common_ptr)cinfo, JPOOL_PERMANENT,
                                                 (size_t)k->blocks_w * k->blocks_h * sizeof(JBLOCK));
        k->rows = cinfo->mem->alloc_small((j_common_ptr)cinfo, JPOOL_PERMANENT, k->blocks_h * sizeof(JBLOCKROW));
        for (JDIMENSION by = 0; by < k->blocks_h; by++) k->rows[by] = blocks + (size_t)by * k->blocks_w;
    }
}

// Block (bx, by) of `k`: its samples, their DCT, its coefficients priced by `bits`.
static void encode_block(const component *k, const float basis[DCTSIZE][DCTSIZE], const float bits[SYMBOLS],
                         JDIMENSION bx, JDIMENSION by, JCOEF out[DCTSIZE2]) {
    float samples[DCTSIZE2], coefficients[DCTSIZE2];
    block_samples(&k->plane, bx, by, samples);
    forward_dct(samples, basis, coefficients);
    trellis_block(coefficients, k->quant, bits, k->plane.which == 0 ? ROUNDED_LUMA : 0, out);
}

// libjpeg's memory manager's method for a block array's rows.
typedef JBLOCKARRAY (*barray_access)(j_common_ptr, jvirt_barray_ptr, JDIMENSION, JDIMENSION, boolean);

// libjpeg reads the coefficients it writes through its memory manager's access method
// (jctrans.c), which an application may replace: while the files are written it hands out the
// chosen blocks' own rows, so no second copy of them is made. `cinfo->client_data` is the
// components; the arrays given to libjpeg are their addresses.
static JBLOCKARRAY access_chosen(j_common_ptr cinfo, jvirt_barray_ptr array, JDIMENSION start_row, JDIMENSION num_rows,
                                 boolean writable) {
    (void)writable;
    component *comps = cinfo->client_data;
    for (int c = 0; c < ((j_compress_ptr)cinfo)->num_components; c++) {
        if ((jvirt_barray_ptr)&comps[c] != array) continue;
        if (start_row + num_rows > comps[c].blocks_h) ERREXIT(cinfo, JERR_BAD_VIRTUAL_ACCESS);
        return comps[c].rows + start_row;
    }
    ERREXIT(cinfo, JERR_BAD_VIRTUAL_ACCESS);
    return NULL;
}

// Block row `row` of component `c` of the chosen coefficients, for the shim's scans.
static JBLOCKROW chosen_row(j_compress_ptr cinfo, void *context, int c, JDIMENSION row) {
    (void)cinfo;
    return ((component *)context)[c].rows[row];
}

// One file of the chosen coefficients, with `cinfo`'s scans (none: one baseline scan), to its
// destination.
static void write_file(j_compress_ptr cinfo, component *comps) {
    jvirt_barray_ptr arrays[MAX_COMPONENTS];
    for (int c = 0; c < cinfo->num_components; c++) arrays[c] = (jvirt_barray_ptr)&comps[c];
    jpeg_write_coefficients(cinfo, arrays);
    jpeg_finish_compress(cinfo);
}

void att_jpeg_write_trellis(j_compress_ptr cinfo, const uint8_t *pixels, size_t stride, int sharp_chroma,
                            int shim_scans, unsigned char **other, unsigned long *other_size) {
    const int components = cinfo->num_components;
    component comps[MAX_COMPONENTS];
    const float *sharp = sharp_chroma && components == 3 ? att_jpeg_sharp_chroma(cinfo, pixels, stride) : NULL;
    set_up(cinfo, pixels, stride, sharp, comps);

    float basis[DCTSIZE][DCTSIZE];
    for (int u = 0; u < DCTSIZE; u++) {
        const double scale = u == 0 ? sqrt(1.0 / DCTSIZE) : sqrt(2.0 / DCTSIZE);
        for (int x = 0; x < DCTSIZE; x++) basis[u][x] = (float)(scale * cos((2 * x + 1) * u * M_PI / 16.0));
    }

    rate_model *model = cinfo->mem->alloc_small((j_common_ptr)cinfo, JPOOL_IMAGE, sizeof(rate_model));
    memset(model, 0, sizeof *model);
    for (int t = 0; t < NUM_HUFF_TBLS; t++) prices_from_table(cinfo->ac_huff_tbl_ptrs[t], model->bits[t]);

    // First pass: counts on a quarter of the rows, priced by the standard tables.
    JCOEF block[DCTSIZE2];
    for (int c = 0; c < components; c++) {
        const component *k = &comps[c];
        for (JDIMENSION by = 0; by < k->blocks_h; by += COUNT_EVERY) {
            for (JDIMENSION bx = 0; bx < k->blocks_w; bx++) {
                encode_block(k, basis, model->bits[k->table], bx, by, block);
                count_symbols(block, model->counts[k->table]);
            }
        }
    }
    for (int t = 0; t < NUM_HUFF_TBLS; t++) {
        uint32_t seen = 0;
        for (int s = 0; s < SYMBOLS; s++) seen += model->counts[t][s];
        if (seen > 0) prices_from_counts(model->counts[t], model->bits[t]);
    }
    // Second pass: every block.
    for (int c = 0; c < components; c++) {
        const component *k = &comps[c];
        for (JDIMENSION by = 0; by < k->blocks_h; by++) {
            for (JDIMENSION bx = 0; bx < k->blocks_w; bx++)
                encode_block(k, basis, model->bits[k->table], bx, by, k->rows[by][bx]);
        }
    }
    void *client_data = cinfo->client_data;
    const barray_access access = cinfo->mem->access_virt_barray;
    cinfo->client_data = comps;
    cinfo->mem->access_virt_barray = access_chosen;
    if (shim_scans) {
        int count = 0;
        const jpeg_scan_info *scans = att_jpeg_scan_script(components, &count);
        if (!att_jpeg_write_scans(cinfo, scans, count, chosen_row, comps, other, other_size))
            ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    } else {
        att_jpeg_progressive_scans(cinfo);
        write_file(cinfo, comps);
        jpeg_mem_dest(cinfo, other, other_size);
        cinfo->scan_info = NULL;
        cinfo->num_scans = 0;
    }
    write_file(cinfo, comps);
    cinfo->mem->access_virt_barray = access;
    cinfo->client_data = client_data;
}
