// A progressive scan's entropy-coded data read as libjpeg's progressive Huffman decoder
// (jdphuff.c) reads it: the same bit reader (the same bytes read ahead at the same moments, so a
// stray byte or marker is met where libjpeg meets it), the same table lookups, the same updates
// of each coefficient, the same warnings. What differs is the cost: a scan at a time, not a
// function call, a state copy and a restart check for every block; and a refinement scan finds
// the coefficients it corrects from a mask of the block's nonzero ones, not by testing each.
#include "jpeg_scan_private.h"

#include <jerror.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Zigzag position to natural position, with 16 more entries for runs past the end of a block
// in corrupt data (as libjpeg's table has).
static const uint8_t natural[DCTSIZE2 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,
    6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
    39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

// MARK: - Tables

int att_scan_derive(const uint8_t bits[17], const uint8_t values[256], int dc, huff *h) {
    int32_t code = 0;
    int p = 0;
    for (int i = 0; i < (1 << LOOKAHEAD); i++) h->look[i] = (LOOKAHEAD + 1) << LOOKAHEAD;
    for (int l = 1; l <= 16; l++) {
        int n = bits[l];
        if (p + n > 256) return 0;
        if (n == 0) {
            h->maxcode[l] = -1;
        } else {
            h->valoffset[l] = p - code;
            if (code + n >= (INT32_C(1) << l)) return 0;
            for (int i = 0; i < n && l <= LOOKAHEAD; i++) {
                int first = (code + i) << (LOOKAHEAD - l);
                for (int c = 0; c < 1 << (LOOKAHEAD - l); c++) h->look[first + c] = (uint16_t)(l << 8 | values[p + i]);
            }
            p += n;
            code += n;
            h->maxcode[l] = code - 1;
        }
        code <<= 1;
    }
    h->maxcode[17] = 0xFFFFF;
    h->valoffset[17] = 0;
    memcpy(h->values, values, 256);
    for (int i = 0; dc && i < p; i++) {
        if (values[i] > 15) return 0;
    }
    return 1;
}

// MARK: - Bits, as libjpeg's jpeg_fill_bit_buffer reads them

static void warn(reader *r, int code, int p1, int p2) {
    WARNMS2(r->cinfo, code, p1, p2);
    // Warnings end the decode here (jpeg_common.c); if one comes back, end it anyway.
    ERREXIT(r->cinfo, code);
}

static int input_byte(reader *r) {
    if (r->pos >= r->end) warn(r, JWRN_JPEG_EOF, 0, 0);
    return r->data[r->pos++];
}

static int has_ff(uint64_t w) {
    uint64_t t = ~w;
    return ((t - UINT64_C(0x0101010101010101)) & ~t & UINT64_C(0x8080808080808080)) != 0;
}

// Fills the buffer to MIN_GET_BITS or more as libjpeg does (whole bytes, unstuffed, stopping
// at a marker); `needed` bits past a marker are a corrupt file, as there.
static __attribute__((noinline)) void fill(reader *r, int needed) {
    while (!r->marker && r->bits < MIN_GET_BITS) {
        if (r->end - r->pos >= 8) {
            uint64_t word;
            memcpy(&word, r->data + r->pos, 8);
            if (!has_ff(word)) {
                int n = (64 - r->bits) >> 3;
                r->buf |= __builtin_bswap64(word) >> r->bits;
                r->pos += (size_t)n;
                r->bits += 8 * n;
                break;
            }
        }
        int c = input_byte(r);
        if (c == 0xFF) {
            do c = input_byte(r);
            while (c == 0xFF);
            if (c != 0) {
                r->marker = c;
                break;
            }
            c = 0xFF;
        }
        r->buf |= (uint64_t)c << (56 - r->bits);
        r->bits += 8;
    }
    if (r->marker && needed > r->bits) warn(r, JWRN_HIT_MARKER, 0, 0);
}

static inline unsigned get_bits(reader *r, int n) {
    if (r->bits < n) fill(r, n);
    unsigned v = (unsigned)(r->buf >> (64 - n));
    r->buf <<= n;
    r->bits -= n;
    return v;
}

// libjpeg's jpeg_huff_decode: a code longer than the lookahead, a bit at a time.
static __attribute__((noinline)) int decode_slow(reader *r, const huff *h, int min_bits) {
    int l = min_bits;
    int32_t code = (int32_t)get_bits(r, l);
    while (code > h->maxcode[l]) {
        code = code << 1 | (int32_t)get_bits(r, 1);
        l++;
    }
    if (l > 16) warn(r, JWRN_HUFF_BAD_CODE, 0, 0);
    return h->values[(code + h->valoffset[l]) & 0xFF];
}

static inline int decode(reader *r, const huff *h) {
    if (r->bits < LOOKAHEAD) {
        fill(r, 0);
        if (r->bits < LOOKAHEAD) return decode_slow(r, h, 1);
    }
    unsigned entry = h->look[r->buf >> (64 - LOOKAHEAD)];
    int length = (int)(entry >> 8);
    if (length > LOOKAHEAD) return decode_slow(r, h, LOOKAHEAD + 1);
    r->buf <<= length;
    r->bits -= length;
    return (int)(entry & 0xFF);
}

static inline int extend(unsigned x, int s) {
    return (int)x < (1 << (s - 1)) ? (int)(x + ((UINT_MAX << s) + 1)) : (int)x;
}

void att_scan_next_marker(reader *r) {
    int c;
    for (;;) {
        c = input_byte(r);
        while (c != 0xFF) {
            r->discarded++;
            c = input_byte(r);
        }
        do c = input_byte(r);
        while (c == 0xFF);
        if (c != 0) break;
        r->discarded += 2;
    }
    r->checked = 1;
    if (r->discarded != 0) warn(r, JWRN_EXTRANEOUS_DATA, (int)r->discarded, c);
    r->marker = c;
}

static void restart(reader *r) {
    r->discarded += (unsigned)r->bits / 8;
    r->bits = 0;
    r->buf = 0;
    if (!r->marker) att_scan_next_marker(r);
    if (r->marker != JPEG_RST0 + r->next_restart) warn(r, JWRN_MUST_RESYNC, r->marker, r->next_restart);
    r->marker = 0;
    r->next_restart = (r->next_restart + 1) & 7;
    memset(r->last_dc, 0, sizeof r->last_dc);
    r->eobrun = 0;
    r->restarts_to_go = r->restart_interval;
}

static inline void count_mcu(reader *r) {
    if (r->restart_interval) {
        if (r->restarts_to_go == 0) restart(r);
        r->restarts_to_go--;
    }
}

// MARK: - Blocks, as libjpeg's decode_mcu_* change them

static inline void dc_first(reader *r, int c, JCOEF *block) {
    int s = decode(r, &r->tables[c]);
    if (s) s = extend(get_bits(r, s), s);
    int last = r->last_dc[c];
    if ((last >= 0 && s > INT_MAX - last) || (last < 0 && s < INT_MIN - last)) ERREXIT(r->cinfo, JERR_BAD_DCT_COEF);
    r->last_dc[c] = last + s;
    block[0] = (JCOEF)((unsigned long)(long)(last + s) << r->scan.al);
}

static inline void ac_first(reader *r, const huff *h, JCOEF *block) {
    if (r->eobrun > 0) {
        r->eobrun--;
        return;
    }
    for (int k = r->scan.ss; k <= r->scan.se; k++) {
        int s = decode(r, h);
        int run = s >> 4;
        s &= 15;
        if (s) {
            k += run;
            s = extend(get_bits(r, s), s);
            block[natural[k]] = (JCOEF)((unsigned long)(long)s << r->scan.al);
        } else if (run == 15) {
            k += 15;
        } else {
            r->eobrun = 1u << run;
            if (run) r->eobrun += get_bits(r, run);
            r->eobrun--;
            break;
        }
    }
}

// Bit k of the mask: the coefficient at zigzag position k is nonzero. Made from the block's
// mask in natural order (eight comparisons of eight values with SSE2), a byte (a row of the
// block) at a time through a table.
static uint64_t row_to_zigzag[8][256];
static pthread_once_t zigzag_once = PTHREAD_ONCE_INIT;

static void make_zigzag_table(void) {
    for (int row = 0; row < 8; row++) {
        for (int byte = 0; byte < 256; byte++) {
            uint64_t mask = 0;
            for (int k = 0; k < DCTSIZE2; k++) {
                int n = natural[k];
                if (n / 8 == row && (byte >> (n % 8) & 1)) mask |= UINT64_C(1) << k;
            }
            row_to_zigzag[row][byte] = mask;
        }
    }
}

static inline uint64_t zigzag_nonzero(const JCOEF *block) {
    uint64_t natural_mask = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (int g = 0; g < 4; g++) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(block + 16 * g));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(block + 16 * g + 8));
        __m128i zeros = _mm_packs_epi16(_mm_cmpeq_epi16(a, zero), _mm_cmpeq_epi16(b, zero));
        natural_mask |= (uint64_t)(~(unsigned)_mm_movemask_epi8(zeros) & 0xFFFF) << (16 * g);
    }
