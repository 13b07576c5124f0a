/* AVX2 path of head_norm_rope (built with -mavx2 -mfma): eight lanes per
 * vector; the loops are head_norm_rope_simd.h. */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "head_norm_rope_paths.h"

typedef __m256 vec;
enum { LANES = 8 };

static inline vec vec_load(const float *p) { return _mm256_loadu_ps(p); }
/* Eight bf16 widened to f32: a bf16 is the upper half of its f32. */
static inline vec vec_load_bf16(const ug_bf16 *p)
{
    __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
}
static inline void vec_store(float *p, vec v) { _mm256_storeu_ps(p, v); }
static inline void vec_stream(float *p, vec v) { _mm256_stream_ps(p, v); }
static inline vec vec_set1(float x) { return _mm256_set1_ps(x); }
static inline vec vec_add(vec a, vec b) { return _mm256_add_ps(a, b); }
static inline vec vec_mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
static inline vec vec_fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline vec vec_fmsub(vec a, vec b, vec c) { return _mm256_fmsub_ps(a, b, c); }

/* The tree's last four steps over the sums partial[0 .. 16) = lo, hi:
 * 8 (hi onto lo), then upper half onto lower half (4, 2, 1): lane t +
 * stride added to lane t, the scalar steps' pairs and order. */
static inline float reduce_last_lanes(vec lo, vec hi)
{
    __m256 v = _mm256_add_ps(lo, hi);
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}


#define PATH_NAME head_norm_rope_path_avx2
#include "head_norm_rope_simd.h"
