/* SPDX-License-Identifier: MIT */
#include "gdn_inputs.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "gen.h"

const char *const gdn_regime_names[GDN_REGIME_COUNT] = {
    [GDN_REGIME_REALISTIC] = "realistic",       [GDN_REGIME_LOGSIGMOID] = "logsigmoid",
    [GDN_REGIME_GATES_ZERO] = "gates_zero",     [GDN_REGIME_STRONG_DECAY] = "strong_decay",
    [GDN_REGIME_BETA_NEAR_ONE] = "beta_near_one", [GDN_REGIME_PARALLEL_KEYS] = "parallel_keys",
    [GDN_REGIME_TIES] = "ties",
};

/* [B,T,heads,width], width innermost. */
static size_t at4(const gdn_gen_shape *s, size_t b, size_t t, size_t heads, size_t head, size_t width)
{
    return ((b * s->t + t) * heads + head) * width;
}

/* [B,T,H]. */
static size_t at3(const gdn_gen_shape *s, size_t b, size_t t, size_t h) { return (b * s->t + t) * s->h + h; }

/* In the parallel-keys regime every key of a chunk is one base direction
 * plus 1e-3 noise, so k_i . k_j ~ 1 and I + L is ill-conditioned. */
ug_status gdn_gen_keys(const gdn_gen_shape *s, gdn_regime r, gsl_rng *rng, ug_bf16 *k)
{
    double *key = malloc(2 * s->k * sizeof *key);
    if (!key) return ug_fail(UG_ENOMEM, "gdn input generator: out of memory (K=%zu)", s->k);
    double *base = key + s->k;
    const bool parallel = r == GDN_REGIME_PARALLEL_KEYS;
    for (size_t b = 0; b < s->b; b++)
        for (size_t kh = 0; kh < s->hg; kh++)
            for (size_t t = 0; t < s->t; t++) {
                if (r == GDN_REGIME_TIES) {
                    for (size_t d = 0; d < s->k; d++) key[d] = ug_gen_grid(rng, 63, 6);
                } else {
                    if (parallel && t % s->bt == 0) ug_gen_unit_vector(rng, NULL, 0, s->k, base);
                    ug_gen_unit_vector(rng, parallel ? base : NULL, 1e-3, s->k, key);
                }
                ug_gen_to_bf16(key, s->k, k + at4(s, b, t, s->hg, kh, s->k));
            }
    free(key);
    return ug_ok();
}

static double draw_beta(gdn_regime r, gsl_rng *rng)
{
    double x = gsl_ran_gaussian(rng, 1.0);
    if (r == GDN_REGIME_TIES) return 0.5;
    return ug_gen_sigmoid(r == GDN_REGIME_BETA_NEAR_ONE ? x + 7.0 : x);
}

/* Raw log-gate of one token; ~10% exactly zero (decay 1) in the model regimes. */
static double draw_gate(gdn_regime r, gsl_rng *rng, double a_log, double dt_bias, double divisor)
{
    switch (r) {
    case GDN_REGIME_GATES_ZERO:
    case GDN_REGIME_TIES: return 0.0;
    case GDN_REGIME_STRONG_DECAY: return -gsl_ran_flat(rng, 2.0, 20.0);
    case GDN_REGIME_LOGSIGMOID:
        return gsl_rng_uniform(rng) < 0.1 ? 0.0 : ug_gen_logsigmoid(gsl_ran_gaussian(rng, 1.0)) / divisor;
    default: return gsl_rng_uniform(rng) < 0.1 ? 0.0 : ug_gen_mamba_gate(rng, a_log, dt_bias);
    }
}

