/* SPDX-License-Identifier: MIT */
/* The gdn_recompute_wu reference: exact special cases first, then agreement
 * with a plain high-precision MPFR loop, then the assumptions of its bound. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

#include "../harness/family.h"
#include "../harness/ulp.h"
#include "../ref/gdn_recompute_wu.h"
#include "../ref/rowsimd.h"
#include "ref_fast.h"
#include "tests.h"

enum { BT = 64, K = 64, V = 64, T = 64 };

typedef struct {
    gdn_recompute_wu_shape s;
    ug_bf16 k[T * K], v[T * V];
    float beta[T], g[T], a[T * BT];
    ug_ref_value w[T * K], u[T * V];
} one_chunk;

static one_chunk *chunk_new(void)
{
    one_chunk *c = calloc(1, sizeof *c);
    gdn_recompute_wu_shape s = {1, T, 1, 1, K, V, BT};
    c->s = s;
    return c;
}

static void run_reference(one_chunk *c, ug_ref_mode mode)
{
    ug_status st = gdn_recompute_wu_reference(&c->s, c->k, c->v, c->beta, c->g, c->a, ug_test_cpu_model(), mode, c->w, c->u);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
}

static void fill_random(one_chunk *c, gsl_rng *rng, bool identity_a)
{
    for (size_t i = 0; i < T * K; i++) c->k[i] = ug_bf16_from_f32((float)(gsl_rng_uniform(rng) - 0.5));
    for (size_t i = 0; i < T * V; i++) c->v[i] = ug_bf16_from_f32((float)(4 * gsl_rng_uniform(rng) - 2));
    for (size_t t = 0; t < T; t++) {
        c->beta[t] = (float)gsl_rng_uniform_pos(rng);
        c->g[t] = (float)(-3 * gsl_rng_uniform(rng));
        for (size_t j = 0; j < BT; j++)
            c->a[t * BT + j] = identity_a ? (t == j) : (j <= t ? (float)(gsl_rng_uniform(rng) - 0.5) : 0.0f);
    }
}

/* RN to bf16 of a double, through MPFR's own precision-8 rounding (normal range). */
static ug_bf16 rn_bf16_of_double(double x)
{
    mpfr_t m;
    mpfr_init2(m, 8);
    mpfr_set_d(m, x, MPFR_RNDN);
    ug_bf16 out = ug_bf16_from_f32(mpfr_get_flt(m, MPFR_RNDN));
    mpfr_clear(m);
    return out;
}

static void staged_identity_a_gives_rounded_operand(void)
{
    one_chunk *c = chunk_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    fill_random(c, rng, true);
    run_reference(c, UG_REF_STAGED);
    for (size_t t = 0; t < T; t++)
        for (size_t d = 0; d < V; d++) {
            double x = (double)ug_bf16_to_f32(c->v[t * V + d]) * c->beta[t];
            CU_ASSERT_EQUAL(c->u[t * V + d].rn_bits, rn_bf16_of_double(x));
            CU_ASSERT_EQUAL(c->u[t * V + d].r_hi, ug_bf16_to_f32(rn_bf16_of_double(x)));
        }
    gsl_rng_free(rng);
    free(c);
}

static void exact_identity_a_without_gate_reproduces_k(void)
{
    one_chunk *c = chunk_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    fill_random(c, rng, true);
    for (size_t t = 0; t < T; t++) c->beta[t] = 1.0f, c->g[t] = 0.0f;
    run_reference(c, UG_REF_EXACT);
    for (size_t i = 0; i < T * K; i++) {
        CU_ASSERT_EQUAL(c->w[i].rn_bits, c->k[i]);
        CU_ASSERT_EQUAL(c->w[i].r_hi, ug_bf16_to_f32(c->k[i]));
        CU_ASSERT_EQUAL(c->w[i].flagged, 0);
    }
    gsl_rng_free(rng);
    free(c);
}

