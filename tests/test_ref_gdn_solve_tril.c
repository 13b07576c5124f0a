/* SPDX-License-Identifier: MIT */
/* The gdn_solve_tril reference: exact inverses known by hand, agreement with
 * a plain high-precision forward substitution, the condition number, the
 * bound holding for other legitimate substitution orders, and failing
 * answers two ulps off where the entry is known exactly. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../harness/ulp.h"
#include "../ref/gdn_solve_tril.h"
#include "tests.h"

enum { BT = 64, H = 2, T = 64, N = T * H * BT };

static const gdn_solve_tril_shape shape = {1, T, H, BT};

static size_t at(size_t i, size_t h, size_t j) { return (i * H + h) * BT + j; }

static void reference(const float *l, ug_ref_value *a)
{
    CU_ASSERT_EQUAL_FATAL(gdn_solve_tril_reference(&shape, l, ug_test_cpu_model(), UG_REF_EXACT, a).code, UG_OK);
}

/* Strictly lower L like the scaled K·Kᵀ of random keys: entries beta
 * e^{dg} k.k with |k.k| up to ~0.3, in a decaying band. */
static void random_l(float *l, uint64_t seed, float spread)
{
    uint64_t rng = seed;
    memset(l, 0, N * sizeof *l);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j < i; j++)
                l[at(i, h, j)] = ug_test_uniform(&rng, -spread, spread) * expf(-0.05f * (float)(i - j));
}

static void zero_l_gives_the_identity(void)
{
    float *l = calloc(N, sizeof *l);
    ug_ref_value *a = calloc(N, sizeof *a);
    reference(l, a);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j < BT; j++) {
                CU_ASSERT_EQUAL(a[at(i, h, j)].r_hi, i == j ? 1.0 : 0.0);
                CU_ASSERT_EQUAL(a[at(i, h, j)].r_lo, 0.0);
            }
    free(l);
    free(a);
}

/* L = 1/2 on the subdiagonal: (I + L)^-1[i][j] = (-1/2)^(i-j) for j <= i;
 * kappa_inf = ||I + L|| ||X|| = 1.5 (2 - 2^-63). */
static void bidiagonal_l_gives_powers_of_minus_one_half(void)
{
    float *l = calloc(N, sizeof *l);
    ug_ref_value *a = calloc(N, sizeof *a);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 1; i < BT; i++) l[at(i, h, i - 1)] = 0.5f;
    reference(l, a);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j < BT; j++) {
                const double want = j <= i ? ldexp((i - j) % 2 ? -1.0 : 1.0, -(int)(i - j)) : 0.0;
                CU_ASSERT_EQUAL(a[at(i, h, j)].r_hi, want);
            }
    double abs_l[BT * BT] = {0}, abs_x[BT * BT] = {0};
    for (size_t i = 0; i < BT; i++)
        for (size_t j = 0; j <= i; j++) {
            abs_x[i * BT + j] = ldexp(1.0, -(int)(i - j));
            if (j + 1 == i) abs_l[i * BT + j] = 0.5;
        }
    const double kappa = gdn_solve_tril_kappa(BT, abs_l, abs_x);
    CU_ASSERT(kappa >= 1.5 * (2 - 0x1p-63) && kappa <= 3 * (1 + 0x1p-30));
    free(l);
    free(a);
}

/* r_hi + r_lo against forward substitution with mpfr_fma at 2000 bits. */
static void matches_plain_mpfr_substitution(void)
{
    float *l = malloc(N * sizeof *l);
    ug_ref_value *a = calloc(N, sizeof *a);
    random_l(l, 31, 0.3f);
    reference(l, a);
    mpfr_t *x = malloc(BT * BT * sizeof *x);
    mpfr_t diff, scale;
    for (size_t k = 0; k < BT * BT; k++) mpfr_init2(x[k], 2000);
    mpfr_inits2(2000, diff, scale, (mpfr_ptr)0);
    double worst = 0;
    for (size_t h = 0; h < H; h++) {
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j < BT; j++) {
                mpfr_set_ui(x[i * BT + j], i == j, MPFR_RNDN);
                for (size_t m = j; m < i && j < i; m++) {
                    mpfr_set_flt(scale, -l[at(i, h, m)], MPFR_RNDN);
                    mpfr_fma(x[i * BT + j], scale, x[m * BT + j], x[i * BT + j], MPFR_RNDN);
                }
            }
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j <= i; j++) {
                const ug_ref_value *r = &a[at(i, h, j)];
                mpfr_sub_d(diff, x[i * BT + j], r->r_hi, MPFR_RNDN);
                mpfr_sub_d(diff, diff, r->r_lo, MPFR_RNDN);
                worst = fmax(worst, fabs(mpfr_get_d(diff, MPFR_RNDN)) / fmax(fabs(r->r_hi), 0x1p-100));
            }
    }
    CU_ASSERT(worst <= 0x1p-100);
    for (size_t k = 0; k < BT * BT; k++) mpfr_clear(x[k]);
    mpfr_clears(diff, scale, (mpfr_ptr)0);
    mpfr_free_cache();
    free(x);
    free(l);
    free(a);
}

