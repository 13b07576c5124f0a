/* SPDX-License-Identifier: MIT */
/* gdn_e2e: the chunked forward pass of the gated delta rule end to end
 * (SPEC §1.2, §1.3), from the raw inputs of a layer to its output and final
 * state, by composing the stage kernels:
 *
 *   G          = gdn_chunk_cumsum(g_raw)                   chunk-local cumulative gates
 *   L          = gdn_chunk_scaled_kkt(k, beta, G)
 *   A          = gdn_solve_tril(L)                         (I + L)^-1 per chunk
 *   w, u       = gdn_recompute_wu(k, v, beta, G, A)
 *   h, v_new, final_state = gdn_chunk_state(k, w, u, G, h0)
 *   o          = gdn_chunk_o(q, k, v_new, h, G, scale),    scale = RN_f32(1/sqrt(K))
 *
 * Mathematically (every rounding removed) this is the recurrence
 *   S_t = exp(g_t)(I - beta_t k_t k_tᵀ) S_{t-1} + beta_t k_t v_tᵀ,  o_t = scale S_tᵀ q_t
 * from S_0 = h0 (or 0); the chunked stages round deliberately on the way
 * (bf16 w, u, h, v_new, attention tile), so the end-to-end error has no
 * a-priori bound: it is measured (docs/error-model-gdn_e2e.md).
 *
 * Inputs q, k bf16 [B,T,Hg,K]; v bf16 [B,T,H,V]; beta f32 [B,T,H]; g_raw f32
 * [B,T,H] (raw log-gates); h0 f32 [B,H,K,V] when has_h0 (0 elements
 * otherwise). Outputs o bf16 [B,T,H,V], final_state f32 [B,H,K,V].
 *
 * Validation, in this order (UG_EINVAL naming value and limit, nothing
 * written): every dim > 0; has_h0 in {0, 1}; H % Hg == 0; K == 128
 * (gdn_chunk_o's MAX_K, a compile-time MMA K-loop); V <= MAX_V = 256;
 * BT == 64; T % BT == 0; V % 64 == 0 (gdn_recompute_wu's BV); every buffer's
 * element count and dtype; every intermediate's byte size fits in size_t.
 * The intermediates the caller does not take (gdn_e2e_stages) live in
 * guarded heap scratch, kept across calls of the same shape (a production
 * shape's ~130 MiB would otherwise be mapped and faulted in on every call).
 * Those the caller takes are written in place as the stages produce them:
 * they are the caller's memory and the pipeline's working storage at once
 * (no copy, no second allocation), so a call that fails after validation
 * (an allocation, a stage) may leave them partly written. o and final_state
 * are copied out only after every stage returned UG_OK with its scratch
 * intact: a failing call never writes them, and a rejected shape writes
 * nothing at all. A stage's failure is returned with its code and the
 * stage named:
 * "gdn_e2e: chunk_o: <its message>". */
#ifndef UG_KERNEL_GDN_E2E_H
#define UG_KERNEL_GDN_E2E_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

#define GDN_E2E_K 128u
#define GDN_E2E_MAX_V 256u
#define GDN_E2E_BV 64u
#define GDN_E2E_BT 64u

typedef struct {
    uint32_t b, t, hg, h, k, v, bt, has_h0;
} gdn_e2e_params;

/* Deliberately broken pipelines, built with -DUG_MUTANT=<value>; the gate
 * must catch each one. The default build (UG_MUTANT 0) is the correct one.
 * Every stage kernel stays correct: these are wiring bugs. */
enum gdn_e2e_mutant {
    GDN_E2E_CORRECT = 0,
    GDN_E2E_MUT_RAW_GATES = 1,           /* the stages read g_raw where they expect G (cumsum skipped) */
    GDN_E2E_MUT_SOLVE_SKIPPED = 2,       /* A = I instead of (I + L)^-1 */
    GDN_E2E_MUT_H0_IGNORED = 3,          /* the state starts from 0 whatever h0 says */
    GDN_E2E_MUT_W_U_SWAPPED = 4,         /* chunk_state gets u as w and w as u */
    GDN_E2E_MUT_V_FOR_V_NEW = 5,         /* chunk_o reads the raw values v, not v_new */
    GDN_E2E_MUT_FINAL_ONE_CHUNK_EARLY = 6, /* final_state = the state at the start of the last chunk */
    GDN_E2E_MUT_Q_K_SWAPPED = 7,         /* chunk_o gets k as q and q as k */
    /* Bugs that move values by a few ulps: the end-to-end statistics miss
     * them; the chained check of the handed-over intermediates does not. */
    GDN_E2E_MUT_BETA_AFTER_CAST = 8,     /* recompute_wu gets beta = 1 and A·diag(beta): beta applied after
                                            the bf16 casts of k·exp(g) and v */
    GDN_E2E_MUT_WRONG_KEY_HEAD = 9,      /* chunk_state reads key head (kh + 1) mod Hg */
    GDN_E2E_MUT_BF16_PARTIAL_SUMS = 10,  /* L from the pipeline's own K·Kᵀ whose running sums are rounded
                                            to bf16 every 16 terms */
    GDN_E2E_MUT_L_THROUGH_BF16 = 11,     /* solve_tril gets L rounded to bf16 */
    GDN_E2E_MUT_SCALE_IN_BF16_Q = 12,    /* chunk_o gets bf16(q * scale) and scale 1: a bf16 rounding of the
                                            queries SPEC's chunk_o does not have (it scales in f32) */
    GDN_E2E_LEGIT_FUSED = 101,           /* hands over no intermediate, as a fused kernel would */
    GDN_E2E_LEGIT_KKT_SOLVE_FUSED = 102, /* hands over every intermediate but L and A */
};

/* The f32 scale the pipeline applies: RN_f32(1/sqrt(k)). */
float gdn_e2e_scale(uint32_t k);

/* The intermediates a caller may take, each with the layout and dtype of
 * the stage that writes it (NULL: not wanted): G f32 [B,T,H]; L, A f32
 * [B,T,H,BT]; w bf16 [B,T,H,K]; u, v_new bf16 [B,T,H,V]; h bf16
 * [B,NT,H,V,K]. A given buffer of the wrong count or dtype is rejected like
 * any other (UG_EINVAL, nothing written). */
typedef struct {
    ug_buf *g, *l, *a, *w, *u, *h, *v_new;
} gdn_e2e_stages;

/* Frees the scratch sets kept between calls that no call is using (a set
 * in use stays, and is kept when its call returns); the next call without
 * a kept set allocates afresh. Safe while other calls run. */
void gdn_e2e_release_scratch(void);

ug_status gdn_e2e(const gdn_e2e_params *p, const ug_buf *q, const ug_buf *k, const ug_buf *v,
                  const ug_buf *beta, const ug_buf *g_raw, const ug_buf *h0, ug_buf *o,
                  ug_buf *final_state, const gdn_e2e_stages *stages);

#endif
