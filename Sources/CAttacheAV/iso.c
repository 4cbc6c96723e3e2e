// ISO base media boxes (MP4, MOV, M4A) read straight from the bytes, before libavformat does:
// enough to count the tracks a file declares, to find a box the file ends inside, and to say
// where the index sits against the media.
#include "ff.h"

#include <string.h>

// An ISO box's size at `at` (32 bits, or 64 after a size of 1; 0: to the end of its parent),
// and the length of its header in `header`.
static uint64_t box_size(const uint8_t *data, size_t at, size_t end, size_t *header) {
    uint64_t size =
        (uint64_t)data[at] << 24 | (uint64_t)data[at + 1] << 16 | (uint64_t)data[at + 2] << 8 | data[at + 3];
    *header = 8;
    if (size == 1 && at + 16 <= end) {
        size = 0;
        for (int k = 0; k < 8; k++) size = size << 8 | data[at + 8 + k];
        *header = 16;
    }
    return size;
}

static int is(const uint8_t *data, size_t at, const char *type) { return memcmp(data + at + 4, type, 4) == 0; }

// The `trak` boxes directly inside the box whose payload runs from `at` to `end`.
static int tracks(const uint8_t *data, size_t at, size_t end) {
    int count = 0;
    while (at + 8 <= end) {
        size_t header;
        uint64_t size = box_size(data, at, end, &header);
        if (size < header || size > end - at) break;
        if (is(data, at, "trak")) count++;
        at += (size_t)size;
    }
    return count;
}

int att_iso_walk(const uint8_t *data, size_t length, att_iso_layout *layout) {
    memset(layout, 0, sizeof *layout);
    if (length < 16 || memcmp(data + 4, "ftyp", 4) != 0) return 0;
    int media = 0;
    size_t at = 0;
    while (at + 8 <= length) {
        size_t header;
        uint64_t size = box_size(data, at, length, &header);
        if (is(data, at, "mdat")) media = 1;
        if (!media && is(data, at, "moov")) layout->index_first = 1;
        int last = size == 0;  // to the end of the file
        if (last) size = length - at;
        if (size < header) break;
        if (size > length - at) {
            layout->cut = is(data, at, "mdat") ? "mdat" : is(data, at, "moov") ? "moov" : "a";
            break;
        }
        if (is(data, at, "moov")) layout->tracks += tracks(data, at + header, at + (size_t)size);
        if (last) break;
        at += (size_t)size;
    }
    return 1;
}