#else
    for (int n = 0; n < DCTSIZE2; n++) natural_mask |= (uint64_t)(block[n] != 0) << n;
#endif
    if ((natural_mask & ~UINT64_C(1)) == 0) return natural_mask;  // the DC value alone, at 0 both ways
    uint64_t mask = 0;
    for (int row = 0; row < 8; row++) mask |= row_to_zigzag[row][natural_mask >> (8 * row) & 0xFF];
    return mask;
}

static inline void adjust(JCOEF *coef, int p1, int m1) {
    if ((*coef & p1) == 0) *coef = (JCOEF)(*coef + (*coef >= 0 ? p1 : m1));
}

// A correction bit for each coefficient of `mask` (zigzag positions, in order), read as libjpeg
// reads them, one at a time, the buffer filled when it is empty.
static inline void correct(reader *r, JCOEF *block, uint64_t mask, int p1, int m1) {
    while (mask) {
        if (r->bits == 0) fill(r, 1);
        do {
            int bit = (int)(r->buf >> 63);
            r->buf <<= 1;
            r->bits--;
            if (bit) adjust(block + natural[__builtin_ctzll(mask)], p1, m1);
            mask &= mask - 1;
        } while (mask && r->bits > 0);
    }
}

// libjpeg's decode_mcu_AC_refine, with the block's nonzero coefficients as a mask: the
// coefficients a run passes over and the zero it ends on are found from it, not one by one.
static inline void ac_refine(reader *r, const huff *h, JCOEF *block) {
    int se = r->scan.se, p1 = 1 << r->scan.al, m1 = (int)(UINT_MAX << r->scan.al);
    uint64_t band = se == 63 ? ~UINT64_C(0) : (UINT64_C(1) << (se + 1)) - 1;
    uint64_t nonzero = zigzag_nonzero(block);
    int k = r->scan.ss;
    if (r->eobrun == 0) {
        for (; k <= se; k++) {
            int s = decode(r, h);
            int run = s >> 4;
            s &= 15;
            if (s) {
                if (s != 1) warn(r, JWRN_HUFF_BAD_CODE, 0, 0);
                s = get_bits(r, 1) ? p1 : m1;
            } else if (run != 15) {
                r->eobrun = 1u << run;
                if (run) r->eobrun += get_bits(r, run);
                break;
            }
            // Past `run` zeros (and the nonzero coefficients among them) to the next zero, or
            // to the end of the band.
            uint64_t from = ~UINT64_C(0) << k;
            uint64_t zeros = ~nonzero & from & band;
            for (int i = 0; i < run && zeros; i++) zeros &= zeros - 1;
            int target = zeros ? __builtin_ctzll(zeros) : se + 1;
            uint64_t before = target >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << target) - 1;
            correct(r, block, nonzero & from & before, p1, m1);
            k = target;
            if (s) {
                block[natural[k]] = (JCOEF)s;
                if (k < 64) nonzero |= UINT64_C(1) << k;
            }
        }
    }
    if (r->eobrun > 0) {
        if (k <= se) correct(r, block, nonzero & (~UINT64_C(0) << k) & band, p1, m1);
        r->eobrun--;
    }
}

