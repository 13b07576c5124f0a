/* SPDX-License-Identifier: MIT */
/* The gdn_chunk_o reference: exact special cases first, then agreement with
 * plain high-precision MPFR loops, then the assumptions of its bound (the
 * kernel's pre-cast errors stay inside the windows the reference allows, expf's
 * accuracy) and the bound's power to fail a wrong answer. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../harness/gen.h"
#include "../harness/ulp.h"
#include "../ref/gdn_chunk_o.h"
#include "../ref/rowsimd.h"
#include "tests.h"

enum { BT = 64, K = 128, V = 32, T = 128, NT = T / BT, H = 2, PLAIN_PREC = 1000 };

/* Two chunks of one key head shared by two value heads (GQA); the arrays
 * are laid out for T rows, of which the shape uses s.t. */
typedef struct {
    gdn_chunk_o_shape s;
    float scale;
    ug_bf16 q[T * K], k[T * K], v[T * H * V], h[NT * H * V * K];
    float g[T * H];
    ug_ref_value o[T * H * V];
} two_chunks;

/* Both chunks natively; the first only under valgrind (make memcheck), where
 * each reference call costs seconds. */
static size_t rows(void) { return RUNNING_ON_VALGRIND ? BT : T; }

static two_chunks *case_new(float scale)
{
    two_chunks *c = calloc(1, sizeof *c);
    CU_ASSERT_FATAL(c != NULL);
    gdn_chunk_o_shape s = {1, rows(), 1, H, K, V, BT};
    c->s = s;
    c->scale = scale;
    return c;
}

static void run_reference(two_chunks *c, ug_ref_mode mode)
{
    ug_status st = gdn_chunk_o_reference(&c->s, c->scale, c->q, c->k, c->v, c->h, c->g, ug_test_cpu_model(), mode, c->o);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
}

static ug_bf16 bf(double x) { return ug_bf16_from_f32((float)x); }
static double f(ug_bf16 x) { return ug_bf16_to_f32(x); }
static size_t at_v(size_t t, size_t head, size_t col) { return (t * H + head) * V + col; }
static size_t at_h(size_t c, size_t head, size_t col, size_t kk) { return ((c * H + head) * V + col) * K + kk; }
static size_t at_g(size_t t, size_t head) { return t * H + head; }

/* Realistic inputs: unit q and k (in the nearly parallel case, both close to
 * one direction per chunk), v ~ N(0,1), g a chunk-cumulative sum of
 * log-gates with 10% zero gates, a random bf16 state. */
static void fill_random(two_chunks *c, gsl_rng *rng, bool nearly_parallel)
{
    double base[K], x[K];
    for (size_t t = 0; t < T; t++) {
        if (t % BT == 0) ug_gen_unit_vector(rng, NULL, 0, K, base);
        ug_gen_unit_vector(rng, nearly_parallel ? base : NULL, 0.05, K, x);
        ug_gen_to_bf16(x, K, c->q + t * K);
        ug_gen_unit_vector(rng, nearly_parallel ? base : NULL, 0.05, K, x);
        ug_gen_to_bf16(x, K, c->k + t * K);
    }
    for (size_t head = 0; head < H; head++) {
        double cumulative = 0;
        for (size_t t = 0; t < T; t++) {
            if (t % BT == 0) cumulative = 0;
            if (gsl_rng_uniform(rng) > 0.1) cumulative -= gsl_ran_flat(rng, 0, 0.5);
            c->g[at_g(t, head)] = (float)cumulative;
            for (size_t col = 0; col < V; col++) c->v[at_v(t, head, col)] = bf(gsl_ran_gaussian(rng, 1.0));
        }
    }
    for (size_t i = 0; i < NT * H * V * K; i++) c->h[i] = bf(gsl_ran_gaussian(rng, 0.5));
}

static double value_of(const ug_ref_value *r) { return r->r_hi + r->r_lo; }

/* ---- exact special cases ---------------------------------------------------- */

/* q = k = e_0, zero gates, zero state: every attention weight is exactly 1
 * and o = scale * sum_{s<=t in the chunk} v_s in both modes, unflagged. */
