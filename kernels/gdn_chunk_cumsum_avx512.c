/* AVX-512 path of gdn_chunk_cumsum: sixteen heads per vector, masked at the
 * edge; the scan itself is gdn_chunk_cumsum_simd.h. */
#include <immintrin.h>

#include "gdn_chunk_cumsum_paths.h"

typedef __m512 vec;
enum { LANES = 16 };

static inline __mmask16 first_lanes(size_t n) { return (__mmask16)((1u << n) - 1); }
static inline vec vec_zero(void) { return _mm512_setzero_ps(); }
static inline vec vec_add(vec a, vec b) { return _mm512_add_ps(a, b); }
static inline vec vec_load_first(const float *p, size_t n) { return _mm512_maskz_loadu_ps(first_lanes(n), p); }
static inline void vec_store_first(float *p, vec v, size_t n) { _mm512_mask_storeu_ps(p, first_lanes(n), v); }

#define SCAN_NAME gdn_chunk_cumsum_scan_avx512
#include "gdn_chunk_cumsum_simd.h"
