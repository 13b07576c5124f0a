/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_chunk_scaled_kkt (SPEC §1.3): parameters, buffers, input
 * generators (harness/gdn_inputs.c) and the adapters to
 * kernels/gdn_chunk_scaled_kkt.c and ref/gdn_chunk_scaled_kkt.c. The stage
 * has no seed and so no host dispatch plan to audit. */
#include "../../kernels/gdn_chunk_scaled_kkt.h"
#include "../../ref/gdn_chunk_scaled_kkt.h"
#include "../family.h"
#include "../gdn_inputs.h"
#include "../wild.h"

enum { P_B, P_T, P_HG, P_H, P_K, P_BT, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "Hg", "H", "K", "BT"};

enum { BUF_K, BUF_BETA, BUF_G, BUF_L, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_K] = {"k", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_BETA] = {"beta", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_G] = {"g", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_L] = {"L", UG_F32, true, UG_DIMS(P_B, P_T, P_H, P_BT)},
};

static const ug_mutant_desc mutants[] = {
    {GDN_CHUNK_SCALED_KKT_MUT_MASK_INCLUDES_DIAGONAL, "mask_includes_diagonal", "the mask keeps i >= j (diagonal beta |k|^2 written)", false},
    {GDN_CHUNK_SCALED_KKT_MUT_GATE_SIGN_FLIPPED, "gate_sign_flipped", "exp(g_s - g_t) instead of exp(g_t - g_s)", false},
    {GDN_CHUNK_SCALED_KKT_MUT_BETA_OF_COLUMN, "beta_of_column", "scales by beta of row s instead of row t", false},
};

static const ug_mutant_desc variants[] = {
    {GDN_CHUNK_SCALED_KKT_LEGIT_REVERSED_DOT, "reversed_dot", "every dot product summed backward with separate products (no FMA)", false},
    {GDN_CHUNK_SCALED_KKT_LEGIT_BETA_LAST, "beta_last", "beta (exp dot) instead of (beta exp) dot", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    gdn_chunk_scaled_kkt_params kp = {(uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_HG],
                                      (uint32_t)p->v[P_H], (uint32_t)p->v[P_K], (uint32_t)p->v[P_BT]};
    return gdn_chunk_scaled_kkt(&kp, &bufs[BUF_K], &bufs[BUF_BETA], &bufs[BUF_G], &bufs[BUF_L]);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_chunk_scaled_kkt_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG),
                                    param(p, P_H), param(p, P_K), param(p, P_BT)};
    UG_TRY(gdn_chunk_scaled_kkt_reference(&s, bufs[BUF_K].data, bufs[BUF_BETA].data, bufs[BUF_G].data,
                                          model, mode, outs[0]));
    /* The kernel forms the whole BT x BT tile, the masked part too. */
    const size_t bt = param(p, P_BT), h = param(p, P_H);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, false};
    const ug_wild_tensor in[] = {
        {&bufs[BUF_K], 0, param(p, P_HG), param(p, P_K), bt}, {&bufs[BUF_BETA], 0, h, 1, bt}, {&bufs[BUF_G], 0, h, 1, bt},
    };
    const ug_wild_tensor out = {&bufs[BUF_L], 0, h, bt, bt};
    ug_wild_mark(&grid, in, sizeof in / sizeof in[0], &out, outs, 1);
    return ug_ok();
}

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    gdn_gen_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H), param(p, P_K), 1, param(p, P_BT)};
    UG_TRY(gdn_gen_keys(&s, (gdn_regime)regime, rng, bufs[BUF_K].data));
    gdn_gen_tokens(&s, (gdn_regime)regime, rng, NULL, bufs[BUF_G].data, bufs[BUF_BETA].data, NULL);
    return ug_ok();
}

static const ug_family gdn_chunk_scaled_kkt_family = {
    .name = "gdn_chunk_scaled_kkt",
    .spec_section = "SPEC 1.3",
    .staged_is_exact = true,
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_B, P_H, P_HG),
    UG_FAMILY_VARIANT_FIELDS,
    GDN_REGIME_FIELDS_WITH_TIES,
};
UG_REGISTER_FAMILY(gdn_chunk_scaled_kkt_family);
