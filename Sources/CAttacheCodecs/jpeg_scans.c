// A progressive JPEG's scans, read by the shim rather than by libjpeg. At 1/4 scale a
// progressive photo takes 5-7 times as long to decode as the same photo written as one
// baseline scan, nearly all of it libjpeg's progressive entropy decoder. Here libjpeg still
// reads the header and the scans before the first it can hand over, and does the inverse DCT,
// the upsampling and the colour conversion from its arrays, so the pixels are its own; the
// shim reads the rest of the scans into the arrays (jpeg_scan_decode.c) and gives libjpeg, for
// the rest of the file, the scan it was about to read with nothing in it, and EOI.
//
// What is handed over is checked first, without changing anything: every marker to the end of
// the file must be one libjpeg accepts here (tables, restart intervals, comments and
// application data, scans), every scan valid as libjpeg judges it, the file must end with EOI
// and its scans must leave every coefficient complete (then libjpeg's block smoothing would do
// nothing, and it is turned off). Otherwise libjpeg reads the file itself, as before.
#include "jpeg_scan_private.h"

#include <jerror.h>
#include <stdlib.h>
#include <string.h>

// MARK: - Markers

static unsigned two_bytes(const uint8_t *at) { return (unsigned)at[0] << 8 | at[1]; }

// A DHT segment's tables into `st`; 0 where libjpeg's get_dht would fail.
static int read_dht(file_state *st, const uint8_t *at, long length) {
    while (length > 16) {
        int index = at[0], count = 0;
        uint8_t bits[17] = {0};
        for (int i = 1; i <= 16; i++) count += bits[i] = at[i];
        length -= 17;
        at += 17;
        if (count > 256 || count > length) return 0;
        int kind = index & 0x10 ? AC : DC;
        index &= ~0x10;
        if (index >= NUM_HUFF_TBLS) return 0;
        memcpy(st->bits[kind][index], bits, sizeof bits);
        memset(st->values[kind][index], 0, 256);
        memcpy(st->values[kind][index], at, (size_t)count);
        st->defined[kind][index] = 1;
        length -= count;
        at += count;
    }
    return length == 0;
}

// A DQT segment as libjpeg's get_dqt reads it (the tables were latched before: only its shape
// matters); 0 where it would fail.
static int check_dqt(const uint8_t *at, long length) {
    while (length > 0) {
        length--;
        int n = *at++;
        int precision = n >> 4;
        if ((n & 0x0F) >= NUM_QUANT_TBLS) return 0;
        long count =
            precision ? (length < 2 * DCTSIZE2 ? length >> 1 : DCTSIZE2) : (length < DCTSIZE2 ? length : DCTSIZE2);
        long bytes = precision ? 2 * count : count;
        length -= bytes;
        at += bytes;
    }
    return length == 0;
}

