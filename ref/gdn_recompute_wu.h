/* SPDX-License-Identifier: MIT */
/* MPFR reference of gdn_recompute_wu (SPEC §1.1, §2), independent of
 * kernels/gdn_recompute_wu.c: it shares only the bf16 encoding.
 *
 * exact:  u = sum_j A_j * (v_j * beta_j),  w = sum_j A_j * (k_j * beta_j * exp(g_j))
 * staged: the same with each operand rounded to bf16 exactly once (RN of the
 *         exact operand), as the spec's deliberate casts.
 * Per element it reports r, RN_bf16(r), the bound derived in
 * docs/error-model.md (f32 accumulation of BT terms, the staged casts with the
 * flagged-operand allowance, the output rounding) and sum |terms|.
 * Shapes must satisfy the kernel's validation (the caller checks). */
#ifndef UG_REF_GDN_RECOMPUTE_WU_H
#define UG_REF_GDN_RECOMPUTE_WU_H

#include "../core/bf16.h"
#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t b, t, hg, h, k, v, bt;
} gdn_recompute_wu_shape;

/* Pre-cast error of the kernel's staged u operands, relative to the operand
 * (see docs/error-model.md): one f32 rounding. The w operands' (two f32
 * roundings and the profile's expf) is derived per token from the model. */
#define GDN_WU_PRECAST_REL_U UG_F32_U

ug_status gdn_recompute_wu_reference(const gdn_recompute_wu_shape *s, const ug_bf16 *k,
                                     const ug_bf16 *v, const float *beta, const float *g,
                                     const float *a, const ug_f32_model *model, ug_ref_mode mode,
                                     ug_ref_value *w, ug_ref_value *u);

#endif
