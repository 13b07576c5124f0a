/* SPDX-License-Identifier: MIT */
/* Descriptor of head_norm_rope (SPEC §1.5): both variants of the seed in one
 * family, chosen by the parameter `variant` (0: bf16 single token with cos/sin
 * caches, 1: f32 sequence with positions, theta and freq_factors). Each
 * variant's buffers have 0 elements in the other's cases, so every case
 * measures one output. Adapters to kernels/head_norm_rope.c and
 * ref/head_norm_rope.c, input generators and the dispatch-plan audit. */
#include <float.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>

#include "../../kernels/head_norm_rope.h"
#include "../../ref/head_norm_rope.h"
#include "../family.h"
#include "../gen.h"
#include "../wild.h"

/* eps = 10^-eps_exp10 (sweep parameters are integers); theta is an integer;
 * pos_max: the bf16 token's position (its caches), the f32 sequence's
 * largest position; cache_extra: entries of cos/sin caches and freq_factors
 * beyond half_rope_dim (the contract says ">= half_rope_dim"). */
enum {
    P_VARIANT, P_N_HEADS, P_HEAD_DIM, P_HALF_ROPE_DIM, P_SEQ_LEN, P_HAS_WEIGHT, P_HAS_FF, P_EPS_EXP10, P_THETA,
    P_POS_MAX, P_CACHE_EXTRA, N_PARAMS
};
static const char *const param_names[N_PARAMS] = {
    "variant", "n_heads", "head_dim", "half_rope_dim", "seq_len", "has_weight",
    "has_ff", "eps_exp10", "theta", "pos_max", "cache_extra",
};

enum { VARIANT_BF16 = 0, VARIANT_F32 = 1 };

enum {
    BUF_INPUT_BF16, BUF_WEIGHT_BF16, BUF_COS, BUF_SIN, BUF_INPUT_F32, BUF_WEIGHT_F32, BUF_POSITIONS,
    BUF_FREQ_FACTORS, BUF_OUTPUT_BF16, BUF_OUTPUT_F32, N_BUFFERS
};
/* The cos/sin caches and freq_factors: half_rope_dim entries and the extra. */
static size_t table_length(const ug_params *p) { return (size_t)p->v[P_HALF_ROPE_DIM] + (size_t)p->v[P_CACHE_EXTRA]; }
enum { DIM_TABLE = UG_DIM_DERIVED(0) };
static const ug_derived_dim derived_dims[] = {{"half_rope_dim+cache_extra", table_length}};

#define BF16_ONLY {P_VARIANT, VARIANT_BF16}
#define F32_ONLY {P_VARIANT, VARIANT_F32}
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_INPUT_BF16] = {"input_bf16", UG_BF16, false, UG_DIMS(P_N_HEADS, P_HEAD_DIM), UG_ONLY_IF(BF16_ONLY)},
    [BUF_WEIGHT_BF16] = {"norm_weight_bf16", UG_BF16, false, UG_DIMS(P_HEAD_DIM),
                         UG_ONLY_IF(BF16_ONLY, {P_HAS_WEIGHT, UG_IF_SET})},
    [BUF_COS] = {"cos_cache", UG_F32, false, UG_DIMS(DIM_TABLE), UG_ONLY_IF(BF16_ONLY)},
    [BUF_SIN] = {"sin_cache", UG_F32, false, UG_DIMS(DIM_TABLE), UG_ONLY_IF(BF16_ONLY)},
    [BUF_INPUT_F32] = {"input_f32", UG_F32, false, UG_DIMS(P_SEQ_LEN, P_N_HEADS, P_HEAD_DIM), UG_ONLY_IF(F32_ONLY)},
    [BUF_WEIGHT_F32] = {"norm_weight_f32", UG_F32, false, UG_DIMS(P_HEAD_DIM),
                        UG_ONLY_IF(F32_ONLY, {P_HAS_WEIGHT, UG_IF_SET})},
    [BUF_POSITIONS] = {"positions", UG_U32, false, UG_DIMS(P_SEQ_LEN), UG_ONLY_IF(F32_ONLY)},
    [BUF_FREQ_FACTORS] = {"freq_factors", UG_F32, false, UG_DIMS(DIM_TABLE),
                          UG_ONLY_IF(F32_ONLY, {P_HAS_FF, UG_IF_SET})},
    [BUF_OUTPUT_BF16] = {"output_bf16", UG_BF16, true, UG_DIMS(P_N_HEADS, P_HEAD_DIM), UG_ONLY_IF(BF16_ONLY)},
    [BUF_OUTPUT_F32] = {"output_f32", UG_F32, true, UG_DIMS(P_SEQ_LEN, P_N_HEADS, P_HEAD_DIM), UG_ONLY_IF(F32_ONLY)},
};
#undef BF16_ONLY
#undef F32_ONLY

