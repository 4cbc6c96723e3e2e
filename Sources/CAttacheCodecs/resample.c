// The resampler's inner loops (Sources/AttacheMedia/Imaging/Resampler.swift keeps the rest):
// pixels are four floats (RGB(A), or gray in the first), as the resampler carries them. Each loop
// has a portable form, which the compiler vectorizes for the baseline x86-64 or arm64, and on
// x86-64 a form with AVX2 and FMA, taken when the processor has them: one fused multiply-add per
// tap instead of a multiply, a shuffle and an add, and eight floats a step down a column.
#include "attache_codecs.h"

#include <string.h>

#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATT_RESAMPLE_AVX2 1
#endif

static inline float clamp_byte(float v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

// Rounded to the nearest byte, halves to even (the processor's rounding, as cvtps2dq does).
static inline uint8_t to_byte(float v) {
    float c = clamp_byte(v) + 12582912.0f;  // 1.5 * 2^23: the rounded integer in the low mantissa bits
    uint32_t bits;
    memcpy(&bits, &c, sizeof bits);
    return (uint8_t)bits;
}

static void row_portable(const float *src, const intptr_t *starts, const float *weights, intptr_t stride,
                         intptr_t count, float *out) {
    for (intptr_t x = 0; x < count; x++) {
        const float *s = src + 4 * starts[x];
        const float *w = weights + x * stride;
        float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (intptr_t t = 0; t < stride; t++) {
            a0 += s[4 * t] * w[t];
            a1 += s[4 * t + 1] * w[t];
            a2 += s[4 * t + 2] * w[t];
            a3 += s[4 * t + 3] * w[t];
        }
        out[4 * x] = a0;
        out[4 * x + 1] = a1;
        out[4 * x + 2] = a2;
        out[4 * x + 3] = a3;
    }
}

static void column_portable(const float *const *rows, const float *weights, intptr_t taps, intptr_t floats,
                            float *out) {
    for (intptr_t i = 0; i < floats; i++) out[i] = rows[0][i] * weights[0];
    for (intptr_t t = 1; t < taps; t++) {
        const float *r = rows[t];
        float w = weights[t];
        for (intptr_t i = 0; i < floats; i++) out[i] += r[i] * w;
    }
}

static void widen_rgb_portable(const uint8_t *row, intptr_t width, float *out) {
    for (intptr_t x = 0; x < width; x++) {
        out[4 * x] = row[3 * x];
        out[4 * x + 1] = row[3 * x + 1];
        out[4 * x + 2] = row[3 * x + 2];
        out[4 * x + 3] = 0;
    }
}

static void narrow_rgb_portable(const float *in, intptr_t width, uint8_t *out) {
    for (intptr_t x = 0; x < width; x++) {
        out[3 * x] = to_byte(in[4 * x]);
        out[3 * x + 1] = to_byte(in[4 * x + 1]);
        out[3 * x + 2] = to_byte(in[4 * x + 2]);
    }
}

#ifdef ATT_RESAMPLE_AVX2
// Two sums per output pixel (even and odd taps), so that each fused multiply-add does not wait
// for the one before it.
__attribute__((target("avx2,fma"))) static void row_avx2(const float *src, const intptr_t *starts, const float *weights,
                                                         intptr_t stride, intptr_t count, float *out) {
    for (intptr_t x = 0; x < count; x++) {
        const float *s = src + 4 * starts[x];
        const float *w = weights + x * stride;
        __m128 even = _mm_setzero_ps(), odd = _mm_setzero_ps();
        intptr_t t = 0;
        for (; t + 2 <= stride; t += 2) {
            even = _mm_fmadd_ps(_mm_loadu_ps(s + 4 * t), _mm_broadcast_ss(w + t), even);
            odd = _mm_fmadd_ps(_mm_loadu_ps(s + 4 * t + 4), _mm_broadcast_ss(w + t + 1), odd);
        }
        if (t < stride) even = _mm_fmadd_ps(_mm_loadu_ps(s + 4 * t), _mm_broadcast_ss(w + t), even);
        _mm_storeu_ps(out + 4 * x, _mm_add_ps(even, odd));
    }
}

// Thirty-two floats (eight pixels) summed over every tap in registers, then stored once.
__attribute__((target("avx2,fma"))) static void column_avx2(const float *const *rows, const float *weights,
                                                            intptr_t taps, intptr_t floats, float *out) {
    intptr_t i = 0;
    for (; i + 32 <= floats; i += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        for (intptr_t t = 0; t < taps; t++) {
            const float *r = rows[t] + i;
            __m256 w = _mm256_broadcast_ss(weights + t);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r), w, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r + 8), w, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r + 16), w, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r + 24), w, a3);
        }
        _mm256_storeu_ps(out + i, a0);
        _mm256_storeu_ps(out + i + 8, a1);
        _mm256_storeu_ps(out + i + 16, a2);
        _mm256_storeu_ps(out + i + 24, a3);
    }
    for (; i + 4 <= floats; i += 4) {
        __m128 a = _mm_setzero_ps();
        for (intptr_t t = 0; t < taps; t++)
            a = _mm_fmadd_ps(_mm_loadu_ps(rows[t] + i), _mm_broadcast_ss(weights + t), a);
        _mm_storeu_ps(out + i, a);
    }
    for (; i < floats; i++) {
        float a = 0;
        for (intptr_t t = 0; t < taps; t++) a += rows[t][i] * weights[t];
        out[i] = a;
    }
}

