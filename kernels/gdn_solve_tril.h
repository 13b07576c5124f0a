/* SPDX-License-Identifier: MIT */
/* gdn_solve_tril: the per-chunk inverse A = (I + L)^-1 of the chunked gated
 * delta rule (SPEC §1.3; FLA's solve_tril), for L the strictly lower output
 * of gdn_chunk_scaled_kkt.
 *
 * For batch b, head h, chunk c (rows t = c*BT + i), with L_c the chunk's
 * BT x BT block L[b, c*BT + i, h, j] read strictly below the diagonal only
 * (entries on and above it are ignored, whatever they hold):
 *   A[b, c*BT + i, h, j] = ((I + L_c)^-1)[i][j]
 * unit lower triangular, exact zeros above the diagonal. The kernel is
 * forward substitution in f32, row by row:
 *   A[i][i] = 1,  A[i][j] = -sum_{m=j}^{i-1} L[i][m] A[m][j]   (j < i)
 * each sum an FMA chain in increasing m (FLA's blocked form — 16 x 16
 * diagonal blocks inverted, then merged — is another legitimate order; its
 * error bound differs, see docs/error-model-gdn_stages.md §3).
 * Input L f32 [B,T,H,BT]; output A f32 [B,T,H,BT] (what gdn_recompute_wu reads).
 *
 * Validation, in this order (UG_EINVAL naming value and limit, nothing
 * written): every dim > 0; BT == 64; T % BT == 0; every buffer's element
 * count and dtype. */
#ifndef UG_KERNEL_GDN_SOLVE_TRIL_H
#define UG_KERNEL_GDN_SOLVE_TRIL_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_SOLVE_TRIL_BT 64u

typedef struct {
    uint32_t b, t, h, bt;
} gdn_solve_tril_params;

/* Compile-time variants, built with -DUG_MUTANT=<value>; 0 is the correct
 * kernel. 1..99 are broken (the gate must catch each), 101.. are
 * numerically legitimate rewrites (the gate must pass each). */
enum gdn_solve_tril_mutant {
    GDN_SOLVE_TRIL_CORRECT = 0,
    GDN_SOLVE_TRIL_MUT_SIGN_ERROR = 1,          /* (I - L)^-1: the sums are added, not subtracted */
    GDN_SOLVE_TRIL_MUT_SUBSTITUTION_FROM_J1 = 2, /* the sum starts at m = j + 1: the L[i][j] A[j][j] term is lost */
    GDN_SOLVE_TRIL_MUT_DROPPED_LAST_TERM = 3,   /* the sum stops at m = i - 2: the L[i][i-1] A[i-1][j] term is lost */
    GDN_SOLVE_TRIL_MUT_VECTOR_MASK_OFF_BY_ONE = 4, /* vector paths: lanes j < m (not j <= m) of a partial term */
    GDN_SOLVE_TRIL_LEGIT_COLUMN_ORIENTED = 101, /* column by column, separate products and sums (no FMA) */
    GDN_SOLVE_TRIL_LEGIT_REVERSED_SUMS = 102,   /* each sum in decreasing m */
};

/* The build's variant (the .c file and its vector paths read it). */
#ifndef UG_MUTANT
#define UG_MUTANT 0 /* the correct kernel; a plain 0, as other families' headers may be included too */
#endif

ug_status gdn_solve_tril(const gdn_solve_tril_params *p, const ug_buf *l, ug_buf *a);

#endif
