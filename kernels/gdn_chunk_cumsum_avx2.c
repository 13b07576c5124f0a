/* AVX2 path of gdn_chunk_cumsum: eight heads per vector, masked at the edge
 * (vmaskmovps: masked-off lanes are neither read nor written); the scan
 * itself is gdn_chunk_cumsum_simd.h. */
#include <immintrin.h>
#include <stdint.h>

#include "gdn_chunk_cumsum_paths.h"

typedef __m256 vec;
enum { LANES = 8 };

static inline __m256i first_lanes(size_t n)
{
    static const int32_t mask[2 * LANES] = {-1, -1, -1, -1, -1, -1, -1, -1};
    return _mm256_loadu_si256((const __m256i *)(mask + LANES - n));
}
static inline vec vec_zero(void) { return _mm256_setzero_ps(); }
static inline vec vec_add(vec a, vec b) { return _mm256_add_ps(a, b); }
static inline vec vec_load_first(const float *p, size_t n) { return _mm256_maskload_ps(p, first_lanes(n)); }
static inline void vec_store_first(float *p, vec v, size_t n) { _mm256_maskstore_ps(p, first_lanes(n), v); }

#define SCAN_NAME gdn_chunk_cumsum_scan_avx2
#include "gdn_chunk_cumsum_simd.h"
