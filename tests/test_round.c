/* SPDX-License-Identifier: MIT */
/* ref/round.c: correct rounding of MPFR values to bf16 and f32.
 *
 * On floats the result must be core/bf16.h's conversion (bf16) or the float
 * itself (f32); on values that are not floats it must be MPFR's own emulation
 * of the format (round to 8 or 24 bits, then mpfr_check_range and
 * mpfr_subnormalize in the format's exponent range), an independent path. */
#include <float.h>
#include <gmp.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../ref/round.h"
#include "tests.h"

enum { SEED = 7919 };



/* RN of a non-NaN x to precision prec with MPFR exponent range [emin, 128]
 * (bf16: 8, -132; f32: 24, -148 — the smallest subnormal is 2^(emin-1)),
 * returned as f32 bits. x may lie outside that range, so it is first rounded
 * to prec bits in the current (wide) range, and mpfr_check_range and
 * mpfr_subnormalize then use the ternary value to avoid double rounding. */
static uint32_t emulated_rn(const mpfr_t x, mpfr_prec_t prec, mpfr_exp_t emin)
{
    mpfr_t y;
    mpfr_init2(y, prec);
    int t = mpfr_set(y, x, MPFR_RNDN);
    const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
    mpfr_set_emin(emin);
    mpfr_set_emax(128);
    t = mpfr_check_range(y, t, MPFR_RNDN);
    mpfr_subnormalize(y, t, MPFR_RNDN);
    mpfr_set_emin(old_emin);
    mpfr_set_emax(old_emax);
    const uint32_t u = ug_f32_bits(mpfr_get_flt(y, MPFR_RNDN)); /* exact */
    mpfr_clear(y);
    return u;
}

static uint16_t emulated_bf16(const mpfr_t x) { return (uint16_t)(emulated_rn(x, 8, -132) >> 16); }
static uint32_t emulated_f32(const mpfr_t x) { return emulated_rn(x, 24, -148); }

/* x = the float with bits u, exactly; NaN with the sign of u. */
static void set_f32_bits(mpfr_t x, uint32_t u)
{
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        mpfr_set_nan(x);
        mpfr_setsign(x, x, (int)(u >> 31), MPFR_RNDN);
    } else {
        mpfr_set_flt(x, ug_f32_from_bits(u), MPFR_RNDN);
    }
}

static uint16_t quiet_bf16(uint32_t f32_bits) { return (uint16_t)((f32_bits >> 16 & 0x8000u) | 0x7FC0u); }

/* ---- specials ---- */

static void test_round_special_values(void)
{
    mpfr_t x;
    mpfr_init2(x, 53);
    mpfr_set_nan(x);
    mpfr_setsign(x, x, 0, MPFR_RNDN);
    CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), 0x7FC0);
    CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), 0x7FC00000u);
    mpfr_setsign(x, x, 1, MPFR_RNDN);
    CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), 0xFFC0);
    CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), 0xFFC00000u);
    mpfr_set_inf(x, 1);
    CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), 0x7F80);
    CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), 0x7F800000u);
    mpfr_set_inf(x, -1);
    CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), 0xFF80);
    CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), 0xFF800000u);
    mpfr_set_zero(x, 1);
    CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), 0x0000);
    CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), 0x00000000u);
    mpfr_set_zero(x, -1);
    CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), 0x8000);
    CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), 0x80000000u);
    mpfr_clear(x);
    mpfr_free_cache();
}

/* ---- floats: agreement with core/bf16.h and with the float itself ---- */

