// The progressive scans of jpeg_progressive.c written by the shim from quantised coefficients,
// byte for byte the file libjpeg-turbo writes from the same coefficients with optimised
// Huffman tables (its markers as jcmarker.c writes them, each scan's symbols as jcphuff.c codes
// them, its tables from libjpeg's own jpeg_gen_optimal_table), in a fraction of its time:
// libjpeg walks every block twice for each scan (once to count its symbols, once to write
// them), a function call and a state copy for every block; here each scan's blocks are walked
// once, its symbols kept, counted and written from the list, and a block's band is passed over
// from a mask of its nonzero coefficients where it has none.
#include "jpeg_private.h"

#include <jpegint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { ZRL = 0xF0, MOST_EOBRUN = 0x7FFF, MAX_DC_BITS = 11, MAX_AC_BITS = 10 };

// A symbol to write: the symbol (bits 0-7), how many bits follow it (8-12), its table (13-15)
// and those bits (16-31).
typedef uint32_t coded;

static inline coded symbol(int table, int sym, int nbits, unsigned bits) {
    return (coded)sym | (coded)nbits << 8 | (coded)table << 13 | (coded)(bits & ((1u << nbits) - 1)) << 16;
}

static int bit_length(unsigned value) { return value ? 32 - __builtin_clz(value) : 0; }

// MARK: - One scan's symbols

// A Huffman table's code and its length for each symbol.
typedef struct {
    unsigned code[256];
    int length[256];
} codes;

typedef struct {
    coded *list;
    size_t count;
    long freq[NUM_HUFF_TBLS][257];  // jpeg_gen_optimal_table's counts (it clobbers them)
    unsigned eobrun;
    int table;  // an AC scan's
    codes derived[NUM_HUFF_TBLS];
} scan_symbols;

static inline void put(scan_symbols *s, int table, int sym, int nbits, unsigned bits) {
    s->list[s->count++] = symbol(table, sym, nbits, bits);
    s->freq[table][sym]++;
}

static void put_eobrun(scan_symbols *s) {
    if (s->eobrun == 0) return;
    const int nbits = bit_length(s->eobrun) - 1;
    put(s, s->table, nbits << 4, nbits, s->eobrun);
    s->eobrun = 0;
}

// The nonzero coefficients of a block, one bit for each natural position.
static inline uint64_t nonzero(const JCOEF *b) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    uint64_t mask = 0;
    for (int i = 0; i < 4; i++) {
        const __m128i lo = _mm_loadu_si128((const __m128i *)(b + 16 * i));
        const __m128i hi = _mm_loadu_si128((const __m128i *)(b + 16 * i + 8));
        const __m128i zeros = _mm_packs_epi16(_mm_cmpeq_epi16(lo, zero), _mm_cmpeq_epi16(hi, zero));
        mask |= (uint64_t)(uint16_t)~_mm_movemask_epi8(zeros) << (16 * i);
    }
    return mask;
#else
    uint64_t mask = 0;
    for (int k = 0; k < DCTSIZE2; k++) mask |= (uint64_t)(b[k] != 0) << k;
    return mask;
#endif
}

// A natural position's bit in zigzag order (libjpeg's jpeg_natural_order, jpegint.h, maps a
// zigzag position to its natural one), a byte of natural positions at a time: the zigzag
// mask of a block's nonzero coefficients from its natural mask in eight lookups.
static uint64_t zigzag_bits[8][256];

static void make_zigzag_bits(void) {
    int position[DCTSIZE2];
    for (int k = 0; k < DCTSIZE2; k++) position[jpeg_natural_order[k]] = k;
    for (int i = 0; i < 8; i++) {
        for (int v = 0; v < 256; v++) {
            uint64_t bits = 0;
            for (int b = 0; b < 8; b++)
                if (v >> b & 1) bits |= UINT64_C(1) << position[8 * i + b];
            zigzag_bits[i][v] = bits;
        }
    }
}

static inline uint64_t in_zigzag(uint64_t natural_mask) {
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++) bits |= zigzag_bits[i][natural_mask >> (8 * i) & 0xFF];
    return bits;
}

