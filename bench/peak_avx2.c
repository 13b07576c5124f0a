/* SPDX-License-Identifier: MIT */
/* The AVX2 FMA throughput loop (built with -mavx2 -mfma): CHAINS independent
 * accumulators in the 16 ymm registers (two more hold the operands). */
#include <immintrin.h>

#include "bench.h"

enum { CHAINS = 12 };

float bench_fma_loop_avx2(size_t iters)
{
    __m256 acc[CHAINS];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    _Pragma("GCC unroll 12") for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps((float)c);
    for (size_t i = 0; i < iters; i++) {
        _Pragma("GCC unroll 12") for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    _Pragma("GCC unroll 12") for (int c = 1; c < CHAINS; c++) acc[0] = _mm256_add_ps(acc[0], acc[c]);
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[0]);
    float sum = 0.0f;
    for (int l = 0; l < 8; l++) sum += lanes[l];
    return sum;
}