// An SOS segment into `scan`, judged as libjpeg's get_sos, per_scan_setup and the progressive
// decoder's start_pass judge it, and the progression recorded in `st`; 0 where libjpeg would
// fail or warn.
static int read_sos(j_decompress_ptr cinfo, file_state *st, const uint8_t *at, long length, scan_info *scan) {
    int n = at[0];
    if (length != 2 * n + 4 || n < 1 || n > MAX_COMPS_IN_SCAN) return 0;
    scan->count = n;
    int blocks = 0;
    for (int i = 0; i < n; i++) {
        int id = at[1 + 2 * i], tables = at[2 + 2 * i], found = -1;
        // Taken only where every libjpeg release reads it the same way: one component with
        // the id, among the first four, in the order of the frame.
        for (int ci = 0; ci < cinfo->num_components; ci++) {
            if (cinfo->comp_info[ci].component_id != id) continue;
            if (found >= 0) return 0;
            found = ci;
        }
        if (found < 0 || found >= MAX_COMPS_IN_SCAN || (i > 0 && found <= scan->comp[i - 1])) return 0;
        scan->comp[i] = found;
        scan->dc_tbl[i] = tables >> 4;
        scan->ac_tbl[i] = tables & 15;
        blocks += cinfo->comp_info[found].h_samp_factor * cinfo->comp_info[found].v_samp_factor;
    }
    const uint8_t *tail = at + 1 + 2 * n;
    scan->ss = tail[0];
    scan->se = tail[1];
    scan->ah = tail[2] >> 4;
    scan->al = tail[2] & 15;
    if (n > 1 && blocks > D_MAX_BLOCKS_IN_MCU) return 0;
    if (scan->ss == 0 ? scan->se != 0 : (scan->ss > scan->se || scan->se >= DCTSIZE2 || n != 1)) return 0;
    if ((scan->ah != 0 && scan->al != scan->ah - 1) || scan->al > 13) return 0;
    for (int i = 0; i < n; i++) {
        int *bits = st->coef_bits[scan->comp[i]];
        if (scan->ss != 0 && bits[0] < 0) return 0;
        for (int k = scan->ss; k <= scan->se; k++) {
            if (scan->ah != (bits[k] < 0 ? 0 : bits[k])) return 0;
            bits[k] = scan->al;
        }
        int kind = scan->ss == 0 ? DC : AC;
        int t = kind == DC ? scan->dc_tbl[i] : scan->ac_tbl[i];
        if (kind == DC && scan->ah != 0) continue;
        huff h;
        if (t >= NUM_HUFF_TBLS || !st->defined[kind][t] ||
            !att_scan_derive(st->bits[kind][t], st->values[kind][t], kind == DC, &h)) {
            return 0;
        }
    }
    st->scans++;
    return 1;
}

enum { SEGMENT_BAD = 0, SEGMENT_OK = 1, SEGMENT_SOS = 2, SEGMENT_EOI = 3 };

// The segment of marker `code` at `*pos` (just past the marker) read as libjpeg's read_markers
// reads it after the first scan; `*pos` moves past it.
static int read_segment(j_decompress_ptr cinfo, const uint8_t *data, size_t end, size_t *pos, int code, file_state *st,
                        scan_info *scan) {
    if (code == JPEG_EOI) return SEGMENT_EOI;
    if ((code >= JPEG_RST0 && code <= JPEG_RST0 + 7) || code == 0x01) return SEGMENT_OK;  // RSTn, TEM: no segment
    int skipped = code == JPEG_COM || (code >= JPEG_APP0 && code <= JPEG_APP0 + 15);
    if ((!skipped && code != 0xC4 && code != 0xDB && code != 0xDD && code != 0xDA) || end - *pos < 2)
        return SEGMENT_BAD;
    long length = (long)two_bytes(data + *pos);
    if (skipped) {
        long skip = length < 2 ? 2 : length;  // libjpeg takes a shorter length as empty
        if ((size_t)skip > end - *pos) return SEGMENT_BAD;
        *pos += (size_t)skip;
        return SEGMENT_OK;
    }
    if (length < 2 || (size_t)length > end - *pos) return SEGMENT_BAD;
    const uint8_t *at = data + *pos + 2;
    *pos += (size_t)length;
    switch (code) {
    case 0xC4: return read_dht(st, at, length - 2) ? SEGMENT_OK : SEGMENT_BAD;
    case 0xDB: return check_dqt(at, length - 2) ? SEGMENT_OK : SEGMENT_BAD;
    case 0xDD:
        if (length != 4) return SEGMENT_BAD;
        st->restart_interval = two_bytes(at);
        return SEGMENT_OK;
    default: return length > 2 && read_sos(cinfo, st, at, length - 2, scan) ? SEGMENT_SOS : SEGMENT_BAD;
    }
}

enum { MOST_SCANS = 256 };  // past this many a file is left to libjpeg (each costs this reader 6 KB)

typedef struct {
    reader *list;
    int count, capacity;
} scan_list;

