/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_chunk_cumsum (SPEC §1.3): parameters, buffers, input
 * generators (harness/gdn_inputs.c) and the adapters to
 * kernels/gdn_chunk_cumsum.c and ref/gdn_chunk_cumsum.c. The stage has no
 * seed and so no host dispatch plan to audit (SPEC §1.6 concerns the seeds). */
#include "../../kernels/gdn_chunk_cumsum.h"
#include "../../ref/gdn_chunk_cumsum.h"
#include "../family.h"
#include "../gdn_inputs.h"
#include "../wild.h"

enum { P_B, P_T, P_H, P_BT, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "H", "BT"};

enum { BUF_G_RAW, BUF_G, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_G_RAW] = {"g_raw", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_G] = {"g", UG_F32, true, UG_DIMS(P_B, P_T, P_H)},
};

static const ug_mutant_desc mutants[] = {
    {GDN_CHUNK_CUMSUM_MUT_NO_RESET, "no_reset", "the running sum is not restarted at chunk boundaries", false},
    {GDN_CHUNK_CUMSUM_MUT_EXCLUSIVE_SCAN, "exclusive_scan", "g[t] sums the rows before t only", false},
    {GDN_CHUNK_CUMSUM_MUT_CHUNK_OF_32, "chunk_of_32", "the sum restarts every 32 rows instead of every BT", false},
    {GDN_CHUNK_CUMSUM_MUT_VECTOR_TAIL_LANE_DROPPED, "vector_tail_lane_dropped",
     "the last head of a partly filled vector is never stored", true},
};

static const ug_mutant_desc variants[] = {
    {GDN_CHUNK_CUMSUM_LEGIT_TWO_LEVEL_SCAN, "two_level_scan", "sums within 16-row blocks plus the earlier blocks' totals (a GPU scan's order)", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    gdn_chunk_cumsum_params kp = {(uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_H],
                                  (uint32_t)p->v[P_BT]};
    return gdn_chunk_cumsum(&kp, &bufs[BUF_G_RAW], &bufs[BUF_G]);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_chunk_cumsum_shape s = {param(p, P_B), param(p, P_T), param(p, P_H), param(p, P_BT)};
    UG_TRY(gdn_chunk_cumsum_reference(&s, bufs[BUF_G_RAW].data, model, mode, outs[0]));
    /* A scan may sum a chunk in any order (blocked, tree). */
    const size_t bt = param(p, P_BT), h = param(p, P_H);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, false};
    const ug_wild_tensor in = {&bufs[BUF_G_RAW], 0, h, 1, bt}, out = {&bufs[BUF_G], 0, h, 1, bt};
    ug_wild_mark(&grid, &in, 1, &out, outs, 1);
    return ug_ok();
}

/* The raw log-gates of the gate regimes; the other draws are discarded. */
static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    gdn_gen_shape s = {param(p, P_B), param(p, P_T), 1, param(p, P_H), 1, 1, param(p, P_BT)};
    gdn_gen_tokens(&s, (gdn_regime)regime, rng, bufs[BUF_G_RAW].data, NULL, NULL, NULL);
    return ug_ok();
}

static const ug_family gdn_chunk_cumsum_family = {
    .name = "gdn_chunk_cumsum",
    .spec_section = "SPEC 1.3",
    .staged_is_exact = true,
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_B, P_H, -1),
    UG_FAMILY_VARIANT_FIELDS,
    .n_regimes = GDN_GATE_REGIMES, /* the gate regimes come first in gdn_regime_names */
    .regimes = gdn_regime_names,
};
UG_REGISTER_FAMILY(gdn_chunk_cumsum_family);