// One block's band as jcphuff.c's encode_mcu_AC_first codes it (no point transform); `mask` the
// block's nonzero coefficients in zigzag order, `zigzag_band` the band's positions, `se` its
// last. 0 where a coefficient is too large for an 8-bit file.
static inline int ac_block(scan_symbols *s, const JCOEF *b, uint64_t mask, uint64_t zigzag_band, int se) {
    uint64_t left = mask & zigzag_band;
    if (!left) {
        if (++s->eobrun == MOST_EOBRUN) put_eobrun(s);
        return 1;
    }
    put_eobrun(s);
    int next = __builtin_ctzll(zigzag_band);  // the first position not yet coded
    int last = 0;
    while (left) {
        const int k = __builtin_ctzll(left);
        left &= left - 1;
        int run = k - next;
        for (; run > 15; run -= 16) put(s, s->table, ZRL, 0, 0);
        const int v = b[jpeg_natural_order[k]];
        const unsigned magnitude = (unsigned)(v < 0 ? -v : v);
        const int nbits = bit_length(magnitude);
        if (nbits > MAX_AC_BITS) return 0;
        put(s, s->table, run << 4 | nbits, nbits, v < 0 ? (unsigned)(v - 1) : (unsigned)v);
        next = k + 1;
        last = k;
    }
    if (last < se && ++s->eobrun == MOST_EOBRUN) put_eobrun(s);
    return 1;
}

// A block's DC as jcphuff.c's encode_mcu_DC_first codes it (no point transform).
static inline int dc_block(scan_symbols *s, int table, const JCOEF *b, int *last) {
    const int diff = b[0] - *last;
    *last = b[0];
    const unsigned magnitude = (unsigned)(diff < 0 ? -diff : diff);
    const int nbits = bit_length(magnitude);
    if (nbits > MAX_DC_BITS) return 0;
    put(s, table, nbits, nbits, diff < 0 ? (unsigned)(diff - 1) : (unsigned)diff);
    return 1;
}

// MARK: - Geometry

typedef struct {
    j_compress_ptr cinfo;
    att_jpeg_block_row row;
    void *context;
    JDIMENSION width[MAX_COMPONENTS], height[MAX_COMPONENTS];  // each component's blocks
    // Each block's nonzero coefficients in zigzag order, made once for every scan that reads it.
    uint64_t *masks[MAX_COMPONENTS];
} picture;

static JDIMENSION round_up_div(JDIMENSION a, JDIMENSION b) { return (a + b - 1) / b; }

static void measure(j_compress_ptr cinfo, picture *p) {
    int max_h, max_v;
    att_jpeg_max_sampling(cinfo, &max_h, &max_v);
    for (int c = 0; c < cinfo->num_components; c++) {
        const jpeg_component_info *comp = &cinfo->comp_info[c];
        p->width[c] = round_up_div(cinfo->image_width * (JDIMENSION)comp->h_samp_factor, (JDIMENSION)max_h * DCTSIZE);
        p->height[c] = round_up_div(cinfo->image_height * (JDIMENSION)comp->v_samp_factor, (JDIMENSION)max_v * DCTSIZE);
    }
}

// How many blocks a scan codes. A scan of one component codes its blocks; an interleaved one
// (of 1 x 1 components only, att_jpeg_scans_writable) one block of each a MCU, and its MCUs
// are each component's blocks: the first's extent is the scan's.
static size_t scan_blocks(const picture *p, const jpeg_scan_info *scan) {
    const int c = scan->component_index[0];
    return (size_t)p->width[c] * p->height[c] * (size_t)scan->comps_in_scan;
}

int att_jpeg_scans_writable(j_compress_ptr cinfo, const jpeg_scan_info *scans, int count) {
    if (cinfo->data_precision != 8 || cinfo->arith_code || cinfo->restart_interval || cinfo->restart_in_rows ||
        cinfo->write_Adobe_marker || cinfo->num_components < 1 || cinfo->num_components > MAX_COMPONENTS ||
        cinfo->image_width > 65500 || cinfo->image_height > 65500 || count < 1)
        return 0;
    for (int i = 0; i < count; i++) {
        const jpeg_scan_info *scan = &scans[i];
        if (scan->Ah || scan->Al || scan->Ss > scan->Se || scan->Se >= DCTSIZE2 || scan->comps_in_scan < 1 ||
            scan->comps_in_scan > MAX_COMPS_IN_SCAN || (scan->Ss > 0 && scan->comps_in_scan != 1) ||
            (scan->Ss == 0 && scan->Se != 0))
            return 0;
        for (int j = 0; j < scan->comps_in_scan; j++) {
            const int c = scan->component_index[j];
            if (c < 0 || c >= cinfo->num_components) return 0;
            const jpeg_component_info *comp = &cinfo->comp_info[c];
            // An interleaved scan with one block of each component an MCU: no dummy blocks,
            // which libjpeg's two writers (from pixels, from coefficients) would fill apart.
            if (scan->comps_in_scan > 1 && (comp->h_samp_factor != 1 || comp->v_samp_factor != 1)) return 0;
            if (comp->dc_tbl_no < 0 || comp->dc_tbl_no >= NUM_HUFF_TBLS || comp->ac_tbl_no < 0 ||
                comp->ac_tbl_no >= NUM_HUFF_TBLS || comp->quant_tbl_no < 0 || comp->quant_tbl_no >= NUM_QUANT_TBLS ||
                !cinfo->quant_tbl_ptrs[comp->quant_tbl_no])
                return 0;
        }
    }
    return 1;
}