/* Input regimes: model-like activations; a large dynamic range within each
 * head; all-zero and single-spike heads; freq_factors with huge entries (a
 * pair effectively unrotated; FLT_MAX makes the frequency subnormal). */
enum { R_REALISTIC, R_WIDE_RANGE, R_ZERO_HEADS, R_HUGE_FREQ_FACTORS, N_REGIMES };
static const char *const regimes[N_REGIMES] = {"realistic", "wide_range", "zero_heads", "huge_freq_factors"};

static const ug_mutant_desc mutants[] = {
    {HEAD_NORM_ROPE_MUT_NEIGHBOUR_PAIRS, "neighbour_pairs", "pairs (2k, 2k+1) instead of NeoX (i, i + span)", false},
    {HEAD_NORM_ROPE_MUT_EPS_OUTSIDE_SQRT, "eps_outside_sqrt", "r = 1/(sqrt(ss/head_dim) + eps)", false},
    {HEAD_NORM_ROPE_MUT_ONE_PLUS_WEIGHT, "one_plus_weight", "y = x*r*(1 + w) instead of x*r*w", false},
    {HEAD_NORM_ROPE_MUT_PASS_THROUGH_OFF_BY_ONE, "pass_through_off_by_one", "the last rotary pair passes through", false},
    {HEAD_NORM_ROPE_MUT_SIN_SIGN_FLIPPED, "sin_sign_flipped", "rotation by -angle", false},
    {HEAD_NORM_ROPE_MUT_MEAN_OVER_HALF_ROPE, "mean_over_half_rope", "ss / half_rope_dim instead of ss / head_dim", false},
    {HEAD_NORM_ROPE_MUT_EXPONENT_OVER_ROPE_DIM, "exponent_over_rope_dim", "f32 angle theta^(-2i/(2*half_rope_dim))", false},
    {HEAD_NORM_ROPE_MUT_FREQ_FACTOR_MULTIPLIES, "freq_factor_multiplies", "f32 frequency times freq_factors[i]", false},
    {HEAD_NORM_ROPE_MUT_OUTPUT_TRUNCATED, "output_truncated", "bf16 output truncated instead of rounded", false},
    {HEAD_NORM_ROPE_MUT_VECTOR_EVEN_ODD_SWAPPED, "vector_even_odd_swapped",
     "bf16 head block: each pair of rotated first-half outputs stored swapped", true},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }
static bool is_f32(const ug_params *p) { return param(p, P_VARIANT) == VARIANT_F32; }
static float eps_of(const ug_params *p) { return (float)pow(10.0, -p->v[P_EPS_EXP10]); }

static ug_status check_params(const ug_params *p)
{
    const size_t variant = param(p, P_VARIANT);
    if (variant != VARIANT_BF16 && variant != VARIANT_F32)
        return ug_fail(UG_EINVAL, "head_norm_rope: variant %zu is neither 0 (bf16) nor 1 (f32)", variant);
    return ug_ok();
}

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    const bool weight = param(p, P_HAS_WEIGHT) != 0;
    if (!is_f32(p)) {
        head_norm_rope_bf16_params kp = {(uint32_t)param(p, P_N_HEADS), (uint32_t)param(p, P_HEAD_DIM),
                                         (uint32_t)param(p, P_HALF_ROPE_DIM), eps_of(p)};
        return head_norm_rope_bf16(&kp, &bufs[BUF_INPUT_BF16], &bufs[BUF_OUTPUT_BF16],
                                   weight ? &bufs[BUF_WEIGHT_BF16] : NULL, &bufs[BUF_COS], &bufs[BUF_SIN]);
    }
    head_norm_rope_f32_params kp = {(uint32_t)param(p, P_N_HEADS), (uint32_t)param(p, P_HEAD_DIM),
                                    (uint32_t)param(p, P_HALF_ROPE_DIM), (uint32_t)param(p, P_SEQ_LEN),
                                    eps_of(p), (float)p->v[P_THETA]};
    return head_norm_rope_f32(&kp, &bufs[BUF_INPUT_F32], &bufs[BUF_OUTPUT_F32], weight ? &bufs[BUF_WEIGHT_F32] : NULL,
                              &bufs[BUF_POSITIONS], param(p, P_HAS_FF) ? &bufs[BUF_FREQ_FACTORS] : NULL);
}

/* SPEC names no deliberate intermediate rounding in either variant (the f32
 * angle is formed as the kernel chooses): staged == exact, one reference. */
