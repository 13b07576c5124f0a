/* SPDX-License-Identifier: MIT */
/* Descriptor of gdn_chunk_o (SPEC §1.2): parameters, buffers, input
 * generators and the adapters to kernels/gdn_chunk_o.c and ref/gdn_chunk_o.c.
 *
 * Sweep parameters are integers, so the f32 `scale` travels as its bit
 * pattern, `scale_bits` (1035273459 = 0x3DB504F3 = 1/sqrt(128); 2139095040 =
 * +inf and 2143289344 = NaN for the rejected cases). */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>

#include "../../kernels/gdn_chunk_o.h"
#include "../../ref/gdn_chunk_o.h"
#include "../family.h"
#include "../gen.h"
#include "../wild.h"

enum { P_B, P_T, P_HG, P_H, P_K, P_V, P_BT, P_SCALE_BITS, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "Hg", "H", "K", "V", "BT", "scale_bits"};

/* NT = ceil(T / BT), as the seed's num_chunks(); 0 for the rejected BT = 0. */
static size_t chunks(const ug_params *p)
{
    size_t t = (size_t)p->v[P_T], bt = (size_t)p->v[P_BT];
    return bt ? t / bt + (t % bt != 0) : 0;
}

enum { DIM_NT = UG_DIM_DERIVED(0) };
static const ug_derived_dim derived_dims[] = {{"NT", chunks}};

enum { BUF_Q, BUF_K, BUF_V, BUF_H, BUF_G, BUF_O, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_Q] = {"q", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_K] = {"k", UG_BF16, false, UG_DIMS(P_B, P_T, P_HG, P_K)},
    [BUF_V] = {"v", UG_BF16, false, UG_DIMS(P_B, P_T, P_H, P_V)},
    [BUF_H] = {"h", UG_BF16, false, UG_DIMS(P_B, DIM_NT, P_H, P_V, P_K)},
    [BUF_G] = {"g", UG_F32, false, UG_DIMS(P_B, P_T, P_H)},
    [BUF_O] = {"o", UG_BF16, true, UG_DIMS(P_B, P_T, P_H, P_V)},
};

/* Input regimes (SPEC §1.3), named as in gdn_recompute_wu: beta only enters
 * through the state h, which the generator runs from the same inputs. */
enum { R_REALISTIC, R_LOGSIGMOID, R_GATES_ZERO, R_STRONG_DECAY, R_BETA_NEAR_ONE, R_PARALLEL_KEYS, R_TIES, N_REGIMES };
static const char *const regimes[N_REGIMES] = {
    "realistic", "logsigmoid", "gates_zero", "strong_decay", "beta_near_one", "parallel_keys", "ties",
};

/* The gate must catch each of these; the legitimate variants (ids 101..,
 * kernels/gdn_chunk_o.h) are not listed, as the gate must pass them. */
static const ug_mutant_desc mutants[] = {
    {GDN_CHUNK_O_MUT_STRICT_MASK, "strict_mask", "causal mask i > j: the diagonal of the attention tile dropped", false},
    {GDN_CHUNK_O_MUT_ATTENTION_UNROUNDED, "attention_unrounded", "attention tile Q kept in f32 (no bf16 rounding)", false},
    {GDN_CHUNK_O_MUT_H_K_MAJOR, "h_k_major", "state h read K-major [K][V] instead of V-major [V][K]", false},
    {GDN_CHUNK_O_MUT_STATE_NEXT_CHUNK, "state_next_chunk", "chunk boundary: chunk c reads h[c+1] (its end state) instead of h[c]", false},
    {GDN_CHUNK_O_MUT_STATE_DECAY_MISSING, "state_decay_missing", "state term without its decay exp(g_t)", false},
    {GDN_CHUNK_O_MUT_DECAY_SIGN, "decay_sign", "attention decay exp(g_s - g_t) instead of exp(g_t - g_s)", false},
    {GDN_CHUNK_O_MUT_STATE_UNSCALED, "state_unscaled", "scale applied to the intra-chunk term only", false},
    {GDN_CHUNK_O_MUT_WRONG_GQA_HEAD, "wrong_gqa_head", "key head h % Hg instead of h / (H/Hg)", false},
};

