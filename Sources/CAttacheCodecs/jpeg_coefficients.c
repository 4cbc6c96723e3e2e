// A multi-scan JPEG (progressive, or sequential with a scan per component) is decoded by
// libjpeg into whole-image coefficient arrays: 128 bytes for every 8x8 block of every
// component, held until the last scan is read, whatever the output scale. Most of those
// coefficients are zero. This store stands behind libjpeg's virtual block arrays (the memory
// manager's request/realize/access methods, which an application may replace) and keeps each
// block row packed: a 64-bit mask of the nonzero AC coefficients, then their values; the DC
// values apart, one per block, so that a progressive DC scan touches nothing else. libjpeg sees
// only a window of whole blocks, the rows it asked for; a row is packed again when the window
// moves on. Nothing is dropped, so the pixels are libjpeg's own, at every scale.
//
// What it can hold is bounded before the decode starts: a Huffman-coded scan spends at least
// two bits of the file on every coefficient it makes nonzero (a code of one bit or more, and a
// magnitude or sign bit), and a coefficient once nonzero stays so; a DC value is one per block.
#include "jpeg_coefficients.h"

#include "attache_codecs.h"

#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATT_COEF_SHUFFLE 1
#endif

enum {
    MASK_BYTES = 8,
    PACKED_BLOCK_MAX = MASK_BYTES + (int)sizeof(JBLOCK),
    // The vector paths store and load 16 bytes at a time past the last value: every packed
    // buffer has this much room after its end.
    SLACK = 16,
    // libjpeg-turbo asks for a window of five iMCU rows when it may smooth a progressive file
    // (three in older releases); the bound is made for five.
    WINDOW_IMCU_ROWS = 5,
};

typedef struct att_coef_array {
    struct att_coef_array *next;
    JDIMENSION blocks_per_row;
    JDIMENSION rows;
    JDIMENSION max_access;
    uint8_t **data;      // each block row's AC coefficients packed, NULL until first written
    JCOEF *dc;           // every block's DC coefficient, row after row
    uint32_t *length;    // bytes used in each row
    uint32_t *capacity;  // bytes allocated for each row
    JBLOCK *window_blocks;
    JBLOCKROW *window;
    uint8_t *scratch;  // one row packed, before it is copied to its place
    JDIMENSION window_start;
    JDIMENSION window_rows;
    int window_dc_only;  // the window holds only DC values (a progressive DC scan's rows)
    int dirty;
} att_coef_array;

struct att_coef_store {
    jvirt_barray_ptr (*request_original)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    void (*realize_original)(j_common_ptr);
    att_coef_array *arrays;
    uint64_t bound;
    uint64_t held;
    uint64_t peak;
};

// A component's array as libjpeg asks for it: blocks per row and rows, each rounded up to
// the component's sampling factors.
static void component_blocks(const jpeg_component_info *comp, uint64_t *per_row, uint64_t *rows) {
    uint64_t h = comp->h_samp_factor > 0 ? (uint64_t)comp->h_samp_factor : 1;
    uint64_t v = comp->v_samp_factor > 0 ? (uint64_t)comp->v_samp_factor : 1;
    *per_row = ((uint64_t)comp->width_in_blocks + h - 1) / h * h;
    *rows = ((uint64_t)comp->height_in_blocks + v - 1) / v * v;
}

uint64_t att_coef_dense_bytes(j_decompress_ptr cinfo) {
    uint64_t total = 0;
    for (int i = 0; i < cinfo->num_components; i++) {
        uint64_t per_row, rows;
        component_blocks(&cinfo->comp_info[i], &per_row, &rows);
        total += per_row * rows * sizeof(JBLOCK);
    }
    return total;
}

// The window, the scratch row and the row tables of one component.
static uint64_t working_bytes(uint64_t blocks_per_row, uint64_t rows, uint64_t max_access) {
    return max_access * blocks_per_row * sizeof(JBLOCK) + max_access * sizeof(JBLOCKROW) +
           blocks_per_row * PACKED_BLOCK_MAX + SLACK + rows * (sizeof(uint8_t *) + 2 * sizeof(uint32_t) + SLACK) +
           sizeof(att_coef_array);
}