// MARK: - Rows

// The rows of `comp`'s array from `row`, as libjpeg's coefficient controller asks for them.
static JBLOCKARRAY rows_of(reader *r, int comp, JDIMENSION row, JDIMENSION count) {
    j_common_ptr common = (j_common_ptr)r->cinfo;
    return (*r->cinfo->mem->access_virt_barray)(common, r->scans->arrays[comp], row, count, TRUE);
}

static inline void dc_block(reader *r, int c, JCOEF *block) {
    if (r->scan.ah == 0) {
        dc_first(r, c, block);
    } else if (get_bits(r, 1)) {
        block[0] |= (JCOEF)(1 << r->scan.al);
    }
}

// An interleaved scan (DC only): a row of MCUs, each component's blocks in turn.
static void read_interleaved(reader *r, JDIMENSION y) {
    j_decompress_ptr cinfo = r->cinfo;
    const scan_info *s = &r->scan;
    JDIMENSION per_row = (cinfo->image_width + 8 * (JDIMENSION)cinfo->max_h_samp_factor - 1) /
                         (8 * (JDIMENSION)cinfo->max_h_samp_factor);
    JBLOCKARRAY rows[MAX_COMPS_IN_SCAN];
    for (int c = 0; c < s->count; c++) {
        int v = cinfo->comp_info[s->comp[c]].v_samp_factor;
        rows[c] = rows_of(r, s->comp[c], y * (JDIMENSION)v, (JDIMENSION)v);
    }
    for (JDIMENSION x = 0; x < per_row; x++) {
        count_mcu(r);
        for (int c = 0; c < s->count; c++) {
            const jpeg_component_info *comp = &cinfo->comp_info[s->comp[c]];
            for (int by = 0; by < comp->v_samp_factor; by++) {
                JBLOCKROW blocks = rows[c][by] + x * (JDIMENSION)comp->h_samp_factor;
                for (int bx = 0; bx < comp->h_samp_factor; bx++) dc_block(r, c, blocks[bx]);
            }
        }
    }
}