static const ug_mutant_desc variants[] = {
    {GDN_CHUNK_O_LEGIT_SCALE_ONCE, "scale_once", "bf16((P + sum_j Q v) * scale): one scale instead of two", false},
    {GDN_CHUNK_O_LEGIT_REVERSED_ORDER, "reversed_order", "every dot product summed in decreasing index order", false},
    {GDN_CHUNK_O_LEGIT_FUSED_EPILOGUE, "fused_epilogue", "bf16(fma(P, scale, (sum_j Q v) * scale))", false},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static float scale_of(const ug_params *p) { return ug_f32_from_bits((uint32_t)p->v[P_SCALE_BITS]); }

static gdn_chunk_o_shape ref_shape(const ug_params *p)
{
    gdn_chunk_o_shape s = {param(p, P_B), param(p, P_T), param(p, P_HG), param(p, P_H),
                           param(p, P_K), param(p, P_V), param(p, P_BT)};
    return s;
}

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    gdn_chunk_o_params kp = {
        (uint32_t)p->v[P_B], (uint32_t)p->v[P_T], (uint32_t)p->v[P_HG], (uint32_t)p->v[P_H],
        (uint32_t)p->v[P_K], (uint32_t)p->v[P_V], (uint32_t)p->v[P_BT], scale_of(p),
    };
    return gdn_chunk_o(&kp, &bufs[BUF_Q], &bufs[BUF_K], &bufs[BUF_V], &bufs[BUF_H], &bufs[BUF_G],
                       &bufs[BUF_O]);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_chunk_o_shape s = ref_shape(p);
    UG_TRY(gdn_chunk_o_reference(&s, scale_of(p), bufs[BUF_Q].data, bufs[BUF_K].data, bufs[BUF_V].data,
                                 bufs[BUF_H].data, bufs[BUF_G].data, model, mode, outs[0]));
    /* The kernel forms whole BT x BT tiles (the masked upper triangle too). */
    const size_t bt = param(p, P_BT), hg = param(p, P_HG), h = param(p, P_H), k = param(p, P_K), v = param(p, P_V);
    const ug_wild_grid grid = {param(p, P_B), param(p, P_T) / bt, h, false};
    const ug_wild_tensor in[] = {
        {&bufs[BUF_Q], 0, hg, k, bt}, {&bufs[BUF_K], 0, hg, k, bt}, {&bufs[BUF_V], 0, h, v, bt},
        {&bufs[BUF_H], 0, h, v * k, 1}, {&bufs[BUF_G], 0, h, 1, bt},
    };
    const ug_wild_tensor out = {&bufs[BUF_O], 0, h, v, bt};
    ug_wild_mark(&grid, in, sizeof in / sizeof in[0], &out, outs, 1);
    return ug_ok();
}

/* The seed's host plan: 256 threads per threadgroup and BT*BT*2 bytes, the
 * bf16 attention tile, which every simdgroup reads whole rows of for Q v.
 * The algorithm needs exactly that tile (q, k, h and v fragments are loaded
 * into registers) and at least one simdgroup of 32 threads, the unit a
 * simdgroup_matrix MMA runs on; the plan's 8 simdgroups split the 64 x 32
 * output tile's 32 fragments four each. */
static ug_status plan(const ug_params *p, ug_plan *out)
{
    uint64_t bt = param(p, P_BT);
    out->threads_planned = 256;
    out->threads_needed = 32;
    out->tg_bytes_planned = bt * bt * 2;
    out->tg_bytes_needed = bt * bt * sizeof(ug_bf16);
    return ug_ok();
}

/* ---- input generation ------------------------------------------------- */

typedef struct {
    gdn_chunk_o_shape s;
    size_t regime;
    gsl_rng *rng;
    ug_buf *bufs;
} gen_ctx;

static size_t at3(const gdn_chunk_o_shape *s, size_t b, size_t t, size_t h)
{
    return (b * s->t + t) * s->h + h;
}

/* Queries and keys: unit vectors per (token, key head). In the
 * parallel-keys regime every key of a chunk is one base direction plus 1e-3
 * noise and every query lies near it too (0.1 noise), so the attention
 * operands approach 1 and the state is nearly rank one. */
static void generate_queries_keys(gen_ctx *c, double *scratch)
{
    const gdn_chunk_o_shape *s = &c->s;
    ug_bf16 *q = c->bufs[BUF_Q].data, *k = c->bufs[BUF_K].data;
    double *base = scratch + s->k;
    const bool parallel = c->regime == R_PARALLEL_KEYS;
    for (size_t b = 0; b < s->b; b++)
        for (size_t kh = 0; kh < s->hg; kh++)
            for (size_t t = 0; t < s->t; t++) {
                size_t at = ((b * s->t + t) * s->hg + kh) * s->k;
                if (parallel && t % s->bt == 0) ug_gen_unit_vector(c->rng, NULL, 0, s->k, base);
                ug_gen_unit_vector(c->rng, parallel ? base : NULL, 1e-3, s->k, scratch);
                ug_gen_to_bf16(scratch, s->k, k + at);
                ug_gen_unit_vector(c->rng, parallel ? base : NULL, 0.1, s->k, scratch);
                ug_gen_to_bf16(scratch, s->k, q + at);
            }
}

