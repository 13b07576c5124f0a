/* SPDX-License-Identifier: MIT */
/* MPFR reference of the gated delta rule end to end (SPEC §1.3, "the exact
 * recurrent form"), independent of every chunked stage: no cumsum, no
 * K·Kᵀ, no solve, no WY form, no chunks; it shares only the bf16 decoding.
 *
 * Per batch b and value head h (key head kh = h / (H/Hg)), the state S is
 * K x V, S_0 = h0[b,h] (or 0), and for every token t:
 *   S <- exp(g_t) S                                   (g_t = g_raw[b,t,h], the raw gate)
 *   d  = beta_t (v_t - Sᵀ k_t)                        (V values)
 *   S <- S + k_t dᵀ             [= exp(g_t)(I - beta_t k_t k_tᵀ) S_{t-1} + beta_t k_t v_tᵀ]
 *   o_t = scale Sᵀ q_t
 * and final_state[b,h] = S_T. scale is the pipeline's f32 RN(1/sqrt(K)).
 *
 * The chunked pipeline rounds deliberately in its stages (bf16 w, u, h,
 * v_new, attention tile), so there is no a-priori bound for the composition:
 * every element's bound is +inf (its ratio reads 0) and the gate judges the
 * ULP statistics and the relative RMS error instead. There is no staged
 * form either: the staged casts belong to the chunked stages, each gated
 * against its own staged reference; both modes are this one function.
 *
 * abs_sum (for the condition number): o: scale sum_k |S_t[k][v]| |q_t[k]|,
 * the magnitude of the last dot product; final_state: |exp(g_T) S_{T-1}| +
 * |k_T[k] d[v]|, the magnitude of the last update.
 *
 * Working precision prec bits (GDN_E2E_REF_PREC by default; see
 * docs/error-model-gdn_e2e.md §2 for why 192 bits leave the reference's error
 * below 2^-130 of the outputs' scale). The state is kept on integer grids
 * per column (§2); with ug_ref_fast() and prec == GDN_E2E_REF_PREC a head
 * whose inputs fit runs on 256-bit integers instead of GMP's (a column's
 * update and reads in one AVX-512 pass where ug_ref_simd_available(),
 * ref/gdn_e2e_simd.h; its per-column scalars on limbs, ref/gdn_e2e_wide.h),
 * with bit-identical results in every field. Any sub-shape (B = H = Hg = 1
 * slices included) gives the values of its heads in the full shape. Shapes
 * must satisfy the kernel's validation, except K, which may be any size
 * here (tests use small K). */
#ifndef UG_REF_GDN_E2E_H
#define UG_REF_GDN_E2E_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h> /* before mpfr.h: its intmax_t functions */

#include "../core/bf16.h"
#include "../core/status.h"
#include "ref.h"

enum { GDN_E2E_REF_PREC = 192 };

typedef struct {
    size_t b, t, hg, h, k, v;
    bool has_h0;
} gdn_e2e_shape;

/* RN_f32(1/sqrt(k)), straight from MPFR. */
float gdn_e2e_reference_scale(size_t k);

/* q, k bf16 [B,T,Hg,K]; v bf16 [B,T,H,V]; beta, g_raw f32 [B,T,H]; h0 f32
 * [B,H,K,V] or NULL when !has_h0; outputs o [B,T,H,V] (bf16 rounding) and
 * final_state [B,H,K,V] (f32 rounding). */
ug_status gdn_e2e_reference(const gdn_e2e_shape *s, mpfr_prec_t prec, float scale, const ug_bf16 *q,
                            const ug_bf16 *k, const ug_bf16 *v, const float *beta, const float *g_raw,
                            const float *h0, ug_ref_value *o, ug_ref_value *final_state);

#endif
