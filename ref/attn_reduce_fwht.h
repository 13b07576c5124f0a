/* SPDX-License-Identifier: MIT */
/* MPFR reference of attn_reduce_fwht (SPEC §1.4, §2), independent of
 * kernels/attn_reduce_fwht.c: it shares no arithmetic, and it holds its own
 * copy of the spec's sign table (attn_reduce_fwht_reference_sign).
 *
 * Per row: M* = max_w M_w, m_w = exp(M_w - M*), S = sum_w S_w m_w,
 * y = (S == 0 ? 0 : 1/S) sum_w P_w m_w, out_j = s_j (H y)_j / sqrt(DV).
 * The kernel has no deliberate intermediate rounding (everything is f32 by
 * design), so the staged mode is the exact function and both modes give the
 * same values and bounds. Per element the reference returns r, RN_f32(r), the
 * bound of docs/error-model-attn_reduce_fwht.md (the f32 difference and expf
 * of each weight, the f32 sums of S and of the partials in any order, 1/S and
 * its product, log2(DV) f32 butterfly stages, the rounded 1/sqrt(DV), the
 * output rounding) and the magnitude sum sum_{d,w} |P_w[d]| m_w / (S sqrt(DV)).
 *
 * The bound holds under the data contract of kernels/attn_reduce_fwht.h
 * (finite inputs; at least one finite M_w per row; S_w >= 0, and S == 0 only
 * through masked workgroups); a row outside it, or one whose S is too close
 * to zero for the bound to be derived, is refused with UG_EREF naming the
 * row. Shapes must satisfy the kernel's validation (the caller checks).
 * With ug_ref_fast(), a row's sums sum_w P_w[d] m_w go through the exact
 * accumulator and its transform runs on 192-bit integers (the same values,
 * bit for bit: docs/error-model.md §2.1). */
#ifndef UG_REF_ATTN_REDUCE_FWHT_H
#define UG_REF_ATTN_REDUCE_FWHT_H

#include <stddef.h>

#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t nrows, head_dim, nwg;
} attn_reduce_fwht_shape;

/* htmp: f32[nrows * nwg * (head_dim + 2)] in the kernel's layout; out has
 * nrows * head_dim entries. The kernel's expf and division err as the
 * model's profile declares. */
ug_status attn_reduce_fwht_reference(const attn_reduce_fwht_shape *s, const float *htmp,
                                     const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *out);

/* The standalone sign-undo alone, on f32 rows x [nrows, head_dim]:
 * r = s_j (H x)_j / sqrt(DV), with the bound of the kernel's butterflies and
 * scaling (the pair's second half; also the roundtrip test's reference). */
ug_status attn_fwht_undo_reference(size_t nrows, size_t head_dim, const float *x, const ug_f32_model *model,
                                   ug_ref_value *out);

/* s_j of docs/spec.md §1.4 as the reference reads it: -1 or +1, for j < 512
 * (DV = 256 uses j < 256). */
int attn_reduce_fwht_reference_sign(size_t j);

#endif
