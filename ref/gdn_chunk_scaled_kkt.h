/* SPDX-License-Identifier: MIT */
/* MPFR reference of gdn_chunk_scaled_kkt (SPEC §1.3), independent of
 * kernels/gdn_chunk_scaled_kkt.c.
 *
 *   L[t,h,j] = beta_t exp(g_t - g_s) (k_t . k_s)  for i > j, else 0
 *
 * The dot product is a correctly rounded sum (mpfr_sum) of exact bf16
 * products, exp is MPFR's at 128 bits, the products with beta and exp are
 * formed at 128 bits: relative error < 2^-125 of |L| (docs/error-model-gdn_stages.md §2).
 * The stage has no deliberate intermediate rounding: the staged mode is the
 * exact mode. Per element: r, RN_f32(r), the bound of the kernel's f32
 * arithmetic (any summation order of the dot product, either order of the
 * two products, expf of the f32 gate difference) and beta exp(.) sum |k_t k_s|
 * for the condition number. Shapes must satisfy the kernel's validation.
 * By default a fast path (docs/error-model.md §2.1) forms the same values,
 * bit for bit, without MPFR wherever it can certify them. */
#ifndef UG_REF_GDN_CHUNK_SCALED_KKT_H
#define UG_REF_GDN_CHUNK_SCALED_KKT_H

#include <stddef.h>

#include "../core/bf16.h"
#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t b, t, hg, h, k, bt;
} gdn_chunk_scaled_kkt_shape;

ug_status gdn_chunk_scaled_kkt_reference(const gdn_chunk_scaled_kkt_shape *s, const ug_bf16 *k,
                                         const float *beta, const float *g, const ug_f32_model *model,
                                         ug_ref_mode mode, ug_ref_value *l);

#endif
