/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_chunk_state (SPEC §1.3): parameters, buffers, input
 * generators (harness/gdn_inputs.c) and the adapters to
 * kernels/gdn_chunk_state.c and ref/gdn_chunk_state.c. The stage has no seed
 * and so no host dispatch plan to audit. */
#include <gsl/gsl_randist.h>
#include <stdlib.h>

#include "../../kernels/gdn_chunk_state.h"
#include "../../ref/gdn_chunk_state.h"
#include "../family.h"
#include "../gdn_inputs.h"
#include "../gen.h"
#include "../wild.h"

enum { P_B, P_T, P_HG, P_H, P_K, P_V, P_BT, P_HAS_H0, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "Hg", "H", "K", "V", "BT", "has_h0"};

/* NT = T / BT (the kernel accepts only whole chunks); 0 for the rejected BT = 0. */
static size_t chunks(const ug_params *p)
{
    size_t t = (size_t)p->v[P_T], bt = (size_t)p->v[P_BT];
    return bt ? t / bt : 0;
}

enum { DIM_NT = UG_DIM_DERIVED(0) };
static const ug_derived_dim derived_dims[] = {{"NT", chunks}};

enum { BUF_K, BUF_W, BUF_U, BUF_G, BUF_H0, BUF_H, BUF_V_NEW, BUF_FINAL, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_K] = {"k", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_W] = {"w", UG_BF16, false, UG_DIMS(P_B, P_T, P_H, P_K)},
    [BUF_U] = {"u", UG_BF16, false, UG_DIMS(P_B, P_T, P_H, P_V)},
    [BUF_G] = {"g", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_H0] = {"h0", UG_F32, false, UG_DIMS(P_B, P_H, P_K, P_V), UG_ONLY_IF({P_HAS_H0, UG_IF_SET})},
    [BUF_H] = {"h", UG_BF16, true, UG_DIMS(P_B, DIM_NT, P_H, P_V, P_K)},
    [BUF_V_NEW] = {"v_new", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_V)},
    [BUF_FINAL] = {"final_state", UG_F32, true, UG_DIMS(P_B, P_H, P_K, P_V)},
};

static const ug_mutant_desc mutants[] = {
    {GDN_CHUNK_STATE_MUT_MISSING_DECAY, "missing_decay", "the state is not decayed by exp(G_last) between chunks", false},
    {GDN_CHUNK_STATE_MUT_STATE_CAST_DROPPED, "state_cast_dropped", "w.S uses the f32 state instead of bf16(S)", false},
    {GDN_CHUNK_STATE_MUT_H_K_MAJOR, "h_k_major", "h stored K-major [B,NT,H,K,V] instead of V-major", false},
    {GDN_CHUNK_STATE_MUT_GATE_SIGN_FLIPPED, "gate_sign_flipped", "v decayed by exp(g - G_last) instead of exp(G_last - g)", false},
};

static const ug_mutant_desc variants[] = {
    {GDN_CHUNK_STATE_LEGIT_REVERSED_SUMS, "reversed_sums", "w.bf16(S) and K^T.staged summed backward with separate products (no FMA)", false},
    {GDN_CHUNK_STATE_LEGIT_UNFUSED_UPDATE, "unfused_update", "exp(G_last) S rounded before K^T.staged is added", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    gdn_chunk_state_params kp = {(uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_HG],
                                 (uint32_t)p->v[P_H], (uint32_t)p->v[P_K], (uint32_t)p->v[P_V],
                                 (uint32_t)p->v[P_BT], (uint32_t)p->v[P_HAS_H0]};
    return gdn_chunk_state(&kp, &bufs[BUF_K], &bufs[BUF_W], &bufs[BUF_U], &bufs[BUF_G], &bufs[BUF_H0],
                           &bufs[BUF_H], &bufs[BUF_V_NEW], &bufs[BUF_FINAL]);
}

static gdn_chunk_state_shape ref_shape(const ug_params *p)
{
    gdn_chunk_state_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                               param(p, P_K), param(p, P_V), param(p, P_BT), param(p, P_HAS_H0) != 0};
    return s;
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_chunk_state_shape s = ref_shape(p);
    UG_TRY(gdn_chunk_state_reference(&s, bufs[BUF_K].data, bufs[BUF_W].data, bufs[BUF_U].data, bufs[BUF_G].data,
                                     bufs[BUF_H0].data, model, mode, outs[0], outs[1], outs[2]));
    /* Chunk tiles, and the state carries a chunk's wild inputs into every
     * later chunk of the head (h[c] holds the state at the start of c). */
    const size_t bt = param(p, P_BT), h = param(p, P_H), k = param(p, P_K), v = param(p, P_V);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, true};
    const ug_wild_tensor in[] = {
        {&bufs[BUF_K], 0, param(p, P_HG), k, bt}, {&bufs[BUF_W], 0, h, k, bt}, {&bufs[BUF_U], 0, h, v, bt},
        {&bufs[BUF_G], 0, h, 1, bt},              {&bufs[BUF_H0], 0, h, k * v, 0},
    };
    const ug_wild_tensor out[] = {
        {&bufs[BUF_H], 0, h, v * k, 1}, {&bufs[BUF_V_NEW], 0, h, v, bt}, {&bufs[BUF_FINAL], 0, h, k * v, 0},
    };
    ug_wild_mark(&grid, in, sizeof in / sizeof in[0], out, outs, 3);
    return ug_ok();
}

