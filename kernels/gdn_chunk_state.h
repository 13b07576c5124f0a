/* SPDX-License-Identifier: MIT */
/* gdn_chunk_state: the inter-chunk state recurrence of the chunked gated
 * delta rule (SPEC §1.3; FLA's chunk_gated_delta_rule_fwd_h).
 *
 * For batch b, value head h, key head kh = h / (H/Hg), the state S is f32
 * [K][V], S_0 = h0[b,h] (or 0 without h0). For each chunk c (rows
 * t = c*BT + i), with G_last = g[c*BT + BT-1, h]:
 *   h[b,c,h,v,k]  = bf16(S_c[k][v])                       (V-major: K innermost, as gdn_chunk_o reads it)
 *   v[i,:]        = u[t,h,:] - w[t,h,:] · bf16(S_c)        (f32)
 *   v_new[t,h,:]  = bf16(v[i,:])
 *   S_{c+1}       = exp(G_last) S_c + sum_i k[t,kh,:]ᵀ bf16(exp(G_last - g[t,h]) v[i,:])
 * and final_state[b,h] = S_NT (f32). The bf16 casts of S_c (for h and for
 * the w·S product), of v_new and of the decayed v are the spec's deliberate
 * intermediate roundings; products with bf16 operands are f32 sums.
 * Inputs k bf16 [B,T,Hg,K], w bf16 [B,T,H,K], u bf16 [B,T,H,V], g f32 [B,T,H]
 * (chunk-cumulative), h0 f32 [B,H,K,V] when has_h0 (0 elements otherwise);
 * outputs h bf16 [B,NT,H,V,K] (NT = T/BT), v_new bf16 [B,T,H,V],
 * final_state f32 [B,H,K,V].
 *
 * Validation, in this order (UG_EINVAL naming value and limit, nothing
 * written): every dim > 0; has_h0 in {0, 1}; H % Hg == 0; K <= MAX_K = 256
 * and V <= MAX_V = 256 (FLA's head-size limit; they size the state tiles);
 * BT == 64; T % BT == 0; every buffer's element count and dtype (h0 has
 * B*H*K*V elements with has_h0 = 1 and none with has_h0 = 0). */
#ifndef UG_KERNEL_GDN_CHUNK_STATE_H
#define UG_KERNEL_GDN_CHUNK_STATE_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_CHUNK_STATE_MAX_K 256u
#define GDN_CHUNK_STATE_MAX_V 256u
#define GDN_CHUNK_STATE_BT 64u

typedef struct {
    uint32_t b, t, hg, h, k, v, bt, has_h0;
} gdn_chunk_state_params;

/* Compile-time variants, built with -DUG_MUTANT=<value>; 0 is the correct
 * kernel. 1..99 are broken (the gate must catch each), 101.. are
 * numerically legitimate rewrites (the gate must pass each). */
enum gdn_chunk_state_mutant {
    GDN_CHUNK_STATE_CORRECT = 0,
    GDN_CHUNK_STATE_MUT_MISSING_DECAY = 1,      /* S_{c+1} = S_c + ...: exp(G_last) dropped */
    GDN_CHUNK_STATE_MUT_STATE_CAST_DROPPED = 2, /* w·S uses the f32 state, not bf16(S) */
    GDN_CHUNK_STATE_MUT_H_K_MAJOR = 3,          /* h stored [B,NT,H,K,V] */
    GDN_CHUNK_STATE_MUT_GATE_SIGN_FLIPPED = 4,  /* v decayed by exp(g - G_last) */
    GDN_CHUNK_STATE_LEGIT_REVERSED_SUMS = 101,  /* both products summed backward, no FMA */
    GDN_CHUNK_STATE_LEGIT_UNFUSED_UPDATE = 102, /* S = fl(exp(G_last) S) + Kᵀ staged: two roundings */
};

ug_status gdn_chunk_state(const gdn_chunk_state_params *p, const ug_buf *k, const ug_buf *w,
                          const ug_buf *u, const ug_buf *g, const ug_buf *h0, ug_buf *h,
                          ug_buf *v_new, ug_buf *final_state);

#endif