static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    (void)mode;
    const head_norm_rope_shape s = {param(p, P_N_HEADS), param(p, P_HEAD_DIM), param(p, P_HALF_ROPE_DIM), eps_of(p)};
    const bool weight = param(p, P_HAS_WEIGHT) != 0;
    if (!is_f32(p))
        UG_TRY(head_norm_rope_bf16_reference(model, &s, bufs[BUF_INPUT_BF16].data,
                                             weight ? bufs[BUF_WEIGHT_BF16].data : NULL, bufs[BUF_COS].data,
                                             bufs[BUF_SIN].data, outs[0]));
    else
        UG_TRY(head_norm_rope_f32_reference(model, &s, param(p, P_SEQ_LEN), (float)p->v[P_THETA],
                                            bufs[BUF_INPUT_F32].data, weight ? bufs[BUF_WEIGHT_F32].data : NULL,
                                            bufs[BUF_POSITIONS].data,
                                            param(p, P_HAS_FF) ? bufs[BUF_FREQ_FACTORS].data : NULL, outs[1]));
    /* One head of one token reads its row, the weight and the caches; the
     * sum of squares of |x| >= 2^64 overflows f32 (docs/nonfinite.md). The
     * other variant's buffers are empty, and skipped. */
    const size_t heads = param(p, P_N_HEADS), dim = param(p, P_HEAD_DIM);
    const ug_wild_grid grid = {1, is_f32(p) ? param(p, P_SEQ_LEN) : 1, heads, false};
    const ug_wild_tensor in[] = {
        {&bufs[BUF_INPUT_BF16], 0, heads, dim, 1},  {&bufs[BUF_INPUT_F32], 0, heads, dim, 1},
        {&bufs[BUF_WEIGHT_BF16], 0, 1, dim, 0},     {&bufs[BUF_WEIGHT_F32], 0, 1, dim, 0},
        {&bufs[BUF_COS], 0, 1, bufs[BUF_COS].count, 0}, {&bufs[BUF_SIN], 0, 1, bufs[BUF_SIN].count, 0},
    };
    const ug_wild_tensor out[] = {{&bufs[BUF_OUTPUT_BF16], 0, heads, dim, 1}, {&bufs[BUF_OUTPUT_F32], 0, heads, dim, 1}};
    ug_wild_mark(&grid, in, sizeof in / sizeof in[0], out, outs, 2);
    /* The angle divides by a freq_factor: a NaN, or one whose reciprocal is
     * wild (0, |f| < 2^-64), overflows the f32 angle where the exact one may
     * be finite; a huge one (the huge_freq_factors regime's FLT_MAX) only
     * makes the angle small. */
    ug_wild divisor = UG_WILD_NONE;
    for (size_t i = 0; i < bufs[BUF_FREQ_FACTORS].count; i++) {
        const float f = ((const float *)bufs[BUF_FREQ_FACTORS].data)[i];
        ug_wild w = isnan(f) ? UG_WILD_CLASS : ug_wild_value(1.0 / f);
        if (w > divisor) divisor = w;
    }
    for (size_t i = 0; divisor != UG_WILD_NONE && i < bufs[BUF_OUTPUT_F32].count; i++)
        if (outs[1][i].wild < divisor) outs[1][i].wild = divisor;
    return ug_ok();
}

/* The seed's hosts: tg_size = min(256, next_pow2(head_dim)) threads, and
 * threadgroup memory tg_size*4 bytes (bf16) or max(tg_size, head_dim)*4 (f32).
 * The shader strides its loops over the threads, so one thread suffices; its
 * threadgroup memory holds the tg_size partial sums of the reduction and then
 * the head_dim normalized values the rotation reads across pairs. */
static ug_status plan(const ug_params *p, ug_plan *out)
{
    const uint32_t dim = (uint32_t)param(p, P_HEAD_DIM), tg = head_norm_rope_tg_size(dim);
    out->threads_planned = tg;
    out->threads_needed = 1;
    out->tg_bytes_planned = is_f32(p) ? head_norm_rope_f32_planned_bytes(dim) : head_norm_rope_bf16_planned_bytes(dim);
    out->tg_bytes_needed = (uint64_t)(tg > dim ? tg : dim) * sizeof(float);
    return ug_ok();
}

/* ---- input generation ------------------------------------------------------ */

/* One head's activations as doubles, by regime; head h of the zero_heads
 * regime is all zero (h % 3 == 0), a single spike (h % 3 == 1) or realistic. */
