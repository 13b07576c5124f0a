/* SPDX-License-Identifier: MIT */
/* gdn_chunk_scaled_kkt: the scaled K·Kᵀ of the chunked gated delta rule
 * (SPEC §1.3; FLA's chunk_scaled_dot_kkt_fwd), the strictly lower matrix L
 * whose (I + L)^-1 gdn_solve_tril computes.
 *
 * For batch b, value head h, key head kh = h / (H/Hg), chunk c, rows
 * t = c*BT + i and s = c*BT + j:
 *   L[b,t,h,j] = beta[t,h] * exp(g[t,h] - g[s,h]) * (k[t,kh,:] . k[s,kh,:])   for i > j
 *   L[b,t,h,j] = 0                                                           for i <= j
 * the dot product an f32 sum of exact bf16 products, then the f32 products
 * with the row's beta and the f32 exp of the f32 gate difference. No
 * deliberate intermediate rounding (unlike FLA, which casts k*beta to bf16:
 * SPEC §1.3 states the product without it).
 * Inputs k bf16 [B,T,Hg,K], beta f32 [B,T,H], g f32 [B,T,H] (chunk-cumulative);
 * output L f32 [B,T,H,BT].
 *
 * Validation, in this order (UG_EINVAL naming value and limit, nothing
 * written): every dim > 0; H % Hg == 0; K <= MAX_K = 256 (FLA's limit for
 * these kernels; it sizes the key tiles of the scratch); BT == 64;
 * T % BT == 0; every buffer's element count and dtype. */
#ifndef UG_KERNEL_GDN_CHUNK_SCALED_KKT_H
#define UG_KERNEL_GDN_CHUNK_SCALED_KKT_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_CHUNK_SCALED_KKT_MAX_K 256u
#define GDN_CHUNK_SCALED_KKT_BT 64u

typedef struct {
    uint32_t b, t, hg, h, k, bt;
} gdn_chunk_scaled_kkt_params;

/* Compile-time variants, built with -DUG_MUTANT=<value>; 0 is the correct
 * kernel. 1..99 are broken (the gate must catch each), 101.. are
 * numerically legitimate rewrites (the gate must pass each). */
enum gdn_chunk_scaled_kkt_mutant {
    GDN_CHUNK_SCALED_KKT_CORRECT = 0,
    GDN_CHUNK_SCALED_KKT_MUT_MASK_INCLUDES_DIAGONAL = 1, /* L[i][i] = beta_i |k_i|^2 kept */
    GDN_CHUNK_SCALED_KKT_MUT_GATE_SIGN_FLIPPED = 2,      /* exp(g_s - g_t) */
    GDN_CHUNK_SCALED_KKT_MUT_BETA_OF_COLUMN = 3,         /* beta of row s instead of row t */
    GDN_CHUNK_SCALED_KKT_LEGIT_REVERSED_DOT = 101,       /* dot products summed backward, no FMA */
    GDN_CHUNK_SCALED_KKT_LEGIT_BETA_LAST = 102,          /* beta (exp dot) instead of (beta exp) dot */
};

ug_status gdn_chunk_scaled_kkt(const gdn_chunk_scaled_kkt_params *p, const ug_buf *k,
                               const ug_buf *beta, const ug_buf *g, ug_buf *l);

#endif
