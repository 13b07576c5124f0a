/* SPDX-License-Identifier: MIT */
/* attn_reduce_fwht: the split-K merge of one-query flash attention, then the
 * undo of a randomised Hadamard rotation (SPEC §1.4; seed
 * flash_attn_vec_reduce_tq_hb_undo.rs).
 *
 * htmp f32 holds, for nrows rows, the partial outputs of nwg workgroups at
 * htmp[(r*DV/4*nwg + i*nwg + w)*4 + c] (element d = 4i + c of workgroup w),
 * then, at offset nrows*DV*nwg, S_w at [r*2*nwg + 2w] and M_w at
 * [r*2*nwg + 2w + 1]. Per row:
 *   M* = max_w M_w,  m_w = exp(M_w - M*),  S = sum_w S_w m_w
 *   y[d] = (S == 0 ? 0 : 1/S) * sum_w P_w[d] m_w
 *   out[j] = s_j * (H y)[j] / sqrt(DV)     (H the natural-order Sylvester
 *                                            Hadamard matrix, s_j the signs)
 * Output f32 [nrows, DV].
 *
 * Two forms, as in the seed's library: the pair (attn_reduce, then
 * attn_fwht_sign_undo in place on its output) and the fused kernel
 * (attn_reduce_fwht_fused), which stages each merged row in a threadgroup-like
 * scratch of exactly the seed's planned size (head_dim * 4 bytes, guarded).
 * Both forms perform the same f32 operations in the same order, so they give
 * identical bits (docs/error-model-attn_reduce_fwht.md §5).
 *
 * Contract (docs/error-model-attn_reduce_fwht.md §6): the seed's rules first,
 * in its order (nwg > 0; head_dim in {256, 512}), then this project's:
 * nwg <= 32 (the merge reads one workgroup per SIMD lane), then each buffer's
 * dtype and element count. nwg = 1 is accepted (the merge is the identity:
 * y = P_0 / S_0). The first broken rule is reported (UG_EINVAL) and nothing
 * is written. Data contract, not checked (the seed checks no data): every row
 * has at least one finite M_w; a masked workgroup carries S_w = 0, P_w = 0 and
 * M_w = -FLT_MAX/2 (the split-K kernel's initial maximum) or -inf; a live one
 * has S_w >= 1 (its own maximum contributes exp(0)). */
#ifndef UG_KERNEL_ATTN_REDUCE_FWHT_H
#define UG_KERNEL_ATTN_REDUCE_FWHT_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

/* The merge gives each workgroup one lane of a 32-lane SIMD group. */
#define ATTN_REDUCE_FWHT_MAX_NWG 32u
#define ATTN_REDUCE_FWHT_SIMD_WIDTH 32u
#define ATTN_REDUCE_FWHT_MAX_THREADS 1024u

typedef struct {
    uint32_t nrows, head_dim, nwg;
} attn_reduce_fwht_params;

/* Deliberately broken variants, built with -DUG_MUTANT=<value>; the gate must
 * catch each one. The default build (UG_MUTANT 0) is the correct kernel. */
enum attn_reduce_fwht_mutant {
    ATTN_REDUCE_FWHT_CORRECT = 0,
    ATTN_REDUCE_FWHT_MUT_SIGN_BIT_FLIPPED = 1,     /* bit 3 of SIGNS[5] read inverted (s_43) */
    ATTN_REDUCE_FWHT_MUT_NO_NORMALISATION = 2,     /* H y without the 1/sqrt(DV) */
    ATTN_REDUCE_FWHT_MUT_NORMALISATION_TWICE = 3,  /* H y scaled by 1/sqrt(DV) twice */
    ATTN_REDUCE_FWHT_MUT_WORKGROUP_MAJOR = 4,      /* partials read at (w*DV/4 + i)*4 + c */
    ATTN_REDUCE_FWHT_MUT_MAX_NOT_SUBTRACTED = 5,   /* m_w = exp(M_w) */
    ATTN_REDUCE_FWHT_MUT_ZERO_S_UNGUARDED = 6,     /* 1/S even when S == 0 */
    ATTN_REDUCE_FWHT_MUT_SIGNS_WRAP_AT_256 = 7,    /* DV = 512 reuses the 256-entry table */
    ATTN_REDUCE_FWHT_MUT_S_M_SWAPPED = 8,          /* S read at 2w + 1 and M at 2w */
    ATTN_REDUCE_FWHT_MUT_VECTOR_STAGE_SKIPPED = 9, /* vector paths: the first butterfly stage across vectors left out */
};

/* The build's variant (the .c file and its vector paths read it). */
#ifndef UG_MUTANT
#define UG_MUTANT 0 /* the correct kernel; a plain 0, as other families' headers may be included too */
#endif

/* The fused kernel: htmp f32[nrows*nwg*(head_dim + 2)] -> output f32[nrows*head_dim]. */
ug_status attn_reduce_fwht_fused(const attn_reduce_fwht_params *p, const ug_buf *htmp,
                                 ug_buf *output);

/* The pair's first half, the plain split-K reduce: output = y (the same
 * buffers and contract as the fused kernel). */
ug_status attn_reduce(const attn_reduce_fwht_params *p, const ug_buf *htmp, ug_buf *output);

/* The pair's second half, the standalone sign-undo, in place:
 * x[r, j] <- s_j * (H x[r, :])[j] / sqrt(head_dim). x f32[nrows*head_dim];
 * head_dim in {256, 512}. */
ug_status attn_fwht_sign_undo(uint32_t nrows, uint32_t head_dim, ug_buf *x);

#endif
