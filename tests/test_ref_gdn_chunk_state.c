/* SPDX-License-Identifier: MIT */
/* The gdn_chunk_state reference: states computed by hand (both modes, with
 * and without a staged cast that matters), agreement with a plain
 * high-precision recurrence, its bound holding for a kernel that evaluates
 * every sum in another order without FMA, and failing neighbouring answers
 * where the value is known to much better than a bf16 ulp. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../harness/gdn_inputs.h"
#include "../harness/ulp.h"
#include "../ref/f32_model.h"
#include "../ref/gdn_chunk_state.h"
#include "../ref/round.h"
#include "tests.h"

/* One problem: inputs and both modes' reference values. */
typedef struct {
    gdn_chunk_state_shape s;
    ug_bf16 *k, *w, *u;
    float *g, *h0;
    ug_ref_value *ref[UG_REF_MODE_COUNT][3]; /* h, v_new, final_state */
    size_t n_k, n_w, n_u, n_g, n_h0, n_out[3];
} problem;

enum { OUT_H, OUT_V_NEW, OUT_FINAL };

static problem *problem_new(gdn_chunk_state_shape s)
{
    problem *p = calloc(1, sizeof *p);
    const size_t tokens = s.b * s.t, kv = s.k * s.v;
    p->s = s;
    p->n_k = tokens * s.hg * s.k;
    p->n_w = tokens * s.h * s.k;
    p->n_u = tokens * s.h * s.v;
    p->n_g = tokens * s.h;
    p->n_h0 = s.b * s.h * kv;
    p->n_out[OUT_H] = s.b * (s.t / s.bt) * s.h * kv;
    p->n_out[OUT_V_NEW] = p->n_u;
    p->n_out[OUT_FINAL] = s.b * s.h * kv;
    p->k = calloc(p->n_k, sizeof *p->k);
    p->w = calloc(p->n_w, sizeof *p->w);
    p->u = calloc(p->n_u, sizeof *p->u);
    p->g = calloc(p->n_g, sizeof *p->g);
    p->h0 = calloc(p->n_h0, sizeof *p->h0);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        for (int o = 0; o < 3; o++) p->ref[m][o] = calloc(p->n_out[o], sizeof(ug_ref_value));
    return p;
}

static void problem_free(problem *p)
{
    free(p->k);
    free(p->w);
    free(p->u);
    free(p->g);
    free(p->h0);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        for (int o = 0; o < 3; o++) free(p->ref[m][o]);
    free(p);
}

static void reference(problem *p)
{
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        ug_status st = gdn_chunk_state_reference(&p->s, p->k, p->w, p->u, p->g, p->h0, ug_test_cpu_model(), (ug_ref_mode)m,
                                                 p->ref[m][OUT_H], p->ref[m][OUT_V_NEW], p->ref[m][OUT_FINAL]);
        CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    }
}

static void fill_bf16(ug_bf16 *x, size_t n, float value)
{
    for (size_t i = 0; i < n; i++) x[i] = ug_bf16_from_f32(value);
}

/* K = V = 1, no decay, k = w = u = 1, h0 = 1/2: every cast exact.
 * Chunk 0: h = 1/2, v = 1/2, S1 = 1/2 + 64/2 = 32.5;
 * chunk 1: h = 32.5, v = -31.5, S2 = 32.5 - 64 * 31.5 = -1983.5. */
static void one_by_one_state_by_hand(void)
{
    problem *p = problem_new((gdn_chunk_state_shape){1, 128, 1, 1, 1, 1, 64, true});
    fill_bf16(p->k, p->n_k, 1.0f);
    fill_bf16(p->w, p->n_w, 1.0f);
    fill_bf16(p->u, p->n_u, 1.0f);
    p->h0[0] = 0.5f;
    reference(p);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        CU_ASSERT_EQUAL(p->ref[m][OUT_H][0].r_hi, 0.5);
        CU_ASSERT_EQUAL(p->ref[m][OUT_H][1].r_hi, 32.5);
        for (size_t t = 0; t < 128; t++) CU_ASSERT_EQUAL(p->ref[m][OUT_V_NEW][t].r_hi, t < 64 ? 0.5 : -31.5);
        CU_ASSERT_EQUAL(p->ref[m][OUT_FINAL][0].r_hi, -1983.5);
        CU_ASSERT_EQUAL(p->ref[m][OUT_FINAL][0].r_lo, 0.0);
    }
    problem_free(p);
}