static void test_round_every_bf16(void)
{
    mpfr_t x;
    mpfr_init2(x, 24);
    unsigned bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const uint32_t u = h << 16;
        set_f32_bits(x, u);
        const uint16_t want = ug_bf16_from_f32(ug_f32_from_bits(u));
        const uint32_t want32 = (h & 0x7FFFu) > 0x7F80u ? (u & 0x80000000u) | 0x7FC00000u : u;
        if (ug_mpfr_to_bf16(x) != want) UG_TEST_MISMATCH(bad, "to_bf16(%04x) = %04x", h, ug_mpfr_to_bf16(x));
        if (ug_mpfr_to_f32_bits(x) != want32)
            UG_TEST_MISMATCH(bad, "to_f32(%08x) = %08x", u, ug_mpfr_to_f32_bits(x));
    }
    mpfr_clear(x);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_round_random_f32(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED);
    mpfr_t x;
    mpfr_init2(x, 24);
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples();
    for (unsigned long i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)gsl_rng_get(rng);
        set_f32_bits(x, u);
        const int nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
        const uint16_t want = nan ? quiet_bf16(u) : ug_bf16_from_f32(ug_f32_from_bits(u));
        const uint32_t want32 = nan ? (u & 0x80000000u) | 0x7FC00000u : u;
        if (ug_mpfr_to_bf16(x) != want) UG_TEST_MISMATCH(bad, "to_bf16(%08x) = %04x, want %04x", u, ug_mpfr_to_bf16(x), want);
        if (ug_mpfr_to_f32_bits(x) != want32)
            UG_TEST_MISMATCH(bad, "to_f32(%08x) = %08x", u, ug_mpfr_to_f32_bits(x));
    }
    mpfr_clear(x);
    gsl_rng_free(rng);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- values that are not floats ---- */

/* Random values of random precision (1 to 300 bits, half of them 200) and
 * exponent (half in [-160, 140] around both formats' ranges, half in
 * [-2000, 2000], a few at +-10^6), both signs, against the emulation. */
static void test_round_random_mpfr_vs_emulation(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 1);
    gmp_randstate_t st;
    gmp_randinit_mt(st);
    gmp_randseed_ui(st, SEED + 2);
    mpfr_t x;
    mpfr_init2(x, 300);
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples();
    for (unsigned long i = 0; i < n; i++) {
        const mpfr_prec_t prec = i & 1 ? 200 : 1 + (mpfr_prec_t)gsl_rng_uniform_int(rng, 300);
        mpfr_set_prec(x, prec);
        mpfr_urandomb(x, st); /* [0, 1) */
        long e;
        if (i % 1000 == 7)
            e = gsl_rng_get(rng) & 1 ? 1000000 : -1000000;
        else if (i & 2)
            e = (long)gsl_rng_uniform_int(rng, 301) - 160;
        else
            e = (long)gsl_rng_uniform_int(rng, 4001) - 2000;
        mpfr_mul_2si(x, x, e, MPFR_RNDN);
        if (gsl_rng_get(rng) & 1) mpfr_neg(x, x, MPFR_RNDN);
        const uint16_t b = ug_mpfr_to_bf16(x), bw = emulated_bf16(x);
        const uint32_t f = ug_mpfr_to_f32_bits(x), fw = emulated_f32(x);
        if (b != bw) UG_TEST_MISMATCH(bad, "to_bf16 (prec %ld, exp %ld) = %04x, want %04x", (long)prec, e, b, bw);
        if (f != fw) UG_TEST_MISMATCH(bad, "to_f32 (prec %ld, exp %ld) = %08x, want %08x", (long)prec, e, f, fw);
    }
    mpfr_clear(x);
    gmp_randclear(st);
    gsl_rng_free(rng);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* Every exact midpoint between consecutive finite bf16 values (and between
 * the largest and 2^128), both signs: the midpoint goes to the neighbour with
 * the even last bit, a relative 2^-150 below/above it to the nearer neighbour;
 * all agree with the emulation. */