// A reader for `scan`, its data from `start`, with the tables and restart interval `st` holds.
static int add_scan(j_decompress_ptr cinfo, att_scans *sc, const uint8_t *data, size_t end, scan_list *scans,
                    const scan_info *scan, const file_state *st, size_t start) {
    if (scans->count == scans->capacity) {
        int capacity = scans->capacity ? 2 * scans->capacity : 16;
        if (capacity > MOST_SCANS) return 0;
        reader *grown = realloc(scans->list, (size_t)capacity * sizeof *grown);
        if (!grown) return 0;
        scans->list = grown;
        scans->capacity = capacity;
    }
    reader *r = &scans->list[scans->count++];
    *r = (reader){.cinfo = cinfo,
                  .scans = sc,
                  .data = data,
                  .pos = start,
                  .end = end,
                  .scan = *scan,
                  .restart_interval = st->restart_interval};
    for (int c = 0; c < scan->count; c++) {
        int dc = scan->ss == 0, t = dc ? scan->dc_tbl[c] : scan->ac_tbl[c];
        if ((dc && scan->ah != 0) || (!dc && c > 0)) continue;
        if (t >= NUM_HUFF_TBLS || !st->defined[dc ? DC : AC][t] ||
            !att_scan_derive(st->bits[dc ? DC : AC][t], st->values[dc ? DC : AC][t], dc, &r->tables[c])) {
            return 0;
        }
    }
    return 1;
}

// From the current scan's data at 0, without decoding: a reader for it and for each later scan
// when every later marker is one read_segment takes, the file ends with EOI within
// `max_scans` scans (0: any number) and the scans leave every coefficient of every component
// complete; 0 otherwise.
static int walk(j_decompress_ptr cinfo, att_scans *sc, const uint8_t *data, size_t end, file_state st,
                const scan_info *first, scan_list *scans) {
    size_t pos = 0;
    if (!add_scan(cinfo, sc, data, end, scans, first, &st, 0)) return 0;
    for (;;) {
        int code;
        do {  // the entropy-coded data, restart markers included
            const uint8_t *ff = memchr(data + pos, 0xFF, end - pos);
            if (ff == NULL) return 0;
            pos = (size_t)(ff - data) + 1;
            while (pos < end && data[pos] == 0xFF) pos++;
            if (pos >= end) return 0;
            code = data[pos++];
        } while (code == 0 || (code >= JPEG_RST0 && code <= JPEG_RST0 + 7));
        scans->list[scans->count - 1].after = pos;
        for (;;) {
            scan_info scan;
            int kind = read_segment(cinfo, data, end, &pos, code, &st, &scan);
            if (kind == SEGMENT_BAD) return 0;
            if (kind == SEGMENT_SOS) {
                if (sc->max_scans > 0 && st.scans > sc->max_scans) return 0;
                if (!add_scan(cinfo, sc, data, end, scans, &scan, &st, pos)) return 0;
                break;
            }
            if (kind == SEGMENT_EOI) {
                for (int ci = 0; ci < cinfo->num_components; ci++) {
                    for (int k = 0; k < DCTSIZE2; k++) {
                        if (st.coef_bits[ci][k] != 0) return 0;
                    }
                }
                return 1;
            }
            if (pos >= end || data[pos] != 0xFF) return 0;  // the next marker at once
            while (pos < end && data[pos] == 0xFF) pos++;
            if (pos >= end || data[pos] == 0) return 0;
            code = data[pos++];
        }
    }
}

// MARK: - Handing over

typedef struct {
    uint8_t *out;
    size_t length;
    uint32_t pending;
    int bits;
} bit_writer;

static void put_bits(bit_writer *w, uint32_t value, int count) {
    for (int i = count - 1; i >= 0; i--) {
        w->pending = w->pending << 1 | (value >> i & 1);
        if (++w->bits == 8) {
            w->out[w->length++] = (uint8_t)w->pending;
            if (w->pending == 0xFF) w->out[w->length++] = 0;
            w->pending = 0;
            w->bits = 0;
        }
    }
}

