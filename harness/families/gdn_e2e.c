/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_e2e (SPEC §1.2, §1.3): the chunked pipeline from raw
 * inputs to o and the final state (kernels/gdn_e2e.c), against the exact
 * recurrence in MPFR (ref/gdn_e2e.c), and stage by stage (harness/chain.h):
 * the intermediates a kernel hands over (g, L, A, w, u, h, v_new), o and
 * final_state each against its stage family's reference computed from the
 * kernel's own earlier intermediates. Inputs come from the shared realistic
 * generators (harness/gdn_inputs.h) plus L2-normalised queries and an
 * N(0, 0.5^2) initial state. No seed host plan exists for the composition
 * (its stages' plans are audited by their own families). */
#include <gsl/gsl_randist.h>
#include <stdlib.h>

#include "../../kernels/gdn_e2e.h"
#include "../../ref/gdn_e2e.h"
#include "../family.h"
#include "../gdn_inputs.h"
#include "../gen.h"
#include "../wild.h"

enum { P_B, P_T, P_HG, P_H, P_K, P_V, P_BT, P_HAS_H0, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "Hg", "H", "K", "V", "BT", "has_h0"};

/* The intermediates come after o and final_state: a library written for
 * the first eight buffers keeps working (and hands over nothing). */
enum { BUF_Q, BUF_K, BUF_V, BUF_BETA, BUF_G_RAW, BUF_H0, BUF_O, BUF_FINAL, BUF_G, BUF_L, BUF_A, BUF_W, BUF_U, BUF_H,
       BUF_V_NEW, N_BUFFERS };
enum { N_RECURRENCE_OUTPUTS = 2 }; /* o, final_state */
enum { DIM_NT = UG_DIM_DERIVED(0) };

/* h's chunk count as chunk_state, which writes it, counts it (BT = 0 is a
 * rejected shape). */
static size_t chunks(const ug_params *p) { return p->v[P_BT] > 0 ? (size_t)p->v[P_T] / (size_t)p->v[P_BT] : 0; }
static const ug_derived_dim derived_dims[] = {{"NT", chunks}};
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_Q] = {"q", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_K] = {"k", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_V] = {"v", UG_BF16, false, UG_DIMS(P_B, P_T, P_H, P_V)},
    [BUF_BETA] = {"beta", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_G_RAW] = {"g_raw", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_H0] = {"h0", UG_F32, false, UG_DIMS(P_B, P_H, P_K, P_V), UG_ONLY_IF({P_HAS_H0, UG_IF_SET})},
    [BUF_O] = {"o", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_V)},
    [BUF_FINAL] = {"final_state", UG_F32, true, UG_DIMS(P_B, P_H, P_K, P_V)},
    [BUF_G] = {"g", UG_F32, true, UG_DIMS(P_B, P_T, P_H), .optional = true},
    [BUF_L] = {"L", UG_F32, true, UG_DIMS(P_B, P_T, P_H, P_BT), .optional = true},
    [BUF_A] = {"A", UG_F32, true, UG_DIMS(P_B, P_T, P_H, P_BT), .optional = true},
    [BUF_W] = {"w", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_K), .optional = true},
    [BUF_U] = {"u", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_V), .optional = true},
    [BUF_H] = {"h", UG_BF16, true, UG_DIMS(P_B, DIM_NT, P_H, P_V, P_K), .optional = true},
    [BUF_V_NEW] = {"v_new", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_V), .optional = true},
};

/* The chunk_o stage's scale: the pipeline's f32 RN(1/sqrt(K)). */
static double stage_param(const ug_params *p, const char *name __attribute__((unused)))
{
    return (double)ug_f32_bits(gdn_e2e_reference_scale((size_t)p->v[P_K]));
}