static void test_round_bf16_midpoints(void)
{
    mpfr_t a, b, m, x;
    mpfr_inits2(200, a, b, m, x, (mpfr_ptr)0);
    unsigned bad = 0;
    for (uint32_t mag = 0; mag < 0x7F80u; mag++)
        for (uint32_t s = 0; s <= 0x8000u; s += 0x8000u) {
            const uint16_t lo = (uint16_t)(s | mag), hi = (uint16_t)(s | (mag + 1));
            mpfr_set_flt(a, ug_bf16_to_f32(lo), MPFR_RNDN);
            if (mag == 0x7F7Fu)
                mpfr_set_si_2exp(b, s ? -1 : 1, 128, MPFR_RNDN);
            else
                mpfr_set_flt(b, ug_bf16_to_f32(hi), MPFR_RNDN);
            mpfr_add(m, a, b, MPFR_RNDN); /* exact */
            mpfr_div_2ui(m, m, 1, MPFR_RNDN);
            const uint16_t even = mag & 1 ? hi : lo;
            if (ug_mpfr_to_bf16(m) != even || emulated_bf16(m) != even)
                UG_TEST_MISMATCH(bad, "midpoint %04x/%04x -> %04x (emulated %04x), want %04x", lo, hi,
                         ug_mpfr_to_bf16(m), emulated_bf16(m), even);
            for (int dir = -1; dir <= 1; dir += 2) {
                mpfr_mul_2si(x, m, -150, MPFR_RNDN);
                if (dir > 0)
                    mpfr_add(x, m, x, MPFR_RNDN); /* exact at 200 bits */
                else
                    mpfr_sub(x, m, x, MPFR_RNDN);
                const uint16_t want = dir > 0 ? hi : lo; /* in magnitude */
                if (ug_mpfr_to_bf16(x) != want || emulated_bf16(x) != want)
                    UG_TEST_MISMATCH(bad, "midpoint %04x/%04x %+d*2^-150 rel -> %04x (emulated %04x), want %04x", lo,
                             hi, dir, ug_mpfr_to_bf16(x), emulated_bf16(x), want);
            }
        }
    mpfr_clears(a, b, m, x, (mpfr_ptr)0);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* The same for f32, at random floats (every exponent), plus the largest. */
static void test_round_f32_midpoints(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 3);
    mpfr_t a, b, m, x;
    mpfr_inits2(200, a, b, m, x, (mpfr_ptr)0);
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples() / 4;
    for (unsigned long i = 0; i < n; i++) {
        uint32_t lo = (uint32_t)gsl_rng_get(rng);
        if (i == 0) lo = 0x7F7FFFFFu;
        if (i == 1) lo = 0x807FFFFFu;
        if (i == 2) lo = 0x00000000u;
        if ((lo & 0x7FFFFFFFu) >= 0x7F800000u) continue;
        const uint32_t hi = lo + 1;
        mpfr_set_flt(a, ug_f32_from_bits(lo), MPFR_RNDN);
        if ((lo & 0x7FFFFFFFu) == 0x7F7FFFFFu)
            mpfr_set_si_2exp(b, lo >> 31 ? -1 : 1, 128, MPFR_RNDN);
        else
            mpfr_set_flt(b, ug_f32_from_bits(hi), MPFR_RNDN);
        mpfr_add(m, a, b, MPFR_RNDN);
        mpfr_div_2ui(m, m, 1, MPFR_RNDN);
        const uint32_t even = lo & 1 ? hi : lo;
        if (ug_mpfr_to_f32_bits(m) != even || emulated_f32(m) != even)
            UG_TEST_MISMATCH(bad, "midpoint %08x/%08x -> %08x (emulated %08x)", lo, hi, ug_mpfr_to_f32_bits(m),
                     emulated_f32(m));
        for (int dir = -1; dir <= 1; dir += 2) {
            mpfr_mul_2si(x, m, -150, MPFR_RNDN);
            if (dir > 0)
                mpfr_add(x, m, x, MPFR_RNDN);
            else
                mpfr_sub(x, m, x, MPFR_RNDN);
            const uint32_t want = dir > 0 ? hi : lo;
            if (ug_mpfr_to_f32_bits(x) != want || emulated_f32(x) != want)
                UG_TEST_MISMATCH(bad, "midpoint %08x/%08x %+d -> %08x (emulated %08x)", lo, hi, dir,
                         ug_mpfr_to_f32_bits(x), emulated_f32(x));
        }
    }
    mpfr_clears(a, b, m, x, (mpfr_ptr)0);
    gsl_rng_free(rng);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* bf16 overflows at the midpoint between 0x7F7F and 2^128 (ties to even: the
 * largest finite value is odd); the value just below it stays finite. f32
 * likewise at 2^128 - 2^103. */
static void toward_zero(mpfr_t x)
{
    if (mpfr_sgn(x) > 0)
        mpfr_nextbelow(x);
    else
        mpfr_nextabove(x);
}

static void test_round_overflow_threshold(void)
{
    mpfr_t x;
    mpfr_init2(x, 200);
    for (int s = 1; s >= -1; s -= 2) {
        const uint16_t sb = (uint16_t)(s < 0 ? 0x8000 : 0);
        const uint32_t sf = s < 0 ? 0x80000000u : 0;
        mpfr_set_si_2exp(x, s * ((1 << 9) - 1), 119, MPFR_RNDN); /* 2^128 - 2^119 */
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x7F80);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x7F7F8000u); /* a float */
        toward_zero(x);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x7F7F);
        mpfr_set_si_2exp(x, s * ((1 << 25) - 1), 103, MPFR_RNDN); /* 2^128 - 2^103 */
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x7F800000u);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x7F80);
        toward_zero(x);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x7F7FFFFFu);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x7F80); /* above bf16's threshold */
        mpfr_set_si_2exp(x, s, 128, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x7F80);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x7F800000u);
        mpfr_set_si_2exp(x, s, 1000000, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x7F80);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x7F800000u);
    }
    mpfr_clear(x);
    mpfr_free_cache();
}

