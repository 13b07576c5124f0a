/* The per-ISA micro-kernels behind ug_gemm_f32_bf16 (private to kernels/).
 *
 * Each lives in its own file so that the Makefile can build it with that ISA's
 * flags (gemm_avx2.c, gemm_avx512.c) while everything else stays free of SIMD
 * code; isa.c calls only the path the CPU supports. All three compute the
 * contract of ug_gemm_f32_bf16 (isa.h) bit for bit. */
#ifndef UG_GEMM_PATHS_H
#define UG_GEMM_PATHS_H

#include <math.h>
#include <stddef.h>

#include "../core/bf16.h"

typedef void ug_gemm_f32_bf16_fn(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                                 const ug_bf16 *B, size_t ldb, float *C, size_t ldc);

ug_gemm_f32_bf16_fn ug_gemm_f32_bf16_portable;
ug_gemm_f32_bf16_fn ug_gemm_f32_bf16_avx2;
ug_gemm_f32_bf16_fn ug_gemm_f32_bf16_avx512;

/* One output element: the FMA chain of the contract, in increasing index
 * order from +0.0f. The single definition every scalar code path uses. */
static inline float ug_gemm_dot_f32_bf16(size_t kk, const float *a_row, const ug_bf16 *b_col,
                                         size_t ldb)
{
    float acc = 0.0f;
    for (size_t p = 0; p < kk; p++) acc = fmaf(a_row[p], ug_bf16_to_f32(b_col[p * ldb]), acc);
    return acc;
}

#endif