/* From a zero state, v = u - w·0 = 1 in every row: its bound is that of
 * an f32 sum of K + 1 = 2 terms of magnitude sum 1 (error model §4: gamma_2
 * and two underflows, each with its slack), finished as ug_ref_fill
 * finishes it: gamma_n's length is the sum's. */
static void the_first_v_bound_by_hand(void)
{
    problem *p = problem_new((gdn_chunk_state_shape){1, 64, 1, 1, 1, 1, 64, false});
    fill_bf16(p->k, p->n_k, 1.0f);
    fill_bf16(p->w, p->n_w, 1.0f);
    fill_bf16(p->u, p->n_u, 1.0f);
    reference(p);
    const ug_f32_model *model = ug_test_cpu_model();
    const double err = (ug_f32_gamma(2) * UG_F32_SLACK * 1.0 * UG_F32_SLACK + 0.0 * UG_F32_SLACK) * UG_F32_SLACK +
                       2.0 * ug_f32_underflow(model);
    const double magnitude = (1.0 + 0.0 + err) * UG_F32_SLACK;
    const double bound = (err + 0.5 * ug_ulp_bf16(magnitude)) * UG_F32_SLACK;
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        for (size_t t = 0; t < 64; t++) {
            CU_ASSERT_EQUAL(p->ref[m][OUT_V_NEW][t].r_hi, 1.0);
            CU_ASSERT_EQUAL(p->ref[m][OUT_V_NEW][t].bound, bound);
        }
    problem_free(p);
}

/* h0 = 1 + 2^-10 is no bf16: the staged w·bf16(S) uses 1, the exact one
 * 1 + 2^-10. With u = 2: staged v = 1, S1 = h0 + 64 = 65 + 2^-10;
 * exact v = 1 - 2^-10, S1 = h0 + 64 (1 - 2^-10) = 65 - 63 2^-10. */
static void the_staged_cast_of_the_state_by_hand(void)
{
    problem *p = problem_new((gdn_chunk_state_shape){1, 64, 1, 1, 1, 1, 64, true});
    fill_bf16(p->k, p->n_k, 1.0f);
    fill_bf16(p->w, p->n_w, 1.0f);
    fill_bf16(p->u, p->n_u, 2.0f);
    p->h0[0] = 1.0f + 0x1p-10f;
    reference(p);
    CU_ASSERT_EQUAL(p->ref[UG_REF_STAGED][OUT_V_NEW][5].r_hi, 1.0);
    CU_ASSERT_EQUAL(p->ref[UG_REF_EXACT][OUT_V_NEW][5].r_hi, 1.0 - 0x1p-10);
    CU_ASSERT_EQUAL(p->ref[UG_REF_STAGED][OUT_FINAL][0].r_hi, 65.0 + 0x1p-10);
    CU_ASSERT_EQUAL(p->ref[UG_REF_EXACT][OUT_FINAL][0].r_hi, 65.0 - 63 * 0x1p-10);
    /* the exact-mode bound admits the cast of v (half a bf16 ulp of 1 - 2^-10
     * per row) but the staged one does not need to */
    CU_ASSERT(p->ref[UG_REF_EXACT][OUT_FINAL][0].bound >= 64 * 0x1p-10);
    CU_ASSERT(p->ref[UG_REF_STAGED][OUT_FINAL][0].bound < 0x1p-10);
    problem_free(p);
}

/* Realistic inputs from the shared generators (w, u the WY products). */
static void realistic(problem *p, gdn_regime regime, unsigned long seed)
{
    const gdn_chunk_state_shape *s = &p->s;
    gdn_gen_shape gs = {s->b, s->t, s->hg, s->h, s->k, s->v, s->bt};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ug_bf16 *v = malloc(p->n_u * sizeof *v);
    float *beta = malloc(p->n_g * sizeof *beta);
    CU_ASSERT_EQUAL_FATAL(gdn_gen_keys(&gs, regime, rng, p->k).code, UG_OK);
    gdn_gen_tokens(&gs, regime, rng, NULL, p->g, beta, v);
    CU_ASSERT_EQUAL_FATAL(gdn_gen_wy(&gs, p->k, v, beta, p->g, p->w, p->u).code, UG_OK);
    for (size_t i = 0; i < p->n_h0 && s->has_h0; i++) p->h0[i] = (float)gsl_ran_gaussian(rng, 0.5);
    free(v);
    free(beta);
    gsl_rng_free(rng);
}

/* The recurrence written plainly at 1000 bits, casts by RN_bf16 of the
 * 1000-bit values in staged mode; r_hi + r_lo must agree to 2^-100 of the
 * element's magnitude sum. */
