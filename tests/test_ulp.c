/* SPDX-License-Identifier: MIT */
/* harness/ulp.c: ug_measure (SPEC §3). Special cases one by one, then random
 * references (double-double from MPFR) with y = RN(r). */
#include <float.h>
#include <gmp.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../harness/ulp.h"
#include "../ref/round.h"
#include "tests.h"

enum { SEED = 31337 };


/* A reference value with r = hi + lo, RN bits, bound and abs_sum. */
static ug_ref_value ref(double hi, double lo, uint32_t rn, double bound, double abs_sum)
{
    ug_ref_value r = {.r_hi = hi, .r_lo = lo, .rn_bits = rn, .bound = bound, .abs_sum = abs_sum, .wild = UG_WILD_NONE};
    return r;
}

static void assert_fail(ug_elem_error e)
{
    CU_ASSERT_FALSE(e.class_ok);
    CU_ASSERT(isinf(e.ulp_err) && e.ulp_err > 0);
    CU_ASSERT_EQUAL(e.ulp_dist, UINT32_MAX);
    CU_ASSERT(isinf(e.ratio) && e.ratio > 0);
}

static void assert_exact(ug_elem_error e)
{
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ulp_err, 0);
    CU_ASSERT_EQUAL(e.ulp_dist, 0);
    CU_ASSERT_EQUAL(e.ratio, 0);
}

static void test_ulp_exact_equality(void)
{
    ug_ref_value r = ref(1.5, 0, 0x3FC0, 0.25, 3);
    ug_elem_error e = ug_measure(0x3FC0, UG_BF16, &r);
    assert_exact(e);
    CU_ASSERT_EQUAL(e.cond, 2);
    r = ref(-1.5, 0, 0xBFC00000u, 0, 0);
    e = ug_measure(0xBFC00000u, UG_F32, &r);
    assert_exact(e);
    CU_ASSERT_EQUAL(e.cond, 0);
    r = ref(0, 0, 0x0000, 0, 0); /* r == 0, y == -0 */
    assert_exact(ug_measure(0x8000, UG_BF16, &r));
}