/* Results that round to zero keep the sign of x; half the smallest subnormal
 * is a tie to zero, anything above it rounds to the smallest subnormal. */
static void test_round_underflow_keeps_sign(void)
{
    mpfr_t x;
    mpfr_init2(x, 200);
    for (int s = 1; s >= -1; s -= 2) {
        const uint16_t sb = (uint16_t)(s < 0 ? 0x8000 : 0);
        const uint32_t sf = s < 0 ? 0x80000000u : 0;
        mpfr_set_si_2exp(x, s, -134, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x00008000u);
        mpfr_set_si_2exp(x, s * ((1L << 40) + 1), -134 - 40, MPFR_RNDN); /* 2^-134 (1 + 2^-40) */
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb | 0x0001);
        mpfr_set_si_2exp(x, s * ((1L << 40) - 1), -134 - 40, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb);
        mpfr_set_si_2exp(x, s, -150, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf);
        mpfr_set_si_2exp(x, s * ((1L << 40) + 1), -150 - 40, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x00000001u);
        mpfr_set_si_2exp(x, s * 3, -151, MPFR_RNDN); /* 0.75 * 2^-149 */
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf | 0x00000001u);
        mpfr_set_si_2exp(x, s, -1000000, MPFR_RNDN);
        CU_ASSERT_EQUAL(ug_mpfr_to_bf16(x), sb);
        CU_ASSERT_EQUAL(ug_mpfr_to_f32_bits(x), sf);
    }
    mpfr_clear(x);
    mpfr_free_cache();
}

/* ---- ug_mpfr_bf16_window ---- */