static double draw_beta(gen_ctx *c)
{
    double x = gsl_ran_gaussian(c->rng, 1.0);
    return ug_gen_sigmoid(c->regime == R_BETA_NEAR_ONE ? x + 7.0 : x);
}

/* Raw log-gate of one token; ~10% exactly zero (decay 1) in the model regimes. */
static double draw_gate(gen_ctx *c, double a_log, double dt_bias, double divisor)
{
    switch (c->regime) {
    case R_GATES_ZERO: return 0.0;
    case R_STRONG_DECAY: return -gsl_ran_flat(c->rng, 2.0, 20.0);
    case R_LOGSIGMOID:
        return gsl_rng_uniform(c->rng) < 0.1 ? 0.0
                                              : ug_gen_logsigmoid(gsl_ran_gaussian(c->rng, 1.0)) / divisor;
    default:
        return gsl_rng_uniform(c->rng) < 0.1 ? 0.0 : ug_gen_mamba_gate(c->rng, a_log, dt_bias);
    }
}

static double draw_value(gen_ctx *c)
{
    return c->regime == R_LOGSIGMOID ? gsl_rng_uniform(c->rng) : gsl_ran_gaussian(c->rng, 1.0);
}

/* One head's gate parameters (SPEC §1.3). */
typedef struct {
    double a_log, dt_bias, divisor;
} head_gates;

static head_gates draw_head_gates(gen_ctx *c, size_t h)
{
    double dt = gsl_ran_flat(c->rng, 1e-3, 1e-1);
    head_gates hg = {log(gsl_ran_flat(c->rng, 1.0, 16.0)), dt + log(-expm1(-dt)) /* inverse softplus */,
                     h % 2 ? 10.0 : 1.0};
    return hg;
}

/* S += exp(G_last - G_s) * beta_s * k_s v_s^T over one chunk, after S *=
 * exp(G_last): the chunked state recurrence in binary64 (S is [K][V]). */
typedef struct {
    const double *key, *value; /* [BT][K], [BT][V] */
    const double *g_cum, *beta; /* [BT] */
} chunk_tokens;

static void advance_state(const gdn_chunk_o_shape *s, const chunk_tokens *tok, double *state)
{
    const double g_last = tok->g_cum[s->bt - 1], decay = exp(g_last);
    for (size_t i = 0; i < s->k * s->v; i++) state[i] *= decay;
    for (size_t j = 0; j < s->bt; j++) {
        double w = exp(g_last - tok->g_cum[j]) * tok->beta[j];
        for (size_t kk = 0; kk < s->k; kk++) {
            double wk = w * tok->key[j * s->k + kk];
            for (size_t col = 0; col < s->v; col++) state[kk * s->v + col] += wk * tok->value[j * s->v + col];
        }
    }
}

typedef struct {
    double *state, *key, *value, *g_cum, *beta, *unit;
} state_scratch;

/* A prologue chunk of fresh tokens (isotropic keys, the regime's gates,
 * values and betas) gives the first chunk a nonzero initial state, as a
 * continued sequence has. */
static void warm_up_state(gen_ctx *c, const head_gates *hg, state_scratch *w)
{
    const gdn_chunk_o_shape *s = &c->s;
    double cumulative = 0;
    for (size_t j = 0; j < s->bt; j++) {
        ug_gen_unit_vector(c->rng, NULL, 0, s->k, w->key + j * s->k);
        for (size_t col = 0; col < s->v; col++) w->value[j * s->v + col] = draw_value(c);
        cumulative += draw_gate(c, hg->a_log, hg->dt_bias, hg->divisor);
        w->g_cum[j] = cumulative;
        w->beta[j] = draw_beta(c);
    }
    for (size_t i = 0; i < s->k * s->v; i++) w->state[i] = 0;
    chunk_tokens tok = {w->key, w->value, w->g_cum, w->beta};
    advance_state(s, &tok, w->state);
}

/* Gates, values and the state h of one (batch, value head): the gates and
 * values are drawn token by token, the state stored at each chunk start as
 * bf16, V-major (K innermost), then advanced over the chunk. */