// A scan's symbols into `s`; 0 where a coefficient is too large.
static int collect(const picture *p, const jpeg_scan_info *scan, scan_symbols *s) {
    j_compress_ptr cinfo = p->cinfo;
    s->count = 0;
    s->eobrun = 0;
    memset(s->freq, 0, sizeof s->freq);
    const int c = scan->component_index[0];
    if (scan->Ss == 0) {
        int last[MAX_COMPS_IN_SCAN] = {0};
        for (JDIMENSION y = 0; y < p->height[c]; y++) {
            JBLOCKROW rows[MAX_COMPS_IN_SCAN];
            for (int j = 0; j < scan->comps_in_scan; j++)
                rows[j] = p->row(cinfo, p->context, scan->component_index[j], y);
            for (JDIMENSION x = 0; x < p->width[c]; x++) {
                for (int j = 0; j < scan->comps_in_scan; j++) {
                    const int table = cinfo->comp_info[scan->component_index[j]].dc_tbl_no;
                    if (!dc_block(s, table, rows[j][x], &last[j])) return 0;
                }
            }
        }
        return 1;
    }
    s->table = cinfo->comp_info[c].ac_tbl_no;
    uint64_t zigzag_band = 0;
    for (int k = scan->Ss; k <= scan->Se; k++) zigzag_band |= UINT64_C(1) << k;
    for (JDIMENSION y = 0; y < p->height[c]; y++) {
        const JBLOCKROW row = p->row(cinfo, p->context, c, y);
        const uint64_t *masks = p->masks[c] + (size_t)y * p->width[c];
        for (JDIMENSION x = 0; x < p->width[c]; x++)
            if (!ac_block(s, row[x], masks[x], zigzag_band, scan->Se)) return 0;
    }
    put_eobrun(s);
    return 1;
}

// MARK: - Bytes

typedef struct {
    uint8_t *data;
    size_t length, capacity;
    uint64_t bits;  // the next bits, `count` of them, last in the lowest
    int count;
} output;

static int reserve(output *o, size_t more) {
    if (o->capacity - o->length >= more) return 1;
    size_t capacity = o->capacity ? o->capacity : 4096;
    while (capacity - o->length < more) capacity *= 2;
    uint8_t *data = realloc(o->data, capacity);
    if (!data) return 0;
    o->data = data;
    o->capacity = capacity;
    return 1;
}

// Marker bytes (room reserved by the caller).
static void byte(output *o, unsigned v) { o->data[o->length++] = (uint8_t)v; }
static void two_bytes(output *o, unsigned v) {
    byte(o, v >> 8);
    byte(o, v & 0xFF);
}

static inline int has_ff(uint32_t w) { return ((~w - 0x01010101u) & w & 0x80808080u) != 0; }

// Entropy-coded bits, most significant first, a 0 stuffed after each 0xFF (room reserved):
// `n` (at most 32) bits of `value`, written out four bytes at a time.
static inline void put_bits(output *o, uint64_t value, int n) {
    o->bits = o->bits << n | value;
    o->count += n;
    if (o->count < 32) return;
    o->count -= 32;
    const uint32_t word = (uint32_t)(o->bits >> o->count);
    uint8_t *at = o->data + o->length;
    if (!has_ff(word)) {
        at[0] = (uint8_t)(word >> 24);
        at[1] = (uint8_t)(word >> 16);
        at[2] = (uint8_t)(word >> 8);
        at[3] = (uint8_t)word;
        o->length += 4;
        return;
    }
    for (int shift = 24; shift >= 0; shift -= 8) {
        const uint8_t b = (uint8_t)(word >> shift);
        o->data[o->length++] = b;
        if (b == 0xFF) o->data[o->length++] = 0;
    }
}

