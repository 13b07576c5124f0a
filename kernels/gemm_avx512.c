/* AVX-512 path (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma).
 * A block of 4 rows x 64 columns keeps its 16 accumulators in registers for
 * the whole inner loop; each B row is widened once per block and each A
 * element broadcast once per block. Columns left over after the 64-wide blocks
 * go 16 at a time, the last 16 masked, so no scalar tail is needed. */
#include <immintrin.h>

#include "gemm_paths.h"

enum { LANES = 16, BLOCK_ROWS = 4, BLOCK_VECTORS = 4 };

/* -O2 does not unroll the block's short loops by itself; unrolled, with
 * constant trip counts, the accumulator array lives in registers. */
#define UNROLLED _Pragma("GCC unroll 4")

static const __mmask16 all_lanes = 0xFFFF;

/* The lanes of a vector that hold one of the `remaining` columns. */
static __mmask16 lanes_for(size_t remaining)
{
    return remaining >= LANES ? all_lanes : (__mmask16)((1u << remaining) - 1u);
}

/* Up to sixteen bf16 widened to f32 (a bf16 is the upper half of its f32);
 * masked-off lanes are not read. */
static inline __m512 load_bf16x16(const ug_bf16 *p, __mmask16 lanes)
{
    __m512i widened = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}

/* C[rows][vectors * LANES] for rows <= BLOCK_ROWS, vectors <= BLOCK_VECTORS,
 * the last vector limited to last_lanes; always inlined so that rows and
 * vectors are constants. */
static inline __attribute__((always_inline)) void
block(size_t rows, size_t vectors, __mmask16 last_lanes, size_t kk, const float *A, size_t lda,
      const ug_bf16 *B, size_t ldb, float *C, size_t ldc)
{
    __m512 acc[BLOCK_ROWS][BLOCK_VECTORS];
    __mmask16 lanes[BLOCK_VECTORS];
    UNROLLED for (size_t v = 0; v < vectors; v++) lanes[v] = v + 1 == vectors ? last_lanes : all_lanes;
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++) acc[r][v] = _mm512_setzero_ps();
    for (size_t p = 0; p < kk; p++) {
        __m512 b[BLOCK_VECTORS];
        UNROLLED for (size_t v = 0; v < vectors; v++) b[v] = load_bf16x16(B + p * ldb + v * LANES, lanes[v]);
        UNROLLED for (size_t r = 0; r < rows; r++) {
            __m512 a = _mm512_set1_ps(A[r * lda + p]);
            UNROLLED for (size_t v = 0; v < vectors; v++) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
        }
    }
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++)
            _mm512_mask_storeu_ps(C + r * ldc + v * LANES, lanes[v], acc[r][v]);
}

static inline __attribute__((always_inline)) void
row_block(size_t rows, size_t n, size_t kk, const float *A, size_t lda, const ug_bf16 *B,
          size_t ldb, float *C, size_t ldc)
{
    size_t j = 0;
    for (; j + BLOCK_VECTORS * LANES <= n; j += BLOCK_VECTORS * LANES)
        block(rows, BLOCK_VECTORS, all_lanes, kk, A, lda, B + j, ldb, C + j, ldc);
    for (; j < n; j += LANES) block(rows, 1, lanes_for(n - j), kk, A, lda, B + j, ldb, C + j, ldc);
}

void ug_gemm_f32_bf16_avx512(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                             const ug_bf16 *B, size_t ldb, float *C, size_t ldc)
{
    size_t i = 0;
    for (; i + BLOCK_ROWS <= m; i += BLOCK_ROWS)
        row_block(BLOCK_ROWS, n, kk, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
    for (; i < m; i++) row_block(1, n, kk, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
}
