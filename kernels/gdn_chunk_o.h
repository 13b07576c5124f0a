/* SPDX-License-Identifier: MIT */
/* gdn_chunk_o: the output stage of the chunked gated delta rule (SPEC §1.2;
 * seed gated_delta_net_chunk_o.rs).
 *
 * For batch b, value head h, chunk c (rows t = c*BT + i, s = c*BT + j, i, j
 * in [0, BT)), key head kh = h / (H/Hg):
 *   P[i,v]   = exp(g[t,h]) * sum_k q[t,kh,k] * h[b,c,h,v,k]                 (f32)
 *   Q[i,j]   = bf16((i >= j) ? exp(g[t,h] - g[s,h]) * sum_k q[t,kh,k] * k[s,kh,k] : 0)
 *   o[t,h,v] = bf16(P[i,v] * scale + (sum_j Q[i,j] * v[s,h,v]) * scale)
 * dot products accumulated in f32; the attention tile Q is rounded to bf16
 * after the mask (deliberately: the seed stages it in threadgroup memory as
 * bf16); the output is rounded once.
 *
 * Validation mirrors the seed's validate(), rule for rule and in its order;
 * the first broken rule is reported (UG_EINVAL) and nothing is written. The
 * attention tile lives in scratch of exactly the seed's planned threadgroup
 * size (BT*BT*2 bytes), one guarded slice per kernel thread (parallel.h): an
 * overrun is reported as UG_EGUARD. */
#ifndef UG_KERNEL_GDN_CHUNK_O_H
#define UG_KERNEL_GDN_CHUNK_O_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_CHUNK_O_MAX_K 128u
#define GDN_CHUNK_O_MAX_V 256u
#define GDN_CHUNK_O_BK 32u
#define GDN_CHUNK_O_BV 32u

typedef struct {
    uint32_t b, t, hg, h, k, v, bt;
    float scale;
} gdn_chunk_o_params;

/* Compile-time variants, built with -DUG_MUTANT=<value>. The default build
 * (UG_MUTANT 0) is the correct kernel.
 *
 * 1..99: deliberately broken kernels; the gate must catch each one.
 * 101..: numerically legitimate rewrites of the correct kernel (a different
 *        but equally valid f32 evaluation); the gate must PASS each one, which
 *        shows that the bound does not encode one summation order or one
 *        placement of the scale. They are deliberately not listed among the
 *        descriptor's mutants (ci/mutants.sh requires those to fail). */
enum gdn_chunk_o_variant {
    GDN_CHUNK_O_CORRECT = 0,
    GDN_CHUNK_O_MUT_STRICT_MASK = 1,          /* i > j: the diagonal of Q dropped */
    GDN_CHUNK_O_MUT_ATTENTION_UNROUNDED = 2,  /* Q kept in f32 (no bf16 rounding) */
    GDN_CHUNK_O_MUT_H_K_MAJOR = 3,            /* h read as [K][V] instead of [V][K] */
    GDN_CHUNK_O_MUT_STATE_NEXT_CHUNK = 4,     /* chunk c reads h[c+1] (its end), not h[c] */
    GDN_CHUNK_O_MUT_STATE_DECAY_MISSING = 5,  /* P without the factor exp(g[t]) */
    GDN_CHUNK_O_MUT_DECAY_SIGN = 6,           /* exp(g[s] - g[t]) inside the chunk */
    GDN_CHUNK_O_MUT_STATE_UNSCALED = 7,       /* scale applied to the intra-chunk term only */
    GDN_CHUNK_O_MUT_WRONG_GQA_HEAD = 8,       /* kh = h % Hg (caught only when 1 < Hg < H) */
    GDN_CHUNK_O_LEGIT_SCALE_ONCE = 101,       /* bf16((P + sum_j Q v) * scale) */
    GDN_CHUNK_O_LEGIT_REVERSED_ORDER = 102,   /* every dot product summed in decreasing index order */
    GDN_CHUNK_O_LEGIT_FUSED_EPILOGUE = 103,   /* bf16(fma(P, scale, (sum_j Q v) * scale)) */
};

/* q, k bf16[B,T,Hg,K]; v bf16[B,T,H,V]; h bf16[B,NT,H,V,K] (NT = T/BT, the
 * state at the start of each chunk, K innermost); g f32[B,T,H]; output
 * o bf16[B,T,H,V]. */
ug_status gdn_chunk_o(const gdn_chunk_o_params *p, const ug_buf *q, const ug_buf *k,
                      const ug_buf *v, const ug_buf *h, const ug_buf *g, ug_buf *o);

#endif