void gdn_gen_tokens(const gdn_gen_shape *s, gdn_regime r, gsl_rng *rng, float *g_raw, float *g,
                    float *beta, ug_bf16 *v)
{
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++) {
            double a_log = log(gsl_ran_flat(rng, 1.0, 16.0));
            double dt = gsl_ran_flat(rng, 1e-3, 1e-1);
            double dt_bias = dt + log(-expm1(-dt)); /* inverse softplus */
            double divisor = h % 2 ? 10.0 : 1.0;
            double cumulative = 0;
            for (size_t t = 0; t < s->t; t++) {
                if (t % s->bt == 0) cumulative = 0;
                double gate = draw_gate(r, rng, a_log, dt_bias, divisor);
                cumulative += gate;
                if (g_raw) g_raw[at3(s, b, t, h)] = (float)gate;
                if (g) g[at3(s, b, t, h)] = (float)cumulative;
                float beta_t = (float)draw_beta(r, rng);
                if (beta) beta[at3(s, b, t, h)] = beta_t;
                if (!v) continue;
                for (size_t col = 0; col < s->v; col++) {
                    double x = r == GDN_REGIME_LOGSIGMOID ? gsl_rng_uniform(rng)
                               : r == GDN_REGIME_TIES     ? ug_gen_grid(rng, 63, 6)
                                                          : gsl_ran_gaussian(rng, 1.0);
                    v[at4(s, b, t, s->h, h, s->v) + col] = ug_bf16_from_f32((float)x);
                }
            }
        }
}

/* ---- per-chunk systems in binary64 ---------------------------------------- */

typedef struct {
    const gdn_gen_shape *s;
    const ug_bf16 *k, *v;
    const float *beta, *g;
    size_t b, h, t0;
    double *l, *a; /* [BT][BT] */
} chunk;

/* L[i][j] = beta_i exp(g_i - g_j) k_i.k_j below the diagonal, from the
 * rounded inputs (the diagonal and above are left as they are). */
static void chunk_l(const chunk *c)
{
    const gdn_gen_shape *s = c->s;
    const size_t bt = s->bt, kh = c->h / (s->h / s->hg);
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < i; j++) {
            const ug_bf16 *ki = c->k + at4(s, c->b, c->t0 + i, s->hg, kh, s->k);
            const ug_bf16 *kj = c->k + at4(s, c->b, c->t0 + j, s->hg, kh, s->k);
            double dot = 0;
            for (size_t d = 0; d < s->k; d++) dot += (double)ug_bf16_to_f32(ki[d]) * ug_bf16_to_f32(kj[d]);
            double gi = c->g[at3(s, c->b, c->t0 + i, c->h)], gj = c->g[at3(s, c->b, c->t0 + j, c->h)];
            c->l[i * bt + j] = c->beta[at3(s, c->b, c->t0 + i, c->h)] * exp(gi - gj) * dot;
        }
}

/* a = (I + L)^-1 by forward substitution (reads L strictly below the diagonal). */
static void chunk_inverse(const chunk *c)
{
    const size_t bt = c->s->bt;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            double x = i == j ? 1.0 : 0.0;
            for (size_t m = j; m < i; m++) x -= c->l[i * bt + m] * c->a[m * bt + j];
            c->a[i * bt + j] = i < j ? 0.0 : x;
        }
}

typedef void chunk_fn(const chunk *c, void *out);

/* Runs fn on every (batch, value head, chunk) with L (and A when solve) filled. */
static ug_status for_each_chunk(chunk *c, bool solve, chunk_fn *fn, void *out)
{
    const size_t bt = c->s->bt;
    double *l = calloc(2 * bt * bt, sizeof *l);
    if (!l) return ug_fail(UG_ENOMEM, "gdn input generator: out of memory (BT=%zu)", bt);
    c->l = l;
    c->a = l + bt * bt;
    for (c->b = 0; c->b < c->s->b; c->b++)
        for (c->h = 0; c->h < c->s->h; c->h++)
            for (c->t0 = 0; c->t0 < c->s->t; c->t0 += bt) {
                chunk_l(c);
                if (solve) chunk_inverse(c);
                fn(c, out);
            }
    free(l);
    return ug_ok();
}

/* Writes a [BT][BT] binary64 matrix as the chunk's rows of an f32 [B,T,H,BT]
 * tensor, with zeros on and above the diagonal when strictly_lower. */
