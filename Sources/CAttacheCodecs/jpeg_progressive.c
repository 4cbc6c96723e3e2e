// The progressive scans both encoders write: the thorough encoder always (keeping the file
// when it is smaller than one baseline scan), the fast one for `auto`'s pictures of 256 x 256
// px and up (QualitySearch.progressiveArea).
#include "jpeg_private.h"

// The file is written as progressive scans, each a band of frequencies of one component with
// its own optimised Huffman table, no successive approximation: luma's DC alone, then chroma's
// two DCs together, luma's AC in four bands (1-2, 3-5, 6-16, 17-63) and each chroma's in two
// (1-2, 3-63). The same coefficients as one baseline scan, in fewer bytes: each band's table fits
// its own statistics, and the runs of blocks that end early are coded once for many blocks.
// Chosen on the calibration photos among 122 scripts without successive approximation
// (docs/quality.md, "Progressive scans").
static const jpeg_scan_info colour_scans[] = {
    {1, {0}, 0, 0, 0, 0},   {2, {1, 2}, 0, 0, 0, 0}, {1, {0}, 1, 2, 0, 0},  {1, {0}, 3, 5, 0, 0}, {1, {0}, 6, 16, 0, 0},
    {1, {0}, 17, 63, 0, 0}, {1, {1}, 1, 2, 0, 0},    {1, {1}, 3, 63, 0, 0}, {1, {2}, 1, 2, 0, 0}, {1, {2}, 3, 63, 0, 0},
};
static const jpeg_scan_info grey_scans[] = {
    {1, {0}, 0, 0, 0, 0}, {1, {0}, 1, 2, 0, 0}, {1, {0}, 3, 5, 0, 0}, {1, {0}, 6, 16, 0, 0}, {1, {0}, 17, 63, 0, 0},
};

const jpeg_scan_info *att_jpeg_scan_script(int components, int *count) {
    if (components == 3) {
        *count = (int)(sizeof colour_scans / sizeof colour_scans[0]);
        return colour_scans;
    }
    if (components == 1) {
        *count = (int)(sizeof grey_scans / sizeof grey_scans[0]);
        return grey_scans;
    }
    *count = 0;
    return NULL;
}

void att_jpeg_progressive_scans(j_compress_ptr cinfo) {
    int count = 0;
    const jpeg_scan_info *scans = att_jpeg_scan_script(cinfo->num_components, &count);
    if (!scans) return;
    cinfo->scan_info = scans;
    cinfo->num_scans = count;
}
