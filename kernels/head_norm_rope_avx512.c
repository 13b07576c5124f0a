/* AVX-512 path of head_norm_rope (built with -mavx512f -mavx512bw ...):
 * sixteen lanes per vector, the scalar definitions for the elements left over. */
#include <immintrin.h>

#include "head_norm_rope_paths.h"

enum { LANES = 16 };

/* Sixteen bf16 widened to f32: a bf16 is the upper half of its f32. */
static inline __m512 load_bf16x16(const ug_bf16 *p)
{
    __m512i widened = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}

static void accumulate_squares_bf16(const ug_bf16 *x, size_t n, float *partial)
{
    size_t t = 0;
    for (; t + LANES <= n; t += LANES) {
        __m512 v = load_bf16x16(x + t);
        _mm512_storeu_ps(partial + t, _mm512_fmadd_ps(v, v, _mm512_loadu_ps(partial + t)));
    }
    for (; t < n; t++) {
        float v = ug_bf16_to_f32(x[t]);
        partial[t] = fmaf(v, v, partial[t]);
    }
}

static void accumulate_squares_f32(const float *x, size_t n, float *partial)
{
    size_t t = 0;
    for (; t + LANES <= n; t += LANES) {
        __m512 v = _mm512_loadu_ps(x + t);
        _mm512_storeu_ps(partial + t, _mm512_fmadd_ps(v, v, _mm512_loadu_ps(partial + t)));
    }
    for (; t < n; t++) partial[t] = fmaf(x[t], x[t], partial[t]);
}

/* The tree's steps down to 16 sums as vector adds over memory, then the
 * last four in registers: upper half onto lower half (8), then 4, 2, 1:
 * lane t + stride added to lane t, the scalar steps' pairs and order. */
static float reduce(float *partial, size_t tg)
{
    if (tg < 2 * LANES) {
        for (size_t stride = tg / 2; stride > 0; stride /= 2) head_norm_rope_fold(partial, stride);
        return partial[0];
    }
    size_t stride = tg / 2;
    for (; stride >= LANES; stride /= 2)
        for (size_t t = 0; t < stride; t += LANES)
            _mm512_storeu_ps(partial + t, _mm512_add_ps(_mm512_loadu_ps(partial + t), _mm512_loadu_ps(partial + t + stride)));
    __m512 v = _mm512_loadu_ps(partial);
    __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}

static void scale_bf16(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y)
{
    const __m512 rv = _mm512_set1_ps(r);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m512 v = _mm512_mul_ps(load_bf16x16(x + i), rv);
        _mm512_storeu_ps(y + i, w ? _mm512_mul_ps(v, load_bf16x16(w + i)) : v);
    }
    for (; i < n; i++) {
        float wi = w ? ug_bf16_to_f32(w[i]) : 0.0f;
        y[i] = head_norm_rope_scale(ug_bf16_to_f32(x[i]), r, w ? &wi : NULL);
    }
}

static void scale_f32(const float *x, const float *w, size_t n, float r, float *y)
{
    const __m512 rv = _mm512_set1_ps(r);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), rv);
        _mm512_storeu_ps(y + i, w ? _mm512_mul_ps(v, _mm512_loadu_ps(w + i)) : v);
    }
    for (; i < n; i++) y[i] = head_norm_rope_scale(x[i], r, w ? w + i : NULL);
}

static void rotate(float *lo, float *hi, const float *c, const float *s, size_t n)
{
    size_t k = 0;
    for (; k + LANES <= n; k += LANES) {
        __m512 l = _mm512_loadu_ps(lo + k), h = _mm512_loadu_ps(hi + k);
        __m512 cv = _mm512_loadu_ps(c + k), sv = _mm512_loadu_ps(s + k);
        _mm512_storeu_ps(lo + k, _mm512_fmsub_ps(l, cv, _mm512_mul_ps(h, sv)));
        _mm512_storeu_ps(hi + k, _mm512_fmadd_ps(h, cv, _mm512_mul_ps(l, sv)));
    }
    for (; k < n; k++) head_norm_rope_rotate_pair(lo + k, hi + k, c[k], s[k]);
}

/* ug_bf16_from_f32 on sixteen lanes: NaNs quieted with their sign, the rest
 * rounded to nearest even by adding 0x7FFF plus the lowest kept bit. */
static void round_bf16(const float *y, size_t n, ug_bf16 *out)
{
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7FFF);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m512i u = _mm512_castps_si512(_mm512_loadu_ps(y + i)), high = _mm512_srli_epi32(u, 16);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
        __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(high, one))), 16);
        __m512i quiet = _mm512_or_si512(_mm512_and_si512(high, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0x7FC0));
        _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet)));
    }
    for (; i < n; i++) out[i] = ug_bf16_from_f32(y[i]);
}

const head_norm_rope_path head_norm_rope_path_avx512 = {accumulate_squares_bf16, accumulate_squares_f32, reduce, scale_bf16,
                                              scale_f32, rotate, round_bf16};