/* Realistic keys, gates, betas and values of the regime; w and u are their
 * WY products (the binary64 A = (I + L)^-1 applied to the staged operands),
 * as gdn_recompute_wu would hand them over. h0 is a state of the scale a
 * long sequence leaves behind: N(0, 0.5^2) entries. */
/* The ties regime's grids (docs/ties.md): with |k| <= 1/8,
 * |w| <= 1/64, |u| <= 63/64 and |h0| < 2 on grids of 2^-3, 2^-6, 2^-6 and
 * 2^-8, every f32 intermediate of the first chunk is a multiple of 2^-17
 * below 2^7 (K <= 256): exact in any order. Later chunks get w = u = 0, so
 * the state stays exact; only the stores round (h = bf16(S), v_new). */
static void generate_ties(const gdn_gen_shape *s, gsl_rng *rng, ug_buf *bufs)
{
    ug_gen_grid_fill(rng, 1, 3, &bufs[BUF_K]);
    ug_gen_grid_fill(rng, 1, 6, &bufs[BUF_W]);
    ug_gen_grid_fill(rng, 63, 6, &bufs[BUF_U]);
    ug_gen_grid_fill(rng, 0, 0, &bufs[BUF_G]);
    ug_gen_grid_fill(rng, 511, 8, &bufs[BUF_H0]);
    ug_bf16 *w = bufs[BUF_W].data, *u = bufs[BUF_U].data;
    for (size_t b = 0; b < s->b; b++)
        for (size_t t = s->bt; t < s->t; t++)
            for (size_t h = 0; h < s->h; h++) {
                const size_t row = (b * s->t + t) * s->h + h;
                for (size_t i = 0; i < s->k; i++) w[row * s->k + i] = 0;
                for (size_t i = 0; i < s->v; i++) u[row * s->v + i] = 0;
            }
}

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    gdn_gen_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                       param(p, P_K), param(p, P_V), param(p, P_BT)};
    if (regime == GDN_REGIME_TIES) {
        generate_ties(&s, rng, bufs);
        return ug_ok();
    }
    const size_t tokens = s.b * s.t * s.h;
    ug_bf16 *v = malloc(tokens * s.v * sizeof *v);
    float *beta = malloc(tokens * sizeof *beta);
    ug_status st = v && beta ? ug_ok()
                             : ug_fail(UG_ENOMEM, "gdn_chunk_state generator: out of memory (%zu tokens)", tokens);
    if (ug_is_ok(&st)) st = gdn_gen_keys(&s, (gdn_regime)regime, rng, bufs[BUF_K].data);
    if (ug_is_ok(&st)) {
        gdn_gen_tokens(&s, (gdn_regime)regime, rng, NULL, bufs[BUF_G].data, beta, v);
        st = gdn_gen_wy(&s, bufs[BUF_K].data, v, beta, bufs[BUF_G].data, bufs[BUF_W].data, bufs[BUF_U].data);
    }
    float *h0 = bufs[BUF_H0].data;
    for (size_t i = 0; ug_is_ok(&st) && i < bufs[BUF_H0].count; i++) h0[i] = (float)gsl_ran_gaussian(rng, 0.5);
    free(v);
    free(beta);
    return st;
}

static const ug_family gdn_chunk_state_family = {
    .name = "gdn_chunk_state",
    .spec_section = "SPEC 1.3",
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_B, P_H, P_HG),
    UG_FAMILY_VARIANT_FIELDS,
    UG_FAMILY_DERIVED_DIM_FIELDS,
    GDN_REGIME_FIELDS_WITH_TIES,
};
UG_REGISTER_FAMILY(gdn_chunk_state_family);