static double worst_disagreement(const problem *p, ug_ref_mode mode)
{
    const gdn_chunk_state_shape *s = &p->s;
    const size_t kv = s->k * s->v, nt = s->t / s->bt;
    mpfr_t *S = malloc(kv * sizeof *S), *sv = malloc(s->bt * s->v * sizeof *sv);
    mpfr_t acc, e, term, diff;
    for (size_t x = 0; x < kv; x++) mpfr_init2(S[x], 1000);
    for (size_t x = 0; x < s->bt * s->v; x++) mpfr_init2(sv[x], 1000);
    mpfr_inits2(1000, acc, e, term, diff, (mpfr_ptr)0);
    double worst = 0;
#define CHECK(value, r)                                                                   \
    do {                                                                                  \
        mpfr_sub_d(diff, value, (r)->r_hi, MPFR_RNDN);                                    \
        mpfr_sub_d(diff, diff, (r)->r_lo, MPFR_RNDN);                                     \
        worst = fmax(worst, fabs(mpfr_get_d(diff, MPFR_RNDN)) / fmax((r)->abs_sum, 1e-30)); \
    } while (0)
    for (size_t h = 0; h < s->h; h++) {
        const size_t kh = h / (s->h / s->hg);
        for (size_t x = 0; x < kv; x++) mpfr_set_flt(S[x], s->has_h0 ? p->h0[h * kv + x] : 0.0f, MPFR_RNDN);
        for (size_t c = 0; c < nt; c++) {
            const size_t t0 = c * s->bt;
            const float g_last = p->g[(t0 + s->bt - 1) * s->h + h];
            for (size_t x = 0; x < kv; x++)
                CHECK(S[x], &p->ref[mode][OUT_H][((c * s->h + h) * s->v + x % s->v) * s->k + x / s->v]);
            for (size_t i = 0; i < s->bt; i++) {
                const size_t row = (t0 + i) * s->h + h;
                mpfr_set_flt(e, g_last, MPFR_RNDN);
                mpfr_sub_d(e, e, p->g[row], MPFR_RNDN);
                mpfr_exp(e, e, MPFR_RNDN);
                for (size_t vv = 0; vv < s->v; vv++) {
                    mpfr_set_flt(acc, ug_bf16_to_f32(p->u[row * s->v + vv]), MPFR_RNDN);
                    for (size_t kk = 0; kk < s->k; kk++) {
                        if (mode == UG_REF_STAGED) mpfr_set_flt(term, ug_bf16_to_f32(ug_mpfr_to_bf16(S[kk * s->v + vv])), MPFR_RNDN);
                        else mpfr_set(term, S[kk * s->v + vv], MPFR_RNDN);
                        mpfr_mul_d(term, term, ug_bf16_to_f32(p->w[row * s->k + kk]), MPFR_RNDN);
                        mpfr_sub(acc, acc, term, MPFR_RNDN);
                    }
                    CHECK(acc, &p->ref[mode][OUT_V_NEW][row * s->v + vv]);
                    mpfr_mul(sv[i * s->v + vv], acc, e, MPFR_RNDN);
                    if (mode == UG_REF_STAGED)
                        mpfr_set_flt(sv[i * s->v + vv], ug_bf16_to_f32(ug_mpfr_to_bf16(sv[i * s->v + vv])), MPFR_RNDN);
                }
            }
            mpfr_set_flt(e, g_last, MPFR_RNDN);
            mpfr_exp(e, e, MPFR_RNDN);
            for (size_t kk = 0; kk < s->k; kk++)
                for (size_t vv = 0; vv < s->v; vv++) {
                    mpfr_mul(S[kk * s->v + vv], S[kk * s->v + vv], e, MPFR_RNDN);
                    for (size_t i = 0; i < s->bt; i++) {
                        mpfr_mul_d(term, sv[i * s->v + vv], ug_bf16_to_f32(p->k[((t0 + i) * s->hg + kh) * s->k + kk]), MPFR_RNDN);
                        mpfr_add(S[kk * s->v + vv], S[kk * s->v + vv], term, MPFR_RNDN);
                    }
                }
        }
        for (size_t x = 0; x < kv; x++) CHECK(S[x], &p->ref[mode][OUT_FINAL][h * kv + x]);
    }
#undef CHECK
    for (size_t x = 0; x < kv; x++) mpfr_clear(S[x]);
    for (size_t x = 0; x < s->bt * s->v; x++) mpfr_clear(sv[x]);
    mpfr_clears(acc, e, term, diff, (mpfr_ptr)0);
    mpfr_free_cache();
    free(S);
    free(sv);
    return worst;
}

