/* SPDX-License-Identifier: MIT */
/* Descriptor of attn_reduce_fwht (SPEC §1.4): parameters, buffers, input
 * generators and the adapters to kernels/attn_reduce_fwht.c (both forms:
 * fused = 1 runs the fused kernel, fused = 0 the pair) and
 * ref/attn_reduce_fwht.c. */
#include <float.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>

#include "../../core/bf16.h"
#include "../../kernels/attn_reduce_fwht.h"
#include "../../ref/attn_reduce_fwht.h"
#include "../family.h"
#include "../gen.h"
#include "../wild.h"

enum { P_NROWS, P_HEAD_DIM, P_NWG, P_FUSED, N_PARAMS };
static const char *const param_names[N_PARAMS] = {"nrows", "head_dim", "nwg", "fused"};

/* htmp is two arrays end to end, so its count is not a product of dims. */
static bool htmp_count(const ug_params *p, size_t *count)
{
    size_t per_row;
    return !__builtin_mul_overflow((size_t)p->v[P_NWG], (size_t)p->v[P_HEAD_DIM] + 2, &per_row) &&
           !__builtin_mul_overflow(per_row, (size_t)p->v[P_NROWS], count);
}

enum { BUF_HTMP, BUF_OUTPUT, N_BUFFERS };
static const ug_buffer_desc buffers[N_BUFFERS] = {
    [BUF_HTMP] = {"htmp", UG_F32, false, .layout_words = "[nrows,head_dim/4,nwg,4] partials, then [nrows,nwg,2] (S,M)",
                  .count = htmp_count},
    [BUF_OUTPUT] = {"output", UG_F32, true, UG_DIMS(P_NROWS, P_HEAD_DIM)},
};

/* Input regimes: a realistic split-K decode, then the hard cases. */
enum { R_DECODE, R_ONE_DOMINANT, R_MASKED, R_EQUAL_MAXIMA, R_LARGE_RANGE, R_TIES, N_REGIMES };
static const char *const regimes[N_REGIMES] = {
    "decode", "one_dominant", "masked", "equal_maxima", "large_range", "ties",
};

static const ug_mutant_desc mutants[] = {
    {ATTN_REDUCE_FWHT_MUT_SIGN_BIT_FLIPPED, "sign_bit_flipped", "bit 3 of SIGNS[5] read inverted (sign of element 43)", false},
    {ATTN_REDUCE_FWHT_MUT_NO_NORMALISATION, "no_normalisation", "H y written without the 1/sqrt(DV) scaling", false},
    {ATTN_REDUCE_FWHT_MUT_NORMALISATION_TWICE, "normalisation_twice", "H y scaled by 1/sqrt(DV) twice", false},
    {ATTN_REDUCE_FWHT_MUT_WORKGROUP_MAJOR, "workgroup_major", "partials read workgroup-major, (w*DV/4 + i)*4 + c", false},
    {ATTN_REDUCE_FWHT_MUT_MAX_NOT_SUBTRACTED, "max_not_subtracted", "weights exp(M_w) instead of exp(M_w - M*)", false},
    {ATTN_REDUCE_FWHT_MUT_ZERO_S_UNGUARDED, "zero_s_unguarded", "1/S taken even when S == 0", false},
    {ATTN_REDUCE_FWHT_MUT_SIGNS_WRAP_AT_256, "signs_wrap_at_256", "DV = 512 reuses the 256-entry sign table", false},
    {ATTN_REDUCE_FWHT_MUT_S_M_SWAPPED, "s_m_swapped", "S read at 2w + 1 and M at 2w", false},
    {ATTN_REDUCE_FWHT_MUT_VECTOR_STAGE_SKIPPED, "vector_stage_skipped",
     "the Hadamard transform's first butterfly stage across vectors left out", true},
};

static size_t param(const ug_params *p, int i) { return (size_t)p->v[i]; }

static ug_status run(const ug_params *p, ug_buf *bufs)
{
    attn_reduce_fwht_params kp = {(uint32_t)p->v[P_NROWS], (uint32_t)p->v[P_HEAD_DIM], (uint32_t)p->v[P_NWG]};
    if (p->v[P_FUSED] != 0) return attn_reduce_fwht_fused(&kp, &bufs[BUF_HTMP], &bufs[BUF_OUTPUT]);
    UG_TRY(attn_reduce(&kp, &bufs[BUF_HTMP], &bufs[BUF_OUTPUT]));
    return attn_fwht_sign_undo(kp.nrows, kp.head_dim, &bufs[BUF_OUTPUT]);
}

