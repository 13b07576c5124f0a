/* AVX2 path of gdn_solve_tril (built with -mavx2 -mfma): eight columns per
 * vector; the solver itself is gdn_solve_tril_simd.h. */
#include <immintrin.h>
#include <stdint.h>

#include "gdn_solve_tril_paths.h"

typedef __m256 vec;
enum { LANES = 8 };

static inline vec vec_zero(void) { return _mm256_setzero_ps(); }
static inline vec vec_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vec_store(float *p, vec v) { _mm256_storeu_ps(p, v); }
static inline vec vec_broadcast(float w) { return _mm256_set1_ps(w); }
static inline vec vec_neg(vec v) { return _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))); }
static inline vec vec_fma(vec w, vec x, vec acc) { return _mm256_fmadd_ps(w, x, acc); }
/* The FMA on every lane, then acc kept where lane >= n (a blend, not a
 * multiply by zero: the discarded lanes may be NaN). */
static inline vec vec_fma_first(vec w, vec x, vec acc, size_t n)
{
    static const int32_t first_lanes[2 * LANES] = {-1, -1, -1, -1, -1, -1, -1, -1};
    const __m256 keep_new = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(first_lanes + LANES - n)));
    return _mm256_blendv_ps(acc, _mm256_fmadd_ps(w, x, acc), keep_new);
}

#define SOLVER_NAME gdn_solve_tril_tile_avx2
#include "gdn_solve_tril_simd.h"
