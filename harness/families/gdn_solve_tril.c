/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_solve_tril (SPEC §1.3): parameters, buffers, input
 * generators (harness/gdn_inputs.c) and the adapters to
 * kernels/gdn_solve_tril.c and ref/gdn_solve_tril.c. The stage has no seed
 * and so no host dispatch plan to audit. */
#include <stdlib.h>

#include "../../kernels/gdn_solve_tril.h"
#include "../../ref/gdn_solve_tril.h"
#include "../family.h"
#include "../gdn_inputs.h"
#include "../wild.h"

enum { P_B, P_T, P_H, P_BT, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "H", "BT"};

enum { BUF_L, BUF_A, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_L] = {"L", UG_F32, false, UG_DIMS(P_B, P_T, P_H, P_BT)},
    [BUF_A] = {"A", UG_F32, true, UG_DIMS(P_B, P_T, P_H, P_BT)},
};

/* L is the scaled K·Kᵀ of keys of this head dimension (the models' 128). */
enum { KEY_DIM = 128 };

static const ug_mutant_desc mutants[] = {
    {GDN_SOLVE_TRIL_MUT_SIGN_ERROR, "sign_error", "computes (I - L)^-1: the substitution adds instead of subtracting", false},
    {GDN_SOLVE_TRIL_MUT_SUBSTITUTION_FROM_J1, "substitution_from_j1", "each sum starts at m = j + 1 (off by one: L[i][j] A[j][j] lost)", false},
    {GDN_SOLVE_TRIL_MUT_DROPPED_LAST_TERM, "dropped_last_term", "each sum stops at m = i - 2 (off by one: L[i][i-1] A[i-1][j] lost)", false},
    {GDN_SOLVE_TRIL_MUT_VECTOR_MASK_OFF_BY_ONE, "vector_mask_off_by_one",
     "a term m inside its column block masks lanes j < m, losing L[i][m] A[m][m]", true},
};

static const ug_mutant_desc variants[] = {
    {GDN_SOLVE_TRIL_LEGIT_COLUMN_ORIENTED, "column_oriented", "column by column, products and sums rounded separately (no FMA)", false},
    {GDN_SOLVE_TRIL_LEGIT_REVERSED_SUMS, "reversed_sums", "each row's sum taken in decreasing m", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    gdn_solve_tril_params kp = {(uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_H], (uint32_t)p->v[P_BT]};
    return gdn_solve_tril(&kp, &bufs[BUF_L], &bufs[BUF_A]);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_solve_tril_shape s = {param(p, P_B), param(p, P_T), param(p, P_H), param(p, P_BT)};
    UG_TRY(gdn_solve_tril_reference(&s, bufs[BUF_L].data, model, mode, outs[0]));
    /* A kernel may solve by blocks, reaching a chunk's whole tile. */
    const size_t bt = param(p, P_BT), h = param(p, P_H);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, false};
    const ug_wild_tensor in = {&bufs[BUF_L], 0, h, bt, bt}, out = {&bufs[BUF_A], 0, h, bt, bt};
    ug_wild_mark(&grid, &in, 1, &out, outs, 1);
    return ug_ok();
}

/* L as the scaled K·Kᵀ stage would hand it over: from realistic keys (one
 * key head per value head), betas and chunk-cumulative gates of the regime. */
static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    gdn_gen_shape s = {param(p, P_B), param(p, P_T), param(p, P_H), param(p, P_H), KEY_DIM, 1, param(p, P_BT)};
    const size_t tokens = s.b * s.t * s.h;
    ug_bf16 *k = malloc(tokens * KEY_DIM * sizeof *k);
    float *beta = malloc(tokens * sizeof *beta), *g = malloc(tokens * sizeof *g);
    ug_status st = k && beta && g ? ug_ok()
                                  : ug_fail(UG_ENOMEM, "gdn_solve_tril generator: out of memory (%zu tokens)", tokens);
    if (ug_is_ok(&st)) st = gdn_gen_keys(&s, (gdn_regime)regime, rng, k);
    if (ug_is_ok(&st)) {
        gdn_gen_tokens(&s, (gdn_regime)regime, rng, NULL, g, beta, NULL);
        st = gdn_gen_scaled_kkt(&s, k, beta, g, bufs[BUF_L].data);
    }
    free(k);
    free(beta);
    free(g);
    return st;
}

static const ug_family gdn_solve_tril_family = {
    .name = "gdn_solve_tril",
    .spec_section = "SPEC 1.3",
    .staged_is_exact = true,
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_B, P_H, -1),
    UG_FAMILY_VARIANT_FIELDS,
    GDN_REGIME_FIELDS,
};
UG_REGISTER_FAMILY(gdn_solve_tril_family);
