/* SPDX-License-Identifier: MIT */
/* Portable path: one element at a time, built without SIMD flags. fmaf()
 * (not a*b+c) makes each step of a chain a single rounding, so this path
 * matches the SIMD paths' vector FMAs exactly. */
#include "gemm_paths.h"

static void gemm(const ug_gemm_operands *g)
{
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) g->c[i * g->ldc + j] = ug_gemm_chain(g, i, j, 0, g->kk, 0.0f);
}

static const ug_gemm_paths paths = {
    .gemm = gemm,
    .widen = ug_rows_widen_scalar,
    .round = ug_rows_round_scalar,
    .scale_round = ug_rows_scale_round_scalar,
    .mul3 = ug_rows_mul3_scalar,
    .fma = ug_rows_fma_scalar,
    .scaled_sum_round = ug_rows_scaled_sum_round_scalar,
    .residual = ug_rows_residual_scalar,
    .exp_diff = ug_rows_exp_diff_scalar,
    .exp_sub = ug_rows_exp_sub_scalar,
    .decay_mul = ug_rows_decay_mul_scalar,
    .store = ug_rows_store_scalar,
    .stream_end = ug_rows_stream_end_scalar,
    .transpose = ug_rows_transpose_scalar,
};
UG_ISA_PATHS(ug_gemm, UG_ISA_PORTABLE, paths);
