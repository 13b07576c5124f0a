/* SPDX-License-Identifier: MIT */
/* The gdn_chunk_scaled_kkt reference: exact special cases, agreement with a
 * plain high-precision MPFR loop, the expf model its bound assumes, the bound
 * holding for other legitimate evaluation orders, and failing answers two
 * ulps off where the product is known exactly. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../harness/ulp.h"
#include "../ref/f32_model.h"
#include "../ref/gdn_chunk_scaled_kkt.h"
#include "tests.h"

enum { T = 64, HG = 1, H = 2, K = 32, BT = 64 };

typedef struct {
    ug_bf16 k[T * HG * K];
    float beta[T * H], g[T * H];
    ug_ref_value l[T * H * BT];
} chunk;

static const gdn_chunk_scaled_kkt_shape shape = {1, T, HG, H, K, BT};

static void reference(chunk *c)
{
    CU_ASSERT_EQUAL_FATAL(gdn_chunk_scaled_kkt_reference(&shape, c->k, c->beta, c->g, ug_test_cpu_model(), UG_REF_EXACT, c->l).code, UG_OK);
}

static void fill_random(chunk *c, uint64_t seed)
{
    uint64_t rng = seed;
    for (size_t i = 0; i < T * HG * K; i++) c->k[i] = ug_bf16_from_f32(ug_test_uniform(&rng, -0.3f, 0.3f));
    for (size_t h = 0; h < H; h++) {
        float cumulative = 0.0f;
        for (size_t t = 0; t < T; t++) {
            cumulative -= ug_test_uniform(&rng, 0.0f, 1.5f);
            c->g[t * H + h] = cumulative;
            c->beta[t * H + h] = ug_test_uniform(&rng, 0.0f, 1.0f);
        }
    }
}

/* Every key e_0 and every gate 0: L[i][j] = beta_i below the diagonal. */
static void parallel_unit_keys_without_decay_give_beta(void)
{
    chunk *c = calloc(1, sizeof *c);
    uint64_t rng = 3;
    for (size_t t = 0; t < T; t++) {
        c->k[t * K] = ug_bf16_from_f32(1.0f);
        for (size_t h = 0; h < H; h++) c->beta[t * H + h] = ug_test_uniform(&rng, 0.0f, 1.0f);
    }
    reference(c);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++)
            for (size_t j = 0; j < BT; j++) {
                const ug_ref_value *r = &c->l[(t * H + h) * BT + j];
                const double want = j < t ? c->beta[t * H + h] : 0.0;
                CU_ASSERT_EQUAL(r->r_hi, want);
                CU_ASSERT_EQUAL(r->r_lo, 0.0);
                CU_ASSERT_EQUAL(r->rn_bits, ug_f32_bits((float)want));
            }
    free(c);
}

/* r_hi + r_lo against beta exp(g_t - g_s) sum_d k_t k_s at 1000 bits. */
static void matches_plain_mpfr_loop(void)
{
    chunk *c = calloc(1, sizeof *c);
    fill_random(c, 21);
    reference(c);
    mpfr_t acc, term, e, diff;
    mpfr_inits2(1000, acc, term, e, diff, (mpfr_ptr)0);
    double worst = 0;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 1; i < T; i++)
            for (size_t j = 0; j < i; j++) {
                mpfr_set_zero(acc, 1);
                for (size_t d = 0; d < K; d++) {
                    mpfr_set_flt(term, ug_bf16_to_f32(c->k[i * K + d]), MPFR_RNDN);
                    mpfr_mul_d(term, term, ug_bf16_to_f32(c->k[j * K + d]), MPFR_RNDN);
                    mpfr_add(acc, acc, term, MPFR_RNDN);
                }
                mpfr_set_flt(e, c->g[i * H + h], MPFR_RNDN);
                mpfr_sub_d(e, e, c->g[j * H + h], MPFR_RNDN);
                mpfr_exp(e, e, MPFR_RNDN);
                mpfr_mul(acc, acc, e, MPFR_RNDN);
                mpfr_mul_d(acc, acc, c->beta[i * H + h], MPFR_RNDN);
                const ug_ref_value *r = &c->l[(i * H + h) * BT + j];
                mpfr_sub_d(diff, acc, r->r_hi, MPFR_RNDN);
                mpfr_sub_d(diff, diff, r->r_lo, MPFR_RNDN);
                if (!mpfr_zero_p(acc)) {
                    mpfr_div(diff, diff, acc, MPFR_RNDN);
                    worst = fmax(worst, fabs(mpfr_get_d(diff, MPFR_RNDN)));
                }
            }
    CU_ASSERT(worst <= 0x1p-100);
    mpfr_clears(acc, term, e, diff, (mpfr_ptr)0);
    mpfr_free_cache();
    free(c);
}

