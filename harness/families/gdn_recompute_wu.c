/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_recompute_wu (SPEC §1.1): parameters, buffers, input
 * generators and the adapters to kernels/gdn_recompute_wu.c and
 * ref/gdn_recompute_wu.c. */

#include "../../kernels/gdn_recompute_wu.h"
#include "../../ref/gdn_recompute_wu.h"
#include "../family.h"
#include "../gdn_inputs.h"
#include "../wild.h"

enum { P_B, P_T, P_HG, P_H, P_K, P_V, P_BT, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "Hg", "H", "K", "V", "BT"};

enum { BUF_K, BUF_V, BUF_BETA, BUF_G, BUF_A, BUF_W, BUF_U, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_K] = {"k", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_V] = {"v", UG_BF16, false, UG_DIMS(P_B, P_T, P_H, P_V)},
    [BUF_BETA] = {"beta", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_G] = {"g", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_A] = {"A", UG_F32, false, UG_DIMS(P_B, P_T, P_H, P_BT)},
    [BUF_W] = {"w", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_K)},
    [BUF_U] = {"u", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_V)},
};

static const ug_mutant_desc mutants[] = {
    {GDN_RECOMPUTE_WU_MUT_TRUNCATE_STAGE_CAST, "truncate_stage_cast", "staged bf16 casts truncate instead of rounding to nearest even", false},
    {GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED, "stage_cast_dropped", "staged operands kept in f32 (no bf16 cast)", false},
    {GDN_RECOMPUTE_WU_MUT_OUTPUT_TRUNCATED, "output_truncated", "outputs truncated to bf16 instead of rounded", false},
    {GDN_RECOMPUTE_WU_MUT_WRONG_GQA_HEAD, "wrong_gqa_head", "key head h % Hg instead of h / (H/Hg)", false},
    {GDN_RECOMPUTE_WU_MUT_ROW_OFF_BY_ONE, "row_off_by_one", "staged row j reads token row j+1 of the chunk", false},
    {GDN_RECOMPUTE_WU_MUT_EXP_AS_ONE_PLUS_G, "exp_as_one_plus_g", "exp(g) replaced by 1 + g", false},
    {GDN_RECOMPUTE_WU_MUT_DROPPED_LAST_TERM, "dropped_last_term", "the sum over j stops at BT-2", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static gdn_recompute_wu_params kernel_params(const ug_params *p)
{
    gdn_recompute_wu_params kp = {
        (uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_HG], (uint32_t)p->v[P_H],
        (uint32_t)p->v[P_K], (uint32_t)p->v[P_V], (uint32_t)p->v[P_BT],
    };
    return kp;
}

static gdn_recompute_wu_shape ref_shape(const ug_params *p)
{
    gdn_recompute_wu_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                                param(p, P_K), param(p, P_V), param(p, P_BT)};
    return s;
}

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    gdn_recompute_wu_params kp = kernel_params(p);
    return gdn_recompute_wu(&kp, &bufs[BUF_K], &bufs[BUF_V], &bufs[BUF_BETA], &bufs[BUF_G],
                            &bufs[BUF_A], &bufs[BUF_W], &bufs[BUF_U]);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_recompute_wu_shape s = ref_shape(p);
    UG_TRY(gdn_recompute_wu_reference(&s, bufs[BUF_K].data, bufs[BUF_V].data, bufs[BUF_BETA].data,
                                      bufs[BUF_G].data, bufs[BUF_A].data, model, mode, outs[0], outs[1]));
    /* The kernel sums whole chunk rows of A (zeros above the diagonal too). */
    const size_t bt = param(p, P_BT), hg = param(p, P_HG), h = param(p, P_H);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, false};
    const ug_wild_tensor in[] = {
        {&bufs[BUF_K], 0, hg, param(p, P_K), bt}, {&bufs[BUF_V], 0, h, param(p, P_V), bt},
        {&bufs[BUF_BETA], 0, h, 1, bt},           {&bufs[BUF_G], 0, h, 1, bt},
        {&bufs[BUF_A], 0, h, bt, bt},
    };
    const ug_wild_tensor out[] = {{&bufs[BUF_W], 0, h, param(p, P_K), bt}, {&bufs[BUF_U], 0, h, param(p, P_V), bt}};
    ug_wild_mark(&grid, in, sizeof in / sizeof in[0], out, outs, 2);
    return ug_ok();
}

/* The seed's host plan: 256 threads per threadgroup, ba_tile (BT x BT f32)
 * plus stage (BT x max(BV, BK) bf16). The shader strides every loop over
 * the threadgroup, so one thread suffices; its tiles need exactly the plan. */
static ug_status plan(const ug_params *p, ug_plan *out)
{
    uint64_t bt = param(p, P_BT), stage_width = GDN_RECOMPUTE_WU_BV > GDN_RECOMPUTE_WU_BK ? GDN_RECOMPUTE_WU_BV : GDN_RECOMPUTE_WU_BK;
    out->threads_planned = 256;
    out->threads_needed = 1;
    out->tg_bytes_planned = bt * bt * 4 + bt * stage_width * 2;
    out->tg_bytes_needed = bt * bt * sizeof(float) + bt * GDN_RECOMPUTE_WU_BK * sizeof(ug_bf16);
    return ug_ok();
}

/* ---- input generation: the shared GDN generators (harness/gdn_inputs.h) -- */

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    gdn_gen_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                       param(p, P_K), param(p, P_V), param(p, P_BT)};
    UG_TRY(gdn_gen_keys(&s, (gdn_regime)regime, rng, bufs[BUF_K].data));
    gdn_gen_tokens(&s, (gdn_regime)regime, rng, NULL, bufs[BUF_G].data, bufs[BUF_BETA].data, bufs[BUF_V].data);
    if (regime == GDN_REGIME_TIES) {
        gdn_gen_dyadic_a(&s, rng, bufs[BUF_A].data);
        return ug_ok();
    }
    return gdn_gen_solved_a(&s, bufs[BUF_K].data, bufs[BUF_BETA].data, bufs[BUF_G].data, bufs[BUF_A].data);
}

static const ug_family gdn_recompute_wu_family = {
    .name = "gdn_recompute_wu",
    .spec_section = "SPEC 1.1",
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_B, P_H, P_HG),
    GDN_REGIME_FIELDS_WITH_TIES,
    .plan = plan,
};
UG_REGISTER_FAMILY(gdn_recompute_wu_family);