static void store_rows(const chunk *c, const double *m, bool strictly_lower, float *out)
{
    const size_t bt = c->s->bt;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++)
            out[at4(c->s, c->b, c->t0 + i, c->s->h, c->h, bt) + j] =
                strictly_lower && j >= i ? 0.0f : (float)m[i * bt + j];
}

static void store_l(const chunk *c, void *out) { store_rows(c, c->l, true, out); }
static void store_a(const chunk *c, void *out) { store_rows(c, c->a, false, out); }

ug_status gdn_gen_scaled_kkt(const gdn_gen_shape *s, const ug_bf16 *k, const float *beta,
                             const float *g, float *l)
{
    chunk c = {.s = s, .k = k, .beta = beta, .g = g};
    return for_each_chunk(&c, false, store_l, l);
}

ug_status gdn_gen_solved_a(const gdn_gen_shape *s, const ug_bf16 *k, const float *beta,
                           const float *g, float *a)
{
    chunk c = {.s = s, .k = k, .beta = beta, .g = g};
    return for_each_chunk(&c, true, store_a, a);
}

typedef struct {
    ug_bf16 *w, *u;
} wy_out;

/* out[i] = bf16(sum_j A[i][j] bf16(src_j scaled)) for one column of width. */
static void store_wy(const chunk *c, void *out)
{
    const gdn_gen_shape *s = c->s;
    const wy_out *o = out;
    const size_t bt = s->bt, kh = c->h / (s->h / s->hg);
    for (size_t i = 0; i < bt; i++) {
        for (size_t col = 0; col < s->v; col++) {
            double acc = 0;
            for (size_t j = 0; j <= i; j++) {
                size_t tj = c->t0 + j;
                double x = ug_bf16_to_f32(c->v[at4(s, c->b, tj, s->h, c->h, s->v) + col]) *
                           (double)c->beta[at3(s, c->b, tj, c->h)];
                acc += c->a[i * bt + j] * ug_bf16_to_f32(ug_bf16_from_f32((float)x));
            }
            o->u[at4(s, c->b, c->t0 + i, s->h, c->h, s->v) + col] = ug_bf16_from_f32((float)acc);
        }
        for (size_t col = 0; col < s->k; col++) {
            double acc = 0;
            for (size_t j = 0; j <= i; j++) {
                size_t tj = c->t0 + j;
                double x = ug_bf16_to_f32(c->k[at4(s, c->b, tj, s->hg, kh, s->k) + col]) *
                           (double)c->beta[at3(s, c->b, tj, c->h)] * exp((double)c->g[at3(s, c->b, tj, c->h)]);
                acc += c->a[i * bt + j] * ug_bf16_to_f32(ug_bf16_from_f32((float)x));
            }
            o->w[at4(s, c->b, c->t0 + i, s->h, c->h, s->k) + col] = ug_bf16_from_f32((float)acc);
        }
    }
}

ug_status gdn_gen_wy(const gdn_gen_shape *s, const ug_bf16 *k, const ug_bf16 *v,
                     const float *beta, const float *g, ug_bf16 *w, ug_bf16 *u)
{
    chunk c = {.s = s, .k = k, .v = v, .beta = beta, .g = g};
    wy_out out = {w, u};
    return for_each_chunk(&c, true, store_wy, &out);
}

void gdn_gen_dyadic_a(const gdn_gen_shape *s, gsl_rng *rng, float *a)
{
    for (size_t b = 0; b < s->b; b++)
        for (size_t t = 0; t < s->t; t++)
            for (size_t h = 0; h < s->h; h++) {
                float *row = a + at4(s, b, t, s->h, h, s->bt);
                const size_t i = t % s->bt;
                for (size_t j = 0; j < s->bt; j++) row[j] = j < i ? (float)ug_gen_grid(rng, 8, 3) : j == i ? 1.0f : 0.0f;
            }
}