/* r against sum_j A_j * operand_j formed with mpfr_mul/mpfr_add at 1000 bits. */
static void exact_reference_matches_plain_mpfr_loop(void)
{
    one_chunk *c = chunk_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    fill_random(c, rng, false);
    run_reference(c, UG_REF_EXACT);
    mpfr_t acc, term, e, diff;
    mpfr_inits2(1000, acc, term, e, diff, (mpfr_ptr)0);
    double worst = 0;
    /* Every row natively; a few under valgrind (make memcheck). */
    const size_t row_step = RUNNING_ON_VALGRIND ? 16 : 1;
    for (size_t t = 0; t < T; t += row_step)
        for (size_t d = 0; d < K; d++) {
            mpfr_set_zero(acc, 1);
            for (size_t j = 0; j < BT; j++) {
                mpfr_set_flt(e, c->g[j], MPFR_RNDN);
                mpfr_exp(e, e, MPFR_RNDN);
                mpfr_set_flt(term, ug_bf16_to_f32(c->k[j * K + d]), MPFR_RNDN);
                mpfr_mul_d(term, term, c->beta[j], MPFR_RNDN);
                mpfr_mul(term, term, e, MPFR_RNDN);
                mpfr_mul_d(term, term, c->a[t * BT + j], MPFR_RNDN);
                mpfr_add(acc, acc, term, MPFR_RNDN);
            }
            const ug_ref_value *r = &c->w[t * K + d];
            mpfr_sub_d(diff, acc, r->r_hi, MPFR_RNDN);
            mpfr_sub_d(diff, diff, r->r_lo, MPFR_RNDN);
            double rel = fabs(mpfr_get_d(diff, MPFR_RNDN)) / r->abs_sum;
            if (rel > worst) worst = rel;
        }
    /* r_hi + r_lo keeps 106 bits: 2^-104 relative to the magnitude sum. */
    CU_ASSERT(worst <= 0x1p-100);
    mpfr_clears(acc, term, e, diff, (mpfr_ptr)0);
    mpfr_free_cache();
    gsl_rng_free(rng);
    free(c);
}

/* The w bound assumes |expf(g) - exp(g)| <= 2^-23 exp(g) + 2^-149. */
static void expf_within_one_ulp_on_gate_range(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    mpfr_t e, y;
    mpfr_inits2(200, e, y, (mpfr_ptr)0);
    size_t bad = 0;
    const size_t samples = RUNNING_ON_VALGRIND ? 20000 : 200000;
    for (size_t i = 0; i < samples; i++) {
        float g = i < 1000 ? -(float)i * 0.125f : (float)(-120 * gsl_rng_uniform(rng));
        mpfr_set_flt(e, g, MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        mpfr_sub_d(y, e, (double)expf(g), MPFR_RNDN);
        double err = fabs(mpfr_get_d(y, MPFR_RNDN)), allowed = 0x1p-23 * mpfr_get_d(e, MPFR_RNDU) + 0x1p-149;
        bad += err > allowed;
    }
    CU_ASSERT_EQUAL(bad, 0);
    mpfr_clears(e, y, (mpfr_ptr)0);
    mpfr_free_cache();
    gsl_rng_free(rng);
}

static void operand_near_a_midpoint_is_flagged(void)
{
    mpfr_t x, radius;
    mpfr_inits2(100, x, radius, (mpfr_ptr)0);
    mpfr_set_d(radius, 0x1p-24, MPFR_RNDN);
    ug_staged st;
    mpfr_set_d(x, 1 + 0x1p-8 + 0x1p-30, MPFR_RNDN); /* 2^-30 above the 1 / 1+2^-7 midpoint */
    ug_stage_operand(x, radius, &st);
    CU_ASSERT(st.flagged);
    CU_ASSERT_EQUAL(st.lo, 0x3F80);
    CU_ASSERT_EQUAL(st.hi, 0x3F81);
    CU_ASSERT_EQUAL(st.rn, 0x3F81);
    CU_ASSERT_EQUAL(st.gap, 0x1p-7);
    mpfr_set_d(x, 1 + 0x1p-8 + 0x1p-20, MPFR_RNDN); /* far from it: one candidate */
    ug_stage_operand(x, radius, &st);
    CU_ASSERT(!st.flagged);
    CU_ASSERT_EQUAL(st.lo, st.hi);
    CU_ASSERT_EQUAL(st.gap, 0);
    mpfr_clears(x, radius, (mpfr_ptr)0);
}

/* A kernel answering the far neighbour of RN(r) on a well-conditioned
 * element must exceed its bound: the gate can fail. */
static void far_neighbour_exceeds_bound(void)
{
    one_chunk *c = chunk_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    fill_random(c, rng, false);
    run_reference(c, UG_REF_STAGED);
    size_t checked = 0, caught = 0;
    for (size_t i = 0; i < T * V; i++) {
        const ug_ref_value *r = &c->u[i];
        /* Below a power of two the spacing halves: the far neighbour toward
         * zero is then only half an ulp away; skip those. */
        if (r->r_hi == 0 || r->abs_sum / fabs(r->r_hi) > 4 || (r->rn_bits & 0x7F) == 0) continue;
        float rn = ug_bf16_to_f32((ug_bf16)r->rn_bits);
        bool r_above = r->r_hi + r->r_lo > rn;
        ug_bf16 far = (ug_bf16)(r->rn_bits + (((r->rn_bits & 0x8000) != 0) == r_above ? 1 : -1));
        ug_elem_error e = ug_measure(far, UG_BF16, r);
        checked++;
        caught += e.ratio > 1;
    }
    CU_ASSERT(checked > 1000);
    CU_ASSERT_EQUAL(caught, checked);
    gsl_rng_free(rng);
    free(c);
}

/* The fast path (portable and, where the CPU has them, AVX-512 row loops)
 * against the MPFR path on c's inputs, both modes: the differing elements. */
static size_t fast_differs_from_plain(one_chunk *c)
{
    one_chunk *fast = malloc(sizeof *fast);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fast);
    *fast = *c;
    size_t differ = 0, mismatches = 0;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        run_reference(c, (ug_ref_mode)mode);
        ug_ref_set_fast(true);
        ug_ref_simd_set_enabled(true);
        for (int simd = 0, paths = ug_ref_simd_available() ? 2 : 1; simd < paths; simd++) {
            ug_ref_simd_set_enabled(simd);
            run_reference(fast, (ug_ref_mode)mode);
            differ += ug_test_count_ref_differences(fast->w, c->w, T * K, &mismatches);
            differ += ug_test_count_ref_differences(fast->u, c->u, T * V, &mismatches);
        }
        ug_ref_simd_set_enabled(true);
    }
    free(fast);
    return differ;
}

