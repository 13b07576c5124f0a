/* SPDX-License-Identifier: MIT */
/* MPFR reference of gdn_solve_tril (SPEC §1.3), independent of
 * kernels/gdn_solve_tril.c.
 *
 *   A = (I + L)^-1 per chunk, L read strictly below the diagonal
 *
 * X~ = forward substitution in MPFR at P >= 256 bits, every entry one
 * correctly rounded sum of exact terms, so (I + L) X~ = I + R with
 * |R| <= 2^(1-P) |X~| and |X~ - X| <= tau = 2^(2-P) BT max|X~|^2; P grows
 * (Ziv) until tau <= 2^-190, below 2^-40 of the smallest f32 spacing
 * (docs/error-model-gdn_stages.md §3). The stage has no deliberate
 * intermediate rounding: the staged mode is the exact mode. With
 * ug_ref_fast() the chunks whose X~ at 256 bits it can certify are computed
 * in integers (AVX-512 IFMA where available), every field bit for bit the
 * MPFR path's (docs/error-model.md §2.1); the others take the MPFR path.
 *
 * Per element: r, RN_f32(r), the a-priori bound of f32 forward substitution
 * (any order of each row's sum, FMA or not), propagated through the exact
 * inverse's magnitudes, and abs_sum = |r| max(kappa, 1 + (|X||L||X|)_ij/|r|):
 * the condition column is at least the chunk's inf-norm condition number
 * kappa = ||I + L|| ||(I + L)^-1|| on every element of the chunk, and at
 * least the element's componentwise (Skeel) condition, which is what bounds
 * its relative error; so the ULP statistics count only elements of
 * well-conditioned chunks that are themselves well-conditioned
 * (docs/error-model-gdn_stages.md §3). Shapes must satisfy the kernel's
 * validation. */
#ifndef UG_REF_GDN_SOLVE_TRIL_H
#define UG_REF_GDN_SOLVE_TRIL_H

#include <stddef.h>

#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t b, t, h, bt;
} gdn_solve_tril_shape;

ug_status gdn_solve_tril_reference(const gdn_solve_tril_shape *s, const float *l, const ug_f32_model *model,
                                   ug_ref_mode mode, ug_ref_value *a);

/* The chunk's condition number ||I + L||_inf ||(I + L)^-1||_inf, rounded up,
 * from the reference's values (exposed for the tests and the report). */
double gdn_solve_tril_kappa(size_t bt, const double *abs_l, const double *abs_x);

#endif