static ug_status reference(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs)
{
    attn_reduce_fwht_shape s = {param(p, P_NROWS), param(p, P_HEAD_DIM), param(p, P_NWG)};
    UG_TRY(attn_reduce_fwht_reference(&s, bufs[BUF_HTMP].data, model, mode, outs[0]));
    /* A row's partials reach every output of the row (the transform mixes
     * it). Its (S, M) pairs are the merge's data contract, not values of its
     * math: M_w = -inf and -FLT_MAX/2 mark masked workgroups, and the
     * reference refuses what the contract excludes (docs/nonfinite.md). */
    const size_t rows = param(p, P_NROWS), dv = param(p, P_HEAD_DIM), nwg = param(p, P_NWG);
    const ug_wild_grid grid = {1, rows, 1, false};
    const ug_wild_tensor in = {&bufs[BUF_HTMP], 0, 1, dv * nwg, 1}, out = {&bufs[BUF_OUTPUT], 0, 1, dv, 1};
    ug_wild_mark(&grid, &in, 1, &out, outs, 1);
    return ug_ok();
}

/* The seed's host plan: 32 * nwg threads, head_dim * 4 threadgroup bytes (the
 * merged row between the reduce and the undo). The merge needs one lane per
 * workgroup (whole SIMD groups: 32 * ceil(nwg / 32)); its loops and the
 * butterflies stride over the threadgroup; the staged row needs exactly
 * head_dim floats. The pair's dispatch plans are not in the seed, so every
 * case audits the fused plan. */
static ug_status plan(const ug_params *p, ug_plan *out)
{
    uint64_t nwg = param(p, P_NWG), head_dim = param(p, P_HEAD_DIM);
    out->threads_planned = ATTN_REDUCE_FWHT_SIMD_WIDTH * nwg;
    out->threads_needed = ATTN_REDUCE_FWHT_SIMD_WIDTH * ((nwg + ATTN_REDUCE_FWHT_SIMD_WIDTH - 1) / ATTN_REDUCE_FWHT_SIMD_WIDTH);
    out->tg_bytes_planned = head_dim * 4;
    out->tg_bytes_needed = head_dim * sizeof(float);
    return ug_ok();
}

/* ---- input generation: a split-K decode ----------------------------------
 *
 * One KV sequence of n_kv keys and values (bf16, as a KV cache holds them) is
 * shared by the rows (query heads of one KV group); each row has its own
 * query. Scores are s_t = temperature * q.k_t / sqrt(head_dim), rounded to f32
 * as the split-K kernel holds them. As in that kernel, keys go to workgroups
 * in blocks of 32: block b to workgroup b % nwg. Per workgroup w:
 * M_w = max s_t, S_w = sum exp(s_t - M_w), P_w = sum exp(s_t - M_w) v_t over
 * its unmasked keys (double, rounded once to f32); a workgroup with none is
 * masked: S_w = 0, P_w = 0, M_w = -FLT_MAX/2 (the kernel's initial maximum;
 * -inf on some rows of the masked regime). */

enum { KEY_BLOCK = 32 };

typedef struct {
    size_t nrows, dv, nwg, regime;
    gsl_rng *rng;
    size_t n_kv, dominant_wg;
    double temperature;
    double *base;   /* [dv] the direction queries and relevant keys share */
    double *keys;   /* [n_kv][dv] */
    double *values; /* [n_kv][dv] */
    double *q;      /* [dv] */
    float *scores;  /* [n_kv] */
    double *acc;    /* [dv] */
    float *htmp;
} gen_ctx;

static size_t uniform_int(gsl_rng *rng, size_t lo, size_t hi) { return lo + gsl_rng_uniform_int(rng, hi - lo + 1); }

static size_t workgroup_of(const gen_ctx *c, size_t t) { return t / KEY_BLOCK % c->nwg; }