// The end of a scan: what is left of the bits, the last byte filled with ones, as libjpeg's
// flush_bits does.
static void pad(output *o) {
    if (o->count % 8) {
        const int fill = 8 - o->count % 8;
        o->bits = o->bits << fill | ((1u << fill) - 1);
        o->count += fill;
    }
    while (o->count > 0) {
        o->count -= 8;
        const uint8_t b = (uint8_t)(o->bits >> o->count);
        o->data[o->length++] = b;
        if (b == 0xFF) o->data[o->length++] = 0;
    }
    o->bits = 0;
}

// A table's codes (jcphuff's jpeg_make_c_derived_tbl).
static void derive(const JHUFF_TBL *t, codes *c) {
    memset(c->length, 0, sizeof c->length);
    unsigned code = 0;
    int p = 0;
    for (int l = 1; l <= 16; l++) {
        for (int i = 0; i < t->bits[l]; i++, p++) {
            c->code[t->huffval[p]] = code++;
            c->length[t->huffval[p]] = l;
        }
        code <<= 1;
    }
}

static void dht(output *o, int index, const JHUFF_TBL *t) {
    int count = 0;
    for (int l = 1; l <= 16; l++) count += t->bits[l];
    two_bytes(o, 0xFFC4);
    two_bytes(o, (unsigned)(2 + 1 + 16 + count));
    byte(o, (unsigned)index);
    for (int l = 1; l <= 16; l++) byte(o, t->bits[l]);
    for (int i = 0; i < count; i++) byte(o, t->huffval[i]);
}

// SOI, JFIF's APP0, DQT and the frame's `sof` marker (SOF2 here, SOF0 for jpeg_held.c) as
// jcmarker.c writes them.
static int header(j_compress_ptr cinfo, output *o, unsigned sof) {
    if (!reserve(o, 2 + 18 + NUM_QUANT_TBLS * (5 + 2 * DCTSIZE2) + 10 + 3 * MAX_COMPONENTS)) return 0;
    two_bytes(o, 0xFFD8);
    if (cinfo->write_JFIF_header) {
        two_bytes(o, 0xFFE0);
        two_bytes(o, 16);
        for (const char *j = "JFIF"; *j; j++) byte(o, (unsigned)*j);
        byte(o, 0);
        byte(o, cinfo->JFIF_major_version);
        byte(o, cinfo->JFIF_minor_version);
        byte(o, cinfo->density_unit);
        two_bytes(o, cinfo->X_density);
        two_bytes(o, cinfo->Y_density);
        byte(o, 0);
        byte(o, 0);
    }
    int sent[NUM_QUANT_TBLS] = {0};
    for (int c = 0; c < cinfo->num_components; c++) {
        const int index = cinfo->comp_info[c].quant_tbl_no;
        if (sent[index]) continue;
        sent[index] = 1;
        const JQUANT_TBL *q = cinfo->quant_tbl_ptrs[index];
        int wide = 0;
        for (int i = 0; i < DCTSIZE2; i++) wide |= q->quantval[i] > 255;
        two_bytes(o, 0xFFDB);
        two_bytes(o, wide ? 2 * DCTSIZE2 + 3 : DCTSIZE2 + 3);
        byte(o, (unsigned)(index + (wide << 4)));
        for (int i = 0; i < DCTSIZE2; i++) {
            if (wide) byte(o, q->quantval[jpeg_natural_order[i]] >> 8);
            byte(o, q->quantval[jpeg_natural_order[i]] & 0xFF);
        }
    }
    two_bytes(o, sof);
    two_bytes(o, (unsigned)(3 * cinfo->num_components + 8));
    byte(o, (unsigned)cinfo->data_precision);
    two_bytes(o, cinfo->image_height);
    two_bytes(o, cinfo->image_width);
    byte(o, (unsigned)cinfo->num_components);
    for (int c = 0; c < cinfo->num_components; c++) {
        const jpeg_component_info *comp = &cinfo->comp_info[c];
        byte(o, (unsigned)comp->component_id);
        byte(o, (unsigned)(comp->h_samp_factor << 4 | comp->v_samp_factor));
        byte(o, (unsigned)comp->quant_tbl_no);
    }
    return 1;
}