static void generate_head(gen_ctx *c, size_t b, size_t h, state_scratch *w)
{
    const gdn_chunk_o_shape *s = &c->s;
    const size_t nt = s->t / s->bt, kh = h / (s->h / s->hg);
    const ug_bf16 *k = c->bufs[BUF_K].data;
    ug_bf16 *v = c->bufs[BUF_V].data, *state_out = c->bufs[BUF_H].data;
    float *g = c->bufs[BUF_G].data;
    head_gates hg = draw_head_gates(c, h);
    warm_up_state(c, &hg, w);
    for (size_t chunk = 0; chunk < nt; chunk++) {
        ug_bf16 *h_c = state_out + ((b * nt + chunk) * s->h + h) * s->v * s->k;
        for (size_t col = 0; col < s->v; col++)
            for (size_t kk = 0; kk < s->k; kk++) h_c[col * s->k + kk] = ug_bf16_from_f32((float)w->state[kk * s->v + col]);
        double cumulative = 0;
        for (size_t j = 0; j < s->bt; j++) {
            size_t t = chunk * s->bt + j;
            cumulative += draw_gate(c, hg.a_log, hg.dt_bias, hg.divisor);
            g[at3(s, b, t, h)] = (float)cumulative;
            w->g_cum[j] = g[at3(s, b, t, h)];
            w->beta[j] = draw_beta(c);
            ug_bf16 *v_row = v + at3(s, b, t, h) * s->v;
            for (size_t col = 0; col < s->v; col++) {
                v_row[col] = ug_bf16_from_f32((float)draw_value(c));
                w->value[j * s->v + col] = ug_bf16_to_f32(v_row[col]);
            }
            const ug_bf16 *k_row = k + ((b * s->t + t) * s->hg + kh) * s->k;
            for (size_t kk = 0; kk < s->k; kk++) w->key[j * s->k + kk] = ug_bf16_to_f32(k_row[kk]);
        }
        chunk_tokens tok = {w->key, w->value, w->g_cum, w->beta};
        advance_state(s, &tok, w->state);
    }
}

/* The ties regime (docs/ties.md): q, k in m/16 with |m| <= 3,
 * v and h in m/16 with |m| <= 16, gates 0. With K = 128 and BT = 64 every
 * dot product is a multiple of 2^-8 below 2^5, the attention sum a multiple
 * of 2^-12 below 2^9: exact in f32 in any order. With a power-of-two scale
 * only the casts SPEC names round: Q (exactly as the staged reference does)
 * and o. */
static void generate_ties(gsl_rng *rng, ug_buf *bufs)
{
    ug_gen_grid_fill(rng, 3, 4, &bufs[BUF_Q]);
    ug_gen_grid_fill(rng, 3, 4, &bufs[BUF_K]);
    ug_gen_grid_fill(rng, 16, 4, &bufs[BUF_V]);
    ug_gen_grid_fill(rng, 16, 4, &bufs[BUF_H]);
    ug_gen_grid_fill(rng, 0, 0, &bufs[BUF_G]);
}

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    if (regime == R_TIES) {
        generate_ties(rng, bufs);
        return ug_ok();
    }
    gen_ctx c = {ref_shape(p), regime, rng, bufs};
    const gdn_chunk_o_shape *s = &c.s;
    double *block = malloc((2 * s->k + s->k * s->v + s->bt * (s->k + s->v + 2)) * sizeof *block);
    if (!block)
        return ug_fail(UG_ENOMEM, "gdn_chunk_o generator: out of memory (K=%zu, V=%zu, BT=%zu)", s->k, s->v, s->bt);
    state_scratch w = {.unit = block};
    w.state = block + 2 * s->k;
    w.key = w.state + s->k * s->v;
    w.value = w.key + s->bt * s->k;
    w.g_cum = w.value + s->bt * s->v;
    w.beta = w.g_cum + s->bt;
    generate_queries_keys(&c, w.unit);
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++) generate_head(&c, b, h, &w);
    free(block);
    return ug_ok();
}

static const ug_family gdn_chunk_o_family = {
    .name = "gdn_chunk_o",
    .spec_section = "SPEC 1.2",
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_B, P_H, P_HG),
    UG_FAMILY_VARIANT_FIELDS,
    UG_FAMILY_DERIVED_DIM_FIELDS,
    .n_regimes = N_REGIMES,
    .regimes = regimes,
    .exact_regimes = 1u << R_TIES,
    .plan = plan,
};
UG_REGISTER_FAMILY(gdn_chunk_o_family);
