/* SPDX-License-Identifier: MIT */
/* The vector tile solver of gdn_solve_tril, written once for every SIMD
 * path (included by gdn_solve_tril_<isa>.c after its vec_<isa>.h), which it
 * registers as that ISA's.
 *
 * Why it is fast and why it keeps the bits: the solver walks the tile one
 * block of LANES columns at a time, and within it ROWS rows at a time. The
 * ROWS accumulators of a row block are independent FMA chains (a row's
 * element j needs rows m < i only), so their FMAs overlap instead of waiting
 * on one chain's latency; each x[m] vector is loaded once per row block. Each
 * element's chain still runs over m in increasing order from +0.0f, exactly
 * the portable solver's: the terms m below the row block are added first for
 * all ROWS rows, then the rows of the block are finished in order, each
 * adding the terms of the block's earlier rows just written. Lanes j > m are
 * left out of term m (masked, not multiplied by the zero above the diagonal:
 * an infinite l[i][m] times that zero would be NaN). */
#include <string.h>

#include "gdn_solve_tril.h"
#include "gdn_solve_tril_paths.h"

enum { BT = GDN_SOLVE_TRIL_BT, ROWS = 8 };
_Static_assert(BT % LANES == 0 && LANES % ROWS == 0, "row blocks tile each column block");

/* acc += l_row[m] * x[m][block] for m in [first, end), lanes j <= m only. */
static inline vec add_terms(vec acc, const float *l_row, const float *x_block, size_t ld, size_t j0,
                            size_t first, size_t end)
{
    for (size_t m = first; m < end; m++) {
        const vec w = vec_set1(l_row[m]), xm = vec_load(x_block + m * ld);
        acc = m + 1 < j0 + LANES ? vec_fma_first(w, xm, acc, vec_first(m + 1 - j0)) : vec_fmadd(w, xm, acc);
    }
    return acc;
}

/* Row i's block of columns [j0, j0 + LANES) from its accumulator: -acc below
 * the diagonal, 1 on it, +0 above. */
static inline void finish_row(float *x_block, size_t i, size_t j0, vec acc)
{
    float lane[LANES];
    vec_store(lane, acc);
    for (size_t k = 0; k < LANES; k++) lane[k] = j0 + k < i ? -lane[k] : j0 + k == i ? 1.0f : 0.0f;
    memcpy(x_block, lane, sizeof lane);
}

static void solve_tile(const float *l, float *x, size_t ld)
{
    for (size_t j0 = 0; j0 < BT; j0 += LANES) {
        float *x_block = x + j0;
        for (size_t i = 0; i < j0; i++) vec_store(x_block + i * ld, vec_zero());
        for (size_t i0 = j0; i0 < BT; i0 += ROWS) {
            /* Unrolled, so that the accumulators live in registers. */
            vec acc[ROWS];
#pragma GCC unroll 8
            for (size_t r = 0; r < ROWS; r++) acc[r] = vec_zero();
            const size_t partial_end = i0 < j0 + LANES - 1 ? i0 : j0 + LANES - 1;
            const size_t partial_lane = UG_MUTANT == GDN_SOLVE_TRIL_MUT_VECTOR_MASK_OFF_BY_ONE ? 0 : 1;
            for (size_t m = j0; m < partial_end; m++) {
                const vec xm = vec_load(x_block + m * ld);
#pragma GCC unroll 8
                for (size_t r = 0; r < ROWS; r++)
                    acc[r] = vec_fma_first(vec_set1(l[(i0 + r) * ld + m]), xm, acc[r], vec_first(m + partial_lane - j0));
            }
            for (size_t m = partial_end; m < i0; m++) {
                const vec xm = vec_load(x_block + m * ld);
#pragma GCC unroll 8
                for (size_t r = 0; r < ROWS; r++) acc[r] = vec_fmadd(vec_set1(l[(i0 + r) * ld + m]), xm, acc[r]);
            }
#pragma GCC unroll 8
            for (size_t r = 0; r < ROWS; r++) {
                const size_t i = i0 + r;
                const vec sum = add_terms(acc[r], l + i * ld, x_block, ld, j0, i0, i);
                if (i >= j0 + LANES) vec_store(x_block + i * ld, vec_neg(sum));
                else finish_row(x_block + i * ld, i, j0, sum);
            }
        }
    }
}

static const gdn_solve_tril_paths paths = {solve_tile};
UG_ISA_PATHS(gdn_solve_tril, UG_VEC_ISA, paths);
