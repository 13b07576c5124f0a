/* AVX-512 path of head_norm_rope (built with -mavx512f -mavx512bw ...):
 * sixteen lanes per vector; the loops are head_norm_rope_simd.h. */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "head_norm_rope_paths.h"

typedef __m512 vec;
enum { LANES = 16 };

static inline vec vec_load(const float *p) { return _mm512_loadu_ps(p); }
/* Sixteen bf16 widened to f32: a bf16 is the upper half of its f32. */
static inline vec vec_load_bf16(const ug_bf16 *p)
{
    __m512i widened = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}
static inline void vec_store(float *p, vec v) { _mm512_storeu_ps(p, v); }
static inline void vec_stream(float *p, vec v) { _mm512_stream_ps(p, v); }
static inline vec vec_set1(float x) { return _mm512_set1_ps(x); }
static inline vec vec_add(vec a, vec b) { return _mm512_add_ps(a, b); }
static inline vec vec_mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
static inline vec vec_fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline vec vec_fmsub(vec a, vec b, vec c) { return _mm512_fmsub_ps(a, b, c); }

/* The tree's last five steps over the sums partial[0 .. 32) = lo, hi:
 * 16 (hi onto lo), then upper half onto lower half (8, 4, 2, 1): lane t +
 * stride added to lane t, the scalar steps' pairs and order. */
static inline float reduce_last_lanes(vec lo, vec hi)
{
    __m512 v = _mm512_add_ps(lo, hi);
    __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}


#define PATH_NAME head_norm_rope_path_avx512
#include "head_norm_rope_simd.h"