/* Gates decaying to 2^-133 and keys down to 2^-40: w operands from 2^-175
 * up, many below half bf16's least subnormal (2^-134), which the fast
 * path stages without MPFR: those whose window straddles zero (|x| below
 * the kernel's underflow allowance, ~2^-147: flagged) and those above it
 * (a signed zero, not flagged). Every 16th token has a gate just below
 * 1 and a subnormal beta that put k beta exp(g) (k = +-2^-8) just below
 * 2^-134, some within the window's reach of it (their windows round up to
 * the least subnormal: left to MPFR). */
static void operands_below_bf16_subnormals(void)
{
    one_chunk *c = chunk_new();
    uint64_t state = 21;
    size_t straddling = 0, signed_zero = 0;
    for (size_t t = 0; t < T; t++) {
        const bool near_half_subnormal = t % 16 == 15;
        c->beta[t] = near_half_subnormal ? ldexpf(1 - ldexpf(1, -8 - 4 * (int)(t / 16)), -126)
                                         : ug_test_uniform(&state, 0.5f, 1);
        c->g[t] = near_half_subnormal ? -0x1p-30f : -(float)(M_LN2 * (70.0 + (double)t));
        for (size_t d = 0; d < K; d++) {
            const float k = near_half_subnormal && d % 2 ? 0x1p-8f
                                                         : ldexpf(ug_test_uniform(&state, 1, 2),
                                                                  -(int)(ug_test_next_u32(&state) % 41));
            c->k[t * K + d] = ug_bf16_from_f32(ug_test_next_u32(&state) & 1 ? -k : k);
            const double x = fabs(ug_bf16_to_f32(c->k[t * K + d]) * c->beta[t] * exp(c->g[t]));
            straddling += x < 0x1p-150;
            signed_zero += x > 0x1p-145 && x < 0x1p-135;
        }
        for (size_t d = 0; d < V; d++) c->v[t * V + d] = ug_bf16_from_f32(ug_test_uniform(&state, -2, 2));
        for (size_t j = 0; j <= t; j++) c->a[t * BT + j] = ug_test_uniform(&state, -1, 1);
    }
    CU_ASSERT(straddling > 200 && signed_zero > 200);
    CU_ASSERT_EQUAL(fast_differs_from_plain(c), 0);
    free(c);
}

UG_TEST_SUITE(ref_gdn_recompute_wu_suite, "ref_gdn_recompute_wu",
              UG_TEST(operands_below_bf16_subnormals),
              UG_TEST(staged_identity_a_gives_rounded_operand),
              UG_TEST(exact_identity_a_without_gate_reproduces_k),
              UG_TEST(exact_reference_matches_plain_mpfr_loop),
              UG_TEST(expf_within_one_ulp_on_gate_range),
              UG_TEST(operand_near_a_midpoint_is_flagged),
              UG_TEST(far_neighbour_exceeds_bound));