static void unit_attention_sums_the_values(void)
{
    two_chunks *c = case_new(0.5f);
    for (size_t t = 0; t < T; t++) {
        c->q[t * K] = c->k[t * K] = bf(1.0);
        for (size_t head = 0; head < H; head++)
            for (size_t col = 0; col < V; col++) c->v[at_v(t, head, col)] = bf((double)((int)(t + 3 * head + col) % 7 - 3));
    }
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        run_reference(c, (ug_ref_mode)mode);
        size_t bad = 0;
        for (size_t t = 0; t < c->s.t; t++)
            for (size_t head = 0; head < H; head++)
                for (size_t col = 0; col < V; col++) {
                    double sum = 0, abs_sum = 0;
                    for (size_t s = t / BT * BT; s <= t; s++) {
                        sum += f(c->v[at_v(s, head, col)]);
                        abs_sum += fabs(f(c->v[at_v(s, head, col)]));
                    }
                    const ug_ref_value *r = &c->o[at_v(t, head, col)];
                    if (value_of(r) != 0.5 * sum || r->rn_bits != bf(0.5 * sum) || r->flagged != 0 ||
                        fabs(r->abs_sum - 0.5 * abs_sum) > 1e-9 * abs_sum)
                        UG_TEST_MISMATCH(bad, "%s o[%zu][%zu][%zu]: r=%g, want %g", ug_ref_mode_name((ug_ref_mode)mode),
                                         t, head, col, value_of(r), 0.5 * sum);
                }
        CU_ASSERT_EQUAL(bad, 0);
    }
    free(c);
}

/* q.k = 1 + 3*2^-9 for every pair (q = (1, 1), k = (1, 3*2^-9)), zero gates,
 * one nonzero value (v[0][.][0] = 1): o[t][.][0] of the first chunk is the
 * attention operand itself, 1.005859375 exact, RN_bf16 = 1.0078125 staged. */
static void staged_mode_rounds_the_attention_operand(void)
{
    two_chunks *c = case_new(1.0f);
    for (size_t t = 0; t < T; t++) {
        c->q[t * K] = c->q[t * K + 1] = c->k[t * K] = bf(1.0);
        c->k[t * K + 1] = bf(3 * 0x1p-9);
    }
    for (size_t head = 0; head < H; head++) c->v[at_v(0, head, 0)] = bf(1.0);
    run_reference(c, UG_REF_EXACT);
    CU_ASSERT_EQUAL(value_of(&c->o[at_v(5, 1, 0)]), 1 + 3 * 0x1p-9);
    CU_ASSERT_EQUAL(c->o[at_v(5, 1, 0)].rn_bits, 0x3F81);
    run_reference(c, UG_REF_STAGED);
    CU_ASSERT_EQUAL(value_of(&c->o[at_v(5, 1, 0)]), 1 + 0x1p-7);
    CU_ASSERT_EQUAL(c->o[at_v(5, 1, 0)].flagged, 0);
    if (c->s.t > BT) CU_ASSERT_EQUAL(value_of(&c->o[at_v(70, 1, 0)]), 0); /* the second chunk sees no value */
    free(c);
}

/* r of one row (every column) by a plain MPFR loop at PLAIN_PREC bits: exp
 * with mpfr_exp, every dot product by mpfr_mul/mpfr_add; the staged mode
 * rounds each attention operand to 8 significant bits (bf16 in the normal
 * range). */