static const ug_stage_desc stages[] = {
    {"gdn_chunk_cumsum", {{0}}, NULL},
    {"gdn_chunk_scaled_kkt", {{0}}, NULL},
    {"gdn_solve_tril", {{0}}, NULL},
    {"gdn_recompute_wu", {{0}}, NULL},
    {"gdn_chunk_state", {{0}}, NULL},
    {"gdn_chunk_o", {{"v", "v_new"}}, stage_param},
};

static const ug_mutant_desc mutants[] = {
    {GDN_E2E_MUT_RAW_GATES, "raw_gates", "the stages read the raw gates where they expect the chunk cumsum G", false},
    {GDN_E2E_MUT_SOLVE_SKIPPED, "solve_skipped", "A = I instead of (I + L)^-1: the triangular solve left out", false},
    {GDN_E2E_MUT_H0_IGNORED, "h0_ignored", "the state starts from 0 whatever h0 says", false},
    {GDN_E2E_MUT_W_U_SWAPPED, "w_u_swapped", "chunk_state gets u as w and w as u", false},
    {GDN_E2E_MUT_V_FOR_V_NEW, "v_for_v_new", "chunk_o reads the raw values v instead of v_new", false},
    {GDN_E2E_MUT_FINAL_ONE_CHUNK_EARLY, "final_one_chunk_early",
     "final_state is the state at the start of the last chunk", false},
    {GDN_E2E_MUT_Q_K_SWAPPED, "q_k_swapped", "chunk_o gets k as q and q as k", false},
    {GDN_E2E_MUT_BETA_AFTER_CAST, "beta_after_cast",
     "recompute_wu gets A·diag(beta) and beta = 1: beta applied after the bf16 casts", false},
    {GDN_E2E_MUT_WRONG_KEY_HEAD, "wrong_key_head", "chunk_state reads key head (kh + 1) mod Hg", false},
    {GDN_E2E_MUT_BF16_PARTIAL_SUMS, "bf16_partial_sums", "K·Kᵀ running sums rounded to bf16 every 16 terms", false},
    {GDN_E2E_MUT_L_THROUGH_BF16, "l_through_bf16", "solve_tril gets L rounded to bf16", false},
    {GDN_E2E_MUT_SCALE_IN_BF16_Q, "scale_in_bf16_q",
     "chunk_o gets bf16(q * scale) and scale 1: queries pre-scaled in bf16, not scaled in f32 as SPEC has it", false},
};

/* A legitimate rewrite (kernels/gdn_e2e.h, ids 101..): the gate must pass it. */
static const ug_mutant_desc variants[] = {
    {GDN_E2E_LEGIT_FUSED, "fused", "hands over no intermediate (a fused kernel): o and final_state only", false},
    {GDN_E2E_LEGIT_KKT_SOLVE_FUSED, "kkt_solve_fused", "hands over every intermediate but L and A", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    const gdn_e2e_params kp = {(uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_HG],
                               (uint32_t)p->v[P_H], (uint32_t)p->v[P_K], (uint32_t)p->v[P_V],
                               (uint32_t)p->v[P_BT], (uint32_t)p->v[P_HAS_H0]};
    const gdn_e2e_stages handed = {&bufs[BUF_G], &bufs[BUF_L], &bufs[BUF_A], &bufs[BUF_W],
                                   &bufs[BUF_U], &bufs[BUF_H], &bufs[BUF_V_NEW]};
    return gdn_e2e(&kp, &bufs[BUF_Q], &bufs[BUF_K], &bufs[BUF_V], &bufs[BUF_BETA], &bufs[BUF_G_RAW],
                   &bufs[BUF_H0], &bufs[BUF_O], &bufs[BUF_FINAL], &handed);
}

/* ---- reference ------------------------------------------------------------------ */

static ug_status exact_recurrence(const ug_params *p, const ug_buf *bufs, ug_ref_value *const *outs)
{
    const gdn_e2e_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                             param(p, P_K), param(p, P_V), param(p, P_HAS_H0) != 0};
    return gdn_e2e_reference(&s, GDN_E2E_REF_PREC, gdn_e2e_reference_scale(s.k), bufs[BUF_Q].data,
                             bufs[BUF_K].data, bufs[BUF_V].data, bufs[BUF_BETA].data, bufs[BUF_G_RAW].data,
                             bufs[BUF_H0].data, outs[0], outs[1]);
}