static void draw_head(size_t regime, size_t head, gsl_rng *rng, size_t dim, double *x)
{
    double scale = ldexp(1.0, (int)floor(gsl_ran_flat(rng, -3, 4)));
    for (size_t i = 0; i < dim; i++) {
        double spread = regime == R_WIDE_RANGE ? ldexp(1.0, (int)floor(gsl_ran_flat(rng, -40, 41))) : scale;
        x[i] = gsl_ran_gaussian(rng, 1.0) * spread;
    }
    if (regime != R_ZERO_HEADS || head % 3 == 2) return;
    double spike = x[gsl_rng_uniform_int(rng, dim)];
    size_t where = gsl_rng_uniform_int(rng, dim);
    for (size_t i = 0; i < dim; i++) x[i] = head % 3 == 1 && i == where ? spike : 0.0;
}

/* Norm weights around 1 (plain w, not 1 + w), some near 0; wide in the
 * wide_range regime. */
static double draw_weight(size_t regime, gsl_rng *rng)
{
    double w = 1.0 + gsl_ran_gaussian(rng, 0.3);
    return regime == R_WIDE_RANGE ? w * ldexp(1.0, (int)floor(gsl_ran_flat(rng, -8, 9))) : w;
}

/* Llama-3 style factors in [1, 8]; huge ones (1e30, FLT_MAX) in their regime. */
static float draw_freq_factor(size_t regime, gsl_rng *rng, size_t i)
{
    if (regime == R_HUGE_FREQ_FACTORS && i % 3 == 0) return 1e30f;
    if (regime == R_HUGE_FREQ_FACTORS && i % 7 == 1) return FLT_MAX;
    return (float)gsl_ran_flat(rng, 1.0, 8.0);
}

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    const size_t heads = param(p, P_N_HEADS), dim = param(p, P_HEAD_DIM), seq = is_f32(p) ? param(p, P_SEQ_LEN) : 1;
    const size_t table = param(p, P_HALF_ROPE_DIM) + param(p, P_CACHE_EXTRA);
    const double theta = p->v[P_THETA], pos_max = p->v[P_POS_MAX];
    double *x = malloc(dim * sizeof *x);
    if (!x) return ug_fail(UG_ENOMEM, "head_norm_rope generator: out of memory (head_dim=%zu)", dim);
    for (size_t t = 0; t < seq; t++)
        for (size_t h = 0; h < heads; h++) {
            draw_head(regime, h, rng, dim, x);
            size_t offset = (t * heads + h) * dim;
            for (size_t i = 0; i < dim; i++) {
                if (is_f32(p)) ((float *)bufs[BUF_INPUT_F32].data)[offset + i] = (float)x[i];
                else ((ug_bf16 *)bufs[BUF_INPUT_BF16].data)[offset + i] = ug_bf16_from_f32((float)x[i]);
            }
        }
    free(x);
    ug_buf *weight = &bufs[is_f32(p) ? BUF_WEIGHT_F32 : BUF_WEIGHT_BF16];
    for (size_t i = 0; i < weight->count; i++) {
        float w = (float)draw_weight(regime, rng);
        if (is_f32(p)) ((float *)weight->data)[i] = w;
        else ((ug_bf16 *)weight->data)[i] = ug_bf16_from_f32(w);
    }
    if (!is_f32(p)) {
        /* The host's caches for the token at pos_max, computed in binary64. */
        for (size_t i = 0; i < table; i++) {
            double angle = pos_max * pow(theta, -2.0 * (double)i / (double)dim);
            ((float *)bufs[BUF_COS].data)[i] = (float)cos(angle);
            ((float *)bufs[BUF_SIN].data)[i] = (float)sin(angle);
        }
        return ug_ok();
    }
    /* The longest and the first position, then a run of consecutive ones. */
    uint32_t *pos = bufs[BUF_POSITIONS].data;
    double start = floor(gsl_rng_uniform(rng) * (pos_max + 1));
    for (size_t t = 0; t < seq; t++)
        pos[t] = t == 0 ? (uint32_t)pos_max : t == 1 ? 0 : (uint32_t)fmin(start + (double)(t - 2), 4294967295.0);
    for (size_t i = 0; i < bufs[BUF_FREQ_FACTORS].count; i++)
        ((float *)bufs[BUF_FREQ_FACTORS].data)[i] = draw_freq_factor(regime, rng, i);
    return ug_ok();
}

static const ug_family head_norm_rope_family = {
    .name = "head_norm_rope",
    .spec_section = "SPEC 1.5",
    .staged_is_exact = true,
    UG_FAMILY_COMMON_FIELDS,
    UG_SLICE_BY(P_SEQ_LEN, -1, -1), /* token by token: each one's heads and positions are its own */
    UG_FAMILY_DERIVED_DIM_FIELDS,
    .check_params = check_params,
    .n_regimes = N_REGIMES,
    .regimes = regimes,
    .plan = plan,
};
UG_REGISTER_FAMILY(head_norm_rope_family);
