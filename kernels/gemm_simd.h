/* SPDX-License-Identifier: MIT */
/* The part of the products' and rows' paths (gemm_paths.h) that is the same
 * on every x86 SIMD path, over vec_<isa>.h: the exponent entry points, the
 * streaming store, and the paths struct, registered as that ISA's. Included
 * last by gemm_<isa>.c, after its gemm (gemm_driver.h), widen, round_rows,
 * scale_round, mul3, fma_rows, scaled_sum_round, residual and
 * exp_rows_times. The
 * transpose is AVX2's on every path (it only moves bits). */
#include "gemm_paths.h"
#include "transpose_avx2.h"

static void exp_diff(size_t n, float a, const float *x, float *out) { exp_rows_times(n, a, x, false, 1.0f, NULL, out); }
static void exp_sub(size_t n, const float *x, float a, float *out) { exp_rows_times(n, a, x, true, 1.0f, NULL, out); }
static void decay_mul(size_t n, float a, const float *x, float s, const float *y, float *out)
{
    exp_rows_times(n, a, x, false, s, y, out);
}

/* One 64-byte line past the caches: loads and stores move bits unchanged. */
static inline void stream_line(void *dst, const void *src)
{
    for (size_t k = 0; k < 64 / sizeof(vec); k++)
        vec_stream((float *)dst + k * LANES, vec_load((const float *)src + k * LANES));
}

static void store(size_t bytes, const void *src, void *dst, bool stream)
{
    ug_rows_store_lines(bytes, src, dst, stream, stream_line);
}

static const ug_gemm_paths paths = {
    .gemm = gemm,
    .widen = widen,
    .round = round_rows,
    .scale_round = scale_round,
    .mul3 = mul3,
    .fma = fma_rows,
    .scaled_sum_round = scaled_sum_round,
    .residual = residual,
    .exp_diff = exp_diff,
    .exp_sub = exp_sub,
    .decay_mul = decay_mul,
    .store = store,
    .stream_end = vec_stream_fence,
    .transpose = ug_transpose_avx2,
};
UG_ISA_PATHS(ug_gemm, UG_VEC_ISA, paths);
