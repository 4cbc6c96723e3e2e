// A progressive JPEG's later scans read by the shim itself, into libjpeg's coefficient arrays.
// Private to the JPEG shim.
#ifndef ATTACHE_JPEG_SCANS_H
#define ATTACHE_JPEG_SCANS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

typedef struct {
    /// The whole-image coefficient arrays, one per component, as libjpeg asked for them.
    jvirt_barray_ptr arrays[MAX_COMPONENTS];
    int count;
    /// Scans allowed in all (0 = no limit): past it the shim leaves the file to libjpeg.
    int max_scans;
    /// Called once every iMCU row read (the progress monitor's work: deadline, yield).
    void (*tick)(j_decompress_ptr cinfo);
    /// What libjpeg reads instead of the rest of the file once the shim has read it.
    uint8_t *stand_in;
    /// The reader's state while it reads (freed with the decoder if the data ends the decode).
    void *reader;
    /// 1 once the shim has begun to read the scans; `taken` 1 once it has read them.
    int started;
    int taken;
} att_scans;

/// At the start of a progressive scan, before libjpeg has read any of its data: when every
/// later marker is one the shim knows, the file ends with EOI and the scans complete every
/// coefficient, reads this scan and every later one into the arrays and gives libjpeg, for the
/// rest of the file, this scan again with nothing in it and EOI. Returns 1 when it did; 0 when
/// it left the file to libjpeg, having changed nothing. Bad data ends the decode through the
/// error manager with libjpeg's own warning or error, where libjpeg would have given it.
int att_scans_take_over(j_decompress_ptr cinfo, att_scans *scans);

#endif