static void plain_row(const two_chunks *c, ug_ref_mode mode, size_t t, size_t head, mpfr_t out[V])
{
    mpfr_t dot, prod, e, attention[BT];
    mpfr_inits2(PLAIN_PREC, dot, prod, e, (mpfr_ptr)0);
    const size_t c0 = t / BT * BT;
    for (size_t s = c0; s <= t; s++) {
        mpfr_init2(attention[s - c0], PLAIN_PREC);
        mpfr_set_zero(dot, 1);
        for (size_t kk = 0; kk < K; kk++) {
            mpfr_set_d(prod, f(c->q[t * K + kk]), MPFR_RNDN);
            mpfr_mul_d(prod, prod, f(c->k[s * K + kk]), MPFR_RNDN);
            mpfr_add(dot, dot, prod, MPFR_RNDN);
        }
        mpfr_set_flt(e, c->g[at_g(t, head)], MPFR_RNDN);
        mpfr_sub_d(e, e, c->g[at_g(s, head)], MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        mpfr_mul(attention[s - c0], e, dot, MPFR_RNDN);
        if (mode == UG_REF_STAGED) {
            mpfr_prec_round(attention[s - c0], 8, MPFR_RNDN);
            mpfr_prec_round(attention[s - c0], PLAIN_PREC, MPFR_RNDN); /* exact: back to full width */
        }
    }
    mpfr_set_flt(e, c->g[at_g(t, head)], MPFR_RNDN);
    mpfr_exp(e, e, MPFR_RNDN);
    for (size_t col = 0; col < V; col++) {
        mpfr_set_zero(dot, 1);
        for (size_t kk = 0; kk < K; kk++) {
            mpfr_set_d(prod, f(c->q[t * K + kk]), MPFR_RNDN);
            mpfr_mul_d(prod, prod, f(c->h[at_h(t / BT, head, col, kk)]), MPFR_RNDN);
            mpfr_add(dot, dot, prod, MPFR_RNDN);
        }
        mpfr_mul(out[col], e, dot, MPFR_RNDN);
        for (size_t s = c0; s <= t; s++) {
            mpfr_mul_d(prod, attention[s - c0], f(c->v[at_v(s, head, col)]), MPFR_RNDN);
            mpfr_add(out[col], out[col], prod, MPFR_RNDN);
        }
        mpfr_mul_d(out[col], out[col], c->scale, MPFR_RNDN);
    }
    for (size_t s = c0; s <= t; s++) mpfr_clear(attention[s - c0]);
    mpfr_clears(dot, prod, e, (mpfr_ptr)0);
}

/* r against the plain loop on sampled rows, relative to the element's
 * magnitude sum (r_hi + r_lo keeps 106 bits), and RN_bf16(r). */
static void reference_matches_plain_mpfr_loop(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    two_chunks *c = case_new(0.08838834764831845f);
    fill_random(c, rng, false);
    mpfr_t plain[V], diff, rounded;
    for (size_t col = 0; col < V; col++) mpfr_init2(plain[col], PLAIN_PREC);
    mpfr_init2(diff, PLAIN_PREC);
    mpfr_init2(rounded, 8);
    const size_t row_step = RUNNING_ON_VALGRIND ? 21 : 3;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        run_reference(c, (ug_ref_mode)mode);
        double worst = 0;
        for (size_t t = 0; t < c->s.t; t += row_step)
            for (size_t head = 0; head < H; head++) {
                plain_row(c, (ug_ref_mode)mode, t, head, plain);
                for (size_t col = 0; col < V; col++) {
                    const ug_ref_value *r = &c->o[at_v(t, head, col)];
                    mpfr_sub_d(diff, plain[col], r->r_hi, MPFR_RNDN);
                    mpfr_sub_d(diff, diff, r->r_lo, MPFR_RNDN);
                    double rel = fabs(mpfr_get_d(diff, MPFR_RNDN)) / r->abs_sum;
                    if (rel > worst) worst = rel;
                    mpfr_set(rounded, plain[col], MPFR_RNDN); /* RN to 8 bits: bf16 in the normal range */
                    CU_ASSERT_EQUAL(r->rn_bits, ug_bf16_from_f32(mpfr_get_flt(rounded, MPFR_RNDN)));
                }
            }
        CU_ASSERT(worst <= 0x1p-100);
    }
    for (size_t col = 0; col < V; col++) mpfr_clear(plain[col]);
    mpfr_clears(diff, rounded, (mpfr_ptr)0);
    mpfr_free_cache();
    gsl_rng_free(rng);
    free(c);
}

/* Dot products whose products span more exponents than 128-bit integers hold
 * (2^100 and 2^-100 side by side) take the reference's mpfr_sum path: still
 * exact. Only the state term is nonzero (k = 0). */
static void state_dot_exact_across_the_exponent_range(void)
{
    two_chunks *c = case_new(1.0f);
    for (size_t t = 0; t < T; t++) {
        c->q[t * K] = bf(0x1p100);
        c->q[t * K + 1] = bf(0x1p-100);
        c->q[t * K + 2] = bf(-3.0);
    }
    for (size_t i = 0; i < NT * H * V; i++) {
        c->h[i * K] = bf(0x1p-110 * (double)(i % 5 + 1));
        c->h[i * K + 1] = bf(0x1p90 * (double)(i % 3 + 1));
        c->h[i * K + 2] = bf(0.5 + (double)(i % 4));
    }
    run_reference(c, UG_REF_EXACT);
    size_t bad = 0;
    for (size_t t = 0; t < c->s.t; t++)
        for (size_t head = 0; head < H; head++)
            for (size_t col = 0; col < V; col++) {
                size_t i = (t / BT * H + head) * V + col;
                /* 2^-10 (i%5+1) + 2^-10 (i%3+1) - 3 (0.5 + i%4): exact in double */
                double want = 0x1p-10 * (double)(i % 5 + 1) + 0x1p-10 * (double)(i % 3 + 1) - 3 * (0.5 + (double)(i % 4));
                if (value_of(&c->o[at_v(t, head, col)]) != want)
                    UG_TEST_MISMATCH(bad, "o[%zu][%zu][%zu] = %a, want %a", t, head, col,
                                     value_of(&c->o[at_v(t, head, col)]), want);
            }
    CU_ASSERT_EQUAL(bad, 0);
    free(c);
}

