/* SPDX-License-Identifier: MIT */
/* MPFR reference of gdn_chunk_o (SPEC §1.2, §2), independent of
 * kernels/gdn_chunk_o.c: it shares only the bf16 encoding.
 *
 * exact:  o = scale * (exp(g_t) * q_t.h[c,v] + sum_{j<=i} exp(g_t - g_s) (q_t.k_s) v_s)
 * staged: the same with each attention operand exp(g_t - g_s)(q_t.k_s) rounded
 *         to bf16 exactly once (RN of the exact operand), as the spec's
 *         deliberate cast of the attention tile.
 * Per element it reports r, RN_bf16(r), the bound derived in
 * docs/error-model-gdn_chunk_o.md (f32 dot products and their decay, the
 * staged cast with the flagged-operand allowance, the f32 combination in any
 * order and with either placement of the scale, the output rounding) and
 * sum |terms| (the state term's K products and the attention terms).
 * Shapes must satisfy the kernel's validation (the caller checks). */
#ifndef UG_REF_GDN_CHUNK_O_H
#define UG_REF_GDN_CHUNK_O_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h> /* before mpfr.h: its intmax_t functions */

#include "../core/bf16.h"
#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t b, t, hg, h, k, v, bt;
} gdn_chunk_o_shape;

ug_status gdn_chunk_o_reference(const gdn_chunk_o_shape *s, float scale, const ug_bf16 *q,
                                const ug_bf16 *k, const ug_bf16 *v, const ug_bf16 *h,
                                const float *g, const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *o);

/* The pieces of the bound, exposed so that tests can check them against a
 * scalar f32 statement of the kernel (all results rounded up). The decay
 * exp(g_t - g_s) errs by ug_f32_exp_of_rounded(model, g_t - g_s) (the f32
 * difference, then the profile's expf), exp(g_t) by the profile's expf.
 *
 * Bound on |fl32(e^ * D^) - e*D| for a product of a computed exponential e^
 * (|e^ - e| <= e_up exp.rel + exp.abs) and an f32 dot product D^ of n
 * bf16 x bf16 terms (any order, FMA or not; exact products, tf32 or not), where
 * e_up >= e, abs_dot >= |D| and abs_terms >= sum |terms|. */
double gdn_chunk_o_product_error(const ug_f32_model *m, double e_up, ug_f32_error exp, double abs_dot,
                                 double abs_terms, size_t n);

/* exp(x) rounded up (absolute slack covers an underflowing double exp). */
double gdn_chunk_o_exp_up(double x);

#endif