// The code of `symbol` in a table (canonical order), its length in `*length`; 0 when absent.
static int code_of(const uint8_t bits[17], const uint8_t values[256], int symbol, uint32_t *code, int *length) {
    uint32_t next = 0;
    int p = 0;
    for (int l = 1; l <= 16; l++, next <<= 1) {
        for (int i = 0; i < bits[l] && p < 256; i++, p++, next++) {
            if (values[p] == symbol) {
                *code = next;
                *length = l;
                return 1;
            }
        }
    }
    return 0;
}

// The current scan again with nothing in it, then EOI: a zero bit a block for a DC refinement,
// end-of-band runs for an AC first pass. 0 when the scan is neither, or its table has no
// end-of-band code for a run it needs.
static int make_stand_in(j_decompress_ptr cinfo, att_scans *sc, const file_state *st, const scan_info *scan,
                         size_t *length) {
    uint64_t blocks = 0;
    if (scan->count > 1) {
        uint64_t per_row = (cinfo->image_width + 8u * (unsigned)cinfo->max_h_samp_factor - 1) /
                           (8u * (unsigned)cinfo->max_h_samp_factor);
        uint64_t rows = (cinfo->image_height + 8u * (unsigned)cinfo->max_v_samp_factor - 1) /
                        (8u * (unsigned)cinfo->max_v_samp_factor);
        for (int c = 0; c < scan->count; c++) {
            const jpeg_component_info *comp = &cinfo->comp_info[scan->comp[c]];
            blocks += per_row * rows * (uint64_t)(comp->h_samp_factor * comp->v_samp_factor);
        }
    } else {
        const jpeg_component_info *comp = &cinfo->comp_info[scan->comp[0]];
        blocks = (uint64_t)comp->width_in_blocks * comp->height_in_blocks;
    }
    int refine_dc = scan->ss == 0 && scan->ah != 0, first_ac = scan->ss != 0 && scan->ah == 0;
    if (!refine_dc && !first_ac) return 0;
    // A DC refinement: a bit a block; an AC first pass: at most a 16-bit code and 14 bits a run
    // of 16,384 blocks or more, or a code a block; stuffing can double it.
    uint64_t room = 2 * (refine_dc ? blocks / 8 : blocks * 2) + 16;
    sc->stand_in = malloc((size_t)room);
    if (!sc->stand_in) return 0;
    bit_writer w = {sc->stand_in, 0, 0, 0};
    if (refine_dc) {
        for (uint64_t b = 0; b < blocks; b++) put_bits(&w, 0, 1);
    }
    const uint8_t *bits = st->bits[AC][scan->ac_tbl[0]], *values = st->values[AC][scan->ac_tbl[0]];
    for (uint64_t left = first_ac ? blocks : 0; left > 0;) {
        int r = 14;
        uint32_t code = 0;
        int code_length = 0;
        while (r >= 0 && ((UINT64_C(1) << r) > left || !code_of(bits, values, r << 4, &code, &code_length))) r--;
        if (r < 0) return 0;
        uint64_t run = left < (UINT64_C(2) << r) - 1 ? left : (UINT64_C(2) << r) - 1;
        put_bits(&w, code, code_length);
        put_bits(&w, (uint32_t)(run - (UINT64_C(1) << r)), r);
        left -= run;
    }
    if (w.bits) put_bits(&w, 0xFF, 8 - w.bits);
    w.out[w.length++] = 0xFF;
    w.out[w.length++] = JPEG_EOI;
    *length = w.length;
    return 1;
}

