/* AVX2 path of head_norm_rope (built with -mavx2 -mfma): eight lanes per
 * vector, the scalar definitions for the elements left over. */
#include <immintrin.h>

#include "head_norm_rope_paths.h"

enum { LANES = 8 };

/* Eight bf16 widened to f32: a bf16 is the upper half of its f32. */
static inline __m256 load_bf16x8(const ug_bf16 *p)
{
    __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
}

static void accumulate_squares_bf16(const ug_bf16 *x, size_t n, float *partial)
{
    size_t t = 0;
    for (; t + LANES <= n; t += LANES) {
        __m256 v = load_bf16x8(x + t);
        _mm256_storeu_ps(partial + t, _mm256_fmadd_ps(v, v, _mm256_loadu_ps(partial + t)));
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
        __m256 v = _mm256_loadu_ps(x + t);
        _mm256_storeu_ps(partial + t, _mm256_fmadd_ps(v, v, _mm256_loadu_ps(partial + t)));
    }
    for (; t < n; t++) partial[t] = fmaf(x[t], x[t], partial[t]);
}

/* The tree's steps down to 8 sums as vector adds over memory, then the
 * last three in registers: upper half onto lower half (4), then 2, 1:
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
            _mm256_storeu_ps(partial + t, _mm256_add_ps(_mm256_loadu_ps(partial + t), _mm256_loadu_ps(partial + t + stride)));
    __m256 v = _mm256_loadu_ps(partial);
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}

static void scale_bf16(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y)
{
    const __m256 rv = _mm256_set1_ps(r);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m256 v = _mm256_mul_ps(load_bf16x8(x + i), rv);
        _mm256_storeu_ps(y + i, w ? _mm256_mul_ps(v, load_bf16x8(w + i)) : v);
    }
    for (; i < n; i++) {
        float wi = w ? ug_bf16_to_f32(w[i]) : 0.0f;
        y[i] = head_norm_rope_scale(ug_bf16_to_f32(x[i]), r, w ? &wi : NULL);
    }
}

static void scale_f32(const float *x, const float *w, size_t n, float r, float *y)
{
    const __m256 rv = _mm256_set1_ps(r);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), rv);
        _mm256_storeu_ps(y + i, w ? _mm256_mul_ps(v, _mm256_loadu_ps(w + i)) : v);
    }
    for (; i < n; i++) y[i] = head_norm_rope_scale(x[i], r, w ? w + i : NULL);
}

static void rotate(float *lo, float *hi, const float *c, const float *s, size_t n)
{
    size_t k = 0;
    for (; k + LANES <= n; k += LANES) {
        __m256 l = _mm256_loadu_ps(lo + k), h = _mm256_loadu_ps(hi + k);
        __m256 cv = _mm256_loadu_ps(c + k), sv = _mm256_loadu_ps(s + k);
        _mm256_storeu_ps(lo + k, _mm256_fmsub_ps(l, cv, _mm256_mul_ps(h, sv)));
        _mm256_storeu_ps(hi + k, _mm256_fmadd_ps(h, cv, _mm256_mul_ps(l, sv)));
    }
    for (; k < n; k++) head_norm_rope_rotate_pair(lo + k, hi + k, c[k], s[k]);
}

/* ug_bf16_from_f32 on eight lanes: NaNs quieted with their sign, the rest
 * rounded to nearest even by adding 0x7FFF plus the lowest kept bit (|u| <=
 * 0x7FFFFFFF, so the signed compare is the unsigned one). */
static void round_bf16(const float *y, size_t n, ug_bf16 *out)
{
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m256i u = _mm256_castps_si256(_mm256_loadu_ps(y + i)), high = _mm256_srli_epi32(u, 16);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
        __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(high, one))), 16);
        __m256i quiet = _mm256_or_si256(_mm256_and_si256(high, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7FC0));
        __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
        _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
    }
    for (; i < n; i++) out[i] = ug_bf16_from_f32(y[i]);
}

const head_norm_rope_path head_norm_rope_path_avx2 = {accumulate_squares_bf16, accumulate_squares_f32, reduce, scale_bf16,
                                              scale_f32, rotate, round_bf16};
