/* SPDX-License-Identifier: MIT */
/* gdn_chunk_cumsum: chunk-local cumulative sum of the raw log-gates of the
 * chunked gated delta rule (SPEC §1.3; FLA's chunk_local_cumsum).
 *
 *   g[b,t,h] = sum_{s = chunk start}^{t} g_raw[b,s,h],   chunk start = t - t % BT
 *
 * in f32, one running sum per (batch, head), restarted at every chunk.
 * Inputs g_raw f32 [B,T,H]; output g f32 [B,T,H] (what gdn_recompute_wu,
 * gdn_chunk_o and the other stages read as the chunk-cumulative gate).
 *
 * Validation, in this order (the first broken rule is reported, UG_EINVAL,
 * nothing is written): every dim > 0; BT == 64; T % BT == 0; every buffer's
 * element count and dtype. No seed exists for this stage: the contract
 * follows the seeds' conventions (gdn_recompute_wu, gdn_chunk_o). */
#ifndef UG_KERNEL_GDN_CHUNK_CUMSUM_H
#define UG_KERNEL_GDN_CHUNK_CUMSUM_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_CHUNK_CUMSUM_BT 64u

typedef struct {
    uint32_t b, t, h, bt;
} gdn_chunk_cumsum_params;

/* Compile-time variants, built with -DUG_MUTANT=<value>; 0 is the correct
 * kernel. 1..99 are broken (the gate must catch each), 101.. are
 * numerically legitimate rewrites (the gate must pass each). */
enum gdn_chunk_cumsum_mutant {
    GDN_CHUNK_CUMSUM_CORRECT = 0,
    GDN_CHUNK_CUMSUM_MUT_NO_RESET = 1,         /* the sum runs across chunk boundaries */
    GDN_CHUNK_CUMSUM_MUT_EXCLUSIVE_SCAN = 2,   /* g[t] sums s < t (the row's own gate left out) */
    GDN_CHUNK_CUMSUM_MUT_CHUNK_OF_32 = 3,      /* restarts every 32 rows instead of every BT */
    GDN_CHUNK_CUMSUM_MUT_VECTOR_TAIL_LANE_DROPPED = 4, /* vector paths: the last head of a partial vector is not stored */
    GDN_CHUNK_CUMSUM_LEGIT_TWO_LEVEL_SCAN = 101, /* GPU-style scan: sums within 16-row blocks plus the earlier blocks' totals */
};

/* The build's variant (the .c file and its vector paths read it). */
#ifndef UG_MUTANT
#define UG_MUTANT 0 /* the correct kernel; a plain 0, as other families' headers may be included too */
#endif

ug_status gdn_chunk_cumsum(const gdn_chunk_cumsum_params *p, const ug_buf *g_raw, ug_buf *g);

#endif