/* The bound assumes |expf(fl32(a - b)) - exp(a - b)| <= eps exp(a - b) + 2^-149
 * within ug_f32_exp_of_difference(cpu, a, b): checked on gate-like pairs,
 * including differences the f32 subtraction rounds and ones expf takes
 * into the subnormal range, and expf(0) == 1. */
static void expf_of_a_gate_difference_stays_within_the_model(void)
{
    uint64_t rng = 0xE1;
    mpfr_t e, y;
    mpfr_inits2(200, e, y, (mpfr_ptr)0);
    size_t bad = 0, rounded = 0;
    const size_t samples = RUNNING_ON_VALGRIND ? 20000 : 200000;
    for (size_t i = 0; i < samples; i++) {
        const float scale = i % 3 == 0 ? 2000.0f : i % 3 == 1 ? 100.0f : 1.0f;
        float a = -ug_test_uniform(&rng, 0.0f, scale), b = -ug_test_uniform(&rng, 0.0f, scale);
        if (a > b) {
            float swap = a;
            a = b;
            b = swap;
        }
        const float d = a - b;
        rounded += (double)d != (double)a - (double)b;
        mpfr_set_flt(e, a, MPFR_RNDN);
        mpfr_sub_d(e, e, b, MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        mpfr_sub_d(y, e, (double)expf(d), MPFR_RNDN);
        const double err = fabs(mpfr_get_d(y, MPFR_RNDU));
        bad += err > ug_f32_error_at(ug_f32_exp_of_difference(ug_test_cpu_model(), a, b), mpfr_get_d(e, MPFR_RNDU));
    }
    CU_ASSERT(rounded > samples / 10);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(expf(0.0f), 1.0f);
    const ug_f32_error same = ug_f32_exp_of_difference(ug_test_cpu_model(), -3.5f, -3.5f);
    CU_ASSERT(same.rel == 0 && same.abs == 0);
    mpfr_clears(e, y, (mpfr_ptr)0);
    mpfr_free_cache();
}

/* Legitimate variants stay within the bound: the dot product summed backward
 * without FMA, and beta (exp dot) instead of (beta exp) dot. */
static void bound_holds_for_other_evaluation_orders(void)
{
    chunk *c = calloc(1, sizeof *c);
    size_t checked = 0, over = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        fill_random(c, seed);
        reference(c);
        for (size_t h = 0; h < H; h++)
            for (size_t i = 1; i < T; i++)
                for (size_t j = 0; j < i; j++) {
                    float dot = 0.0f;
                    for (size_t d = K; d-- > 0;)
                        dot += ug_bf16_to_f32(c->k[i * K + d]) * ug_bf16_to_f32(c->k[j * K + d]);
                    const float y = c->beta[i * H + h] * (expf(c->g[i * H + h] - c->g[j * H + h]) * dot);
                    over += ug_measure(ug_f32_bits(y), UG_F32, &c->l[(i * H + h) * BT + j]).ratio > 1;
                    checked++;
                }
    }
    CU_ASSERT(checked > 10000);
    CU_ASSERT_EQUAL(over, 0);
    free(c);
}

/* Keys with one nonzero coordinate and no decay: L = beta k_t k_s exactly up
 * to the kernel's two roundings; an answer two ulps from RN(r) fails, and so
 * does any nonzero value above the diagonal. */
static void answers_two_ulps_off_exceed_the_bound(void)
{
    chunk *c = calloc(1, sizeof *c);
    uint64_t rng = 17;
    for (size_t t = 0; t < T; t++) {
        c->k[t * K + 3] = ug_bf16_from_f32(ug_test_uniform(&rng, 0.5f, 1.0f));
        for (size_t h = 0; h < H; h++) c->beta[t * H + h] = ug_test_uniform(&rng, 0.05f, 1.0f);
    }
    reference(c);
    size_t checked = 0, caught = 0;
    for (size_t x = 0; x < T * H * BT; x++) {
        const ug_ref_value *r = &c->l[x];
        if (r->r_hi == 0) {
            caught += ug_measure(ug_f32_bits(0x1p-20f), UG_F32, r).ratio > 1;
            checked++;
            continue;
        }
        if ((r->rn_bits & 0x7FFFFF) < 2) continue; /* two below would cross into the finer binade */
        for (int side = -1; side <= 1; side += 2, checked++)
            caught += ug_measure(r->rn_bits + (uint32_t)(2 * side), UG_F32, r).ratio > 1;
    }
    CU_ASSERT(checked > 6000);
    CU_ASSERT_EQUAL(caught, checked);
    free(c);
}

UG_TEST_SUITE(ref_gdn_chunk_scaled_kkt_suite, "ref_gdn_chunk_scaled_kkt",
              UG_TEST(parallel_unit_keys_without_decay_give_beta),
              UG_TEST(matches_plain_mpfr_loop),
              UG_TEST(expf_of_a_gate_difference_stays_within_the_model),
              UG_TEST(bound_holds_for_other_evaluation_orders),
              UG_TEST(answers_two_ulps_off_exceed_the_bound));