// A scan of one component: its block rows in iMCU row `y` (v_samp_factor of them, fewer at the
// bottom), a block an MCU.
static void read_single(reader *r, JDIMENSION y) {
    const scan_info *s = &r->scan;
    const jpeg_component_info *comp = &r->cinfo->comp_info[s->comp[0]];
    JDIMENSION v = (JDIMENSION)comp->v_samp_factor, first = y * v;
    if (first >= comp->height_in_blocks) return;
    JBLOCKARRAY rows = rows_of(r, s->comp[0], first, v);
    JDIMENSION n = comp->height_in_blocks - first < v ? comp->height_in_blocks - first : v;
    const huff *h = &r->tables[0];
    for (JDIMENSION i = 0; i < n; i++) {
        JBLOCKROW blocks = rows[i];
        for (JDIMENSION x = 0; x < comp->width_in_blocks; x++) {
            count_mcu(r);
            if (s->ss == 0) {
                dc_block(r, 0, blocks[x]);
            } else if (s->ah == 0) {
                ac_first(r, h, blocks[x]);
            } else {
                ac_refine(r, h, blocks[x]);
            }
        }
    }
}

// After the scan's last block, as libjpeg's read_markers goes on: to the next marker, passing
// restart and TEM markers, warning of anything else before it; it must be the one the file was
// walked to.
static void finish(reader *r) {
    for (;;) {
        if (!r->marker) att_scan_next_marker(r);
        if (!((r->marker >= JPEG_RST0 && r->marker <= JPEG_RST0 + 7) || r->marker == 0x01)) break;
        r->marker = 0;
    }
    if (r->pos != r->after) warn(r, JWRN_EXTRANEOUS_DATA, (int)(r->after - r->pos), r->marker);
    // A segment before the next scan (a table, say) is followed by a search for the next marker,
    // which counts what was discarded.
    if (r->marker != JPEG_EOI && r->marker != 0xDA) {
        r->checked = 1;
        if (r->discarded != 0) warn(r, JWRN_EXTRANEOUS_DATA, (int)r->discarded, r->marker);
    }
}

void att_scan_read_row(reader *r, JDIMENSION row) {
    if (row == 0) {
        r->buf = 0;
        r->bits = 0;
        r->marker = 0;
        r->eobrun = 0;
        r->restarts_to_go = r->restart_interval;
        r->next_restart = 0;
        memset(r->last_dc, 0, sizeof r->last_dc);
    }
    if (r->scan.count > 1) {
        read_interleaved(r, row);
    } else {
        read_single(r, row);
    }
    if (row + 1 == r->cinfo->total_iMCU_rows) finish(r);
}

void att_scan_prepare(void) { pthread_once(&zigzag_once, make_zigzag_table); }