static void test_window_radius_zero(void)
{
    gmp_randstate_t st;
    gmp_randinit_mt(st);
    gmp_randseed_ui(st, SEED + 4);
    mpfr_t x, r;
    mpfr_init2(x, 200);
    mpfr_init2(r, 53);
    mpfr_set_zero(r, 1);
    unsigned bad = 0;
    for (long i = 0; i < 20000; i++) {
        mpfr_urandomb(x, st);
        mpfr_mul_2si(x, x, i % 300 - 150, MPFR_RNDN);
        if (i & 1) mpfr_neg(x, x, MPFR_RNDN);
        uint16_t lo, hi;
        ug_mpfr_bf16_window(x, r, &lo, &hi);
        const uint16_t rn = ug_mpfr_to_bf16(x);
        if (lo != rn || hi != rn) UG_TEST_MISMATCH(bad, "window(x, 0) = %04x..%04x, RN %04x", lo, hi, rn);
    }
    mpfr_clears(x, r, (mpfr_ptr)0);
    gmp_randclear(st);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* Every midpoint, both signs: a window around it gives the two neighbours in
 * increasing order, whether the radius is a relative 2^-20 or 2^-1000 (the
 * latter far below the working precision of the sum). A window inside one
 * rounding interval (around each value, a quarter of its spacing) gives equal
 * ends. */
static void test_window_straddles_midpoint(void)
{
    mpfr_t a, b, m, r;
    mpfr_inits2(16, a, b, m, r, (mpfr_ptr)0);
    unsigned bad = 0;
    for (uint32_t mag = 0; mag < 0x7F7Fu; mag++)
        for (uint32_t s = 0; s <= 0x8000u; s += 0x8000u) {
            const uint16_t v0 = (uint16_t)(s | mag), v1 = (uint16_t)(s | (mag + 1));
            const uint16_t below = s ? v1 : v0, above = s ? v0 : v1; /* by value */
            mpfr_set_flt(a, ug_bf16_to_f32(v0), MPFR_RNDN);
            mpfr_set_flt(b, ug_bf16_to_f32(v1), MPFR_RNDN);
            mpfr_add(m, a, b, MPFR_RNDN); /* exact: 9 bits */
            mpfr_div_2ui(m, m, 1, MPFR_RNDN);
            for (int k = 0; k < 2; k++) {
                mpfr_abs(r, m, MPFR_RNDN);
                mpfr_mul_2si(r, r, k ? -1000 : -20, MPFR_RNDN);
                uint16_t lo, hi;
                ug_mpfr_bf16_window(m, r, &lo, &hi);
                if (lo != below || hi != above)
                    UG_TEST_MISMATCH(bad, "window(mid %04x/%04x, 2^-%d rel) = %04x..%04x", v0, v1, k ? 1000 : 20, lo, hi);
            }
            /* a quarter spacing around v0 (its spacing is the gap to v1) */
            mpfr_sub(r, b, a, MPFR_RNDN);
            mpfr_abs(r, r, MPFR_RNDN);
            mpfr_div_2ui(r, r, 2, MPFR_RNDN);
            uint16_t lo, hi;
            ug_mpfr_bf16_window(a, r, &lo, &hi);
            if (mag > 0 && (lo != v0 || hi != v0)) /* at 0 the window reaches -0 */
                UG_TEST_MISMATCH(bad, "window(%04x, spacing/4) = %04x..%04x", v0, lo, hi);
        }
    mpfr_clears(a, b, m, r, (mpfr_ptr)0);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* Random windows of every width (radius from |x| down to |x|·2^-300) against
 * RN of the ends computed exactly, for both signs of x. */
static void test_window_random_vs_exact_ends(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 5);
    gmp_randstate_t st;
    gmp_randinit_mt(st);
    gmp_randseed_ui(st, SEED + 6);
    mpfr_t x, r, end;
    mpfr_init2(x, 200);
    mpfr_init2(r, 100);
    mpfr_init2(end, 2000); /* holds x +- r exactly: exponent gap <= ~310 */
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples() / 10;
    for (unsigned long i = 0; i < n; i++) {
        mpfr_urandomb(x, st);
        mpfr_mul_2si(x, x, (long)gsl_rng_uniform_int(rng, 291) - 150, MPFR_RNDN);
        if (gsl_rng_get(rng) & 1) mpfr_neg(x, x, MPFR_RNDN);
        mpfr_urandomb(r, st);
        mpfr_mul(r, r, x, MPFR_RNDN);
        mpfr_abs(r, r, MPFR_RNDN);
        mpfr_mul_2si(r, r, -(long)gsl_rng_uniform_int(rng, 301), MPFR_RNDN);
        uint16_t lo, hi;
        ug_mpfr_bf16_window(x, r, &lo, &hi);
        mpfr_sub(end, x, r, MPFR_RNDN);
        const uint16_t want_lo = emulated_bf16(end);
        mpfr_add(end, x, r, MPFR_RNDN);
        const uint16_t want_hi = emulated_bf16(end);
        if (lo != want_lo || hi != want_hi)
            UG_TEST_MISMATCH(bad, "window = %04x..%04x, want %04x..%04x", lo, hi, want_lo, want_hi);
    }
    mpfr_clears(x, r, end, (mpfr_ptr)0);
    gmp_randclear(st);
    gsl_rng_free(rng);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
}

/* Fixed cases: a negative x; an end exactly on a midpoint (tie to even); a
 * window around zero, whose ends round to -0 and +0. */
static void test_window_fixed_cases(void)
{
    mpfr_t x, r;
    mpfr_inits2(64, x, r, (mpfr_ptr)0);
    uint16_t lo, hi;
    /* x = -(1 + 2^-8), midpoint of 0xBF80/0xBF81: straddled */
    mpfr_set_si_2exp(x, -257, -8, MPFR_RNDN);
    mpfr_set_si_2exp(r, 1, -30, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0xBF81);
    CU_ASSERT_EQUAL(hi, 0xBF80);
    /* x = -1.25, radius 2^-10: inside one interval */
    mpfr_set_si_2exp(x, -5, -2, MPFR_RNDN);
    mpfr_set_si_2exp(r, 1, -10, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0xBFA0);
    CU_ASSERT_EQUAL(hi, 0xBFA0);
    /* x = 1 + 2^-8 + 2^-9, radius 2^-9: the low end is exactly the midpoint
     * of 0x3F80/0x3F81 (tie to the even 0x3F80), the high end 1 + 2^-7 */
    mpfr_set_si_2exp(x, 512 + 2 + 1, -9, MPFR_RNDN);
    mpfr_set_si_2exp(r, 1, -9, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0x3F80);
    CU_ASSERT_EQUAL(hi, 0x3F81);
    /* x = 1 + 2^-7 + 2^-8 - 2^-9, radius 2^-9: the high end is exactly the
     * midpoint of 0x3F81/0x3F82 (tie to the even 0x3F82), the low end 1 + 2^-7 */
    mpfr_set_si_2exp(x, 512 + 4 + 2 - 1, -9, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0x3F81);
    CU_ASSERT_EQUAL(hi, 0x3F82);
    /* minimal precisions: x the 9-bit midpoint 1 + 2^-8, radius 2^-1000 of
     * precision 2; the ends must still round as the exact ends do */
    mpfr_set_prec(x, 9);
    mpfr_set_prec(r, 2);
    mpfr_set_si_2exp(x, 257, -8, MPFR_RNDN);
    mpfr_set_si_2exp(r, 1, -1000, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0x3F80);
    CU_ASSERT_EQUAL(hi, 0x3F81);
    mpfr_neg(x, x, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0xBF81);
    CU_ASSERT_EQUAL(hi, 0xBF80);
    mpfr_set_prec(x, 64);
    mpfr_set_prec(r, 64);
    /* around zero */
    mpfr_set_zero(x, 1);
    mpfr_set_si_2exp(r, 1, -200, MPFR_RNDN);
    ug_mpfr_bf16_window(x, r, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0x8000);
    CU_ASSERT_EQUAL(hi, 0x0000);
    mpfr_clears(x, r, (mpfr_ptr)0);
    mpfr_free_cache();
}

UG_TEST_SUITE(round_suite, "round", UG_TEST(test_round_special_values), UG_TEST(test_round_every_bf16),
              UG_TEST(test_round_random_f32), UG_TEST(test_round_random_mpfr_vs_emulation),
              UG_TEST(test_round_bf16_midpoints), UG_TEST(test_round_f32_midpoints),
              UG_TEST(test_round_overflow_threshold), UG_TEST(test_round_underflow_keeps_sign),
              UG_TEST(test_window_radius_zero), UG_TEST(test_window_straddles_midpoint),
              UG_TEST(test_window_random_vs_exact_ends), UG_TEST(test_window_fixed_cases));
