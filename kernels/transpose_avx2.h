/* SPDX-License-Identifier: MIT */
/* The bf16 transpose shared by the AVX2 and AVX-512 paths (both files are
 * built with AVX2): blocks of 8 rows x 16 columns, each 256-bit row split by
 * the unpack instructions into two independent 8 x 8 transposes, one per
 * 128-bit lane (three rounds: 16-, 32-, 64-bit interleaves). Rows and columns
 * beyond whole blocks move one element at a time. Moves only: no rounding,
 * so the bits cannot differ from the portable path's. */
#ifndef UG_TRANSPOSE_AVX2_H
#define UG_TRANSPOSE_AVX2_H

#include <immintrin.h>

#include "gemm_paths.h"

static inline void ug_transpose_block_avx2(const ug_bf16 *src, size_t lds, ug_bf16 *dst, size_t ldd)
{
    __m256i r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i *)(src + i * lds));
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) /* rows 0-3 (h = 0) and 4-7 (h = 1) */
        for (int i = 0; i < 2; i++) {
            u[4 * h + 2 * i] = _mm256_unpacklo_epi32(t[4 * h + i], t[4 * h + i + 2]);
            u[4 * h + 2 * i + 1] = _mm256_unpackhi_epi32(t[4 * h + i], t[4 * h + i + 2]);
        }
    for (int c = 0; c < 4; c++) {
        const __m256i even = _mm256_unpacklo_epi64(u[c], u[c + 4]); /* column 2c of each lane */
        const __m256i odd = _mm256_unpackhi_epi64(u[c], u[c + 4]);  /* column 2c + 1 */
        _mm_storeu_si128((__m128i *)(dst + (2 * c) * ldd), _mm256_castsi256_si128(even));
        _mm_storeu_si128((__m128i *)(dst + (2 * c + 1) * ldd), _mm256_castsi256_si128(odd));
        _mm_storeu_si128((__m128i *)(dst + (2 * c + 8) * ldd), _mm256_extracti128_si256(even, 1));
        _mm_storeu_si128((__m128i *)(dst + (2 * c + 9) * ldd), _mm256_extracti128_si256(odd, 1));
    }
}

/* Terms p .. p+15 of `cols` columns of a B stored by columns (column j at
 * b + j * b_col, its terms contiguous), as 16 bf16 rows of `cols` (a
 * multiple of 8), ld_rows apart: the transposed half of packing such a B. */
static inline void ug_transpose_terms_avx2(const ug_bf16 *b, size_t b_col, size_t cols, ug_bf16 *rows, size_t ld_rows)
{
    for (size_t j = 0; j < cols; j += 8) ug_transpose_block_avx2(b + j * b_col, b_col, rows + j, ld_rows);
}

static inline void ug_transpose_avx2(size_t rows, size_t cols, const ug_bf16 *src, size_t lds, ug_bf16 *dst,
                                     size_t ldd)
{
    const size_t whole_rows = rows / 8 * 8, whole_cols = cols / 16 * 16;
    for (size_t i = 0; i < whole_rows; i += 8)
        for (size_t j = 0; j < whole_cols; j += 16) ug_transpose_block_avx2(src + i * lds + j, lds, dst + j * ldd + i, ldd);
    ug_rows_transpose_scalar(whole_rows, cols - whole_cols, src + whole_cols, lds, dst + whole_cols * ldd, ldd);
    ug_rows_transpose_scalar(rows - whole_rows, cols, src + whole_rows * lds, lds, dst + whole_rows, ldd);
}

#endif