/* The pipeline's chunk tiles, and its state carries a chunk's wild inputs
 * into every later chunk of the head. */
static void mark_wild(const ug_params *p, const ug_buf *bufs, ug_ref_value *const *outs)
{
    const size_t bt = param(p, P_BT), hg = param(p, P_HG), h = param(p, P_H), k = param(p, P_K), v = param(p, P_V);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, true};
    const ug_wild_tensor in[] = {
        {&bufs[BUF_Q], 0, hg, k, bt},      {&bufs[BUF_K], 0, hg, k, bt},     {&bufs[BUF_V], 0, h, v, bt},
        {&bufs[BUF_BETA], 0, h, 1, bt},    {&bufs[BUF_G_RAW], 0, h, 1, bt},  {&bufs[BUF_H0], 0, h, k * v, 0},
    };
    const ug_wild_tensor out[] = {{&bufs[BUF_O], 0, h, v, bt}, {&bufs[BUF_FINAL], 0, h, k * v, 0}};
    ug_wild_mark(&grid, in, sizeof in / sizeof in[0], out, outs, N_RECURRENCE_OUTPUTS);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    (void)model; /* every bound is +inf (ref/gdn_e2e.h): no arithmetic to model */
    (void)mode;  /* both modes are the same function (ref/gdn_e2e.h); the runner asks for the exact one alone,
                    the staged mode's o and final_state being its stages' (harness/chain.h) */
    UG_TRY(exact_recurrence(p, bufs, outs));
    mark_wild(p, bufs, outs);
    return ug_ok();
}

/* ---- input generation ------------------------------------------------------------ */

/* Keys, gates, betas and values of the regime from the shared generators
 * (raw gates: the pipeline forms the cumsum itself), then queries (unit
 * vectors per token and key head), then h0. */
static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    const gdn_gen_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                             param(p, P_K), param(p, P_V), param(p, P_BT)};
    UG_TRY(gdn_gen_keys(&s, (gdn_regime)regime, rng, bufs[BUF_K].data));
    gdn_gen_tokens(&s, (gdn_regime)regime, rng, bufs[BUF_G_RAW].data, NULL, bufs[BUF_BETA].data, bufs[BUF_V].data);
    double *query = malloc(s.k * sizeof *query);
    if (!query) return ug_fail(UG_ENOMEM, "gdn_e2e generator: out of memory (K=%zu)", s.k);
    ug_bf16 *q = bufs[BUF_Q].data;
    for (size_t row = 0; row < s.b * s.t * s.hg; row++) {
        ug_gen_unit_vector(rng, NULL, 0, s.k, query);
        ug_gen_to_bf16(query, s.k, q + row * s.k);
    }
    free(query);
    float *h0 = bufs[BUF_H0].data;
    for (size_t i = 0; i < bufs[BUF_H0].count; i++) h0[i] = (float)gsl_ran_gaussian(rng, 0.5);
    return ug_ok();
}

static const ug_family gdn_e2e_family = {
    .name = "gdn_e2e",
    .spec_section = "SPEC 1.3",
    UG_FAMILY_COMMON_FIELDS,
    UG_FAMILY_DERIVED_DIM_FIELDS,
    UG_SLICE_BY(P_B, P_H, P_HG),
    .release = gdn_e2e_release_scratch,
    .n_stages = sizeof stages / sizeof stages[0],
    .stages = stages,
    UG_FAMILY_VARIANT_FIELDS,
    GDN_REGIME_FIELDS,
};
UG_REGISTER_FAMILY(gdn_e2e_family);