static size_t draw_sequence_length(gen_ctx *c)
{
    const size_t nwg = c->nwg, full = KEY_BLOCK * nwg;
    switch (c->regime) {
    case R_MASKED: return uniform_int(c->rng, 1, full + full / 2);
    case R_EQUAL_MAXIMA: return full * uniform_int(c->rng, 1, 2);
    case R_ONE_DOMINANT:
    case R_LARGE_RANGE: return uniform_int(c->rng, full, 2 * full);
    default: return uniform_int(c->rng, full / 2, 3 * full);
    }
}

/* The first key of workgroup w's first block (equal_maxima puts the shared
 * maximal key there). */
static bool is_first_key_of_a_workgroup(const gen_ctx *c, size_t t)
{
    return t % KEY_BLOCK == 0 && t / KEY_BLOCK < c->nwg;
}

static void draw_kv(gen_ctx *c)
{
    for (size_t d = 0; d < c->dv; d++) c->base[d] = gsl_ran_gaussian_ziggurat(c->rng, 1.0);
    for (size_t t = 0; t < c->n_kv; t++) {
        double *k = c->keys + t * c->dv, *v = c->values + t * c->dv;
        /* One key in 16 leans toward the queries' direction (scores ~ 0.5
         * sqrt(head_dim), 8 to 11, against ~N(0, 2) for the others); the
         * dominant workgroup's keys lean 4x as much (~32 to 45); the shared
         * maximal key of equal_maxima 2x (~16 to 23: the others still count). */
        bool shared = c->regime == R_EQUAL_MAXIMA && is_first_key_of_a_workgroup(c, t);
        double lean = c->regime == R_ONE_DOMINANT && workgroup_of(c, t) == c->dominant_wg ? 2.0
                      : shared                                 ? 1.0
                      : gsl_rng_uniform(c->rng) < 1.0 / 16     ? 0.5
                                                               : 0.0;
        for (size_t d = 0; d < c->dv; d++) {
            double noise = shared ? 0.0 : gsl_ran_gaussian_ziggurat(c->rng, 1.0);
            k[d] = ug_bf16_to_f32(ug_bf16_from_f32((float)(lean * c->base[d] + noise)));
            double value = gsl_ran_gaussian_ziggurat(c->rng, 1.0);
            if (c->regime == R_LARGE_RANGE) value = ldexp(value, (int)uniform_int(c->rng, 0, 24) - 12);
            v[d] = ug_bf16_to_f32(ug_bf16_from_f32((float)value));
        }
    }
}

/* Keys row r may attend: all, except in the masked regime, where each row
 * has its own valid length and rows 5, 13, 21, ... are fully masked. */
static size_t valid_length(gen_ctx *c, size_t r)
{
    if (c->regime != R_MASKED) return c->n_kv;
    if (r % 8 == 5) return 0;
    return uniform_int(c->rng, 1, c->n_kv);
}

static void row_scores(gen_ctx *c, size_t valid)
{
    const double inv_sqrt = c->temperature / sqrt((double)c->dv);
    for (size_t d = 0; d < c->dv; d++) c->q[d] = c->base[d] + gsl_ran_gaussian_ziggurat(c->rng, 1.0);
    for (size_t t = 0; t < valid; t++) {
        double dot = 0;
        for (size_t d = 0; d < c->dv; d++) dot += c->q[d] * c->keys[t * c->dv + d];
        c->scores[t] = (float)(dot * inv_sqrt);
    }
}

/* Workgroup w's keys among the first `valid`: blocks w, w + nwg, ... */
#define FOR_EACH_KEY_OF(c, w, valid, t)                                         \
    for (size_t block_ = (w); block_ * KEY_BLOCK < (valid); block_ += (c)->nwg) \
        for (size_t t = block_ * KEY_BLOCK; t < (valid) && t < (block_ + 1) * KEY_BLOCK; t++)

/* One workgroup of row r: its statistics and partials from the row's scores. */
static void workgroup_partials(gen_ctx *c, size_t r, size_t w, size_t valid, float masked_max)
{
    const size_t dv = c->dv, nwg = c->nwg;
    float max = -INFINITY;
    FOR_EACH_KEY_OF(c, w, valid, t) if (c->scores[t] > max) max = c->scores[t];
    double sum = 0;
    for (size_t d = 0; d < dv; d++) c->acc[d] = 0;
    FOR_EACH_KEY_OF(c, w, valid, t)
    {
        double p = exp((double)c->scores[t] - max);
        sum += p;
        for (size_t d = 0; d < dv; d++) c->acc[d] += p * c->values[t * dv + d];
    }
    for (size_t d = 0; d < dv; d++) c->htmp[(r * dv / 4 * nwg + d / 4 * nwg + w) * 4 + d % 4] = (float)c->acc[d];
    float *stats = c->htmp + c->nrows * dv * nwg + r * 2 * nwg + 2 * w;
    stats[0] = (float)sum;
    stats[1] = max == -INFINITY ? masked_max : max;
}

