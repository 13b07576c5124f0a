/* Descriptor of gdn_recompute_wu (SPEC §1.1): parameters, buffers, input
 * generators and the adapters to kernels/gdn_recompute_wu.c and
 * ref/gdn_recompute_wu.c. */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>

#include "../../kernels/gdn_recompute_wu.h"
#include "../../ref/gdn_recompute_wu.h"
#include "../family.h"
#include "../gen.h"

enum { P_B, P_T, P_HG, P_H, P_K, P_V, P_BT, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"B", "T", "Hg", "H", "K", "V", "BT"};

enum { BUF_K, BUF_V, BUF_BETA, BUF_G, BUF_A, BUF_W, BUF_U, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_K] = {"k", UG_BF16, false, "[B,T,Hg,K]"},
    [BUF_V] = {"v", UG_BF16, false, "[B,T,H,V]"},
    [BUF_BETA] = {"beta", UG_F32, false, "[B,T,H]"},
    [BUF_G] = {"g", UG_F32, false, "[B,T,H]"},
    [BUF_A] = {"A", UG_F32, false, "[B,T,H,BT]"},
    [BUF_W] = {"w", UG_BF16, true, "[B,T,H,K]"},
    [BUF_U] = {"u", UG_BF16, true, "[B,T,H,V]"},
};

/* Input regimes (SPEC §1.3): realistic model inputs, then the hard cases. */
enum { R_REALISTIC, R_LOGSIGMOID, R_GATES_ZERO, R_STRONG_DECAY, R_BETA_NEAR_ONE, R_PARALLEL_KEYS, N_REGIMES };
static const char *const regimes[N_REGIMES] = {
    "realistic", "logsigmoid", "gates_zero", "strong_decay", "beta_near_one", "parallel_keys",
};

