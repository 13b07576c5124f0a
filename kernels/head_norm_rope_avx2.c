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

const head_norm_rope_path head_norm_rope_path_avx2 = {accumulate_squares_bf16, accumulate_squares_f32, rotate};
