/* Portable path: one element at a time. fmaf() (not a*b+c) makes each step a
 * single rounding, so this path matches the SIMD paths' vector FMAs exactly. */
#include "gemm_paths.h"

void ug_gemm_f32_bf16_portable(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                               const ug_bf16 *B, size_t ldb, float *C, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) C[i * ldc + j] = ug_gemm_dot_f32_bf16(kk, A + i * lda, B + j, ldb);
}
