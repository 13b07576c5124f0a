/* SPDX-License-Identifier: MIT */
/* The gdn_chunk_cumsum reference: exact special cases, agreement with a
 * plain high-precision MPFR loop, its bound holding for any summation order,
 * and the bound failing a neighbouring answer where it must. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

#include "../core/bf16.h"
#include "../harness/ulp.h"
#include "../ref/gdn_chunk_cumsum.h"
#include "tests.h"

enum { T = 256, H = 3, BT = 64, N = T * H };

static const gdn_chunk_cumsum_shape shape = {1, T, H, BT};

static size_t at(size_t t, size_t h) { return t * H + h; }

static void reference(const float *g_raw, ug_ref_value *out)
{
    CU_ASSERT_EQUAL_FATAL(gdn_chunk_cumsum_reference(&shape, g_raw, ug_test_cpu_model(), UG_REF_EXACT, out).code, UG_OK);
}

static void random_gates(float *g_raw, uint64_t seed)
{
    uint64_t rng = seed;
    for (size_t i = 0; i < N; i++) {
        const uint32_t pick = ug_test_next_u32(&rng) % 10;
        g_raw[i] = pick == 0 ? 0.0f : pick == 1 ? -ug_test_uniform(&rng, 2.0f, 20.0f) : -ug_test_uniform(&rng, 0.0f, 0.3f);
    }
}

static void zero_gates_sum_to_exact_zero(void)
{
    float g_raw[N] = {0};
    ug_ref_value out[N];
    reference(g_raw, out);
    for (size_t i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(out[i].r_hi, 0.0);
        CU_ASSERT_EQUAL(out[i].abs_sum, 0.0);
        CU_ASSERT(out[i].bound <= 0x1p-149);
    }
}

/* Gates -2^-(t % 8): every prefix sum is a short dyadic value, exactly an f32. */
static void dyadic_gates_sum_exactly_and_restart_per_chunk(void)
{
    float g_raw[N];
    ug_ref_value out[N];
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) g_raw[at(t, h)] = -ldexpf(1.0f, -(int)(t % 8));
    reference(g_raw, out);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) {
            double want = 0;
            for (size_t s = t - t % BT; s <= t; s++) want += g_raw[at(s, h)];
            const ug_ref_value *r = &out[at(t, h)];
            CU_ASSERT_EQUAL(r->r_hi, want);
            CU_ASSERT_EQUAL(r->r_lo, 0.0);
            CU_ASSERT_EQUAL(r->rn_bits, ug_f32_bits((float)want));
        }
}

/* r_hi + r_lo against a 1000-bit running sum. */
static void matches_plain_mpfr_loop(void)
{
    float g_raw[N];
    ug_ref_value out[N];
    random_gates(g_raw, 11);
    reference(g_raw, out);
    mpfr_t sum, diff;
    mpfr_inits2(1000, sum, diff, (mpfr_ptr)0);
    double worst = 0;
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < T; t++) {
            if (t % BT == 0) mpfr_set_zero(sum, 1);
            mpfr_add_d(sum, sum, g_raw[at(t, h)], MPFR_RNDN);
            const ug_ref_value *r = &out[at(t, h)];
            mpfr_sub_d(diff, sum, r->r_hi, MPFR_RNDN);
            mpfr_sub_d(diff, diff, r->r_lo, MPFR_RNDN);
            if (r->abs_sum > 0) worst = fmax(worst, fabs(mpfr_get_d(diff, MPFR_RNDN)) / r->abs_sum);
        }
    CU_ASSERT(worst <= 0x1p-100);
    mpfr_clears(sum, diff, (mpfr_ptr)0);
    mpfr_free_cache();
}

/* The bound is for any order: forward, backward and pairwise f32 sums of
 * each prefix all stay within it. */
static float pairwise(const float *x, size_t stride, size_t n)
{
    if (n == 1) return x[0];
    const size_t half = n / 2;
    return pairwise(x, stride, half) + pairwise(x + half * stride, stride, n - half);
}

static void bound_holds_for_every_summation_order(void)
{
    float g_raw[N];
    ug_ref_value out[N];
    size_t checked = 0, over = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        random_gates(g_raw, seed);
        reference(g_raw, out);
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                const size_t start = t - t % BT;
                float forward = 0.0f, backward = 0.0f;
                for (size_t s = start; s <= t; s++) forward += g_raw[at(s, h)];
                for (size_t s = t + 1; s-- > start;) backward += g_raw[at(s, h)];
                const float sums[] = {forward, backward, pairwise(&g_raw[at(start, h)], H, t - start + 1)};
                for (size_t k = 0; k < 3; k++, checked++)
                    over += ug_measure(ug_f32_bits(sums[k]), UG_F32, &out[at(t, h)]).ratio > 1;
            }
    }
    CU_ASSERT(checked > 40000);
    CU_ASSERT_EQUAL(over, 0);
}

/* Where the sum is exact (a chunk's first row) any neighbour of r fails the
 * bound; after one addition (two gates of one sign) two ulps away fail. */
static void neighbouring_answers_exceed_the_bound(void)
{
    float g_raw[N];
    ug_ref_value out[N];
    random_gates(g_raw, 5);
    reference(g_raw, out);
    size_t checked = 0, caught = 0;
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) {
            const ug_ref_value *r = &out[at(t, h)];
            const size_t i = t % BT;
            if (i > 1 || r->r_hi == 0 || (r->rn_bits & 0x7FFFFF) < 2) continue;
            const uint32_t step = i == 0 ? 1 : 2;
            for (int side = -1; side <= 1; side += 2, checked++)
                caught += ug_measure(r->rn_bits + (uint32_t)side * step, UG_F32, r).ratio > 1;
        }
    CU_ASSERT(checked >= 4 * H * (T / BT) - 8);
    CU_ASSERT_EQUAL(caught, checked);
}

UG_TEST_SUITE(ref_gdn_chunk_cumsum_suite, "ref_gdn_chunk_cumsum",
              UG_TEST(zero_gates_sum_to_exact_zero),
              UG_TEST(dyadic_gates_sum_exactly_and_restart_per_chunk),
              UG_TEST(matches_plain_mpfr_loop),
              UG_TEST(bound_holds_for_every_summation_order),
              UG_TEST(neighbouring_answers_exceed_the_bound));