// Four pixels a step: twelve bytes spread to four lanes of four (the fourth zero), widened.
__attribute__((target("avx2,fma"))) static void widen_rgb_avx2(const uint8_t *row, intptr_t width, float *out) {
    const __m128i spread = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
    intptr_t x = 0;
    // A 16-byte load reads four bytes past the four pixels: only while they are inside the row.
    for (; x + 6 <= width; x += 4) {
        __m128i bytes = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(row + 3 * x)), spread);
        _mm_storeu_ps(out + 4 * x, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(bytes)));
        _mm_storeu_ps(out + 4 * x + 4, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(bytes, 4))));
        _mm_storeu_ps(out + 4 * x + 8, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(bytes, 8))));
        _mm_storeu_ps(out + 4 * x + 12, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(bytes, 12))));
    }
    widen_rgb_portable(row + 3 * x, width - x, out + 4 * x);
}

// Four pixels a step: clamped, rounded (halves to even), packed to bytes and the fourth lanes
// dropped.
__attribute__((target("avx2,fma"))) static void narrow_rgb_avx2(const float *in, intptr_t width, uint8_t *out) {
    const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(255);
    const __m128i gather = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    intptr_t x = 0;
    // A 16-byte store writes four bytes past the four pixels: only while they are inside the row.
    for (; x + 6 <= width; x += 4) {
        __m128i p[4];
        for (int k = 0; k < 4; k++) {
            __m128 v = _mm_min_ps(_mm_max_ps(_mm_loadu_ps(in + 4 * (x + k)), zero), top);
            p[k] = _mm_cvtps_epi32(v);
        }
        __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(p[0], p[1]), _mm_packs_epi32(p[2], p[3]));
        _mm_storeu_si128((__m128i *)(void *)(out + 3 * x), _mm_shuffle_epi8(bytes, gather));
    }
    narrow_rgb_portable(in + 4 * x, width - x, out + 3 * x);
}
#endif

// Whether the processor has AVX2 and FMA.
static int has_avx2;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void) {
#ifdef ATT_RESAMPLE_AVX2
    __builtin_cpu_init();
    has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
}

int32_t att_resample_vectorized(void) {
    pthread_once(&probe_once, probe);
    return has_avx2;
}

// The AVX2 form of loop `name` where it is asked for and the processor has it, else the portable one.
#ifdef ATT_RESAMPLE_AVX2
#define FORM(vectorized, name, ...)                                                                                    \
    ((vectorized) && att_resample_vectorized() ? name##_avx2(__VA_ARGS__) : name##_portable(__VA_ARGS__))
#else
#define FORM(vectorized, name, ...) name##_portable(__VA_ARGS__)
#endif

void att_resample_row(int32_t vectorized, const float *src, const intptr_t *starts, const float *weights,
                      intptr_t stride, intptr_t count, float *out) {
    FORM(vectorized, row, src, starts, weights, stride, count, out);
}

void att_resample_column(int32_t vectorized, const float *const *rows, const float *weights, intptr_t taps,
                         intptr_t floats, float *out) {
    FORM(vectorized, column, rows, weights, taps, floats, out);
}

void att_resample_widen_rgb(int32_t vectorized, const uint8_t *row, intptr_t width, float *out) {
    FORM(vectorized, widen_rgb, row, width, out);
}

void att_resample_narrow_rgb(int32_t vectorized, const float *in, intptr_t width, uint8_t *out) {
    FORM(vectorized, narrow_rgb, in, width, out);
}
