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

const head_norm_rope_path head_norm_rope_path_avx512 = {accumulate_squares_bf16, accumulate_squares_f32, rotate};
