/* SPDX-License-Identifier: MIT */
/* Input generation helpers shared by the descriptors' generators: seeded GSL
 * draws rounded to the kernels' dtypes, and the realistic distributions of
 * SPEC §1.3 (L2-normalised heads, sigmoid betas, FLA-style log-gates). */
#ifndef UG_GEN_H
#define UG_GEN_H

#include <gsl/gsl_rng.h>
#include <stddef.h>

#include "../core/bf16.h"
#include "../core/buf.h"
#include "../core/status.h"

double ug_gen_sigmoid(double x);
/* log(sigmoid(x)), accurate for large |x|. */
double ug_gen_logsigmoid(double x);
double ug_gen_softplus(double x);
/* Raw log-gate of a Mamba2/GDN layer: -exp(A_log) * softplus(a + dt_bias),
 * with A_log = log(U(1,16)), dt_bias the inverse softplus of U(1e-3,1e-1)
 * drawn per head (pass them in), a ~ N(0,1) per token. */
double ug_gen_mamba_gate(gsl_rng *rng, double a_log, double dt_bias);
/* n standard normals, scaled to unit L2 norm around an optional base
 * direction (base NULL: isotropic; else base + spread * noise). Doubles out. */
void ug_gen_unit_vector(gsl_rng *rng, const double *base, double spread, size_t n, double *out);
void ug_gen_to_bf16(const double *x, size_t n, ug_bf16 *out);
/* m 2^-scale_log2 with m uniform in [-max_m, max_m]: a small dyadic grid.
 * With max_m < 256 the value is exact in bf16, so sums and products of such
 * values stay exact in f32 while their magnitudes stay small (the ties
 * regimes, docs/ties.md). */
double ug_gen_grid(gsl_rng *rng, unsigned max_m, int scale_log2);
/* Every element of a bf16 or f32 buffer from that grid. */
void ug_gen_grid_fill(gsl_rng *rng, unsigned max_m, int scale_log2, ug_buf *b);
/* The draws of gsl_rng_mt19937 with the words made ahead on a thread of
 * its own, for a caller with an idle core: drawing is a third of the
 * production gdn_e2e case's 1.2 s of input generation, all of it serial.
 * ug_gen_ahead_rng is a generator whose every draw (gsl_rng_get,
 * gsl_rng_uniform, gsl_rng_uniform_pos, gsl_rng_uniform_int and every
 * distribution built on them) equals that of gsl_rng_mt19937 seeded with
 * `seed` at the same point of the stream; one thread at a time uses it.
 * ug_gen_ahead_stop ends the thread and frees everything (NULL: nothing). */
typedef struct ug_gen_ahead ug_gen_ahead;
ug_status ug_gen_ahead_start(unsigned long seed, ug_gen_ahead **out);
gsl_rng *ug_gen_ahead_rng(ug_gen_ahead *a);
void ug_gen_ahead_stop(ug_gen_ahead *a);

/* Seed of a case: FNV-1a over the sweep seed, family and label. */
unsigned long ug_gen_case_seed(unsigned long sweep_seed, const char *family, const char *label);

#endif
