/* SPDX-License-Identifier: MIT */
/* The AVX512-BF16 dot-product throughput loop (built with the AVX-512 and
 * AVX512-BF16 flags, see the Makefile's SIMD_FLAGS_avx512bf16): vdpbf16ps
 * multiplies 32 bf16 pairs and adds them, two per lane, into 16 f32 sums.
 * The kernels do not use it (docs/performance.md: it sums two products
 * before accumulating and flushes subnormals, so it cannot give the
 * contract's FMA chains); the bench measures it so that the decision rests
 * on this machine's rate. CHAINS independent accumulators, as the FMA loop. */
#include <immintrin.h>

#include "bench.h"

enum { CHAINS = 24 };

float bench_dpbf16_loop_avx512bf16(size_t iters)
{
    __m512 acc[CHAINS];
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3380); /* 1, 2^-24 */
    _Pragma("GCC unroll 24") for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (size_t i = 0; i < iters; i++) {
        _Pragma("GCC unroll 24") for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    }
    _Pragma("GCC unroll 24") for (int c = 1; c < CHAINS; c++) acc[0] = _mm512_add_ps(acc[0], acc[c]);
    return _mm512_reduce_add_ps(acc[0]);
}
