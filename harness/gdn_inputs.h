/* SPDX-License-Identifier: MIT */
/* Realistic inputs of the chunked gated delta rule (SPEC §1.3), written once
 * for every descriptor of its stages: the input regimes, the per-token draws
 * (keys, raw log-gates, betas, values) and the binary64 products of those
 * draws that later stages receive (the scaled K·Kᵀ L, its solved inverse
 * A = (I + L)^-1, the WY products w and u).
 *
 * Draw order (one GSL stream): keys first, for each batch, key head and
 * token; then for each batch and value head the head's gate parameters, then
 * per token its raw gate, its beta and (when values are asked for) its value
 * row. Every derived buffer is a deterministic function of the rounded draws,
 * so a stage sees exactly the inputs a real upstream stage would hand it. */
#ifndef UG_GDN_INPUTS_H
#define UG_GDN_INPUTS_H

#include <gsl/gsl_rng.h>
#include <stddef.h>

#include "../core/bf16.h"
#include "../core/status.h"

/* Realistic model inputs first, then the hard cases. The first
 * GDN_GATE_REGIMES differ in their gates (and values) only; beta_near_one and
 * parallel_keys draw realistic gates. */
typedef enum {
    GDN_REGIME_REALISTIC,     /* Mamba2-style gates, ~10% exactly 0; beta = sigmoid(N(0,1)) */
    GDN_REGIME_LOGSIGMOID,    /* logsigmoid(N(0,1))/n gates, n in {1, 10}; v ~ U(0,1) */
    GDN_REGIME_GATES_ZERO,    /* every gate 0: no decay */
    GDN_REGIME_STRONG_DECAY,  /* gates -U(2, 20): exp(G) underflows within a chunk */
    GDN_REGIME_BETA_NEAR_ONE, /* beta = sigmoid(7 + N(0,1)) */
    GDN_REGIME_PARALLEL_KEYS, /* a chunk's keys within 1e-3 of one direction: I + L ill-conditioned */
    GDN_REGIME_TIES,          /* small dyadic grids, gates 0, beta 1/2: every intermediate exact in f32
                                 (only for the stages that list it, docs/ties.md) */
    GDN_REGIME_COUNT
} gdn_regime;

enum { GDN_GATE_REGIMES = GDN_REGIME_BETA_NEAR_ONE };

extern const char *const gdn_regime_names[GDN_REGIME_COUNT];
/* A GDN descriptor's regimes (harness/family.h): the model regimes and hard
 * cases, and, for a stage whose math stays exact on the ties regime's grids,
 * that regime too, marked exact (ug_family.exact_regimes). */
#define GDN_REGIME_FIELDS .n_regimes = GDN_REGIME_TIES, .regimes = gdn_regime_names
#define GDN_REGIME_FIELDS_WITH_TIES                                                   \
    .n_regimes = GDN_REGIME_COUNT, .regimes = gdn_regime_names,                        \
    .exact_regimes = 1u << GDN_REGIME_TIES

/* Dimensions of SPEC §1.1-1.3; a stage that lacks one (no values) passes 1. */
typedef struct {
    size_t b, t, hg, h, k, v, bt;
} gdn_gen_shape;

/* k bf16 [B,T,Hg,K]: unit vectors (L2-normalised) per token and key head;
 * in the ties regime entries m/64, |m| <= 63. */
ug_status gdn_gen_keys(const gdn_gen_shape *s, gdn_regime r, gsl_rng *rng, ug_bf16 *k);

/* The per-token draws of every (batch, value head), in the order above. Any
 * output may be NULL (not stored); values are drawn only when v is given.
 *   g_raw f32 [B,T,H]  raw log-gates, each rounded to f32
 *   g     f32 [B,T,H]  chunk-local cumulative gates: the binary64 sum of the
 *                      raw draws since the chunk start, rounded once
 *   beta  f32 [B,T,H]  sigmoid draws
 *   v     bf16 [B,T,H,V] N(0,1), or U(0,1) in the logsigmoid regime
 * In the ties regime every gate is 0, every beta 1/2 and v is m/64, |m| <= 63. */
void gdn_gen_tokens(const gdn_gen_shape *s, gdn_regime r, gsl_rng *rng, float *g_raw, float *g,
                    float *beta, ug_bf16 *v);

/* L f32 [B,T,H,BT]: per chunk L[i][j] = beta_i exp(g_i - g_j) k_i.k_j for
 * i > j, 0 on and above the diagonal, from the rounded k, beta and g in
 * binary64, rounded once to f32 (what a scaled K·Kᵀ stage hands the solve). */
ug_status gdn_gen_scaled_kkt(const gdn_gen_shape *s, const ug_bf16 *k, const float *beta,
                             const float *g, float *l);

/* A f32 [B,T,H,BT]: per chunk (I + L)^-1 of the binary64 L above, solved in
 * binary64 by forward substitution and rounded once to f32. */
ug_status gdn_gen_solved_a(const gdn_gen_shape *s, const ug_bf16 *k, const float *beta,
                           const float *g, float *a);

/* A f32 [B,T,H,BT] of the ties regime: per chunk a unit lower-triangular
 * matrix with entries m/8, |m| <= 8, below the diagonal (dyadic, so that
 * w = A·bf16(k·beta) and u = A·bf16(v·beta) are exact in f32; not the
 * solve of any L, which gdn_recompute_wu does not need). */
void gdn_gen_dyadic_a(const gdn_gen_shape *s, gsl_rng *rng, float *a);

/* The WY products in binary64 from the binary64 A above, rounded once to
 * bf16: w bf16 [B,T,H,K] = A·bf16(k·beta·exp(g)), u bf16 [B,T,H,V] = A·bf16(v·beta). */
ug_status gdn_gen_wy(const gdn_gen_shape *s, const ug_bf16 *k, const ug_bf16 *v,
                     const float *beta, const float *g, ug_bf16 *w, ug_bf16 *u);

#endif