/* ---- the bound's assumptions ----------------------------------------------- */

/* expf(0) is exactly 1 (the reference allows no exp error there), and expf of
 * an f32 gate difference is within the relative error the reference allows
 * (its rounding widened by exp(u|d|), plus one f32 ulp) and 2^-149. */
static void expf_of_gate_differences_within_the_allowance(void)
{
    CU_ASSERT_EQUAL(expf(0.0f), 1.0f);
    const ug_f32_error at_zero = ug_f32_exp_of_rounded(ug_test_cpu_model(), 0);
    CU_ASSERT(at_zero.rel == 0 && at_zero.abs == 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    mpfr_t d, e, err;
    mpfr_inits2(200, d, e, err, (mpfr_ptr)0);
    size_t bad = 0;
    const size_t samples = RUNNING_ON_VALGRIND ? 20000 : 200000;
    for (size_t i = 0; i < samples; i++) {
        float g_s = (float)(-gsl_ran_flat(rng, 0, i % 3 ? 40 : 2000));
        float g_t = g_s - (float)gsl_ran_flat(rng, 0, i % 2 ? 1 : 120);
        float computed = expf(g_t - g_s);
        mpfr_set_flt(d, g_t, MPFR_RNDN);
        mpfr_sub_d(d, d, g_s, MPFR_RNDN); /* exact at 200 bits */
        mpfr_exp(e, d, MPFR_RNDN);
        mpfr_sub_d(err, e, computed, MPFR_RNDN);
        const ug_f32_error exp = ug_f32_exp_of_rounded(ug_test_cpu_model(), mpfr_get_d(d, MPFR_RNDA));
        double allowed = mpfr_get_d(e, MPFR_RNDU) * exp.rel + exp.abs;
        if (fabs(mpfr_get_d(err, MPFR_RNDA)) > allowed)
            UG_TEST_MISMATCH(bad, "expf(%a - %a) = %a", (double)g_t, (double)g_s, (double)computed);
    }
    CU_ASSERT_EQUAL(bad, 0);
    mpfr_clears(d, e, err, (mpfr_ptr)0);
    mpfr_free_cache();
    gsl_rng_free(rng);
}

/* Three f32 evaluations of a 128-term bf16 dot product a kernel might use:
 * an FMA chain forward, one backward, and a pairwise tree without FMA. */
static float dot_forward(const ug_bf16 *a, const ug_bf16 *b)
{
    float acc = 0.0f;
    for (size_t i = 0; i < K; i++) acc = fmaf((float)f(a[i]), (float)f(b[i]), acc);
    return acc;
}

static float dot_backward(const ug_bf16 *a, const ug_bf16 *b)
{
    float acc = 0.0f;
    for (size_t i = K; i-- > 0;) acc = fmaf((float)f(a[i]), (float)f(b[i]), acc);
    return acc;
}

static float dot_pairwise(const ug_bf16 *a, const ug_bf16 *b)
{
    float level[K];
    for (size_t i = 0; i < K; i++) level[i] = (float)f(a[i]) * (float)f(b[i]);
    for (size_t n = K; n > 1; n /= 2)
        for (size_t i = 0; i < n / 2; i++) level[i] = level[2 * i] + level[2 * i + 1];
    return level[0];
}

/* The kernel's pre-cast attention operand expf(fl(g_t - g_s)) * fl(q.k), and
 * its state term expf(g_t) * fl(q.h), lie within gdn_chunk_o_product_error of
 * the exact values, for every evaluation order, on unit vectors, on nearly
 * orthogonal ones (cancellation) and on decays down to underflow. */
static void precast_error_within_the_flag_window(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    ug_bf16 a[K], b[K];
    double x[K], y[K];
    mpfr_t dot, prod, d, e, exact, err;
    mpfr_inits2(700, dot, prod, d, e, exact, err, (mpfr_ptr)0);
    size_t bad = 0;
    double worst = 0;
    const size_t samples = RUNNING_ON_VALGRIND ? 1000 : 20000;
    for (size_t i = 0; i < samples; i++) {
        ug_gen_unit_vector(rng, NULL, 0, K, x);
        ug_gen_unit_vector(rng, NULL, 0, K, y);
        if (i % 3 == 0) { /* y nearly orthogonal to x: q.k ~ 1e-4 while sum |q_k k_k| ~ 0.6 */
            double along = 0;
            for (size_t kk = 0; kk < K; kk++) along += x[kk] * y[kk];
            for (size_t kk = 0; kk < K; kk++) y[kk] -= (along - 1e-4) * x[kk];
        }
        ug_gen_to_bf16(x, K, a);
        ug_gen_to_bf16(y, K, b);
        double abs_terms = 0;
        mpfr_set_zero(dot, 1);
        for (size_t kk = 0; kk < K; kk++) {
            mpfr_set_d(prod, f(a[kk]) * f(b[kk]), MPFR_RNDN); /* exact */
            mpfr_add(dot, dot, prod, MPFR_RNDN);              /* exact at 700 bits */
            abs_terms += fabs(f(a[kk]) * f(b[kk]));
        }
        abs_terms *= 1 + 0x1p-40;
        float g_s = (float)(-gsl_ran_flat(rng, 0, 20));
        float g_t = i % 5 == 0 ? g_s : i % 7 == 0 ? g_s - (float)gsl_ran_flat(rng, 80, 110)
                                                 : g_s - (float)gsl_ran_flat(rng, 0, 20);
        const bool state_term = i % 2;
        /* state term: expf(g_t) * q.h; attention: expf(g_t - g_s) * q.k */
        float decay = state_term ? expf(g_t) : expf(g_t - g_s);
        mpfr_set_flt(d, g_t, MPFR_RNDN);
        if (!state_term) mpfr_sub_d(d, d, g_s, MPFR_RNDN);
        mpfr_exp(e, d, MPFR_RNDN);
        mpfr_mul(exact, e, dot, MPFR_RNDN);
        double d_value = mpfr_get_d(d, MPFR_RNDU);
        double e_up = d_value == 0 ? 1.0 : gdn_chunk_o_exp_up(d_value);
        const ug_f32_model *cpu = ug_test_cpu_model();
        const ug_f32_error exp = state_term ? ug_f32_op_error(cpu, UG_F32_EXP, g_t, g_t)
                                            : ug_f32_exp_of_rounded(cpu, mpfr_get_d(d, MPFR_RNDA));
        double radius = gdn_chunk_o_product_error(cpu, e_up, exp, fabs(mpfr_get_d(dot, MPFR_RNDA)), abs_terms, K);
        const float dots[] = {dot_forward(a, b), dot_backward(a, b), dot_pairwise(a, b)};
        for (size_t o = 0; o < 3; o++) {
            float computed = decay * dots[o];
            mpfr_sub_d(err, exact, computed, MPFR_RNDN);
            double error = fabs(mpfr_get_d(err, MPFR_RNDU));
            if (error / radius > worst) worst = error / radius;
            if (error > radius)
                UG_TEST_MISMATCH(bad, "sample %zu order %zu: error %g > radius %g", i, o, error, radius);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(worst > 0); /* the check saw real rounding errors */
    mpfr_clears(dot, prod, d, e, exact, err, (mpfr_ptr)0);
    mpfr_free_cache();
    gsl_rng_free(rng);
}

/* The staged reference is one of the answers the exact bound admits: the
 * spec's own casts move r by at most the cast allowance. */
static void staged_value_within_the_exact_bound(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    two_chunks *exact = case_new(0.08838834764831845f), *staged = case_new(0.08838834764831845f);
    fill_random(exact, rng, true);
    memcpy(staged, exact, sizeof *staged);
    run_reference(exact, UG_REF_EXACT);
    run_reference(staged, UG_REF_STAGED);
    size_t bad = 0;
    for (size_t i = 0; i < exact->s.t * H * V; i++) {
        double gap = fabs((staged->o[i].r_hi - exact->o[i].r_hi) + (staged->o[i].r_lo - exact->o[i].r_lo));
        if (gap > exact->o[i].bound) UG_TEST_MISMATCH(bad, "o[%zu]: |staged - exact| = %g > bound %g", i, gap, exact->o[i].bound);
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(exact);
    free(staged);
    gsl_rng_free(rng);
}

/* ---- the bound can fail, and admits exactly the flagged neighbour ---------- */

/* A kernel answering the far neighbour of RN(r) on a well-conditioned,
 * unflagged element must exceed its bound: the gate can fail. */
static void far_neighbour_exceeds_bound(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    two_chunks *c = case_new(0.08838834764831845f);
    fill_random(c, rng, false);
    run_reference(c, UG_REF_STAGED);
    size_t checked = 0, caught = 0;
    for (size_t i = 0; i < c->s.t * H * V; i++) {
        const ug_ref_value *r = &c->o[i];
        /* Below a power of two the spacing halves: the far neighbour toward
         * zero is then only half an ulp away; skip those. */
        if (r->r_hi == 0 || r->flagged || r->abs_sum / fabs(r->r_hi) > 4 || (r->rn_bits & 0x7F) == 0) continue;
        float rn = ug_bf16_to_f32((ug_bf16)r->rn_bits);
        bool r_above = r->r_hi + r->r_lo > rn;
        ug_bf16 far = (ug_bf16)(r->rn_bits + (((r->rn_bits & 0x8000) != 0) == r_above ? 1 : -1));
        ug_elem_error e = ug_measure(far, UG_BF16, r);
        checked++;
        caught += e.ratio > 1;
    }
    CU_ASSERT(checked > c->s.t);
    CU_ASSERT_EQUAL(caught, checked);
    free(c);
    gsl_rng_free(rng);
}

/* q.k = 1 + 2^-8 exactly, the midpoint of 1 and 1 + 2^-7: RN gives 1 (ties to
 * even), a kernel's f32 dot may land on either side, so the operand is
 * flagged and the staged bound admits the other neighbour (one bf16 ulp of
 * the operand times |v|), but not two ulps. */
static void midpoint_operand_is_flagged_and_admits_one_neighbour(void)
{
    two_chunks *c = case_new(1.0f);
    for (size_t t = 0; t < T; t++) {
        c->q[t * K] = c->q[t * K + 1] = c->k[t * K] = bf(1.0);
        c->k[t * K + 1] = bf(0x1p-8);
    }
    for (size_t head = 0; head < H; head++) c->v[at_v(0, head, 0)] = bf(1.0);
    run_reference(c, UG_REF_STAGED);
    const ug_ref_value *r = &c->o[at_v(9, 0, 0)];
    CU_ASSERT_EQUAL(value_of(r), 1.0);
    CU_ASSERT(r->flagged >= 1);
    ug_elem_error other = ug_measure(bf(1 + 0x1p-7), UG_BF16, r), two_ulps = ug_measure(bf(1 + 0x1p-6), UG_BF16, r);
    CU_ASSERT(other.ratio <= 1);
    CU_ASSERT(two_ulps.ratio > 1);
    free(c);
}

/* ---- the fast path against the MPFR path ---------------------------------------- */

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The elements where the fast path (portable, and AVX-512 where the CPU
 * has it) and the MPFR path (ug_ref_set_fast(false)) differ in any field,
 * both modes. */
static size_t fast_path_differences(two_chunks *c)
{
    const size_t n = c->s.t * H * V;
    ug_ref_value *plain = calloc(n, sizeof *plain);
    CU_ASSERT_FATAL(plain != NULL);
    size_t differ = 0;
    ug_ref_simd_set_enabled(true);
    const int paths = ug_ref_simd_available() ? 2 : 1; /* portable, then AVX-512 */
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        run_reference(c, (ug_ref_mode)mode);
        memcpy(plain, c->o, n * sizeof *plain);
        ug_ref_set_fast(true);
        for (int simd = 0; simd < paths; simd++) {
            ug_ref_simd_set_enabled(simd == 1);
            run_reference(c, (ug_ref_mode)mode);
            for (size_t i = 0; i < n; i++) {
                const ug_ref_value *a = &c->o[i], *b = &plain[i];
                if (same_bits(a->r_hi, b->r_hi) && same_bits(a->r_lo, b->r_lo) && a->rn_bits == b->rn_bits &&
                    a->flagged == b->flagged && same_bits(a->bound, b->bound) && same_bits(a->abs_sum, b->abs_sum))
                    continue;
                UG_TEST_MISMATCH(differ, "%s%s o[%zu]: fast r=%a+%a bound=%a abs=%a, mpfr r=%a+%a bound=%a abs=%a",
                                 ug_ref_mode_name((ug_ref_mode)mode), simd ? " (AVX-512)" : "", i, a->r_hi, a->r_lo,
                                 a->bound, a->abs_sum, b->r_hi, b->r_lo, b->bound, b->abs_sum);
            }
        }
        ug_ref_simd_set_enabled(true);
    }
    free(plain);
    return differ;
}

/* n bf16 entries +-[1, 2) (one binade: an exponent spread of 0), but
 * x[n / 2] = 1.0234375 * 2^-spread (an odd significand, 131 * 2^-7: dot
 * products with more bits than a double holds): the vector's spread is
 * `spread`. */
static void fill_spread(ug_bf16 *x, size_t n, gsl_rng *rng, int spread)
{
    for (size_t d = 0; d < n; d++) x[d] = bf((gsl_rng_uniform(rng) < 0.5 ? -1 : 1) * (1 + gsl_rng_uniform(rng)));
    x[n / 2] = bf(ldexp(1.0234375, -spread));
}

/* Queries, keys and state rows of chosen exponent spreads (the fast path
 * puts each vector on its own grid): rows whose dot products leave an
 * int64 (row 5; rows >= 60 by a key), rows whose state dot products leave
 * a double's 53 bits but not an int64 (row 9, and one to three rows from
 * 30, so that the rows left in doubles fall into groups of four every
 * way; rows >= 50 by a key of spread 20), beside rows in doubles, in one
 * chunk; state rows of spread 10. */
static void fast_path_with_wide_vectors_equals_mpfr(void)
{
    for (size_t tail = 1; tail <= 3; tail++) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 17);
        two_chunks *c = case_new(0.08838834764831845f);
        fill_random(c, rng, false);
        for (size_t t = 0; t < T; t++) {
            const size_t i = t % BT;
            const bool narrow_row = i == 9 || (i >= 30 && i < 30 + tail);
            fill_spread(c->q + t * K, K, rng, i == 5 ? 45 : narrow_row ? 25 : (int)(i % 4));
            fill_spread(c->k + t * K, K, rng, i == 60 ? 45 : i == 50 ? 20 : 0);
        }
        for (size_t r = 0; r < NT * H * V; r++) fill_spread(c->h + r * K, K, rng, 10);
        for (size_t t = 0; t < T; t++) /* head 1: the state term alone, its |q.h|'s rounding seen in the bound */
            for (size_t col = 0; col < V; col++) c->v[at_v(t, 1, col)] = 0;
        CU_ASSERT_EQUAL(fast_path_differences(c), 0);
        free(c);
        gsl_rng_free(rng);
    }
}

/* Realistic inputs (most rows' attention terms in one window, some in
 * two) and zero queries and values (rows without attention terms, zero
 * sums), with a negative scale that is not a power of two. */
static void fast_path_windows_equal_mpfr(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 19);
    two_chunks *c = case_new(-0.3f);
    fill_random(c, rng, false);
    for (size_t t = 0; t < T; t += 7) memset(c->q + t * K, 0, K * sizeof *c->q);
    for (size_t t = 0; t < T; t += 3)
        for (size_t head = 0; head < H; head++) c->v[at_v(t, head, t % V)] = 0;
    CU_ASSERT_EQUAL(fast_path_differences(c), 0);
    free(c);
    gsl_rng_free(rng);
}

UG_TEST_SUITE(ref_gdn_chunk_o_suite, "ref_gdn_chunk_o",
              UG_TEST(unit_attention_sums_the_values),
              UG_TEST(staged_mode_rounds_the_attention_operand),
              UG_TEST(reference_matches_plain_mpfr_loop),
              UG_TEST(state_dot_exact_across_the_exponent_range),
              UG_TEST(expf_of_gate_differences_within_the_allowance),
              UG_TEST(precast_error_within_the_flag_window),
              UG_TEST(staged_value_within_the_exact_bound),
              UG_TEST(far_neighbour_exceeds_bound),
              UG_TEST(midpoint_operand_is_flagged_and_admits_one_neighbour),
              UG_TEST(fast_path_with_wide_vectors_equals_mpfr),
              UG_TEST(fast_path_windows_equal_mpfr));
