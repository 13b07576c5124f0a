/* AVX-512 path of gdn_solve_tril (built with -mavx512f ...): sixteen columns
 * per vector; the solver itself is gdn_solve_tril_simd.h. */
#include <immintrin.h>
#include <stdint.h>

#include "gdn_solve_tril_paths.h"

typedef __m512 vec;
enum { LANES = 16 };

static inline vec vec_zero(void) { return _mm512_setzero_ps(); }
static inline vec vec_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vec_store(float *p, vec v) { _mm512_storeu_ps(p, v); }
static inline vec vec_broadcast(float w) { return _mm512_set1_ps(w); }
static inline vec vec_neg(vec v) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN))); }
static inline vec vec_fma(vec w, vec x, vec acc) { return _mm512_fmadd_ps(w, x, acc); }
static inline vec vec_fma_first(vec w, vec x, vec acc, size_t n)
{
    return _mm512_mask3_fmadd_ps(w, x, acc, (__mmask16)((1u << n) - 1));
}

#define SOLVER_NAME gdn_solve_tril_tile_avx512
#include "gdn_solve_tril_simd.h"