static void matches_plain_mpfr_recurrence(void)
{
    problem *p = problem_new((gdn_chunk_state_shape){1, 192, 1, 2, 8, 8, 64, true});
    realistic(p, GDN_REGIME_REALISTIC, 41);
    reference(p);
    CU_ASSERT(worst_disagreement(p, UG_REF_EXACT) <= 0x1p-100);
    CU_ASSERT(worst_disagreement(p, UG_REF_STAGED) <= 0x1p-100);
    problem_free(p);
}

/* A legitimate kernel that evaluates every sum in another order and without
 * FMA: each sum backward with rounded products, the decayed state rounded
 * before the update is added. Its outputs as bits, in the kernel's layouts. */
static void reordered_kernel(const problem *p, ug_bf16 *h_out, ug_bf16 *v_new, float *final_state)
{
    const gdn_chunk_state_shape *s = &p->s;
    const size_t kv = s->k * s->v, nt = s->t / s->bt;
    float *S = malloc(kv * sizeof *S), *staged = malloc(s->bt * s->v * sizeof *staged);
    for (size_t h = 0; h < s->h; h++) {
        const size_t kh = h / (s->h / s->hg);
        for (size_t x = 0; x < kv; x++) S[x] = s->has_h0 ? p->h0[h * kv + x] : 0.0f;
        for (size_t c = 0; c < nt; c++) {
            const size_t t0 = c * s->bt;
            const float g_last = p->g[(t0 + s->bt - 1) * s->h + h];
            for (size_t x = 0; x < kv; x++)
                h_out[((c * s->h + h) * s->v + x % s->v) * s->k + x / s->v] = ug_bf16_from_f32(S[x]);
            for (size_t i = 0; i < s->bt; i++) {
                const size_t row = (t0 + i) * s->h + h;
                const float decay = expf(g_last - p->g[row]);
                for (size_t vv = 0; vv < s->v; vv++) {
                    float acc = 0.0f;
                    for (size_t kk = s->k; kk-- > 0;)
                        acc += ug_bf16_to_f32(p->w[row * s->k + kk]) * ug_bf16_to_f32(ug_bf16_from_f32(S[kk * s->v + vv]));
                    const float v = ug_bf16_to_f32(p->u[row * s->v + vv]) - acc;
                    v_new[row * s->v + vv] = ug_bf16_from_f32(v);
                    staged[i * s->v + vv] = ug_bf16_to_f32(ug_bf16_from_f32(v * decay));
                }
            }
            const float state_decay = expf(g_last);
            for (size_t x = 0; x < kv; x++) {
                float upd = 0.0f;
                for (size_t i = s->bt; i-- > 0;)
                    upd += ug_bf16_to_f32(p->k[((t0 + i) * s->hg + kh) * s->k + x / s->v]) * staged[i * s->v + x % s->v];
                S[x] = state_decay * S[x] + upd;
            }
        }
        memcpy(final_state + h * kv, S, kv * sizeof *S);
    }
    free(S);
    free(staged);
}

static size_t over_bound(const problem *p, const ug_bf16 *h_out, const ug_bf16 *v_new, const float *final_state)
{
    size_t over = 0;
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        for (size_t x = 0; x < p->n_out[OUT_H]; x++) over += ug_measure(h_out[x], UG_BF16, &p->ref[m][OUT_H][x]).ratio > 1;
        for (size_t x = 0; x < p->n_out[OUT_V_NEW]; x++)
            over += ug_measure(v_new[x], UG_BF16, &p->ref[m][OUT_V_NEW][x]).ratio > 1;
        for (size_t x = 0; x < p->n_out[OUT_FINAL]; x++)
            over += ug_measure(ug_f32_bits(final_state[x]), UG_F32, &p->ref[m][OUT_FINAL][x]).ratio > 1;
    }
    return over;
}

static void bound_holds_for_a_reordered_kernel(void)
{
    const gdn_regime regimes[] = {GDN_REGIME_REALISTIC, GDN_REGIME_GATES_ZERO, GDN_REGIME_STRONG_DECAY,
                                  GDN_REGIME_BETA_NEAR_ONE, GDN_REGIME_PARALLEL_KEYS};
    const size_t n_regimes = RUNNING_ON_VALGRIND ? 1 : sizeof regimes / sizeof regimes[0];
    for (size_t r = 0; r < n_regimes; r++) {
        problem *p = problem_new((gdn_chunk_state_shape){1, 192, 1, 2, 16, 16, 64, true});
        realistic(p, regimes[r], 100 + r);
        reference(p);
        ug_bf16 *h_out = malloc(p->n_out[OUT_H] * 2), *v_new = malloc(p->n_out[OUT_V_NEW] * 2);
        float *final_state = malloc(p->n_out[OUT_FINAL] * 4);
        reordered_kernel(p, h_out, v_new, final_state);
        CU_ASSERT_EQUAL(over_bound(p, h_out, v_new, final_state), 0);
        free(h_out);
        free(v_new);
        free(final_state);
        problem_free(p);
    }
}