uint64_t att_coef_compact_bound(j_decompress_ptr cinfo, size_t length) {
    if (!jpeg_has_multiple_scans(cinfo) || cinfo->arith_code) return 0;
    uint64_t dense = att_coef_dense_bytes(cinfo);
    uint64_t blocks = dense / sizeof(JBLOCK);
    uint64_t ac = 4 * (uint64_t)length;
    if (ac > (DCTSIZE2 - 1) * blocks) ac = (DCTSIZE2 - 1) * blocks;
    uint64_t bound = blocks * MASK_BYTES + (blocks + ac) * sizeof(JCOEF);
    for (int i = 0; i < cinfo->num_components; i++) {
        const jpeg_component_info *comp = &cinfo->comp_info[i];
        uint64_t per_row, rows;
        component_blocks(comp, &per_row, &rows);
        uint64_t v = comp->v_samp_factor > 0 ? (uint64_t)comp->v_samp_factor : 1;
        bound += working_bytes(per_row, rows, v * WINDOW_IMCU_ROWS);
    }
    return bound;
}

static att_coef_store *store_of(j_common_ptr cinfo) { return (att_coef_store *)cinfo->client_data; }

static void fail_memory(j_common_ptr cinfo, const char *message) {
    att_jpeg_fail(cinfo, ATT_ERR_MEMORY_LIMIT, message);
}

// Counts `bytes` more as held, before they are allocated.
static void charge(j_common_ptr cinfo, att_coef_store *store, uint64_t bytes) {
    if (store->held + bytes > store->bound) {
        fail_memory(cinfo, "multi-scan JPEG coefficients past their bound");
    }
    store->held += bytes;
    if (store->held > store->peak) store->peak = store->held;
}

// Packs `count` blocks: per block a mask of its nonzero AC coefficients (bit k for
// natural-order position k; bit 0, the DC value, is kept apart), then their values in that order. `out` has room for
// `count` * PACKED_BLOCK_MAX bytes and SLACK more.
static size_t pack_row_scalar(const JBLOCK *blocks, JDIMENSION count, uint8_t *out) {
    uint8_t *at = out;
    for (JDIMENSION b = 0; b < count; b++) {
        const JCOEF *coef = blocks[b];
        uint64_t mask = 0;
        for (int k = 1; k < DCTSIZE2; k++) mask |= (uint64_t)(coef[k] != 0) << k;
        memcpy(at, &mask, MASK_BYTES);
        at += MASK_BYTES;
        for (; mask != 0; mask &= mask - 1) {
            memcpy(at, &coef[__builtin_ctzll(mask)], sizeof(JCOEF));
            at += sizeof(JCOEF);
        }
    }
    return (size_t)(at - out);
}

// The mask of the packed block at `*at` (which coefficients follow it); `*at` moves past it.
static inline uint64_t next_mask(const uint8_t **at) {
    uint64_t mask;
    memcpy(&mask, *at, MASK_BYTES);
    *at += MASK_BYTES;
    return mask;
}

// The blocks of a packed row back in `blocks`, zeros where nothing is kept.
static void unpack_row_scalar(const uint8_t *packed, JBLOCK *blocks, JDIMENSION count) {
    memset(blocks, 0, (size_t)count * sizeof(JBLOCK));
    const uint8_t *at = packed;
    for (JDIMENSION b = 0; b < count; b++) {
        uint64_t mask = next_mask(&at);
        JCOEF *coef = blocks[b];
        for (; mask != 0; mask &= mask - 1) {
            memcpy(&coef[__builtin_ctzll(mask)], at, sizeof(JCOEF));
            at += sizeof(JCOEF);
        }
    }
}

#ifdef ATT_COEF_SHUFFLE
// The same with SSSE3 and POPCNT, eight coefficients at a time: for each 8-bit mask a byte
// shuffle that moves the nonzero values together (compress) or back to their places with zeros
// between (expand).
static uint8_t compress_table[256][16] __attribute__((aligned(16)));
static uint8_t expand_table[256][16] __attribute__((aligned(16)));
static int shuffle_supported;
static pthread_once_t shuffle_once = PTHREAD_ONCE_INIT;