// What libjpeg has read so far: the tables, the restart interval and the progression, and the
// scan it is about to read. 0 when a component has not yet been in a scan (libjpeg latches its
// quantisation table there).
static int state_of(j_decompress_ptr cinfo, file_state *st, scan_info *scan) {
    memset(st, 0, sizeof *st);
    for (int t = 0; t < NUM_HUFF_TBLS; t++) {
        const JHUFF_TBL *tables[2] = {cinfo->dc_huff_tbl_ptrs[t], cinfo->ac_huff_tbl_ptrs[t]};
        for (int kind = DC; kind <= AC; kind++) {
            if (!tables[kind]) continue;
            memcpy(st->bits[kind][t], tables[kind]->bits, 17);
            memcpy(st->values[kind][t], tables[kind]->huffval, 256);
            st->defined[kind][t] = 1;
        }
    }
    st->restart_interval = cinfo->restart_interval;
    st->scans = cinfo->input_scan_number;
    for (int ci = 0; ci < cinfo->num_components; ci++) {
        memcpy(st->coef_bits[ci], cinfo->coef_bits[ci], sizeof st->coef_bits[ci]);
        if (cinfo->comp_info[ci].quant_table == NULL) return 0;
    }
    scan->count = cinfo->comps_in_scan;
    for (int c = 0; c < scan->count; c++) {
        scan->comp[c] = cinfo->cur_comp_info[c]->component_index;
        scan->dc_tbl[c] = cinfo->cur_comp_info[c]->dc_tbl_no;
        scan->ac_tbl[c] = cinfo->cur_comp_info[c]->ac_tbl_no;
    }
    scan->ss = cinfo->Ss;
    scan->se = cinfo->Se;
    scan->ah = cinfo->Ah;
    scan->al = cinfo->Al;
    return 1;
}

int att_scans_take_over(j_decompress_ptr cinfo, att_scans *sc) {
    if (sc->taken || sc->stand_in || !cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 ||
        cinfo->input_iMCU_row != 0 || sc->count != cinfo->num_components || cinfo->num_components > MAX_COMPS_IN_SCAN ||
        cinfo->src == NULL || cinfo->coef_bits == NULL) {
        return 0;
    }
    att_scan_prepare();
    file_state st;
    scan_info first;
    scan_list scans = {0};
    const uint8_t *data = cinfo->src->next_input_byte;
    size_t end = cinfo->src->bytes_in_buffer, length = 0;
    if (!state_of(cinfo, &st, &first) || !walk(cinfo, sc, data, end, st, &first, &scans) ||
        !make_stand_in(cinfo, sc, &st, &first, &length)) {
        free(sc->stand_in);
        sc->stand_in = NULL;
        free(scans.list);
        return 0;
    }
    sc->reader = scans.list;  // freed with the decoder if the data ends the decode
    sc->started = 1;
    // The scans side by side, an iMCU row of each in turn: a row's blocks are fetched from the
    // arrays once for all of them (the compact store unpacks and packs each row once). The
    // compact store is asked for whole blocks (a DC scan alone would have been given DC values).
    cinfo->Ss = 1;
    for (JDIMENSION row = 0; row < cinfo->total_iMCU_rows; row++) {
        for (int i = 0; i < scans.count; i++) att_scan_read_row(&scans.list[i], row);
        sc->tick(cinfo);
    }
    // libjpeg's count of bytes passed over runs on from scan to scan: what one scan passed over
    // after its last search for a marker is warned of at the next search of a later one.
    for (int i = 0, pending = 0; i < scans.count; i++) {
        if (pending && scans.list[i].checked) {
            WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, pending, 0);
            ERREXIT(cinfo, JWRN_EXTRANEOUS_DATA);  // warnings end the decode (jpeg_common.c)
        }
        pending += (int)scans.list[i].discarded;
    }
    sc->reader = NULL;
    free(scans.list);
    cinfo->Ss = first.ss;  // the scan libjpeg reads next, as it set it
    cinfo->Se = first.se;
    cinfo->src->next_input_byte = sc->stand_in;
    cinfo->src->bytes_in_buffer = length;
    cinfo->restart_interval = 0;
    cinfo->do_block_smoothing = FALSE;
    sc->taken = 1;
    return 1;
}
