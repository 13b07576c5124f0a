/* SPDX-License-Identifier: MIT */
#include "gen.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <string.h>

#include "../core/hash.h"

double ug_gen_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

double ug_gen_logsigmoid(double x) { return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x)); }

double ug_gen_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

double ug_gen_mamba_gate(gsl_rng *rng, double a_log, double dt_bias)
{
    return -exp(a_log) * ug_gen_softplus(gsl_ran_gaussian(rng, 1.0) + dt_bias);
}

void ug_gen_unit_vector(gsl_rng *rng, const double *base, double spread, size_t n, double *out)
{
    double norm2 = 0;
    for (size_t i = 0; i < n; i++) {
        double noise = gsl_ran_gaussian(rng, 1.0);
        out[i] = base ? base[i] + spread * noise : noise;
        norm2 += out[i] * out[i];
    }
    double inv = norm2 > 0 ? 1.0 / sqrt(norm2) : 0.0;
    for (size_t i = 0; i < n; i++) out[i] *= inv;
}

void ug_gen_to_bf16(const double *x, size_t n, ug_bf16 *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_bf16_from_f32((float)x[i]);
}

double ug_gen_grid(gsl_rng *rng, unsigned max_m, int scale_log2)
{
    long m = (long)gsl_rng_uniform_int(rng, 2ul * max_m + 1) - (long)max_m;
    return ldexp((double)m, -scale_log2);
}

void ug_gen_grid_fill(gsl_rng *rng, unsigned max_m, int scale_log2, ug_buf *b)
{
    for (size_t i = 0; i < b->count; i++) {
        float x = (float)ug_gen_grid(rng, max_m, scale_log2);
        if (b->dtype == UG_BF16) ((ug_bf16 *)b->data)[i] = ug_bf16_from_f32(x);
        else ((float *)b->data)[i] = x;
    }
}

unsigned long ug_gen_case_seed(unsigned long sweep_seed, const char *family, const char *label)
{
    uint64_t h = ug_fnv1a(UG_FNV1A_OFFSET, &sweep_seed, sizeof sweep_seed);
    h = ug_fnv1a(h, family, strlen(family) + 1);
    return ug_fnv1a(h, label, strlen(label));
}