static void test_ulp_one_ulp_above(void)
{
    ug_ref_value r = ref(1.0, 0, 0x3F80, 1, 1);
    ug_elem_error e = ug_measure(0x3F81, UG_BF16, &r);
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ulp_err, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    CU_ASSERT_EQUAL(e.ratio, ldexp(1, -7));
    r = ref(-3.0, 0, 0xC040, 1, 1);
    e = ug_measure(0xC041, UG_BF16, &r); /* one ulp further from zero */
    CU_ASSERT_EQUAL(e.ulp_err, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
}

/* The double-double's low part is part of r. */
static void test_ulp_uses_low_part(void)
{
    ug_ref_value r = ref(1.0, ldexp(1, -60), 0x3F80, 1, 1);
    ug_elem_error e = ug_measure(0x3F80, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, ldexp(1, -53));
    CU_ASSERT_EQUAL(e.ratio, ldexp(1, -60));
    CU_ASSERT_EQUAL(e.ulp_dist, 0);
    r = ref(1.0, ldexp(-1, -60), 0x3F800000u, 1, 1); /* just below 1: f32 spacing 2^-24 */
    e = ug_measure(0x3F800000u, UG_F32, &r);
    CU_ASSERT_EQUAL(e.ulp_err, ldexp(1, -36));
}

/* At a binade boundary the spacing changes: r = 2 uses 2^-6, r just below 2
 * (r_hi = 2, r_lo < 0) uses 2^-7. */
static void test_ulp_binade_boundary(void)
{
    ug_ref_value r = ref(2.0, 0, 0x4000, 1, 1);
    ug_elem_error e = ug_measure(0x3FFF, UG_BF16, &r); /* 2 - 2^-7 */
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    e = ug_measure(0x4001, UG_BF16, &r); /* 2 + 2^-6 */
    CU_ASSERT_EQUAL(e.ulp_err, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    r = ref(2.0, ldexp(-1, -60), 0x4000, 1, 1);
    e = ug_measure(0x4000, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, ldexp(1, -53));
    CU_ASSERT_EQUAL(e.ulp_dist, 0);
    r = ref(-2.0, ldexp(1, -60), 0xC000, 1, 1);
    e = ug_measure(0xC000, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, ldexp(1, -53));
    r = ref(2.0, ldexp(1, -60), 0x4000, 1, 1); /* just above 2: 2^-6 */
    e = ug_measure(0x4000, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, ldexp(1, -54));
}

/* ulp_T is taken in the binade below where r_lo pulls r under a power of
 * two r_hi: the rule as frexp states it, at every exponent of a double, both
 * signs, both formats, beside numbers that are not powers of two. */
static void test_ulp_binade_below_every_power_of_two(void)
{
    for (int ex = -1074; ex <= 1023; ex++)
        for (int variant = 0; variant < 8; variant++) {
            const double power = ldexp(1.0, ex), sign = variant & 1 ? -1.0 : 1.0;
            const double hi = sign * (variant & 4 ? power * 1.5 : power);
            const double lo = (variant & 2 ? sign : -sign) * ldexp(1.0, ex - 60 < -1074 ? -1074 : ex - 60);
            if (!isfinite(hi)) continue;
            for (int bf = 0; bf < 2; bf++) {
                const ug_ref_value r = ref(hi, lo, 0, 1, 1);
                const ug_elem_error e = ug_measure(0, bf ? UG_BF16 : UG_F32, &r);
                double at = hi;
                int frexp_ex;
                if (lo != 0 && (lo < 0) != (at < 0) && fabs(frexp(at, &frexp_ex)) == 0.5) at = nextafter(at, 0.0);
                const double expected = fabs((0.0 - hi) - lo) / (bf ? ug_ulp_bf16(at) : ug_ulp_f32(at));
                if (e.ulp_err != expected) {
                    CU_FAIL("ulp_err differs from the frexp rule");
                    printf("\n  r = %a + %a (%s): ulp_err %a, expected %a\n", hi, lo, bf ? "bf16" : "f32", e.ulp_err,
                           expected);
                    return;
                }
            }
        }
}

static void test_ulp_zero_reference(void)
{
    ug_ref_value r = ref(0, 0, 0x0000, 0, 0);
    ug_elem_error e = ug_measure(0x0001, UG_BF16, &r); /* 2^-133 */
    CU_ASSERT_EQUAL(e.ulp_err, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    e = ug_measure(0x8001, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    r = ref(-0.0, 0, 0x00000000u, 0, 0);
    e = ug_measure(0x80000003u, UG_F32, &r); /* -3 * 2^-149 */
    CU_ASSERT_EQUAL(e.ulp_err, 3);
    CU_ASSERT_EQUAL(e.ulp_dist, 3);
}

static void test_ulp_subnormal_reference(void)
{
    /* r = 1.25 * 2^-133, RN = 0x0001; y = 2^-132 is 0.75 * 2^-133 away */
    ug_ref_value r = ref(ldexp(5, -135), 0, 0x0001, 0, 0);
    ug_elem_error e = ug_measure(0x0002, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 0.75);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    e = ug_measure(0x0001, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 0.25);
    CU_ASSERT_EQUAL(e.ulp_dist, 0);
    /* just above the smallest normal, the spacing is still 2^-133 */
    r = ref(ldexp(1, -126) * (1 + ldexp(1, -9)), 0, 0x0080, 0, 0);
    e = ug_measure(0x0080, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 0.25);
    /* f32 */
    r = ref(ldexp(5, -151), 0, 0x00000001u, 0, 0);
    e = ug_measure(0x00000002u, UG_F32, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 0.75);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
}

/* y NaN or +-inf where r is finite fails (unless RN(r) is that infinity). */
static void test_ulp_nonfinite_y_finite_r(void)
{
    ug_ref_value r = ref(1.0, 0, 0x3F80, 1, 1);
    assert_fail(ug_measure(0x7FC0, UG_BF16, &r));
    assert_fail(ug_measure(0xFFC0, UG_BF16, &r));
    assert_fail(ug_measure(0x7F81, UG_BF16, &r));
    assert_fail(ug_measure(0x7F80, UG_BF16, &r));
    assert_fail(ug_measure(0xFF80, UG_BF16, &r));
    r = ref(ldexp(1, 127) * 1.5, 0, 0x7F40, 1, 1); /* large but RN finite */
    assert_fail(ug_measure(0x7F80, UG_BF16, &r));
    r = ref(1.0, 0, 0x3F800000u, 1, 1);
    assert_fail(ug_measure(0x7FC00000u, UG_F32, &r));
    assert_fail(ug_measure(0x7F800000u, UG_F32, &r));
    /* the condition number is still reported */
    r = ref(2.0, 0, 0x4000, 1, 8);
    CU_ASSERT_EQUAL(ug_measure(0x7FC0, UG_BF16, &r).cond, 4);
}

/* y = +-inf is correct where r is finite but RN_T(r) is that infinity. */
static void test_ulp_inf_y_where_rn_is_inf(void)
{
    ug_ref_value r = ref(ldexp(1, 128), 0, 0x7F80, 1, 1);
    assert_exact(ug_measure(0x7F80, UG_BF16, &r));
    assert_fail(ug_measure(0xFF80, UG_BF16, &r));
    r = ref(-ldexp(1023, 118), 0, 0xFF80, 1, 1); /* -(2^128 - 2^118): beyond the threshold */
    assert_exact(ug_measure(0xFF80, UG_BF16, &r));
    r = ref(ldexp(1, 128), 0, 0x7F800000u, 1, 1);
    assert_exact(ug_measure(0x7F800000u, UG_F32, &r));
    /* a finite y there is measured: the largest finite bf16 is half a spacing away */
    r = ref(ldexp(1, 128), 0, 0x7F80, 0, 0);
    ug_elem_error e = ug_measure(0x7F7F, UG_BF16, &r);
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
}

/* y = +-inf where RN_T(r) is finite: accepted when r's bound reaches the
 * overflow threshold with r's sign, measured as the threshold. */
static void test_ulp_inf_y_within_the_bound_of_the_threshold(void)
{
    const double max_bf16 = 0x1.fep127, half_gap = 0x1p119; /* threshold = max + 2^119 */
    ug_ref_value r = ref(max_bf16, 0, 0x7F7F, half_gap, 1);
    ug_elem_error e = ug_measure(0x7F80, UG_BF16, &r);
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ratio, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    assert_fail(ug_measure(0xFF80, UG_BF16, &r)); /* the other sign */
    r.bound = half_gap / 2;                       /* the bound stops short */
    assert_fail(ug_measure(0x7F80, UG_BF16, &r));
    r = ref(-0x1.fffffep127, 0, 0xFF7FFFFFu, 0x1p103, 1);
    e = ug_measure(0xFF800000u, UG_F32, &r);
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ratio, 1);
    r.bound = 0x1p102;
    assert_fail(ug_measure(0xFF800000u, UG_F32, &r));
}

/* r NaN: y must be a NaN, of either sign and any payload (x86's default NaN
 * has the sign bit set; MPFR's NaN has no sign). */
static void test_ulp_nan_reference(void)
{
    ug_ref_value r = ref(NAN, 0, 0x7FC0, 0, 0);
    assert_exact(ug_measure(0x7FC0, UG_BF16, &r));
    assert_exact(ug_measure(0x7F81, UG_BF16, &r));
    assert_exact(ug_measure(0xFFC0, UG_BF16, &r));
    assert_fail(ug_measure(0x3F80, UG_BF16, &r));
    assert_fail(ug_measure(0x7F80, UG_BF16, &r));
    assert_fail(ug_measure(0xFF80, UG_BF16, &r));
    r = ref(-NAN, 0, 0xFFC0, 0, 0);
    assert_exact(ug_measure(0xFFC0, UG_BF16, &r));
    assert_exact(ug_measure(0x7FC0, UG_BF16, &r));
    r = ref(NAN, 0, 0x7FC00000u, 0, 0);
    assert_exact(ug_measure(0x7FC00001u, UG_F32, &r));
    assert_exact(ug_measure(0xFFC00000u, UG_F32, &r));
    assert_fail(ug_measure(0x00000000u, UG_F32, &r));
}

static void assert_wild_accepted(ug_elem_error e)
{
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ratio, 0);
    CU_ASSERT_EQUAL(e.ulp_dist, UINT32_MAX);
    CU_ASSERT(isinf(e.ulp_err) && isinf(e.cond));
}

/* A wild cone (ref.h): r NaN still needs a NaN; r +-inf accepts that infinity
 * or a NaN, not the other infinity nor a finite y; r finite accepts any
 * non-finite y, and a finite y is held to the bound unless it is void. */
static void test_ulp_wild_cone(void)
{
    for (ug_wild w = UG_WILD_CLASS; w <= UG_WILD_UNBOUNDED; w++) {
        ug_ref_value r = ref(NAN, 0, 0x7FC0, 0, 0);
        r.wild = w;
        assert_exact(ug_measure(0xFFC0, UG_BF16, &r));
        assert_fail(ug_measure(0x7F80, UG_BF16, &r));
        assert_fail(ug_measure(0x3F80, UG_BF16, &r));
        r = ref(INFINITY, 0, 0x7F80, 0, 0);
        r.wild = w;
        assert_exact(ug_measure(0x7F80, UG_BF16, &r));
        assert_wild_accepted(ug_measure(0xFFC0, UG_BF16, &r));
        assert_fail(ug_measure(0xFF80, UG_BF16, &r));
        assert_fail(ug_measure(0x7F7F, UG_BF16, &r));
        r = ref(-INFINITY, 0, 0xFF800000u, 0, 0);
        r.wild = w;
        assert_wild_accepted(ug_measure(0x7FC00000u, UG_F32, &r));
        assert_fail(ug_measure(0x7F800000u, UG_F32, &r));
        r = ref(1.0, 0, 0x3F80, ldexp(1, -6), 1);
        r.wild = w;
        assert_wild_accepted(ug_measure(0x7FC0, UG_BF16, &r));
        assert_wild_accepted(ug_measure(0x7F80, UG_BF16, &r));
        assert_wild_accepted(ug_measure(0xFF80, UG_BF16, &r));
        CU_ASSERT_EQUAL(ug_measure(0x3F81, UG_BF16, &r).ratio, w == UG_WILD_UNBOUNDED ? 0 : 0.5);
        ug_elem_error far = ug_measure(0x4000, UG_BF16, &r); /* 1 off, bound 2^-6 */
        CU_ASSERT_TRUE(far.class_ok);
        CU_ASSERT_EQUAL(far.ulp_dist, 128);
        CU_ASSERT_EQUAL(far.ratio, w == UG_WILD_UNBOUNDED ? 0 : 64);
    }
}

/* r +-inf: y must be the same infinity. */
static void test_ulp_inf_reference(void)
{
    ug_ref_value r = ref(INFINITY, 0, 0x7F80, 0, 0);
    assert_exact(ug_measure(0x7F80, UG_BF16, &r));
    assert_fail(ug_measure(0xFF80, UG_BF16, &r));
    assert_fail(ug_measure(0x7F7F, UG_BF16, &r));
    assert_fail(ug_measure(0x7FC0, UG_BF16, &r));
    r = ref(-INFINITY, 0, 0xFF800000u, 0, 0);
    assert_exact(ug_measure(0xFF800000u, UG_F32, &r));
    assert_fail(ug_measure(0x7F800000u, UG_F32, &r));
    assert_fail(ug_measure(0xFF7FFFFFu, UG_F32, &r));
}

static void test_ulp_ratio(void)
{
    ug_ref_value r = ref(1.0, 0, 0x3F80, ldexp(1, -6), 1);
    CU_ASSERT_EQUAL(ug_measure(0x3F81, UG_BF16, &r).ratio, 0.5);
    r.bound = 0;
    CU_ASSERT_EQUAL(ug_measure(0x3F80, UG_BF16, &r).ratio, 0); /* |y - r| == 0 */
    CU_ASSERT(isinf(ug_measure(0x3F81, UG_BF16, &r).ratio));
    r = ref(1.0, ldexp(1, -70), 0x3F80, 0, 1); /* tiny error, zero bound */
    CU_ASSERT(isinf(ug_measure(0x3F80, UG_BF16, &r).ratio));
}

static void test_ulp_condition_number(void)
{
    ug_ref_value r = ref(-2.0, 0, 0xC000, 1, 6);
    CU_ASSERT_EQUAL(ug_measure(0xC000, UG_BF16, &r).cond, 3);
    r = ref(0, 0, 0x0000, 1, 6); /* r == 0 < abs_sum */
    CU_ASSERT(isinf(ug_measure(0x0000, UG_BF16, &r).cond));
    r = ref(0, 0, 0x0000, 1, 0); /* 0/0 is 0 */
    CU_ASSERT_EQUAL(ug_measure(0x0000, UG_BF16, &r).cond, 0);
    r = ref(1.0, 0, 0x3F800000u, 1, 1);
    CU_ASSERT_EQUAL(ug_measure(0x3F800001u, UG_F32, &r).cond, 1);
}

static void test_ulp_f32_variant(void)
{
    ug_ref_value r = ref(1.0, 0, 0x3F800000u, ldexp(1, -23), 1);
    ug_elem_error e = ug_measure(0x3F800001u, UG_F32, &r);
    CU_ASSERT_TRUE(e.class_ok);
    CU_ASSERT_EQUAL(e.ulp_err, 1);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    CU_ASSERT_EQUAL(e.ratio, 1);
    e = ug_measure(0x3F7FFFFFu, UG_F32, &r); /* 2^-24 below 1: half of ulp(1) */
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
    r = ref(0, 0, 0, 0, 0);
    CU_ASSERT_EQUAL(ug_measure(0x00000001u, UG_F32, &r).ulp_err, 1);
    /* a bf16-typed y is read from the low 16 bits only */
    r = ref(1.0, 0, 0x3F80, 1, 1);
    assert_exact(ug_measure(0xABCD3F80u, UG_BF16, &r));
}

/* An exact midpoint, y = RN(r): exactly half an ulp, distance 0. */
static void test_ulp_midpoint_is_half(void)
{
    ug_ref_value r = ref(1 + ldexp(1, -8), 0, 0x3F80, 1, 1);
    ug_elem_error e = ug_measure(0x3F80, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    CU_ASSERT_EQUAL(e.ulp_dist, 0);
    r = ref(1 + ldexp(3, -8), 0, 0x3F82, 1, 1); /* tie to the even 0x3F82 */
    e = ug_measure(0x3F82, UG_BF16, &r);
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    CU_ASSERT_EQUAL(e.ulp_dist, 0);
    e = ug_measure(0x3F81, UG_BF16, &r); /* the other neighbour: also 0.5, but one away */
    CU_ASSERT_EQUAL(e.ulp_err, 0.5);
    CU_ASSERT_EQUAL(e.ulp_dist, 1);
}

/* Random r (precision 200, exponents over both formats' normal and subnormal
 * ranges), r_hi + r_lo its double-double, y = RN_T(r): ulp_err <= 0.5,
 * ulp_dist 0, ratio 0 or finite, class_ok. y one step away: ulp_dist 1 and
 * ulp_err in [0.5, 2.5] (2.5 where r is just below
 * a power of two and rounds up to it). */
static void test_ulp_random_correctly_rounded(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED);
    gmp_randstate_t st;
    gmp_randinit_mt(st);
    gmp_randseed_ui(st, SEED + 1);
    mpfr_t x, t;
    mpfr_inits2(200, x, t, (mpfr_ptr)0);
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples();
    for (unsigned long i = 0; i < n; i++) {
        const int bf = i & 1;
        mpfr_urandomb(x, st);
        mpfr_mul_2si(x, x, (long)gsl_rng_uniform_int(rng, 300) - 170, MPFR_RNDN);
        if (gsl_rng_get(rng) & 1) mpfr_neg(x, x, MPFR_RNDN);
        ug_ref_value r = {0};
        r.r_hi = mpfr_get_d(x, MPFR_RNDN);
        mpfr_sub_d(t, x, r.r_hi, MPFR_RNDN);
        r.r_lo = mpfr_get_d(t, MPFR_RNDN);
        r.rn_bits = bf ? ug_mpfr_to_bf16(x) : ug_mpfr_to_f32_bits(x);
        r.bound = bf ? ldexp(1, -133) : ldexp(1, -149);
        r.abs_sum = fabs(r.r_hi);
        const ug_dtype type = bf ? UG_BF16 : UG_F32;
        const uint32_t inf = bf ? 0x7F80u : 0x7F800000u, mag = bf ? 0x7FFFu : 0x7FFFFFFFu;
        ug_elem_error e = ug_measure(r.rn_bits, type, &r);
        const int rn_inf = (r.rn_bits & mag) == inf;
        if (!e.class_ok || e.ulp_dist != 0 || !(e.ulp_err <= 0.5) || !(e.ratio < INFINITY) ||
            !(rn_inf || e.cond == (r.r_hi == 0 ? 0 : 1)))
            if (bad++ < 5)
                printf("\n    %s r = %a + %a, y = %x: ulp_err %g, ulp_dist %u", bf ? "bf16" : "f32", r.r_hi,
                       r.r_lo, r.rn_bits, e.ulp_err, e.ulp_dist);
        if (rn_inf || (r.rn_bits & mag) == inf - 1) continue;
        e = ug_measure(r.rn_bits + 1, type, &r); /* one step away from zero */
        if (!e.class_ok || e.ulp_dist != 1 || !(e.ulp_err >= 0.5 && e.ulp_err <= 2.5))
            if (bad++ < 5)
                printf("\n    %s r = %a + %a, y = %x + 1: ulp_err %g, ulp_dist %u", bf ? "bf16" : "f32",
                       r.r_hi, r.r_lo, r.rn_bits, e.ulp_err, e.ulp_dist);
    }
    mpfr_clears(x, t, (mpfr_ptr)0);
    gmp_randclear(st);
    gsl_rng_free(rng);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* ulp_err is |y - r| / ulp_T(r) bit for bit (ug_measure multiplies by
 * the ulp's reciprocal instead of dividing): random y over every finite
 * value of both formats, r_hi over the exponents where ulp_T reaches from
 * 2^-149 to 2^1016, r_lo from 0 down to the least subnormal, powers of two
 * with a low part pulling r into the binade below among them. */
static void test_ulp_err_is_the_quotient(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 2);
    unsigned bad = 0;
    const unsigned long n = 4 * ug_test_random_samples();
    for (unsigned long i = 0; i < n; i++) {
        const int bf = i & 1;
        const uint32_t y_bits = bf ? (uint32_t)gsl_rng_uniform_int(rng, 0x7F80)
                                   : (uint32_t)(gsl_rng_get(rng) % 0x7F800000u);
        const double y = bf ? ug_bf16_to_f32((ug_bf16)y_bits) : ug_f32_from_bits(y_bits);
        double hi = ldexp(i % 3 ? 1 + gsl_rng_uniform(rng) : 1, (int)gsl_rng_uniform_int(rng, 2100) - 1074);
        if (gsl_rng_get(rng) & 1) hi = -hi;
        const double lo = ldexp(gsl_rng_uniform(rng) - 0.5, (int)gsl_rng_uniform_int(rng, 1100) - 1074 - 53) *
                          fmin(1, ldexp(fabs(hi), -40));
        const ug_ref_value r = ref(hi, lo, 0, 1, 1);
        const ug_elem_error e = ug_measure(y_bits, bf ? UG_BF16 : UG_F32, &r);
        double at = hi;
        if (lo != 0 && (lo < 0) != (at < 0) && fabs(frexp(at, &(int){0})) == 0.5) at = nextafter(at, 0.0);
        const double d = fabs((y - hi) - lo), want = d / (bf ? ug_ulp_bf16(at) : ug_ulp_f32(at));
        if (e.class_ok && memcmp(&e.ulp_err, &want, sizeof want) != 0 && bad++ < 5)
            printf("\n    %s y = %a, r = %a + %a: ulp_err %a, |y - r| / ulp %a", bf ? "bf16" : "f32", y, hi, lo,
                   e.ulp_err, want);
    }
    gsl_rng_free(rng);
    CU_ASSERT_EQUAL(bad, 0);
}

UG_TEST_SUITE(ulp_suite, "ulp", UG_TEST(test_ulp_err_is_the_quotient),
              UG_TEST(test_ulp_exact_equality), UG_TEST(test_ulp_one_ulp_above),
              UG_TEST(test_ulp_uses_low_part), UG_TEST(test_ulp_binade_boundary),
              UG_TEST(test_ulp_binade_below_every_power_of_two),
              UG_TEST(test_ulp_zero_reference), UG_TEST(test_ulp_subnormal_reference),
              UG_TEST(test_ulp_nonfinite_y_finite_r), UG_TEST(test_ulp_inf_y_where_rn_is_inf),
              UG_TEST(test_ulp_inf_y_within_the_bound_of_the_threshold),
              UG_TEST(test_ulp_nan_reference), UG_TEST(test_ulp_wild_cone), UG_TEST(test_ulp_inf_reference), UG_TEST(test_ulp_ratio),
              UG_TEST(test_ulp_condition_number), UG_TEST(test_ulp_f32_variant),
              UG_TEST(test_ulp_midpoint_is_half), UG_TEST(test_ulp_random_correctly_rounded));