static const ug_mutant_desc mutants[] = {
    {GDN_RECOMPUTE_WU_MUT_TRUNCATE_STAGE_CAST, "truncate_stage_cast", "staged bf16 casts truncate instead of rounding to nearest even"},
    {GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED, "stage_cast_dropped", "staged operands kept in f32 (no bf16 cast)"},
    {GDN_RECOMPUTE_WU_MUT_OUTPUT_TRUNCATED, "output_truncated", "outputs truncated to bf16 instead of rounded"},
    {GDN_RECOMPUTE_WU_MUT_WRONG_GQA_HEAD, "wrong_gqa_head", "key head h % Hg instead of h / (H/Hg)"},
    {GDN_RECOMPUTE_WU_MUT_ROW_OFF_BY_ONE, "row_off_by_one", "staged row j reads token row j+1 of the chunk"},
    {GDN_RECOMPUTE_WU_MUT_EXP_AS_ONE_PLUS_G, "exp_as_one_plus_g", "exp(g) replaced by 1 + g"},
    {GDN_RECOMPUTE_WU_MUT_DROPPED_LAST_TERM, "dropped_last_term", "the sum over j stops at BT-2"},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status buffer_count(const ug_params *p, size_t i, size_t *count)
{
    static const int dims[N_BUFFERS][4] = {
        [BUF_K] = {P_B, P_T, P_HG, P_K},  [BUF_V] = {P_B, P_T, P_H, P_V},
        [BUF_BETA] = {P_B, P_T, P_H, -1}, [BUF_G] = {P_B, P_T, P_H, -1},
        [BUF_A] = {P_B, P_T, P_H, P_BT},  [BUF_W] = {P_B, P_T, P_H, P_K},
        [BUF_U] = {P_B, P_T, P_H, P_V},
    };
    size_t n = 1;
    for (int d = 0; d < 4 && dims[i][d] >= 0; d++)
        if (__builtin_mul_overflow(n, param(p, dims[i][d]), &n))
            return ug_fail(UG_EINVAL, "gdn_recompute_wu: %s %s has more than SIZE_MAX elements",
                           buffers[i].name, buffers[i].layout);
    *count = n;
    return ug_ok();
}

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

static ug_status reference(const ug_params *p, const ug_buf *bufs, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    gdn_recompute_wu_shape s = ref_shape(p);
    return gdn_recompute_wu_reference(&s, bufs[BUF_K].data, bufs[BUF_V].data, bufs[BUF_BETA].data,
                                      bufs[BUF_G].data, bufs[BUF_A].data, mode, outs[0], outs[1]);
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

/* ---- input generation ------------------------------------------------- */

typedef struct {
    gdn_recompute_wu_shape s;
    size_t regime;
    gsl_rng *rng;
    ug_buf *bufs;
} gen_ctx;

static size_t at3(const gdn_recompute_wu_shape *s, size_t b, size_t t, size_t h)
{
    return (b * s->t + t) * s->h + h;
}

/* Keys: unit vectors per (token, key head); in the parallel-keys regime every
 * key of a chunk is one base direction plus 1e-3 noise, so k_i . k_j ~ 1 and
 * (I + L) is ill-conditioned. */
static ug_status generate_keys(gen_ctx *c, double *scratch)
{
    const gdn_recompute_wu_shape *s = &c->s;
    ug_bf16 *k = c->bufs[BUF_K].data;
    double *base = scratch + s->k;
    for (size_t b = 0; b < s->b; b++)
        for (size_t kh = 0; kh < s->hg; kh++)
            for (size_t t = 0; t < s->t; t++) {
                bool parallel = c->regime == R_PARALLEL_KEYS;
                if (parallel && t % s->bt == 0) ug_gen_unit_vector(c->rng, NULL, 0, s->k, base);
                ug_gen_unit_vector(c->rng, parallel ? base : NULL, 1e-3, s->k, scratch);
                ug_gen_to_bf16(scratch, s->k, k + ((b * s->t + t) * s->hg + kh) * s->k);
            }
    return ug_ok();
}

static double draw_beta(gen_ctx *c)
{
    double x = c->regime == R_BETA_NEAR_ONE ? gsl_ran_gaussian(c->rng, 1.0) + 7.0
                                            : gsl_ran_gaussian(c->rng, 1.0);
    return ug_gen_sigmoid(x);
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

static void generate_beta_gates_values(gen_ctx *c)
{
    const gdn_recompute_wu_shape *s = &c->s;
    float *beta = c->bufs[BUF_BETA].data, *g = c->bufs[BUF_G].data;
    ug_bf16 *v = c->bufs[BUF_V].data;
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++) {
            double a_log = log(gsl_ran_flat(c->rng, 1.0, 16.0));
            double dt = gsl_ran_flat(c->rng, 1e-3, 1e-1);
            double dt_bias = dt + log(-expm1(-dt)); /* inverse softplus */
            double divisor = h % 2 ? 10.0 : 1.0;
            double cumulative = 0;
            for (size_t t = 0; t < s->t; t++) {
                if (t % s->bt == 0) cumulative = 0;
                cumulative += draw_gate(c, a_log, dt_bias, divisor);
                g[at3(s, b, t, h)] = (float)cumulative;
                beta[at3(s, b, t, h)] = (float)draw_beta(c);
                for (size_t col = 0; col < s->v; col++) {
                    double x = c->regime == R_LOGSIGMOID ? gsl_rng_uniform(c->rng)
                                                         : gsl_ran_gaussian(c->rng, 1.0);
                    v[((b * s->t + t) * s->h + h) * s->v + col] = ug_bf16_from_f32((float)x);
                }
            }
        }
}

/* A = (I + L)^-1 per chunk with L[i][j] = beta_i exp(G_i - G_j) k_i.k_j for
 * i > j, from the generated (rounded) k, beta and g: the matrix a real
 * solve_tril produces, solved in binary64 by forward substitution. */
static void generate_solved_a(gen_ctx *c, double *l, double *inv)
{
    const gdn_recompute_wu_shape *s = &c->s;
    const size_t bt = s->bt, group = s->h / s->hg;
    const ug_bf16 *k = c->bufs[BUF_K].data;
    const float *beta = c->bufs[BUF_BETA].data, *g = c->bufs[BUF_G].data;
    float *a = c->bufs[BUF_A].data;
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++)
            for (size_t t0 = 0; t0 < s->t; t0 += bt) {
                const ug_bf16 *kc = k + ((b * s->t + t0) * s->hg + h / group) * s->k;
                const size_t k_row = s->hg * s->k;
                for (size_t i = 0; i < bt; i++)
                    for (size_t j = 0; j < i; j++) {
                        double dot = 0;
                        for (size_t d = 0; d < s->k; d++)
                            dot += (double)ug_bf16_to_f32(kc[i * k_row + d]) * ug_bf16_to_f32(kc[j * k_row + d]);
                        double gi = g[at3(s, b, t0 + i, h)], gj = g[at3(s, b, t0 + j, h)];
                        l[i * bt + j] = beta[at3(s, b, t0 + i, h)] * exp(gi - gj) * dot;
                    }
                for (size_t i = 0; i < bt; i++)
                    for (size_t j = 0; j < bt; j++) {
                        double x = i == j ? 1.0 : 0.0;
                        for (size_t m = j; m < i; m++) x -= l[i * bt + m] * inv[m * bt + j];
                        inv[i * bt + j] = i < j ? 0.0 : x;
                    }
                for (size_t i = 0; i < bt; i++)
                    for (size_t j = 0; j < bt; j++)
                        a[((b * s->t + t0 + i) * s->h + h) * bt + j] = (float)inv[i * bt + j];
            }
}

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    gen_ctx c = {ref_shape(p), regime, rng, bufs};
    size_t bt = c.s.bt;
    double *scratch = malloc((2 * c.s.k + 2 * bt * bt) * sizeof *scratch);
    if (!scratch) return ug_fail(UG_ENOMEM, "gdn_recompute_wu generator: out of memory (K=%zu, BT=%zu)", c.s.k, bt);
    ug_status st = generate_keys(&c, scratch);
    if (ug_is_ok(&st)) {
        generate_beta_gates_values(&c);
        generate_solved_a(&c, scratch + 2 * c.s.k, scratch + 2 * c.s.k + bt * bt);
    }
    free(scratch);
    return st;
}

static const ug_family gdn_recompute_wu_family = {
    .name = "gdn_recompute_wu",
    .spec_section = "SPEC 1.1",
    .n_params = N_PARAMS,
    .param_names = param_names,
    .n_buffers = N_BUFFERS,
    .buffers = buffers,
    .n_regimes = N_REGIMES,
    .regimes = regimes,
    .n_mutants = sizeof mutants / sizeof mutants[0],
    .mutants = mutants,
    .buffer_count = buffer_count,
    .generate = generate,
    .run = run,
    .reference = reference,
    .plan = plan,
};
UG_REGISTER_FAMILY(gdn_recompute_wu_family);
