/* SPDX-License-Identifier: MIT */
/* The AVX-512 FMA throughput loop (built with the AVX-512 flags, see the
 * Makefile's SIMD_FLAGS_avx512): CHAINS independent accumulators, so that
 * CHAINS / (FMA latency) >= the number of FMA ports (4-cycle latency x 2
 * ports = 8 in flight needed; 24 leaves room). */
#include <immintrin.h>

#include "bench.h"

enum { CHAINS = 24 };

float bench_fma_loop_avx512(size_t iters)
{
    __m512 acc[CHAINS];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    _Pragma("GCC unroll 24") for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (size_t i = 0; i < iters; i++) {
        _Pragma("GCC unroll 24") for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    _Pragma("GCC unroll 24") for (int c = 1; c < CHAINS; c++) acc[0] = _mm512_add_ps(acc[0], acc[c]);
    return _mm512_reduce_add_ps(acc[0]);
}
