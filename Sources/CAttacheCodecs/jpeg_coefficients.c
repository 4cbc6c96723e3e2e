// A multi-scan JPEG (progressive, or sequential with a scan per component) is decoded by
// libjpeg into whole-image coefficient arrays: 128 bytes for every 8x8 block of every
// component, held until the last scan is read, whatever the output scale. Most of those
// coefficients are zero. This store stands behind libjpeg's virtual block arrays (the memory
// manager's request/realize/access methods, which an application may replace) and keeps each
// block row packed: a 64-bit mask of the nonzero coefficients, then their values. libjpeg sees
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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum {
    MASK_BYTES = 8,
    PACKED_BLOCK_MAX = MASK_BYTES + (int)sizeof(JBLOCK),
    // libjpeg-turbo asks for a window of five iMCU rows when it may smooth a progressive file
    // (three in older releases); the bound is made for five.
    WINDOW_IMCU_ROWS = 5,
};

typedef struct att_coef_array {
    struct att_coef_array *next;
    JDIMENSION blocks_per_row;
    JDIMENSION rows;
    JDIMENSION max_access;
    uint8_t **data;     // each block row packed, NULL until first written
    uint32_t *length;   // bytes used in each row
    uint32_t *capacity; // bytes allocated for each row
    JBLOCK *window_blocks;
    JBLOCKROW *window;
    uint8_t *scratch; // one row packed, before it is copied to its place
    JDIMENSION window_start;
    JDIMENSION window_rows;
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

uint64_t att_coef_dense_bytes(j_decompress_ptr cinfo) {
    uint64_t total = 0;
    for (int i = 0; i < cinfo->num_components; i++) {
        jpeg_component_info *comp = &cinfo->comp_info[i];
        uint64_t h = comp->h_samp_factor > 0 ? (uint64_t)comp->h_samp_factor : 1;
        uint64_t v = comp->v_samp_factor > 0 ? (uint64_t)comp->v_samp_factor : 1;
        uint64_t wb = ((uint64_t)comp->width_in_blocks + h - 1) / h * h;
        uint64_t hb = ((uint64_t)comp->height_in_blocks + v - 1) / v * v;
        total += wb * hb * sizeof(JBLOCK);
    }
    return total;
}

// The window, the scratch row and the row tables of one component.
static uint64_t working_bytes(uint64_t blocks_per_row, uint64_t rows, uint64_t max_access) {
    return max_access * blocks_per_row * sizeof(JBLOCK) + max_access * sizeof(JBLOCKROW) +
           blocks_per_row * PACKED_BLOCK_MAX + rows * (sizeof(uint8_t *) + 2 * sizeof(uint32_t)) +
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
        jpeg_component_info *comp = &cinfo->comp_info[i];
        uint64_t h = comp->h_samp_factor > 0 ? (uint64_t)comp->h_samp_factor : 1;
        uint64_t v = comp->v_samp_factor > 0 ? (uint64_t)comp->v_samp_factor : 1;
        uint64_t wb = ((uint64_t)comp->width_in_blocks + h - 1) / h * h;
        uint64_t hb = ((uint64_t)comp->height_in_blocks + v - 1) / v * v;
        bound += working_bytes(wb, hb, v * WINDOW_IMCU_ROWS);
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

// Which of a block's 64 coefficients are nonzero, bit k for natural-order position k.
static inline uint64_t nonzero_mask(const JCOEF *coef) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    uint64_t mask = 0;
    for (int k = 0; k < DCTSIZE2; k += 16) {
        __m128i low = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(const void *)(coef + k)), zero);
        __m128i high = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(const void *)(coef + k + 8)), zero);
        uint64_t zeros = (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_packs_epi16(low, high));
        mask |= (~zeros & 0xFFFF) << k;
    }
    return mask;
#else
    uint64_t mask = 0;
    for (int k = 0; k < DCTSIZE2; k++) mask |= (uint64_t)(coef[k] != 0) << k;
    return mask;
#endif
}

// Packs `count` blocks: per block its mask, then its nonzero values in natural order. `out`
// has room for `count` * PACKED_BLOCK_MAX bytes.
static size_t pack_row(const JBLOCK *blocks, JDIMENSION count, uint8_t *out) {
    uint8_t *at = out;
    for (JDIMENSION b = 0; b < count; b++) {
        const JCOEF *coef = blocks[b];
        uint64_t mask = nonzero_mask(coef);
        memcpy(at, &mask, MASK_BYTES);
        at += MASK_BYTES;
        for (; mask != 0; mask &= mask - 1) {
            memcpy(at, &coef[__builtin_ctzll(mask)], sizeof(JCOEF));
            at += sizeof(JCOEF);
        }
    }
    return (size_t)(at - out);
}

static void unpack_row(const uint8_t *packed, uint32_t length, JBLOCK *blocks, JDIMENSION count) {
    memset(blocks, 0, (size_t)count * sizeof(JBLOCK));
    if (length == 0) return;
    const uint8_t *at = packed;
    for (JDIMENSION b = 0; b < count; b++) {
        uint64_t mask;
        memcpy(&mask, at, MASK_BYTES);
        at += MASK_BYTES;
        JCOEF *coef = blocks[b];
        for (; mask != 0; mask &= mask - 1) {
            memcpy(&coef[__builtin_ctzll(mask)], at, sizeof(JCOEF));
            at += sizeof(JCOEF);
        }
    }
}

static void store_window(j_common_ptr cinfo, att_coef_store *store, att_coef_array *array) {
    for (JDIMENSION i = 0; i < array->window_rows; i++) {
        JDIMENSION row = array->window_start + i;
        size_t length = pack_row(array->window[i], array->blocks_per_row, array->scratch);
        if (length > array->capacity[row]) {
            charge(cinfo, store, length - array->capacity[row]);
            uint8_t *grown = realloc(array->data[row], length);
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
    (void)pre_zero; // every row starts zeroed
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
        array->data = calloc(array->rows, sizeof *array->data);
        array->length = calloc(array->rows, sizeof *array->length);
        array->capacity = calloc(array->rows, sizeof *array->capacity);
        array->scratch = malloc((size_t)array->blocks_per_row * PACKED_BLOCK_MAX);
        void *blocks = NULL;
        size_t window_bytes = (size_t)array->max_access * array->blocks_per_row * sizeof(JBLOCK);
        if (posix_memalign(&blocks, 64, window_bytes) != 0) blocks = NULL;
        array->window_blocks = blocks;
        array->window = malloc((size_t)array->max_access * sizeof(JBLOCKROW));
        if (!array->data || !array->length || !array->capacity || !array->scratch || !array->window_blocks ||
            !array->window) {
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
    int inside = array->window_rows > 0 && start_row >= array->window_start &&
                 end_row <= array->window_start + array->window_rows;
    if (!inside) {
        if (array->dirty) store_window(cinfo, store, array);
        JDIMENSION count = array->rows - start_row < array->max_access ? array->rows - start_row : array->max_access;
        for (JDIMENSION i = 0; i < count; i++) {
            JDIMENSION row = start_row + i;
            unpack_row(array->data[row], array->length[row], array->window[i], array->blocks_per_row);
        }
        array->window_start = start_row;
        array->window_rows = count;
    }
    if (writable) array->dirty = 1;
    return array->window + (start_row - array->window_start);
}

att_coef_store *att_coef_store_install(j_decompress_ptr cinfo, uint64_t bound) {
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
