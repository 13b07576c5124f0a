/* SPDX-License-Identifier: MIT */
/* gdn_recompute_wu: the WY-representation recompute of the chunked gated
 * delta rule (SPEC §1.1; seeds gated_delta_net_recompute_wu.rs/.metal).
 *
 * For batch b, value head h, chunk c (rows t = c*BT + i), key head kh = h/(H/Hg):
 *   u[t,h,:] = sum_j A[t,h,j] * bf16(v[c*BT+j,h,:] * beta[c*BT+j,h])
 *   w[t,h,:] = sum_j A[t,h,j] * bf16(k[c*BT+j,kh,:] * beta[c*BT+j,h] * exp(g[c*BT+j,h]))
 * staged operands formed in f32 then rounded to bf16, sums in f32, outputs
 * rounded once to bf16.
 *
 * Validation mirrors the seed's validate(), rule for rule and in its order;
 * the first broken rule is reported (UG_EINVAL) and nothing is written.
 * Scratch: one guarded slice per kernel thread (parallel.h) holding, for a
 * group of heads of one chunk, the staged operands and the output rows (the
 * seed's ba_tile, A's rows, is read in place); an overrun is reported as
 * UG_EGUARD. */
#ifndef UG_KERNEL_GDN_RECOMPUTE_WU_H
#define UG_KERNEL_GDN_RECOMPUTE_WU_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_RECOMPUTE_WU_MAX_K 192u
#define GDN_RECOMPUTE_WU_MAX_V 256u
#define GDN_RECOMPUTE_WU_BK 64u
#define GDN_RECOMPUTE_WU_BV 64u

typedef struct {
    uint32_t b, t, hg, h, k, v, bt;
} gdn_recompute_wu_params;

/* Deliberately broken variants, built with -DUG_MUTANT=<value>; the gate must
 * catch each one. The default build (UG_MUTANT 0) is the correct kernel. */
enum gdn_recompute_wu_mutant {
    GDN_RECOMPUTE_WU_CORRECT = 0,
    GDN_RECOMPUTE_WU_MUT_TRUNCATE_STAGE_CAST = 1, /* staged bf16 casts truncate, not RNE */
    GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED = 2,  /* staged operands stay f32 */
    GDN_RECOMPUTE_WU_MUT_OUTPUT_TRUNCATED = 3,    /* the bf16 output store truncates */
    GDN_RECOMPUTE_WU_MUT_WRONG_GQA_HEAD = 4,      /* kh = h % Hg (caught only when 1 < Hg < H) */
    GDN_RECOMPUTE_WU_MUT_ROW_OFF_BY_ONE = 5,      /* staged row j reads chunk row (j+1) % BT */
    GDN_RECOMPUTE_WU_MUT_EXP_AS_ONE_PLUS_G = 6,   /* exp(g) replaced by 1 + g */
    GDN_RECOMPUTE_WU_MUT_DROPPED_LAST_TERM = 7,   /* sums stop at j = BT - 2 */
};

/* k bf16[B,T,Hg,K], v bf16[B,T,H,V], beta f32[B,T,H], g f32[B,T,H],
 * a f32[B,T,H,BT]; outputs w bf16[B,T,H,K], u bf16[B,T,H,V]. */
ug_status gdn_recompute_wu(const gdn_recompute_wu_params *p, const ug_buf *k,
                           const ug_buf *v, const ug_buf *beta, const ug_buf *g,
                           const ug_buf *a, ug_buf *w, ug_buf *u);

#endif
