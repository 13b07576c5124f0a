/* SPDX-License-Identifier: MIT */
/* MPFR reference of gdn_chunk_state (SPEC §1.3), independent of
 * kernels/gdn_chunk_state.c.
 *
 * exact:  S_{c+1} = e^{G_last} S_c + sum_i k_i (e^{G_last - G_i} v_i),
 *         v_i = u_i - w_i S_c, no intermediate rounding; h[c] = S_c.
 * staged: the spec's casts applied to the exactly computed intermediates:
 *         w_i RN_bf16(S_c), and k_i RN_bf16(e^{G_last - G_i} v_i).
 * Outputs: h[c] = S_c (rounded to bf16), v_new = v (bf16), final = S_NT (f32).
 *
 * Every quantity is one correctly rounded MPFR operation at 128 bits (sums
 * of exact terms through mpfr_sum, exp through mpfr_exp). Per element it
 * reports the bound of the kernel's f32 arithmetic by induction over the
 * chunks (docs/error-model-gdn_stages.md §4): D_c >= |S^_c - S_c| for the
 * kernel's state, the staged operands analysed with the window D_c (resp.
 * the pre-cast error of the decayed v), flagged where the window straddles
 * a bf16 rounding boundary. Shapes must satisfy the kernel's validation. */
#ifndef UG_REF_GDN_CHUNK_STATE_H
#define UG_REF_GDN_CHUNK_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/bf16.h"
#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t b, t, hg, h, k, v, bt;
    bool has_h0;
} gdn_chunk_state_shape;

/* h0 may be NULL when !has_h0. */
ug_status gdn_chunk_state_reference(const gdn_chunk_state_shape *s, const ug_bf16 *k, const ug_bf16 *w,
                                    const ug_bf16 *u, const float *g, const float *h0, const ug_f32_model *model,
                                    ug_ref_mode mode, ug_ref_value *h, ug_ref_value *v_new,
                                    ug_ref_value *final_state);

#endif