// One scan: its tables (DHT), its SOS and its coded symbols.
static int write_scan(j_compress_ptr cinfo, const jpeg_scan_info *scan, scan_symbols *s, output *o) {
    const int dc = scan->Ss == 0;
    JHUFF_TBL tables[NUM_HUFF_TBLS];
    int made[NUM_HUFF_TBLS] = {0};
    if (!reserve(o, (size_t)MAX_COMPS_IN_SCAN * (5 + 16 + 256) + 6 + 2 * MAX_COMPS_IN_SCAN + 8)) return 0;
    for (int j = 0; j < scan->comps_in_scan; j++) {
        const jpeg_component_info *comp = &cinfo->comp_info[scan->component_index[j]];
        const int t = dc ? comp->dc_tbl_no : comp->ac_tbl_no;
        if (made[t]) continue;
        made[t] = 1;
        memset(&tables[t], 0, sizeof tables[t]);
        jpeg_gen_optimal_table(cinfo, &tables[t], s->freq[t]);
        derive(&tables[t], &s->derived[t]);
        dht(o, dc ? t : t + 0x10, &tables[t]);
    }
    two_bytes(o, 0xFFDA);
    two_bytes(o, (unsigned)(2 * scan->comps_in_scan + 6));
    byte(o, (unsigned)scan->comps_in_scan);
    for (int j = 0; j < scan->comps_in_scan; j++) {
        const jpeg_component_info *comp = &cinfo->comp_info[scan->component_index[j]];
        byte(o, (unsigned)comp->component_id);
        byte(o, (unsigned)(dc ? comp->dc_tbl_no << 4 : comp->ac_tbl_no));
    }
    byte(o, (unsigned)scan->Ss);
    byte(o, (unsigned)scan->Se);
    byte(o, 0);
    // At most 16 bits of code and 16 more a symbol, each byte possibly stuffed.
    if (!reserve(o, s->count * 8 + 16)) return 0;
    for (size_t i = 0; i < s->count; i++) {
        const coded x = s->list[i];
        const int sym = x & 0xFF, nbits = x >> 8 & 0x1F;
        const codes *c = &s->derived[x >> 13 & 0x7];
        put_bits(o, (uint64_t)c->code[sym] << nbits | x >> 16, c->length[sym] + nbits);
    }
    pad(o);
    return 1;
}

// Every block's nonzero mask in zigzag order (picture.masks); 0 without the memory.
static int make_masks(picture *p) {
    for (int c = 0; c < p->cinfo->num_components; c++) {
        p->masks[c] = malloc(sizeof(uint64_t) * ((size_t)p->width[c] * p->height[c] + 1));
        if (!p->masks[c]) return 0;
        for (JDIMENSION y = 0; y < p->height[c]; y++) {
            const JBLOCKROW row = p->row(p->cinfo, p->context, c, y);
            uint64_t *masks = p->masks[c] + (size_t)y * p->width[c];
            for (JDIMENSION x = 0; x < p->width[c]; x++) masks[x] = in_zigzag(nonzero(row[x]));
        }
    }
    return 1;
}

int att_jpeg_write_frame(j_compress_ptr cinfo, unsigned sof, unsigned char **data, size_t *length) {
    output o = {0};
    if (!header(cinfo, &o, sof)) {
        free(o.data);
        return 0;
    }
    *data = o.data;
    *length = o.length;
    return 1;
}

int att_jpeg_write_scans(j_compress_ptr cinfo, const jpeg_scan_info *scans, int count, att_jpeg_block_row row,
                         void *context, unsigned char **data, unsigned long *length) {
    *data = NULL;
    *length = 0;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_zigzag_bits);
    picture p = {.cinfo = cinfo, .row = row, .context = context};
    measure(cinfo, &p);
    size_t most = 0;
    for (int i = 0; i < count; i++) {
        // A symbol for each coefficient of the band, an EOBRUN for each block at most.
        const size_t per_block = (size_t)(scans[i].Se - scans[i].Ss + 2);
        const size_t symbols = scan_blocks(&p, &scans[i]) * per_block + 1;
        if (symbols > most) most = symbols;
    }
    scan_symbols *s = malloc(sizeof *s);
    coded *list = malloc(most * sizeof(coded));
    output o = {0};
    int ok = s && list && make_masks(&p) && header(cinfo, &o, 0xFFC2);
    if (ok) s->list = list;
    for (int i = 0; ok && i < count; i++) ok = collect(&p, &scans[i], s) && write_scan(cinfo, &scans[i], s, &o);
    ok = ok && reserve(&o, 2);
    if (ok) two_bytes(&o, 0xFFD9);
    free(list);
    free(s);
    for (int c = 0; c < cinfo->num_components; c++) free(p.masks[c]);
    if (!ok) {
        free(o.data);
        return 0;
    }
    *data = o.data;
    *length = (unsigned long)o.length;
    return 1;
}
