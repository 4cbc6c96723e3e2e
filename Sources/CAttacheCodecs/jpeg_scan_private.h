// What the two halves of the progressive scan reader share: jpeg_scan_decode.c reads a scan's
// entropy-coded data, jpeg_scans.c the markers between scans and the hand-over. Private to the
// JPEG shim.
#ifndef ATTACHE_JPEG_SCAN_PRIVATE_H
#define ATTACHE_JPEG_SCAN_PRIVATE_H

#include "jpeg_scans.h"

enum { LOOKAHEAD = 8, MIN_GET_BITS = 57, DC = 0, AC = 1 };

// A Huffman table ready to decode, as libjpeg derives it.
typedef struct {
    uint16_t look[1 << LOOKAHEAD];  // (length << 8) | symbol; length 9 for a longer code
    int32_t maxcode[18];            // the largest code of each length, -1 where none
    int32_t valoffset[18];
    uint8_t values[256];
} huff;

// What the markers have said so far.
typedef struct {
    uint8_t bits[2][NUM_HUFF_TBLS][17];
    uint8_t values[2][NUM_HUFF_TBLS][256];
    uint8_t defined[2][NUM_HUFF_TBLS];
    unsigned restart_interval;
    int coef_bits[MAX_COMPONENTS][DCTSIZE2];
    int scans;
} file_state;

typedef struct {
    int count;
    int comp[MAX_COMPS_IN_SCAN];  // component indices
    int dc_tbl[MAX_COMPS_IN_SCAN], ac_tbl[MAX_COMPS_IN_SCAN];
    int ss, se, ah, al;
} scan_info;

// One scan being read: its place in the file, its tables and its reading state. The scans are
// read side by side, an iMCU row of each in turn (each row's blocks fetched once for all).
typedef struct {
    j_decompress_ptr cinfo;
    att_scans *scans;
    const uint8_t *data;
    size_t pos, end;
    size_t after;  // just past the marker the file has after the scan's data
    uint64_t buf;  // the next bits first; past `bits` only zeros or the bytes that follow
    int bits;
    int marker;  // a marker the bit reader ran into, not yet read (libjpeg's unread_marker)
    // Bytes passed over at restarts (libjpeg counts them and warns at its next search for a
    // marker, in this scan or a later one), and whether this scan searches for one.
    unsigned discarded;
    int checked;
    scan_info scan;
    huff tables[MAX_COMPS_IN_SCAN];  // a DC first pass: each component's; an AC scan: [0]
    unsigned restart_interval;
    int last_dc[MAX_COMPS_IN_SCAN];
    unsigned eobrun, restarts_to_go;
    int next_restart;
} reader;

/// libjpeg's jpeg_make_d_derived_tbl, which fails on the same tables: 0 where it would.
int att_scan_derive(const uint8_t bits[17], const uint8_t values[256], int dc, huff *h);
/// The scan's blocks in iMCU row `row` (the rows before it read), into the arrays, as libjpeg
/// reads them; after the last, the scan's end is checked as libjpeg checks it.
void att_scan_read_row(reader *r, JDIMENSION row);
/// libjpeg's next_marker: skips what is not a marker, warning of it; the marker in `r->marker`.
void att_scan_next_marker(reader *r);
/// Makes the tables the reader needs, once.
void att_scan_prepare(void);

#endif