static void generate_rows(gen_ctx *c)
{
    for (size_t r = 0; r < c->nrows; r++) {
        size_t valid = valid_length(c, r);
        row_scores(c, valid);
        bool any_live = valid > 0;
        /* -inf is admitted for a masked workgroup only beside a live one. */
        float masked_max = c->regime == R_MASKED && any_live && r % 2 ? -INFINITY : -FLT_MAX / 2;
        for (size_t w = 0; w < c->nwg; w++) workgroup_partials(c, r, w, valid, masked_max);
    }
}

/* The ties regime (docs/ties.md): partials m/16 with |m| <= 15,
 * every M_w = 0 (so m_w = exp(0) = 1) and S_w = 1, so S = nwg; with nwg a
 * power of two and head_dim 256 (1/sqrt(256) = 1/16) the merge, the
 * transform and the scaling are exact in f32 in any order, and so is every
 * output. 1/sqrt(512) is irrational: head_dim 512 has no such inputs. */
static ug_status generate_ties(const ug_params *p, gsl_rng *rng, ug_buf *bufs)
{
    const size_t rows = param(p, P_NROWS), dv = param(p, P_HEAD_DIM), nwg = param(p, P_NWG);
    if (dv != 256 || (nwg & (nwg - 1)) != 0)
        return ug_fail(UG_EINVAL, "attn_reduce_fwht: the ties regime needs head_dim 256 and a power-of-two nwg "
                       "(got head_dim %zu, nwg %zu): only then is every intermediate exact", dv, nwg);
    float *htmp = bufs[BUF_HTMP].data, *stats = htmp + rows * dv * nwg;
    for (size_t i = 0; i < rows * dv * nwg; i++) htmp[i] = (float)ug_gen_grid(rng, 15, 4);
    for (size_t i = 0; i < rows * nwg; i++) stats[2 * i] = 1.0f, stats[2 * i + 1] = 0.0f;
    return ug_ok();
}

static ug_status generate(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs)
{
    if (regime == R_TIES) return generate_ties(p, rng, bufs);
    gen_ctx c = {.nrows = param(p, P_NROWS), .dv = param(p, P_HEAD_DIM), .nwg = param(p, P_NWG),
                 .regime = regime, .rng = rng, .htmp = bufs[BUF_HTMP].data};
    c.n_kv = draw_sequence_length(&c);
    c.dominant_wg = gsl_rng_uniform_int(rng, c.nwg);
    c.temperature = regime == R_LARGE_RANGE ? 20.0 : 1.0;
    const size_t dv = c.dv;
    double *scratch = malloc((3 * dv + 2 * c.n_kv * dv) * sizeof *scratch);
    c.scores = malloc(c.n_kv * sizeof *c.scores);
    if (!scratch || !c.scores) {
        free(scratch);
        free(c.scores);
        return ug_fail(UG_ENOMEM, "attn_reduce_fwht generator: out of memory (n_kv=%zu, head_dim=%zu)", c.n_kv, dv);
    }
    c.base = scratch;
    c.q = scratch + dv;
    c.acc = scratch + 2 * dv;
    c.keys = scratch + 3 * dv;
    c.values = c.keys + c.n_kv * dv;
    draw_kv(&c);
    generate_rows(&c);
    free(scratch);
    free(c.scores);
    return ug_ok();
}

static const ug_family attn_reduce_fwht_family = {
    .name = "attn_reduce_fwht",
    .spec_section = "SPEC 1.4",
    .staged_is_exact = true,
    UG_FAMILY_COMMON_FIELDS,
    .n_regimes = N_REGIMES,
    .regimes = regimes,
    .exact_regimes = 1u << R_TIES,
    .plan = plan,
};
UG_REGISTER_FAMILY(attn_reduce_fwht_family);
