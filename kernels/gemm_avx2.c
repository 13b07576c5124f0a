/* AVX2 path (built with -mavx2 -mfma). A block of 4 rows x 16 columns keeps
 * its 8 accumulators in registers for the whole inner loop; each B row is
 * widened once per block and each A element broadcast once per block. Columns
 * left over after the 8-wide vectors take the scalar FMA chain, which rounds
 * identically. */
#include <immintrin.h>

#include "gemm_paths.h"

enum { LANES = 8, BLOCK_ROWS = 4, BLOCK_VECTORS = 2 };

/* -O2 does not unroll the block's short loops by itself; unrolled, with
 * constant trip counts, the accumulator array lives in registers. */
#define UNROLLED _Pragma("GCC unroll 4")

/* Eight bf16 widened to f32: a bf16 is the upper half of its f32. */
static inline __m256 load_bf16x8(const ug_bf16 *p)
{
    __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
}

/* C[rows][vectors * LANES] for rows <= BLOCK_ROWS, vectors <= BLOCK_VECTORS;
 * always inlined so that rows and vectors are constants. */
static inline __attribute__((always_inline)) void
block(size_t rows, size_t vectors, size_t kk, const float *A, size_t lda, const ug_bf16 *B,
      size_t ldb, float *C, size_t ldc)
{
    __m256 acc[BLOCK_ROWS][BLOCK_VECTORS];
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++) acc[r][v] = _mm256_setzero_ps();
    for (size_t p = 0; p < kk; p++) {
        __m256 b[BLOCK_VECTORS];
        UNROLLED for (size_t v = 0; v < vectors; v++) b[v] = load_bf16x8(B + p * ldb + v * LANES);
        UNROLLED for (size_t r = 0; r < rows; r++) {
            __m256 a = _mm256_set1_ps(A[r * lda + p]);
            UNROLLED for (size_t v = 0; v < vectors; v++) acc[r][v] = _mm256_fmadd_ps(a, b[v], acc[r][v]);
        }
    }
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++) _mm256_storeu_ps(C + r * ldc + v * LANES, acc[r][v]);
}

static inline __attribute__((always_inline)) void
row_block(size_t rows, size_t n, size_t kk, const float *A, size_t lda, const ug_bf16 *B,
          size_t ldb, float *C, size_t ldc)
{
    size_t j = 0;
    for (; j + BLOCK_VECTORS * LANES <= n; j += BLOCK_VECTORS * LANES)
        block(rows, BLOCK_VECTORS, kk, A, lda, B + j, ldb, C + j, ldc);
    for (; j + LANES <= n; j += LANES) block(rows, 1, kk, A, lda, B + j, ldb, C + j, ldc);
    for (; j < n; j++)
        for (size_t r = 0; r < rows; r++) C[r * ldc + j] = ug_gemm_dot_f32_bf16(kk, A + r * lda, B + j, ldb);
}

void ug_gemm_f32_bf16_avx2(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                           const ug_bf16 *B, size_t ldb, float *C, size_t ldc)
{
    size_t i = 0;
    for (; i + BLOCK_ROWS <= m; i += BLOCK_ROWS)
        row_block(BLOCK_ROWS, n, kk, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
    for (; i < m; i++) row_block(1, n, kk, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
}