// With AVX-512 (VBMI2's compress and expand of 16-bit lanes), 32 coefficients an instruction:
// the same packed bytes as the shuffles above, in two steps a block where they take eight.
static int compress_supported;

__attribute__((target("avx512f,avx512bw,avx512vbmi2,popcnt"))) static size_t
pack_row_compress(const JBLOCK *blocks, JDIMENSION count, uint8_t *out) {
    uint8_t *at = out;
    for (JDIMENSION b = 0; b < count; b++) {
        const JCOEF *coef = blocks[b];
        __m512i low = _mm512_loadu_si512((const void *)coef);
        __m512i high = _mm512_loadu_si512((const void *)(coef + 32));
        // The DC value (lane 0) is kept apart.
        __mmask32 low_mask = _mm512_test_epi16_mask(low, low) & ~(__mmask32)1;
        __mmask32 high_mask = _mm512_test_epi16_mask(high, high);
        uint64_t mask = (uint64_t)low_mask | (uint64_t)high_mask << 32;
        memcpy(at, &mask, MASK_BYTES);
        at += MASK_BYTES;
        unsigned n = (unsigned)__builtin_popcount(low_mask);
        _mm512_mask_storeu_epi16(at, (__mmask32)((UINT64_C(1) << n) - 1), _mm512_maskz_compress_epi16(low_mask, low));
        at += 2 * n;
        n = (unsigned)__builtin_popcount(high_mask);
        _mm512_mask_storeu_epi16(at, (__mmask32)((UINT64_C(1) << n) - 1), _mm512_maskz_compress_epi16(high_mask, high));
        at += 2 * n;
    }
    return (size_t)(at - out);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi2,popcnt"))) static void
unpack_row_expand(const uint8_t *packed, JBLOCK *blocks, JDIMENSION count) {
    const uint8_t *at = packed;
    for (JDIMENSION b = 0; b < count; b++) {
        uint64_t mask = next_mask(&at);
        JCOEF *coef = blocks[b];
        __mmask32 low_mask = (__mmask32)mask, high_mask = (__mmask32)(mask >> 32);
        unsigned n = (unsigned)__builtin_popcount(low_mask);
        __m512i values = _mm512_maskz_loadu_epi16((__mmask32)((UINT64_C(1) << n) - 1), at);
        _mm512_storeu_si512((void *)coef, _mm512_maskz_expand_epi16(low_mask, values));
        at += 2 * n;
        n = (unsigned)__builtin_popcount(high_mask);
        values = _mm512_maskz_loadu_epi16((__mmask32)((UINT64_C(1) << n) - 1), at);
        _mm512_storeu_si512((void *)(coef + 32), _mm512_maskz_expand_epi16(high_mask, values));
        at += 2 * n;
    }
}

static void make_shuffle_tables(void) {
    for (int m = 0; m < 256; m++) {
        int n = 0;
        memset(compress_table[m], 0x80, 16);
        memset(expand_table[m], 0x80, 16);
        for (int lane = 0; lane < 8; lane++) {
            if (!(m >> lane & 1)) continue;
            compress_table[m][2 * n] = (uint8_t)(2 * lane);
            compress_table[m][2 * n + 1] = (uint8_t)(2 * lane + 1);
            expand_table[m][2 * lane] = (uint8_t)(2 * n);
            expand_table[m][2 * lane + 1] = (uint8_t)(2 * n + 1);
            n++;
        }
    }
    __builtin_cpu_init();
    shuffle_supported = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
    compress_supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("popcnt");
}

// Where each group's values start, as 16-bit counts: the nonzero coefficients before it
// (independent of each other, so the eight groups do not wait on one another).
__attribute__((target("ssse3,popcnt"))) static inline unsigned values_before(uint64_t mask, int group) {
    return group == 0 ? 0 : (unsigned)__builtin_popcountll(mask & ((UINT64_C(1) << (8 * group)) - 1));
}

__attribute__((target("ssse3,popcnt"))) static size_t pack_row_shuffle(const JBLOCK *blocks, JDIMENSION count,
                                                                       uint8_t *out) {
    const __m128i zero = _mm_setzero_si128();
    uint8_t *at = out;
    for (JDIMENSION b = 0; b < count; b++) {
        const JCOEF *coef = blocks[b];
        __m128i values[DCTSIZE2 / 8];
        uint64_t mask = 0;
        for (int g = 0; g < DCTSIZE2 / 8; g += 2) {
            values[g] = _mm_loadu_si128((const __m128i *)(const void *)(coef + 8 * g));
            values[g + 1] = _mm_loadu_si128((const __m128i *)(const void *)(coef + 8 * g + 8));
            __m128i zeros = _mm_packs_epi16(_mm_cmpeq_epi16(values[g], zero), _mm_cmpeq_epi16(values[g + 1], zero));
            mask |= (uint64_t)(~(unsigned)_mm_movemask_epi8(zeros) & 0xFFFF) << (8 * g);
        }
        mask &= ~UINT64_C(1);  // the DC value is kept apart
        memcpy(at, &mask, MASK_BYTES);
        at += MASK_BYTES;
        for (int g = 0; g < DCTSIZE2 / 8; g++) {
            unsigned m = (unsigned)(mask >> (8 * g)) & 0xFF;
            __m128i shuffle = _mm_load_si128((const __m128i *)(const void *)compress_table[m]);
            _mm_storeu_si128((__m128i *)(void *)(at + 2 * values_before(mask, g)),
                             _mm_shuffle_epi8(values[g], shuffle));
        }
        at += 2 * (unsigned)__builtin_popcountll(mask);
    }
    return (size_t)(at - out);
}

__attribute__((target("ssse3,popcnt"))) static void unpack_row_shuffle(const uint8_t *packed, JBLOCK *blocks,
                                                                       JDIMENSION count) {
    const uint8_t *at = packed;
    for (JDIMENSION b = 0; b < count; b++) {
        uint64_t mask = next_mask(&at);
        JCOEF *coef = blocks[b];
        for (int g = 0; g < DCTSIZE2 / 8; g++) {
            unsigned m = (unsigned)(mask >> (8 * g)) & 0xFF;
            __m128i values = _mm_loadu_si128((const __m128i *)(const void *)(at + 2 * values_before(mask, g)));
            __m128i shuffle = _mm_load_si128((const __m128i *)(const void *)expand_table[m]);
            _mm_storeu_si128((__m128i *)(void *)(coef + 8 * g), _mm_shuffle_epi8(values, shuffle));
        }
        at += 2 * (unsigned)__builtin_popcountll(mask);
    }
}
#endif

static size_t pack_row(const JBLOCK *blocks, JDIMENSION count, uint8_t *out) {
#ifdef ATT_COEF_SHUFFLE
    if (compress_supported) return pack_row_compress(blocks, count, out);
    if (shuffle_supported) return pack_row_shuffle(blocks, count, out);
#endif
    return pack_row_scalar(blocks, count, out);
}

static void unpack_row(const uint8_t *packed, uint32_t length, JBLOCK *blocks, JDIMENSION count) {
    if (length == 0) {
        memset(blocks, 0, (size_t)count * sizeof(JBLOCK));
        return;
    }
#ifdef ATT_COEF_SHUFFLE
    if (compress_supported) {
        unpack_row_expand(packed, blocks, count);
        return;
    }
    if (shuffle_supported) {
        unpack_row_shuffle(packed, blocks, count);
        return;
    }
#endif
    unpack_row_scalar(packed, blocks, count);
}

int32_t att_coef_packings_agree(const int16_t *values, uint32_t count) {
#ifdef ATT_COEF_SHUFFLE
    pthread_once(&shuffle_once, make_shuffle_tables);
#endif
    const JBLOCK *blocks = (const JBLOCK *)(const void *)values;
    size_t room = (size_t)count * PACKED_BLOCK_MAX + SLACK;
    uint8_t *expected = malloc(room), *packed = malloc(room);
    JBLOCK *back = malloc((size_t)(count ? count : 1) * sizeof(JBLOCK));
    int32_t ways = -1;
    if (expected && packed && back) {
        size_t length = pack_row_scalar(blocks, count, expected);
        ways = 1;
        for (int way = 0; way < 3 && ways > 0; way++) {
            size_t got = length;
            if (way == 0) {
                unpack_row_scalar(expected, back, count);
            }
#ifdef ATT_COEF_SHUFFLE
            else if (way == 1 && shuffle_supported) {
                got = pack_row_shuffle(blocks, count, packed);
                memset(back, 0x55, (size_t)count * sizeof(JBLOCK));
                unpack_row_shuffle(packed, back, count);
                ways++;
            } else if (way == 2 && compress_supported) {
                got = pack_row_compress(blocks, count, packed);
                memset(back, 0x55, (size_t)count * sizeof(JBLOCK));
                unpack_row_expand(packed, back, count);
                ways++;
            }
#endif
            else {
                continue;
            }
            // Every value but the DC (kept apart) comes back.
            for (uint32_t b = 0; b < count; b++) {
                if (memcmp(&back[b][1], &blocks[b][1], sizeof(JBLOCK) - sizeof(JCOEF)) != 0) ways = -1;
            }
            if (got != length || (way > 0 && memcmp(packed, expected, length) != 0)) ways = -1;
        }
    }
    free(expected);
    free(packed);
    free(back);
    return ways;
}

static void store_window(j_common_ptr cinfo, att_coef_store *store, att_coef_array *array) {
    for (JDIMENSION i = 0; i < array->window_rows; i++) {
        JDIMENSION row = array->window_start + i;
        JCOEF *dc = array->dc + (size_t)row * array->blocks_per_row;
        for (JDIMENSION b = 0; b < array->blocks_per_row; b++) dc[b] = array->window[i][b][0];
        if (array->window_dc_only) continue;
        size_t length = pack_row(array->window[i], array->blocks_per_row, array->scratch);
        if (length > array->capacity[row]) {
            charge(cinfo, store, length - array->capacity[row]);
            uint8_t *grown = realloc(array->data[row], length + SLACK);
            if (!grown) fail_memory(cinfo, "out of memory");
            array->data[row] = grown;
            array->capacity[row] = (uint32_t)length;
        }
        memcpy(array->data[row], array->scratch, length);
        array->length[row] = (uint32_t)length;
    }
    array->dirty = 0;
}

static jvirt_barray_ptr request_compact(j_common_ptr cinfo, int pool_id, boolean pre_zero, JDIMENSION blocks_per_row,
                                        JDIMENSION rows, JDIMENSION max_access) {
    (void)pre_zero;  // every row starts zeroed
    att_coef_store *store = store_of(cinfo);
    if (pool_id != JPOOL_IMAGE || blocks_per_row == 0 || rows == 0 || max_access == 0) {
        att_jpeg_fail(cinfo, ATT_ERR_INTERNAL, "coefficient store: unexpected array request");
    }
    charge(cinfo, store, working_bytes(blocks_per_row, rows, max_access));
    att_coef_array *array = calloc(1, sizeof *array);
    if (!array) fail_memory(cinfo, "out of memory");
    array->blocks_per_row = blocks_per_row;
    array->rows = rows;
    array->max_access = max_access < rows ? max_access : rows;
    array->next = store->arrays;
    store->arrays = array;
    return (jvirt_barray_ptr)(void *)array;
}

static void realize_compact(j_common_ptr cinfo) {
    att_coef_store *store = store_of(cinfo);
    store->realize_original(cinfo);
    for (att_coef_array *array = store->arrays; array != NULL; array = array->next) {
        if (array->window != NULL) continue;
        charge(cinfo, store, (uint64_t)array->rows * array->blocks_per_row * sizeof(JCOEF));
        array->data = calloc(array->rows, sizeof *array->data);
        array->dc = calloc((size_t)array->rows * array->blocks_per_row, sizeof(JCOEF));
        array->length = calloc(array->rows, sizeof *array->length);
        array->capacity = calloc(array->rows, sizeof *array->capacity);
        array->scratch = malloc((size_t)array->blocks_per_row * PACKED_BLOCK_MAX + SLACK);
        void *blocks = NULL;
        size_t window_bytes = (size_t)array->max_access * array->blocks_per_row * sizeof(JBLOCK);
        if (posix_memalign(&blocks, 64, window_bytes) != 0) blocks = NULL;
        array->window_blocks = blocks;
        array->window = malloc((size_t)array->max_access * sizeof(JBLOCKROW));
        if (!array->data || !array->dc || !array->length || !array->capacity || !array->scratch ||
            !array->window_blocks || !array->window) {
            fail_memory(cinfo, "out of memory");
        }
        for (JDIMENSION i = 0; i < array->max_access; i++) {
            array->window[i] = array->window_blocks + (size_t)i * array->blocks_per_row;
        }
    }
}

static JBLOCKARRAY access_compact(j_common_ptr cinfo, jvirt_barray_ptr handle, JDIMENSION start_row,
                                  JDIMENSION num_rows, boolean writable) {
    att_coef_store *store = store_of(cinfo);
    att_coef_array *array = (att_coef_array *)(void *)handle;
    JDIMENSION end_row = start_row + num_rows;
    if (array->window == NULL || end_row > array->rows || end_row < start_row || num_rows > array->max_access) {
        att_jpeg_fail(cinfo, ATT_ERR_INTERNAL, "coefficient store: access outside the array");
    }
    // A progressive DC scan (first or refinement) reads and writes each block's DC value only:
    // its rows are given with their DC values and nothing else, and only those are kept.
    j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
    int dc_only = writable && dinfo->progressive_mode && dinfo->Ss == 0;
    int inside = array->window_rows > 0 && start_row >= array->window_start &&
                 end_row <= array->window_start + array->window_rows && array->window_dc_only == dc_only;
    if (!inside) {
        if (array->dirty) store_window(cinfo, store, array);
        // A write gets the rows asked for (packed again while still in the cache); a read the
        // window's height where the array has the rows: libjpeg-turbo 2.1's block smoothing reads
        // a block row past those it asked for on its second iMCU row, which its own arrays hold,
        // and reads one iMCU row after another still unpack each row once.
        JDIMENSION left = array->rows - start_row;
        if (!writable) num_rows = left < array->max_access ? left : array->max_access;
        for (JDIMENSION i = 0; i < num_rows; i++) {
            JDIMENSION row = start_row + i;
            JBLOCKROW blocks = array->window[i];
            if (!dc_only) unpack_row(array->data[row], array->length[row], blocks, array->blocks_per_row);
            const JCOEF *dc = array->dc + (size_t)row * array->blocks_per_row;
            for (JDIMENSION b = 0; b < array->blocks_per_row; b++) blocks[b][0] = dc[b];
        }
        array->window_start = start_row;
        array->window_rows = num_rows;
        array->window_dc_only = dc_only;
    }
    if (writable) array->dirty = 1;
    return array->window + (start_row - array->window_start);
}

att_coef_store *att_coef_store_install(j_decompress_ptr cinfo, uint64_t bound) {
#ifdef ATT_COEF_SHUFFLE
    pthread_once(&shuffle_once, make_shuffle_tables);
#endif
    att_coef_store *store = calloc(1, sizeof *store);
    if (!store) return NULL;
    store->bound = bound;
    store->request_original = cinfo->mem->request_virt_barray;
    store->realize_original = cinfo->mem->realize_virt_arrays;
    cinfo->client_data = store;
    cinfo->mem->request_virt_barray = request_compact;
    cinfo->mem->realize_virt_arrays = realize_compact;
    cinfo->mem->access_virt_barray = access_compact;
    return store;
}

uint64_t att_coef_store_peak(const att_coef_store *store) { return store ? store->peak : 0; }

void att_coef_store_free(att_coef_store *store) {
    if (!store) return;
    att_coef_array *array = store->arrays;
    while (array != NULL) {
        att_coef_array *next = array->next;
        if (array->data) {
            for (JDIMENSION row = 0; row < array->rows; row++) free(array->data[row]);
        }
        free(array->data);
        free(array->dc);
        free(array->length);
        free(array->capacity);
        free(array->scratch);
        free(array->window_blocks);
        free(array->window);
        free(array);
        array = next;
    }
    free(store);
}