/* Other orders of the same substitution stay within the bound: column by
 * column without FMA, and each row's sum taken backward. */
static void bound_holds_for_other_substitution_orders(void)
{
    float *l = malloc(N * sizeof *l), x[BT * BT];
    ug_ref_value *a = calloc(N, sizeof *a);
    size_t checked = 0, over = 0;
    const uint64_t seeds = RUNNING_ON_VALGRIND ? 2 : 12;
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        random_l(l, seed, seed % 2 ? 0.3f : 0.9f);
        reference(l, a);
        for (size_t h = 0; h < H; h++)
            for (int backward = 0; backward <= 1; backward++) {
                for (size_t j = 0; j < BT; j++)
                    for (size_t i = 0; i < BT; i++) {
                        float acc = 0.0f;
                        if (backward)
                            for (size_t m = i; m-- > j;) acc += l[at(i, h, m)] * x[m * BT + j];
                        else
                            for (size_t m = j; m < i; m++) acc += l[at(i, h, m)] * x[m * BT + j];
                        x[i * BT + j] = i < j ? 0.0f : i == j ? 1.0f : -acc;
                    }
                for (size_t i = 0; i < BT; i++)
                    for (size_t j = 0; j < BT; j++, checked++)
                        over += ug_measure(ug_f32_bits(x[i * BT + j]), UG_F32, &a[at(i, h, j)]).ratio > 1;
            }
    }
    CU_ASSERT(checked >= 2 * 2 * H * BT * BT);
    CU_ASSERT_EQUAL(over, 0);
    free(l);
    free(a);
}

/* The subdiagonal of the inverse is -L exactly (one product with 1, no
 * rounding in any order): answers two ulps from RN(r) fail there, and any
 * nonzero answer above the diagonal fails. */
static void answers_two_ulps_off_exceed_the_bound(void)
{
    float *l = malloc(N * sizeof *l);
    ug_ref_value *a = calloc(N, sizeof *a);
    random_l(l, 77, 0.3f);
    reference(l, a);
    size_t checked = 0, caught = 0;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < BT; i++) {
            for (size_t j = i + 1; j < BT; j++, checked++)
                caught += ug_measure(ug_f32_bits(0x1p-30f), UG_F32, &a[at(i, h, j)]).ratio > 1;
            if (i == 0) continue;
            const ug_ref_value *r = &a[at(i, h, i - 1)];
            CU_ASSERT_EQUAL(r->r_hi, -(double)l[at(i, h, i - 1)]);
            if ((r->rn_bits & 0x7FFFFF) < 2) continue; /* two below would cross into the finer binade */
            for (int side = -1; side <= 1; side += 2, checked++)
                caught += ug_measure(r->rn_bits + (uint32_t)(2 * side), UG_F32, r).ratio > 1;
        }
    CU_ASSERT(checked > 4000);
    CU_ASSERT_EQUAL(caught, checked);
    free(l);
    free(a);
}

UG_TEST_SUITE(ref_gdn_solve_tril_suite, "ref_gdn_solve_tril",
              UG_TEST(zero_l_gives_the_identity),
              UG_TEST(bidiagonal_l_gives_powers_of_minus_one_half),
              UG_TEST(matches_plain_mpfr_substitution),
              UG_TEST(bound_holds_for_other_substitution_orders),
              UG_TEST(answers_two_ulps_off_exceed_the_bound));