/* 48 chunks without decay: through |M_c| the magnitude recursion grows the
 * bound geometrically (past the double range near chunk 60 at K = V = 128);
 * the norm bound keeps it linear in the chunk count, finite, within a
 * small multiple of the state's own scale, and above the reordered
 * kernel's error. */
static void a_long_sequence_without_decay_keeps_its_bound(void)
{
    const size_t chunks = RUNNING_ON_VALGRIND ? 12 : 48;
    problem *p = problem_new((gdn_chunk_state_shape){1, 64 * chunks, 1, 1, 16, 16, 64, true});
    realistic(p, GDN_REGIME_GATES_ZERO, 5);
    reference(p);
    ug_bf16 *h_out = malloc(p->n_out[OUT_H] * 2), *v_new = malloc(p->n_out[OUT_V_NEW] * 2);
    float *final_state = malloc(p->n_out[OUT_FINAL] * 4);
    reordered_kernel(p, h_out, v_new, final_state);
    CU_ASSERT_EQUAL(over_bound(p, h_out, v_new, final_state), 0);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        double worst = 0, scale = 0;
        for (size_t x = 0; x < p->n_out[OUT_FINAL]; x++) {
            worst = fmax(worst, p->ref[m][OUT_FINAL][x].bound);
            scale = fmax(scale, fabs(p->ref[m][OUT_FINAL][x].r_hi));
        }
        CU_ASSERT(worst <= 0.5 * scale);
    }
    free(h_out);
    free(v_new);
    free(final_state);
    problem_free(p);
}

/* The far neighbour of RN_bf16(r), where r is known to far better than a
 * bf16 ulp: v_new of the first chunk without h0 (v = u exactly), and h of
 * the second chunk in staged mode where no operand is flagged and the
 * element is well conditioned. */
/* Below a power of two the spacing halves: there the far neighbour toward
 * zero is only half an ulp away, and zero has no far side; skipped. */
static bool testable(const ug_ref_value *r) { return r->r_hi != 0 && (r->rn_bits & 0x7F) != 0; }

static bool far_neighbour_fails(const ug_ref_value *r)
{
    const float rn = ug_bf16_to_f32((ug_bf16)r->rn_bits);
    const bool r_above = r->r_hi + r->r_lo > rn;
    const ug_bf16 far = (ug_bf16)(r->rn_bits + (((r->rn_bits & 0x8000) != 0) == r_above ? 1 : -1));
    return ug_measure(far, UG_BF16, r).ratio > 1;
}

static void far_neighbours_exceed_the_bound(void)
{
    problem *p = problem_new((gdn_chunk_state_shape){1, 128, 1, 1, 32, 32, 64, false});
    realistic(p, GDN_REGIME_REALISTIC, 9);
    reference(p);
    size_t checked = 0, caught = 0;
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        for (size_t x = 0; x < 64 * 32; x++) {
            const ug_ref_value *r = &p->ref[m][OUT_V_NEW][x];
            if (!testable(r)) continue;
            checked++;
            caught += far_neighbour_fails(r);
        }
    for (size_t x = 32 * 32; x < 2 * 32 * 32; x++) {
        const ug_ref_value *r = &p->ref[UG_REF_STAGED][OUT_H][x];
        if (!testable(r) || r->flagged || r->abs_sum > 4 * fabs(r->r_hi)) continue;
        checked++;
        caught += far_neighbour_fails(r);
    }
    CU_ASSERT(checked > 2 * 64 * 32 * 3 / 4 + 200);
    CU_ASSERT_EQUAL(caught, checked);
    problem_free(p);
}

UG_TEST_SUITE(ref_gdn_chunk_state_suite, "ref_gdn_chunk_state",
              UG_TEST(one_by_one_state_by_hand),
              UG_TEST(the_staged_cast_of_the_state_by_hand),
              UG_TEST(the_first_v_bound_by_hand),
              UG_TEST(matches_plain_mpfr_recurrence),
              UG_TEST(bound_holds_for_a_reordered_kernel),
              UG_TEST(a_long_sequence_without_decay_keeps_its_bound),
              UG_TEST(far_neighbours_exceed_the_bound));
