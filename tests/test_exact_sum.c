/* SPDX-License-Identifier: MIT */
/* ref/exact_sum: the exact accumulator against MPFR, one property per test.
 *
 * The independent computation is the plain path of the references: the same
 * values as 53-bit MPFR numbers, mpfr_sum at UG_REF_PREC bits, ug_ref_finish
 * (mpfr_get_d, ug_mpfr_to_bf16 / ug_mpfr_to_f32_bits). Every ug_ref_value
 * field must agree bit for bit. Special cases first (zeros, ties, subnormals,
 * overflow), then random sums with a wide exponent spread. */
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../ref/exact_sum.h"
#include "../ref/rowsimd.h"
#include "tests.h"

enum { MAX_TERMS = 80 };

typedef struct {
    size_t n;
    double x[MAX_TERMS];
} terms;

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static bool same_value(const ug_ref_value *a, const ug_ref_value *b)
{
    return bits_of(a->r_hi) == bits_of(b->r_hi) && bits_of(a->r_lo) == bits_of(b->r_lo) &&
           a->rn_bits == b->rn_bits && a->flagged == b->flagged && bits_of(a->bound) == bits_of(b->bound) &&
           bits_of(a->abs_sum) == bits_of(b->abs_sum);
}

/* The plain path's value of the sum. */
static void mpfr_value(const terms *t, ug_dtype dtype, ug_ref_value *out)
{
    mpfr_t m[MAX_TERMS], sum;
    mpfr_ptr p[MAX_TERMS];
    for (size_t i = 0; i < t->n; i++) {
        mpfr_init2(m[i], 53);
        mpfr_set_d(m[i], t->x[i], MPFR_RNDN);
        p[i] = m[i];
    }
    mpfr_init2(sum, UG_REF_PREC);
    mpfr_sum(sum, p, t->n, MPFR_RNDN);
    ug_ref_finish(out, sum, 0x1p-30, 1.0, 3, dtype);
    for (size_t i = 0; i < t->n; i++) mpfr_clear(m[i]);
    mpfr_clear(sum);
}

static ug_xsum acc; /* 1.2 KB: static, not on the test's stack */

static void fast_value(const terms *t, ug_dtype dtype, ug_ref_value *out)
{
    ug_xsum_init(&acc);
    for (size_t i = 0; i < t->n; i++) ug_xsum_add_double(&acc, t->x[i]);
    ug_xsum_finish(&acc, out, 0x1p-30, 1.0, 3, dtype);
}

/* Whether both paths agree on t for both output formats; prints the first few. */
static bool agree(const terms *t, size_t *mismatches)
{
    bool ok = true;
    for (int d = 0; d < 2; d++) {
        const ug_dtype dtype = d ? UG_F32 : UG_BF16;
        ug_ref_value want, got;
        mpfr_value(t, dtype, &want);
        fast_value(t, dtype, &got);
        if (!same_value(&want, &got)) {
            ok = false;
            UG_TEST_MISMATCH(*mismatches, "%s n=%zu x0=%a: mpfr r=%a+%a rn=%#x, exact_sum r=%a+%a rn=%#x",
                             d ? "f32" : "bf16", t->n, t->n ? t->x[0] : 0.0, want.r_hi, want.r_lo, want.rn_bits,
                             got.r_hi, got.r_lo, got.rn_bits);
        }
    }
    return ok;
}

static void check(const terms *t)
{
    size_t mismatches = 0;
    CU_ASSERT(agree(t, &mismatches));
}

/* ---- special cases ---------------------------------------------------------- */

static void exact_zero_takes_mpfr_sum_sign(void)
{
    const terms cases[] = {
        {0, {0}},                         /* empty: +0 */
        {1, {-0.0}},                      /* only -0: -0 */
        {3, {-0.0, -0.0, -0.0}},          /* only -0: -0 */
        {2, {-0.0, 0.0}},                 /* mixed zeros: +0 */
        {2, {1.5, -1.5}},                 /* cancellation: +0 */
        {3, {-0.0, 0x1p-1074, -0x1p-1074}}, /* cancellation beside -0: +0 */
        {4, {0x1p1000, -0x1p-1000, -0x1p1000, 0x1p-1000}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
}

static void bf16_and_f32_ties_round_to_even(void)
{
    /* 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7 (even: 1); 1 + 3*2^-8
     * halfway to 1 + 2^-6 (even); 1 + 2^-24 the f32 tie; each also nudged
     * by +-2^-200 just off the tie. */
    const double ties[] = {1 + 0x1p-8, 1 + 0x3p-8, 1 + 0x1p-24, 1 + 0x3p-24, 0x1.01p-130};
    for (size_t i = 0; i < sizeof ties / sizeof ties[0]; i++)
        for (int nudge = -1; nudge <= 1; nudge++) {
            terms t = {3, {ties[i] / 2, ties[i] / 2, nudge * 0x1p-200}};
            check(&t);
            for (size_t k = 0; k < t.n; k++) t.x[k] = -t.x[k];
            check(&t);
        }
}

static void subnormal_results_round_like_mpfr(void)
{
    /* bf16 subnormals are multiples of 2^-133, f32 ones of 2^-149; double
     * r_lo becomes subnormal below 2^-1022; tiny sums round to +-0. */
    const double values[] = {0x1p-134, 0x3p-135, 0x1.8p-133, 0x1p-150, 0x1.8p-149, 0x1.fffp-127,
                             0x1p-1074, 0x1p-1060, 0x1.123456789abcdp-1000};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        for (int sign = -1; sign <= 1; sign += 2) {
            terms t = {3, {sign * values[i], sign * 0x1p-1074, -sign * 0x1p-1073}};
            check(&t);
        }
}

static void overflow_thresholds_match(void)
{
    /* bf16's and f32's overflow midpoints below 2^128, and double's at 2^1024. */
    const double values[] = {0x1.fep127, 0x1.ffp127, 0x1.ffffffp127, 0x1.fffffep127, 0x1.fffffffffffffp1023};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        for (int nudge = -1; nudge <= 1; nudge++) {
            terms t = {2, {values[i], nudge * 0x1p80}};
            check(&t);
            t.x[0] = values[i] / 2;
            t.x[1] = values[i] / 2;
            t.n = 3;
            t.x[2] = nudge * 0x1p970;
            check(&t); /* the exact sum may exceed DBL_MAX: r_hi = inf */
        }
}

static void sums_wider_than_128_bits_round_once(void)
{
    /* 1 + 2^-128 is a tie at 128 bits (even: 1), 1 + 3*2^-128 rounds up; a
     * far sticky bit breaks the tie; r_lo then carries the low part. */
    const double lows[] = {0x1p-128, 0x3p-128, 0x1p-127};
    for (size_t i = 0; i < sizeof lows / sizeof lows[0]; i++)
        for (int sticky = -1; sticky <= 1; sticky++) {
            terms t = {4, {1.0, 0x1p-60, lows[i], sticky * 0x1p-900}};
            check(&t);
        }
}

/* ---- random sums -------------------------------------------------------------- */

/* A random finite double m·2^(e-53), |e| <= max_exp_spread <= 1070. */
static double random_double(uint64_t *state, int max_exp_spread)
{
    const uint64_t m = (uint64_t)ug_test_next_u32(state) << 21 ^ ug_test_next_u32(state);
    const int e = (int)(ug_test_next_u32(state) % (unsigned)(2 * max_exp_spread + 1)) - max_exp_spread;
    const double x = ldexp((double)(m & ((UINT64_C(1) << 53) - 1)), e - 53 - (e > 1020 ? 60 : 0));
    return ug_test_next_u32(state) & 1 ? -x : x;
}

static void random_sums_match_mpfr_sum(void)
{
    uint64_t state = 20261122;
    size_t mismatches = 0;
    const unsigned long samples = ug_test_random_samples();
    for (unsigned long s = 0; s < samples; s++) {
        terms t = {1 + ug_test_next_u32(&state) % MAX_TERMS, {0}};
        const int spread = (int[]){4, 60, 300, 1000}[s % 4];
        for (size_t i = 0; i < t.n; i++) t.x[i] = random_double(&state, spread);
        if (s % 3 == 0) /* massive cancellation: the negated terms again, one perturbed */
            for (size_t i = 0; i + 1 < t.n && t.n < MAX_TERMS; i += 2) t.x[i + 1] = -t.x[i];
        agree(&t, &mismatches);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void directed_roundings_match_mpfr_get_d(void)
{
    uint64_t state = 99;
    const mpfr_rnd_t modes[] = {MPFR_RNDN, MPFR_RNDZ, MPFR_RNDU, MPFR_RNDD, MPFR_RNDA};
    size_t mismatches = 0;
    mpfr_t m[MAX_TERMS], sum;
    mpfr_ptr p[MAX_TERMS];
    for (size_t i = 0; i < MAX_TERMS; i++) {
        mpfr_init2(m[i], 53);
        p[i] = m[i];
    }
    mpfr_init2(sum, 4200); /* holds every sum of these doubles exactly */
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        const size_t n = 1 + ug_test_next_u32(&state) % 8;
        ug_xsum_init(&acc);
        for (size_t i = 0; i < n; i++) {
            const double x = random_double(&state, s % 2 ? 1070 : 20); /* finite: below 2^1017 */
            mpfr_set_d(m[i], x, MPFR_RNDN);
            ug_xsum_add_double(&acc, x);
        }
        CU_ASSERT_EQUAL(mpfr_sum(sum, p, n, MPFR_RNDN), 0); /* exact */
        const ug_xval v = ug_xsum_read(&acc);
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
            const double want = mpfr_get_d(sum, modes[k]), got = ug_xval_to_double(&v, modes[k]);
            if (bits_of(want) != bits_of(got))
                UG_TEST_MISMATCH(mismatches, "mode %d: mpfr_get_d %a, exact_sum %a", (int)modes[k], want, got);
        }
        /* the three roundings of one normalization, as the single ones */
        const ug_xval_doubles three = ug_xval_to_doubles(&v);
        const double single[3] = {mpfr_get_d(sum, MPFR_RNDN), mpfr_get_d(sum, MPFR_RNDA), mpfr_get_d(sum, MPFR_RNDU)};
        if (bits_of(three.nearest) != bits_of(single[0]) || bits_of(three.away) != bits_of(single[1]) ||
            bits_of(three.up) != bits_of(single[2]))
            UG_TEST_MISMATCH(mismatches, "to_doubles %a %a %a, mpfr_get_d %a %a %a", three.nearest, three.away, three.up,
                             single[0], single[1], single[2]);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    for (size_t i = 0; i < MAX_TERMS; i++) mpfr_clear(m[i]);
    mpfr_clear(sum);
}

static void products_are_exact(void)
{
    /* +-m1 m2 2^e with a 64-bit m1 and a 128-bit m2, as MPFR multiplies them;
     * RN_f32 of the sum of two such products pins every bit down to RN_128. */
    uint64_t state = 5;
    size_t mismatches = 0;
    mpfr_t a, b, prod[2], sum;
    mpfr_inits2(128, a, b, (mpfr_ptr)0);
    mpfr_inits2(256, prod[0], prod[1], (mpfr_ptr)0);
    mpfr_init2(sum, UG_REF_PREC);
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        ug_xsum_init(&acc);
        mpfr_ptr p[2] = {prod[0], prod[1]};
        for (int k = 0; k < 2; k++) {
            const uint64_t m1 = (uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state);
            const ug_u128 m2 = (ug_u128)((uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state)) << 64 |
                               ((uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state));
            const int e = (int)(ug_test_next_u32(&state) % 400) - 200;
            const bool neg = ug_test_next_u32(&state) & 1;
            ug_xsum_add_mul(&acc, neg, m1, m2, e);
            mpfr_set_uj(a, m1, MPFR_RNDN);
            mpfr_set_uj_2exp(b, (uintmax_t)(uint64_t)(m2 >> 64), 64, MPFR_RNDN);
            mpfr_t low;
            mpfr_init2(low, 64);
            mpfr_set_uj(low, (uintmax_t)(uint64_t)m2, MPFR_RNDN);
            mpfr_add(b, b, low, MPFR_RNDN); /* exact: 128 bits */
            mpfr_clear(low);
            mpfr_mul(prod[k], a, b, MPFR_RNDN); /* exact: 192 bits */
            mpfr_mul_2si(prod[k], prod[k], e, MPFR_RNDN);
            if (neg) mpfr_neg(prod[k], prod[k], MPFR_RNDN);
        }
        mpfr_sum(sum, p, 2, MPFR_RNDN);
        ug_ref_value want, got;
        ug_ref_finish(&want, sum, 0, 0, 0, UG_F32);
        ug_xsum_finish(&acc, &got, 0, 0, 0, UG_F32);
        if (!same_value(&want, &got))
            UG_TEST_MISMATCH(mismatches, "mpfr r=%a+%a, exact_sum r=%a+%a", want.r_hi, want.r_lo, got.r_hi, got.r_lo);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    mpfr_clears(a, b, prod[0], prod[1], sum, (mpfr_ptr)0);
}

static void wide_products_are_exact(void)
{
    /* ug_mul128's 256-bit product against GMP's: the largest factors first
     * (every partial product carries), then random ones. */
    uint64_t state = 9;
    size_t mismatches = 0;
    mpz_t a, b, want, got;
    mpz_inits(a, b, want, got, (mpz_ptr)0);
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        uint64_t f[4], w[4];
        for (int k = 0; k < 4; k++)
            f[k] = s == 0 ? ~UINT64_C(0) : (uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state);
        ug_mul128((ug_u128)f[1] << 64 | f[0], (ug_u128)f[3] << 64 | f[2], w);
        mpz_import(a, 2, -1, sizeof f[0], 0, 0, f);
        mpz_import(b, 2, -1, sizeof f[0], 0, 0, f + 2);
        mpz_mul(want, a, b);
        mpz_import(got, 4, -1, sizeof w[0], 0, 0, w);
        if (mpz_cmp(want, got) != 0)
            UG_TEST_MISMATCH(mismatches, "sample %lu: %016llx%016llx x %016llx%016llx", s, (unsigned long long)f[1],
                             (unsigned long long)f[0], (unsigned long long)f[3], (unsigned long long)f[2]);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    mpz_clears(a, b, want, got, (mpz_ptr)0);
}

/* An exact window (no bits beyond it) with its trailing zeros dropped: one
 * value has one such form. */
static ug_xval canonical(ug_xval v)
{
    if (!v.zero && !v.round && !v.sticky)
        while (!(v.m & 1)) {
            v.m >>= 1;
            v.e++;
        }
    return v;
}

static bool same_xval(const ug_xval *a0, const ug_xval *b0)
{
    const ug_xval a = canonical(*a0), b = canonical(*b0);
    return a.zero == b.zero && a.neg == b.neg &&
           (a.zero || (a.m == b.m && a.e == b.e && a.round == b.round && a.sticky == b.sticky));
}

static void windows_plus_a_value_equal_the_accumulator(void)
{
    /* ug_xwin_read_plus of a window and a value of 1 to 4 limbs each, with
     * exponents from equal to 330 bits apart (past its reach) and both
     * signs (cancellations to zero included), reads what the accumulator
     * reads, or declines; so does ug_xwin_read_plus_wide, which reaches
     * further. */
    uint64_t state = 12;
    size_t mismatches = 0, summed = 0, summed_wide = 0;
    for (unsigned long s = 0; s < 4 * ug_test_random_samples(); s++) {
        uint64_t m[2][UG_XWIN_LIMBS] = {{0}};
        int n[2], e[2];
        bool neg[2];
        for (int k = 0; k < 2; k++) {
            n[k] = 1 + (int)(ug_test_next_u32(&state) % 4);
            for (int i = 0; i < n[k]; i++)
                m[k][i] = (uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state);
            m[k][n[k] - 1] >>= ug_test_next_u32(&state) % 64;
            e[k] = (int)(ug_test_next_u32(&state) % 330) - 400;
            neg[k] = ug_test_next_u32(&state) & 1;
        }
        if (s % 7 == 0) { /* the value is minus the window */
            n[1] = n[0];
            memcpy(m[1], m[0], sizeof m[0]);
            e[1] = e[0];
            neg[1] = !neg[0];
        }
        uint64_t window[UG_XWIN_LIMBS], carry = neg[0]; /* the first value in two's complement */
        for (int i = 0; i < UG_XWIN_LIMBS; i++) {
            window[i] = (neg[0] ? ~m[0][i] : m[0][i]) + carry;
            carry = carry && window[i] == 0;
        }
        const int limbs = n[0] + 1;
        ug_xsum_init(&acc);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n[k]; i++)
                if (m[k][i]) ug_xsum_add(&acc, neg[k], m[k][i], e[k] + 64 * i);
        ug_xval want = ug_xsum_read(&acc);
        if (want.zero) want.neg = false; /* the reads' zero: the caller signs it */
        for (int wide = 0; wide < 2; wide++) {
            ug_xval got;
            if (!(wide ? ug_xwin_read_plus_wide : ug_xwin_read_plus)(window, limbs, e[0], neg[1], m[1], n[1], e[1],
                                                                      &got))
                continue;
            *(wide ? &summed_wide : &summed) += 1;
            if (!same_xval(&want, &got))
                UG_TEST_MISMATCH(mismatches, "sample %lu%s: limbs %d/%d at 2^%d/2^%d: m %d/%d e %d/%d", s,
                                 wide ? " wide" : "", n[0], n[1], e[0], e[1], (int)(want.m >> 120),
                                 (int)(got.m >> 120), want.e, got.e);
        }
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(summed > ug_test_random_samples()); /* most pairs fit */
    CU_ASSERT(summed_wide > summed + ug_test_random_samples() / 2);
}

static void product_windows_equal_the_accumulators(void)
{
    /* ug_xval_product reads m1·m2·2^e as the accumulator reads the same add. */
    uint64_t state = 8;
    size_t mismatches = 0;
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        const int bits1 = 1 + (int)(ug_test_next_u32(&state) % 64), bits2 = 1 + (int)(ug_test_next_u32(&state) % 128);
        uint64_t m1 = (uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state);
        ug_u128 m2 = (ug_u128)((uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state)) << 64 |
                     ((uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state));
        m1 >>= 64 - bits1;
        m2 >>= 128 - bits2;
        const int e = (int)(ug_test_next_u32(&state) % 600) - 300;
        const bool neg = s & 1;
        ug_xsum_init(&acc);
        ug_xsum_add_mul(&acc, neg, m1, m2, e);
        const ug_xval want = ug_xsum_read(&acc), got = ug_xval_product(neg, m1, m2, e);
        if (!same_xval(&want, &got))
            UG_TEST_MISMATCH(mismatches, "m1 %d bits, m2 %d bits: round %d/%d sticky %d/%d", bits1, bits2, want.round,
                             got.round, want.sticky, got.sticky);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static uint64_t random_u64(uint64_t *state)
{
    return (uint64_t)ug_test_next_u32(state) << 32 | ug_test_next_u32(state);
}

/* A random integer of nc limbs whose top limb has 1 to 64 bits (or is all
 * ones: the largest factors carry the longest chains). */
static void random_limbs(uint64_t *state, int nc, uint64_t *c)
{
    for (int k = 0; k < nc; k++) c[k] = random_u64(state);
    const unsigned top_bits = 1 + ug_test_next_u32(state) % 64;
    c[nc - 1] = ug_test_next_u32(state) % 8 == 0 ? ~UINT64_C(0) : c[nc - 1] >> (64 - top_bits);
}

static void windows_equal_the_accumulator(void)
{
    /* A window's read equals the accumulator's read of the same products
     * (each limb product added exactly); a third of the sums cancel to
     * zero but for one term. */
    uint64_t state = 11;
    size_t mismatches = 0;
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        const int nc = 1 + (int)(s % UG_XWIN_MAX_C), e = (int)(ug_test_next_u32(&state) % 400) - 200;
        const size_t n = 1 + ug_test_next_u32(&state) % 70;
        uint64_t window[UG_XWIN_LIMBS] = {0}, c[UG_XWIN_MAX_C], first_c[UG_XWIN_MAX_C], first_s = 0, first_mask = 0;
        ug_xsum_init(&acc);
        for (size_t i = 0; i < n; i++) {
            random_limbs(&state, nc, c);
            uint64_t sv = random_u64(&state), mask = ug_test_next_u32(&state) & 1 ? ~UINT64_C(0) : 0;
            if (s % 3 == 0 && i % 2 == 1 && i + 1 < n) { /* the previous term negated */
                memcpy(c, first_c, sizeof c);
                sv = first_s;
                mask = ~first_mask;
            }
            memcpy(first_c, c, sizeof c);
            first_s = sv;
            first_mask = mask;
            ug_xwin_add_product(window, nc, c, sv, mask);
            for (int k = 0; k < nc; k++) ug_xsum_add(&acc, mask != 0, (ug_u128)c[k] * sv, e + 64 * k);
        }
        ug_xval want = ug_xsum_read(&acc);
        const ug_xval got = ug_xwin_read(window, nc + 2, e);
        want.neg &= !want.zero; /* a zero window's sign is the caller's rule */
        if (!same_xval(&want, &got))
            UG_TEST_MISMATCH(mismatches, "nc %d, %zu products: accumulator %s%s, window %s%s", nc, n,
                             want.neg ? "-" : "+", want.zero ? "0" : "x", got.neg ? "-" : "+", got.zero ? "0" : "x");
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void window_adds_match_the_portable_definition(void)
{
    /* ug_xwin_add_product (adc in registers on x86-64) against its C
     * definition, from random windows, with all-ones limbs for the carries. */
    uint64_t state = 12;
    size_t mismatches = 0;
    for (unsigned long s = 0; s < 4 * ug_test_random_samples(); s++) {
        const int nc = 1 + (int)(s % UG_XWIN_MAX_C);
        uint64_t want[UG_XWIN_LIMBS], got[UG_XWIN_LIMBS], c[UG_XWIN_MAX_C];
        for (int k = 0; k < UG_XWIN_LIMBS; k++) want[k] = got[k] = s % 5 == 0 ? ~UINT64_C(0) : random_u64(&state);
        random_limbs(&state, nc, c);
        const uint64_t sv = s % 7 == 0 ? ~UINT64_C(0) : random_u64(&state), mask = s & 8 ? ~UINT64_C(0) : 0;
        ug_xwin_add_product_c(want, nc, c, sv, mask);
        ug_xwin_add_product(got, nc, c, sv, mask);
        if (memcmp(want, got, sizeof want) != 0) UG_TEST_MISMATCH(mismatches, "nc %d, mask %d", nc, (int)(mask & 1));
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void simd_windows_equal_the_accumulator(void)
{
    /* ug_xwin52_windows (AVX-512 IFMA) against the accumulator's sum of the
     * same digit products, column by column: random digits (all-ones ones
     * for the carries), signs from both factors, widths off the 8-column
     * blocks. On a CPU without IFMA there is no such path to test. */
    if (!ug_ref_simd_available()) {
        printf("\n    (no AVX-512 IFMA on this CPU: the portable windows are the only path)\n");
        return;
    }
    enum { TOKENS = 40, WIDTH = 21, BLOCKS = (WIDTH + 7) / 8 };
    static uint64_t col_digit[TOKENS * WIDTH], row_digits[TOKENS * UG_XWIN52_DIGITS], win[WIDTH][UG_XWIN_LIMBS];
    uint8_t col_neg[TOKENS * BLOCKS], row_neg[TOKENS];
    size_t row_j[TOKENS];
    uint64_t state = 13;
    size_t mismatches = 0;
    const uint64_t digit = (UINT64_C(1) << 52) - 1;
    for (unsigned long s = 0; s < ug_test_random_samples() / 50 + 8; s++) {
        const int nd = 1 + (int)(s % UG_XWIN52_DIGITS), e = (int)(ug_test_next_u32(&state) % 200) - 100;
        const size_t n = 1 + ug_test_next_u32(&state) % TOKENS, width = 1 + ug_test_next_u32(&state) % WIDTH;
        for (size_t i = 0; i < TOKENS * WIDTH; i++) col_digit[i] = s % 4 == 0 ? digit : random_u64(&state) & digit;
        for (size_t i = 0; i < TOKENS * BLOCKS; i++) col_neg[i] = (uint8_t)ug_test_next_u32(&state);
        for (size_t k = 0; k < n; k++) {
            for (int d = 0; d < UG_XWIN52_DIGITS; d++)
                row_digits[k * UG_XWIN52_DIGITS + d] = d < nd ? (s % 4 == 1 ? digit : random_u64(&state) & digit) : 0;
            row_neg[k] = ug_test_next_u32(&state) & 1 ? 0xFF : 0;
            row_j[k] = ug_test_next_u32(&state) % TOKENS; /* tokens in any order, repeated */
        }
        const ug_xwin52_row r = {n, width, nd, row_digits, row_neg, row_j, col_digit, col_neg};
        ug_xwin52_windows(&r, win);
        for (size_t col = 0; col < width; col++) {
            ug_xsum_init(&acc);
            for (size_t k = 0; k < n; k++) {
                const size_t j = row_j[k];
                const size_t blocks = (width + 7) / 8; /* col_neg's rows, as ug_xwin52_row lays them out */
                const bool neg = ((col_neg[j * blocks + col / 8] >> (col % 8)) & 1) != (row_neg[k] != 0);
                for (int d = 0; d < nd; d++)
                    ug_xsum_add(&acc, neg, (ug_u128)row_digits[k * UG_XWIN52_DIGITS + d] * col_digit[j * width + col],
                                e + 52 * d);
            }
            ug_xval want = ug_xsum_read(&acc);
            const ug_xval got = ug_xwin_read(win[col], UG_XWIN_LIMBS, e);
            want.neg &= !want.zero;
            if (!same_xval(&want, &got)) UG_TEST_MISMATCH(mismatches, "nd %d, %zu terms, column %zu of %zu", nd, n, col, width);
        }
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void simd_axpy_rounds_like_the_loop(void)
{
    /* ug_ref_simd_axpy against y[i] += a * x[i] (two roundings), bit for
     * bit: random values of either sign over 4 binades (y and a x near
     * each other: where a fused multiply-add would round differently),
     * lengths off the 8-lane blocks. */
    if (!ug_ref_simd_available()) {
        printf("\n    (no AVX-512 IFMA on this CPU: the plain loop is the only path)\n");
        return;
    }
    enum { N = 37 };
    uint64_t state = 23;
    size_t mismatches = 0;
    for (unsigned long s = 0; s < ug_test_random_samples() / 10 + 8; s++) {
        double x[N], y[N], want[N];
        const size_t n = s % (N + 1);
        const double a = ldexp(ug_test_uniform(&state, -1, 1), (int)(ug_test_next_u32(&state) % 4));
        for (size_t i = 0; i < N; i++) {
            x[i] = ldexp(ug_test_uniform(&state, -1, 1), (int)(ug_test_next_u32(&state) % 4)) / 3;
            y[i] = want[i] = ldexp(ug_test_uniform(&state, -1, 1), (int)(ug_test_next_u32(&state) % 4)) / 7;
        }
        for (size_t i = 0; i < n; i++) want[i] += a * x[i];
        ug_ref_simd_axpy(n, a, x, y);
        for (size_t i = 0; i < N; i++)
            if (bits_of(y[i]) != bits_of(want[i]))
                UG_TEST_MISMATCH(mismatches, "n=%zu a=%a: y[%zu] = %a, the loop's %a", n, a, i, y[i], want[i]);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void placing_on_a_grid(void)
{
    /* m·2^e on the grid 2^grid is m shifted by e - grid, across limbs; bits
     * below the grid or past the last limb refuse; zero is always placed. */
    const uint64_t m[2] = {0x8000000000000001u, 0x5u};
    uint64_t out[3];
    CU_ASSERT(ug_xwin_place(m, 2, 10, 10, out, 2));
    CU_ASSERT(out[0] == m[0] && out[1] == m[1]);
    CU_ASSERT(ug_xwin_place(m, 2, 10 + 67, 10, out, 3));
    CU_ASSERT(out[0] == 0 && out[1] == (m[0] << 3) && out[2] == (m[0] >> 61 | m[1] << 3));
    CU_ASSERT(!ug_xwin_place(m, 2, 9, 10, out, 3));         /* the lowest bit below the grid */
    CU_ASSERT(!ug_xwin_place(m, 2, 10 + 62, 10, out, 2));   /* 131 bits in 128 */
    CU_ASSERT(ug_xwin_place(m, 2, 10 + 61, 10, out, 2));    /* 128 bits exactly */
    const uint64_t three[1] = {3};                         /* one limb in one: the column factors */
    CU_ASSERT(ug_xwin_place(three, 1, 5, 0, out, 1) && out[0] == 0x60);
    CU_ASSERT(ug_xwin_place(three, 1, 62, 0, out, 1) && out[0] == UINT64_C(3) << 62);
    CU_ASSERT(!ug_xwin_place(three, 1, 63, 0, out, 1));
    CU_ASSERT(!ug_xwin_place(three, 1, -1, 0, out, 1));
    const uint64_t zero[1] = {0};
    CU_ASSERT(ug_xwin_place(zero, 1, -5000, 0, out, 1) && out[0] == 0);
    CU_ASSERT_EQUAL(ug_xwin_bit_length(m, 2), 67);
}

static void distances_round_like_mpfr(void)
{
    /* RA(||v| - |d||) from ug_xval_distance, where it answers, equals
     * mpfr_get_d(RNDA) of the exact difference; d = RN_bf16(v) and its
     * neighbours, as the staging uses it, and d = v's leading bits. */
    uint64_t state = 9;
    size_t mismatches = 0, answered = 0;
    mpfr_t x, diff;
    mpfr_init2(x, 192);
    mpfr_init2(diff, 400);
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        const uint64_t m1 = ug_test_next_u32(&state) | 1;
        const ug_u128 m2 = (ug_u128)((uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state)) << 64 |
                           ((uint64_t)ug_test_next_u32(&state) << 32 | ug_test_next_u32(&state)) | (ug_u128)1 << 127;
        const int e = -160 - (int)(ug_test_next_u32(&state) % 40);
        const bool neg = s & 1;
        const ug_xval v = ug_xval_product(neg, m1, m2, e);
        const double lead = ug_xval_to_double(&v, MPFR_RNDZ);
        const double d = s % 3 == 0 ? lead : (double)ug_bf16_to_f32((ug_bf16)(ug_xval_rn_bits(&v, UG_BF16) + s % 3 - 1));
        ug_xval dist;
        if (!ug_xval_distance(&v, d, &dist)) continue;
        answered++;
        mpfr_set_uj(x, m1, MPFR_RNDN);
        mpfr_t m2_mp;
        mpfr_init2(m2_mp, 128);
        mpfr_set_uj_2exp(m2_mp, (uintmax_t)(uint64_t)(m2 >> 64), 64, MPFR_RNDN);
        mpfr_t lo;
        mpfr_init2(lo, 64);
        mpfr_set_uj(lo, (uintmax_t)(uint64_t)m2, MPFR_RNDN);
        mpfr_add(m2_mp, m2_mp, lo, MPFR_RNDN);
        mpfr_mul(x, x, m2_mp, MPFR_RNDN); /* exact: 160 bits */
        mpfr_mul_2si(x, x, e, MPFR_RNDN);
        if (neg) mpfr_neg(x, x, MPFR_RNDN);
        mpfr_sub_d(diff, x, d, MPFR_RNDN); /* exact */
        mpfr_abs(diff, diff, MPFR_RNDN);
        const double want = mpfr_get_d(diff, MPFR_RNDA), got = ug_xval_to_double(&dist, MPFR_RNDA);
        if (bits_of(want) != bits_of(got)) UG_TEST_MISMATCH(mismatches, "|v - %a|: mpfr %a, distance %a", d, want, got);
        mpfr_clears(m2_mp, lo, (mpfr_ptr)0);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(answered > ug_test_random_samples() / 2);
    mpfr_clears(x, diff, (mpfr_ptr)0);
}

/* x = (-1)^neg m·2^e (m < 2^128) as a 128-bit MPFR number. */
static void mpfr_of_u128(mpfr_ptr x, bool neg, ug_u128 m, int e)
{
    mpfr_t lo;
    mpfr_init2(lo, 64);
    mpfr_set_uj_2exp(x, (uintmax_t)(uint64_t)(m >> 64), 64, MPFR_RNDN);
    mpfr_set_uj(lo, (uintmax_t)(uint64_t)m, MPFR_RNDN);
    mpfr_add(x, x, lo, MPFR_RNDN); /* exact: 128 bits */
    mpfr_mul_2si(x, x, e, MPFR_RNDN);
    if (neg) mpfr_neg(x, x, MPFR_RNDN);
    mpfr_clear(lo);
}

static bool same_staging(const ug_staged *a, const ug_staged *b, bool with_dev)
{
    return a->rn == b->rn && a->lo == b->lo && a->hi == b->hi && a->flagged == b->flagged &&
           (!with_dev || bits_of(a->dev) == bits_of(b->dev)) && bits_of(a->mag) == bits_of(b->mag) &&
           bits_of(a->gap) == bits_of(b->gap) && bits_of(a->abs_x) == bits_of(b->abs_x);
}

/* ug_stage_certified (every field) and ug_stage_certified_cast (every
 * field but dev), where they certify, against ug_stage_operand of x with
 * the absolute radius r, and ug_stage_certified_finished of x as
 * ug_xval_finish finishes it against both (the same certification, the
 * same fields); returns whether both certified. */
static bool stage_matches_mpfr(bool neg, ug_u128 m, int e, double r, ug_xsum *scratch, size_t *mismatches)
{
    mpfr_t x, radius;
    mpfr_init2(x, 128);
    mpfr_init2(radius, 64);
    mpfr_of_u128(x, neg, m, e);
    mpfr_set_d(radius, r, MPFR_RNDU);
    ug_staged want, got, cast;
    ug_stage_operand(x, radius, &want);
    const bool certified = ug_stage_certified(neg, 1, m, e, 0, r, &got, scratch);
    const bool cast_certified = ug_stage_certified_cast(neg, 1, m, e, 0, r, &cast, scratch);
    if (certified && (got.rn != want.rn || got.lo != want.lo || got.hi != want.hi || got.flagged != want.flagged ||
                      bits_of(got.dev) != bits_of(want.dev) || bits_of(got.mag) != bits_of(want.mag) ||
                      bits_of(got.gap) != bits_of(want.gap) || bits_of(got.abs_x) != bits_of(want.abs_x)))
        UG_TEST_MISMATCH(*mismatches, "certified x=%s%llx.%016llx*2^%d r=%a: lo %#x hi %#x dev %a, mpfr lo %#x hi %#x dev %a",
                         neg ? "-" : "", (unsigned long long)(m >> 64), (unsigned long long)m, e, r, got.lo, got.hi,
                         got.dev, want.lo, want.hi, want.dev);
    if (cast_certified && (cast.rn != want.rn || cast.lo != want.lo || cast.hi != want.hi ||
                           cast.flagged != want.flagged || bits_of(cast.mag) != bits_of(want.mag) ||
                           bits_of(cast.gap) != bits_of(want.gap) || bits_of(cast.abs_x) != bits_of(want.abs_x)))
        UG_TEST_MISMATCH(*mismatches, "cast x=%s%llx.%016llx*2^%d r=%a: lo %#x hi %#x, mpfr lo %#x hi %#x",
                         neg ? "-" : "", (unsigned long long)(m >> 64), (unsigned long long)m, e, r, cast.lo, cast.hi,
                         want.lo, want.hi);
    if (certified && !cast_certified) UG_TEST_MISMATCH(*mismatches, "the cast staging certifies less than the full one");
    ug_ref_value finished;
    ug_xval_finish(&(ug_xval){.neg = neg, .zero = m == 0, .m = m, .e = e}, &finished, 0, 0, 0, UG_BF16);
    for (int with_dev = 0; with_dev < 2; with_dev++) {
        ug_staged shared = {0};
        const bool shared_certified = ug_stage_certified_finished(&finished, neg, m, e, r, with_dev, &shared, scratch);
        if (shared_certified != (with_dev ? certified : cast_certified) ||
            (shared_certified && !same_staging(&shared, with_dev ? &got : &cast, with_dev)))
            UG_TEST_MISMATCH(*mismatches, "finished x=%s%llx.%016llx*2^%d r=%a dev %d: certified %d abs_x %a, alone %a",
                             neg ? "-" : "", (unsigned long long)(m >> 64), (unsigned long long)m, e, r, with_dev,
                             shared_certified, shared.abs_x, with_dev ? got.abs_x : cast.abs_x);
    }
    mpfr_clears(x, radius, (mpfr_ptr)0);
    return certified && cast_certified;
}

static void staging_without_mpfr_equals_ug_stage_operand(void)
{
    /* Window ends x -+ r exactly on bf16 midpoints (ties to even), one unit
     * of x beside them, x + r carried past 2^128 units of x with the tie
     * decided by the carried-out bit, x - r past zero onto a tie, and
     * random 128-bit x with radii from
     * far inside the rounding interval to 2^100 |x| (windows across zero). */
    ug_xsum scratch;
    ug_xsum_init(&scratch);
    size_t mismatches = 0, certified = 0;
    const ug_u128 one = 1;
    const int e = -140;
    for (int neg = 0; neg < 2; neg++)
        for (int delta = -1; delta <= 1; delta++) {
            /* x - r = (1 + 2^-8) 2^127 units + delta: a tie below, or beside it */
            const ug_u128 tie = one << 127 | one << 119;
            certified += stage_matches_mpfr(neg, tie + (one << 70) + (ug_u128)(int64_t)delta, e, ldexp(1.0, 70 + e),
                                            &scratch, &mismatches);
            /* x + r = 2^128 + 2^120 + 1 + delta units: the carry's lowest bit breaks the tie */
            const ug_u128 x = (ug_u128)0 - (one << 70) + 1 + (ug_u128)(int64_t)delta;
            certified += stage_matches_mpfr(neg, x, e, ldexp(1.0, 120 + e) + ldexp(1.0, 70 + e), &scratch,
                                            &mismatches);
            /* r = 2^40 |x| or so: r - |x| = (1 + 2^-8) 2^167 units + 1 + delta, a tie beside the last unit */
            certified += stage_matches_mpfr(neg, (one << 127) - 1 + (ug_u128)(int64_t)delta, e,
                                            ldexp(1.0 + 0x1p-8, 167 + e) + ldexp(1.0, 127 + e), &scratch, &mismatches);
        }
    CU_ASSERT_EQUAL(certified, 18);
    uint64_t state = 17;
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        uint64_t words[4];
        for (size_t w = 0; w < 4; w++) words[w] = ug_test_next_u32(&state);
        const ug_u128 m = ((ug_u128)(words[0] << 32 | words[1]) << 64 | (words[2] << 32 | words[3])) >> (s % 70);
        const int shift = s % 5 == 0 ? 0 : (int)(ug_test_next_u32(&state) % 100); /* 0: m's own unit */
        const int above = s % 4 == 3 ? 1 + (int)(ug_test_next_u32(&state) % 100) : 0; /* a radius beyond x */
        const double r = ldexp((double)(ug_test_next_u32(&state) | 1), e - 32 + 128 - shift - (int)(s % 70) + above);
        certified += stage_matches_mpfr(s & 1, m | 1, e, r, &scratch, &mismatches);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(certified > 18 + ug_test_random_samples() / 4);
}

/* ug_stage_certified of x = (-1)^neg m1·m2·2^e (m1 of 64 bits: a product
 * read with round and sticky bits) with radius |x| rel + r against
 * ug_stage_operand of x at 192 bits (exact) and that radius rounded up;
 * returns whether it certified. */
static bool product_stage_matches_mpfr(bool neg, uint64_t m1, ug_u128 m2, int e, double rel, double r,
                                       ug_xsum *scratch, size_t *mismatches)
{
    mpfr_t x, factor, radius;
    mpfr_inits2(192, x, factor, (mpfr_ptr)0);
    mpfr_init2(radius, 64);
    mpfr_of_u128(x, neg, m2, e);
    mpfr_set_uj(factor, (uintmax_t)m1, MPFR_RNDN);
    mpfr_mul(x, x, factor, MPFR_RNDN); /* exact: 192 bits */
    mpfr_abs(radius, x, MPFR_RNDU);
    mpfr_mul_d(radius, radius, rel, MPFR_RNDU);
    mpfr_add_d(radius, radius, r, MPFR_RNDU);
    ug_staged want, got, cast;
    ug_stage_operand(x, radius, &want);
    const bool certified = ug_stage_certified(neg, m1, m2, e, rel, r, &got, scratch);
    const bool cast_certified = ug_stage_certified_cast(neg, m1, m2, e, rel, r, &cast, scratch);
    if ((certified && !same_staging(&got, &want, true)) || (cast_certified && !same_staging(&cast, &want, false)))
        UG_TEST_MISMATCH(*mismatches, "x=%s%llx*%llx.%016llx*2^%d rel %a r %a: rn %#x abs_x %a dev %a, mpfr rn %#x "
                         "abs_x %a dev %a", neg ? "-" : "", (unsigned long long)m1, (unsigned long long)(m2 >> 64),
                         (unsigned long long)m2, e, rel, r, got.rn, got.abs_x, got.dev, want.rn, want.abs_x, want.dev);
    mpfr_clears(x, factor, radius, (mpfr_ptr)0);
    return certified;
}

static void product_staging_equals_ug_stage_operand(void)
{
    /* Products of 129 to 192 bits (their reads carry round and sticky
     * bits): RN_bf16 and RN_53 ties (m1 = 2^63) and the same one unit
     * of the product above (m1 = 2^63 + 1); 3 m2 = 4 T + s (s in 1..3)
     * for a tie T, where only the round and sticky bits break it; each
     * with |x| at the ends of bf16's normal binades; then random products
     * across them. */
    ug_xsum scratch;
    ug_xsum_init(&scratch);
    size_t mismatches = 0, certified = 0, samples = 0;
    const ug_u128 one = 1;
    const ug_u128 patterns[] = {one << 127 | one << 119, one << 127 | one << 120 | one << 119,
                                one << 127 | one << 74, one << 127 | one << 75 | one << 74,
                                (one << 127 | one << 119) - 1, ~(ug_u128)0};
    const int tops[] = {-128, -127, -126, -125, 0, 126, 127, 128}; /* |x| in [2^top, 2^(top+1)) */
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++)
        for (size_t t = 0; t < sizeof tops / sizeof tops[0]; t++)
            for (int lowest = 0; lowest < 2; lowest++, samples++) {
                const uint64_t m1 = UINT64_C(1) << 63 | (uint64_t)lowest;
                const int e = tops[t] - 190; /* m1·m2 in [2^190, 2^192): 2^190 at the top's place */
                certified += product_stage_matches_mpfr(samples & 1, m1, patterns[p], e, 0, ldexp(1.0, e + 100),
                                                        &scratch, &mismatches);
            }
    for (size_t p = 0; p < 4; p++) /* the ties: 3 m2 < 2^130 */
        for (size_t t = 0; t < sizeof tops / sizeof tops[0]; t++, samples++) {
            const ug_u128 tie = patterns[p];
            const unsigned s = (unsigned)((3 - tie % 3) % 3), low = s ? s : 3; /* 4 tie + low = 0 mod 3 */
            const int e = tops[t] - 129;                                        /* 3 m2 in [2^129, 2^130) */
            certified += product_stage_matches_mpfr(samples & 1, 3, tie + (tie + low) / 3, e, 0, ldexp(1.0, e + 60),
                                                    &scratch, &mismatches);
        }
    uint64_t state = 29;
    for (unsigned long s = 0; s < ug_test_random_samples(); s++, samples++) {
        uint64_t words[6];
        for (size_t w = 0; w < 6; w++) words[w] = ug_test_next_u32(&state);
        const uint64_t m1 = (words[0] << 32 | words[1]) >> (s % 32) | 1;
        const ug_u128 m2 = (ug_u128)(words[2] << 32 | words[3]) << 64 | (words[4] << 32 | words[5]) | one << 127;
        const int e = (int)(ug_test_next_u32(&state) % 300) - 150 - 190;
        const double rel = s % 3 == 0 ? 0 : 0x1p-30, r = ldexp(1.0, e + 150 - (int)(s % 60));
        certified += product_stage_matches_mpfr(s & 1, m1, m2, e, rel, r, &scratch, &mismatches);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(certified > samples / 4);
}

/* ug_ref_fill's bound against its definition with ug_ulp_bf16 / ug_ulp_f32
 * (ug_ref_fill takes a normal magnitude's ulp from its exponent field):
 * magnitudes across every binade, at powers of two and just below them,
 * subnormal, zero, around the formats' least quanta and overflowing. */
static void fill_bounds_use_the_formats_ulp(void)
{
    size_t mismatches = 0;
    const double pre_round[] = {0.0, 0x1p-140, 0x1.8p-20, 3.0};
    for (int q = -1074; q <= 1023; q++)
        for (int shape = 0; shape < 3; shape++)
            for (size_t p = 0; p < sizeof pre_round / sizeof pre_round[0]; p++)
                for (int dtype = 0; dtype < 2; dtype++) {
                    const double power = ldexp(1.0, q);
                    const double r_hi = shape == 0 ? power : shape == 1 ? nextafter(power, 0) : -1.5 * power;
                    const ug_dtype t = dtype ? UG_F32 : UG_BF16;
                    ug_ref_value got;
                    ug_ref_fill(&got, r_hi, 0.0, 0, pre_round[p], 0.0, 0, t);
                    const double magnitude = (fabs(r_hi) + pre_round[p]) * UG_F32_SLACK;
                    const double half_ulp = 0.5 * (t == UG_BF16 ? ug_ulp_bf16(magnitude) : ug_ulp_f32(magnitude));
                    const double want = isfinite(magnitude) ? (pre_round[p] + half_ulp) * UG_F32_SLACK : INFINITY;
                    if (bits_of(got.bound) != bits_of(want))
                        UG_TEST_MISMATCH(mismatches, "r_hi %a pre %a %s: bound %a, want %a", r_hi, pre_round[p],
                                         dtype ? "f32" : "bf16", got.bound, want);
                }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void mpfr_results_equal_mpfr_sum(void)
{
    /* ug_xsum_get_mpfr at 8 to 128 bits, and ug_xsum_get_mpfr_wide at up
     * to 320, against mpfr_sum of the same doubles, zero signs included. */
    uint64_t state = 10;
    const mpfr_prec_t precs[] = {8, 24, 53, 64, 100, UG_REF_PREC, 192, 320};
    mpfr_t m[MAX_TERMS], want, got;
    mpfr_ptr p[MAX_TERMS];
    mpz_t scratch;
    mpz_init(scratch);
    for (size_t i = 0; i < MAX_TERMS; i++) {
        mpfr_init2(m[i], 53);
        p[i] = m[i];
    }
    mpfr_inits2(UG_REF_PREC, want, got, (mpfr_ptr)0);
    size_t mismatches = 0;
    for (unsigned long s = 0; s < ug_test_random_samples(); s++) {
        const size_t n = ug_test_next_u32(&state) % 12;
        const bool wide = s % 3 == 0;
        ug_xsum_init(&acc);
        for (size_t i = 0; i < n; i++) {
            double x = random_double(&state, s % 2 ? 900 : 30);
            if (s % 5 == 0 && i % 2) x = -mpfr_get_d(m[i - 1], MPFR_RNDN); /* cancellation */
            if (s % 7 == 0) x = -0.0;
            mpfr_set_d(m[i], x, MPFR_RNDN);
            ug_xsum_add_double(&acc, x);
        }
        const mpfr_prec_t prec = precs[s % (sizeof precs / sizeof precs[0])];
        mpfr_set_prec(want, prec);
        mpfr_set_prec(got, prec);
        mpfr_sum(want, p, n, MPFR_RNDN);
        if (wide) ug_xsum_get_mpfr_wide(&acc, got, scratch);
        else if (prec <= UG_REF_PREC) ug_xsum_get_mpfr(&acc, got, scratch);
        else continue;
        if (!mpfr_equal_p(want, got) || mpfr_signbit(want) != mpfr_signbit(got))
            UG_TEST_MISMATCH(mismatches, "n=%zu prec %ld%s: mpfr_sum %a, exact_sum %a", n, (long)prec,
                             wide ? " (wide)" : "", mpfr_get_d(want, MPFR_RNDN), mpfr_get_d(got, MPFR_RNDN));
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    for (size_t i = 0; i < MAX_TERMS; i++) mpfr_clear(m[i]);
    mpfr_clears(want, got, (mpfr_ptr)0);
    mpz_clear(scratch);
}

static void reading_keeps_the_sum(void)
{
    /* A read propagates carries (and negates internally for a negative sum);
     * adds after it must continue from the same value. */
    terms t = {0, {0}};
    ug_xsum_init(&acc);
    uint64_t state = 3;
    ug_ref_value want, got;
    for (size_t i = 0; i < 40; i++) {
        t.x[t.n++] = random_double(&state, 100);
        ug_xsum_add_double(&acc, t.x[t.n - 1]);
        mpfr_value(&t, UG_F32, &want);
        ug_xsum_finish(&acc, &got, 0x1p-30, 1.0, 3, UG_F32);
        CU_ASSERT(same_value(&want, &got));
    }
}

static void clear_resets_to_zero(void)
{
    ug_xsum_init(&acc);
    ug_xsum_add_double(&acc, 0x1.8p300);
    ug_xsum_add_double(&acc, -0x1p-700);
    ug_xsum_clear(&acc);
    ug_xsum_add_double(&acc, -0.0);
    const ug_xval v = ug_xsum_read(&acc);
    CU_ASSERT(v.zero && v.neg); /* only a -0 since the clear */
    ug_xsum_add_double(&acc, 0x1p-5);
    const ug_xval w = ug_xsum_read(&acc);
    CU_ASSERT_EQUAL(ug_xval_to_double(&w, MPFR_RNDN), 0x1p-5);
}

static void adds_out_of_range_are_reported(void)
{
    ug_xsum_init(&acc);
    ug_xsum_add(&acc, false, 1, UG_XSUM_EMIN);
    ug_xsum_add(&acc, false, (ug_u128)1 << 127, UG_XSUM_EMAX - 128);
    CU_ASSERT(ug_xsum_in_range(&acc));
    ug_xsum_add(&acc, false, 1, UG_XSUM_EMIN - 1);
    CU_ASSERT(!ug_xsum_in_range(&acc));
    ug_xsum_clear(&acc);
    CU_ASSERT(ug_xsum_in_range(&acc));
    ug_xsum_add(&acc, true, 1, UG_XSUM_EMAX - 127);
    CU_ASSERT(!ug_xsum_in_range(&acc));
    ug_xsum_clear(&acc);
    ug_xsum_add(&acc, true, 0, UG_XSUM_EMAX + 1000); /* a zero is never out of range */
    CU_ASSERT(ug_xsum_in_range(&acc));
}

/* ug_xval_finish_mpfr against ug_ref_finish: random significands of every
 * width up to 192 bits (and beyond: the MPFR path) with exponents over and
 * past the double range, values a hair from the ties of r_hi, of bf16 and
 * of f32, exact doubles (r_lo = +0), zeros, infinities and NaN. */
static void wide_values_finish_like_ug_ref_finish(void)
{
    static const mpfr_prec_t precs[] = {2, 8, 24, 53, 54, 64, 65, 100, 128, 129, 150, 191, 192, 193, 256};
    static const double offsets[] = {0, 0x1p-53, -0x1p-53, 0x1p-9, -0x1p-9, 0x1p-25, -0x1p-25};
    gmp_randstate_t rand;
    gmp_randinit_default(rand);
    gmp_randseed_ui(rand, 20261126);
    mpfr_t x, tie;
    mpfr_inits2(256, x, tie, (mpfr_ptr)0);
    size_t mismatches = 0, checked = 0;
    for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
        for (int k = 0; k < 400; k++) {
            mpfr_set_prec(x, precs[p]);
            const long exp = k % 5 == 0 ? (long)(gmp_urandomm_ui(rand, 2400)) - 1200 : (long)(gmp_urandomm_ui(rand, 80)) - 40;
            const int kind = k % 4;
            if (kind == 0) { /* random bits */
                mpfr_urandomb(x, rand);
            } else { /* 1 + j 2^-52 + an offset (a tie of r_hi, bf16 or f32) and a little more or less */
                mpfr_set_d(tie, 1.0 + (double)gmp_urandomm_ui(rand, 1u << 20) * 0x1p-52, MPFR_RNDN);
                mpfr_add_d(tie, tie, offsets[gmp_urandomm_ui(rand, 7)], MPFR_RNDN);
                mpfr_set_si_2exp(x, (long)gmp_urandomm_ui(rand, 5) - 2, -(long)(60 + gmp_urandomm_ui(rand, 120)), MPFR_RNDN);
                mpfr_add(x, x, tie, MPFR_RNDN); /* rounded to x's precision */
            }
            mpfr_mul_2si(x, x, exp, MPFR_RNDN);
            if (k % 3 == 0) mpfr_neg(x, x, MPFR_RNDN);
            if (k == 1) mpfr_set_zero(x, -1);
            if (k == 2) mpfr_set_inf(x, 1);
            if (k == 3) mpfr_set_nan(x);
            for (int dtype = 0; dtype < 2; dtype++) {
                const ug_dtype t = dtype ? UG_BF16 : UG_F32;
                const double pre_round = k % 2 ? INFINITY : 0x1p-30;
                ug_ref_value want, got;
                memset(&want, 0, sizeof want);
                memset(&got, 0, sizeof got);
                ug_ref_finish(&want, x, pre_round, 1.5, 3, t);
                ug_xval_finish_mpfr(x, &got, pre_round, 1.5, 3, t);
                checked++;
                if (!same_value(&want, &got) && !(isnan(want.r_hi) && isnan(got.r_hi)))
                    UG_TEST_MISMATCH(mismatches, "prec %ld, %s: ug_ref_finish %a + %a rn %#x, fast %a + %a rn %#x",
                                     (long)precs[p], dtype ? "bf16" : "f32", want.r_hi, want.r_lo, want.rn_bits,
                                     got.r_hi, got.r_lo, got.rn_bits);
            }
        }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(checked > 10000);
    mpfr_clears(x, tie, (mpfr_ptr)0);
    gmp_randclear(rand);
}

static void mpfr_numbers_split_exactly(void)
{
    mpfr_t x, back;
    mpz_t z;
    mpz_init(z);
    mpfr_init2(x, 128);
    mpfr_init2(back, 128);
    mpfr_set_ui(x, 3, MPFR_RNDN);
    mpfr_exp(x, x, MPFR_RNDN);
    mpfr_neg(x, x, MPFR_RNDN);
    bool neg;
    ug_u128 m;
    int e;
    CU_ASSERT(ug_xsum_split_mpfr(x, &neg, &m, &e));
    CU_ASSERT(neg);
    mpfr_set_uj_2exp(back, (uintmax_t)(uint64_t)(m >> 64), e + 64, MPFR_RNDN);
    mpfr_t low;
    mpfr_init2(low, 64);
    mpfr_set_uj_2exp(low, (uintmax_t)(uint64_t)m, e, MPFR_RNDN);
    mpfr_add(back, back, low, MPFR_RNDN);
    mpfr_neg(back, back, MPFR_RNDN);
    CU_ASSERT(mpfr_equal_p(back, x));
    mpfr_set_zero(x, 1);
    CU_ASSERT(!ug_xsum_split_mpfr(x, &neg, &m, &e));
    mpfr_set_prec(x, 129);
    mpfr_set_ui(x, 1, MPFR_RNDN);
    CU_ASSERT(!ug_xsum_split_mpfr(x, &neg, &m, &e)); /* wider than 128 bits */
    /* every precision up to 128 bits (one limb or two): mpfr_get_z_2exp's integer and exponent */
    for (mpfr_prec_t prec = 2; prec <= 128; prec += 7) {
        mpfr_set_prec(x, prec);
        mpfr_const_pi(x, MPFR_RNDN);
        mpfr_mul_2si(x, x, (long)prec - 70, MPFR_RNDN);
        const mpfr_exp_t want_e = mpfr_get_z_2exp(z, x);
        uint64_t words[2] = {0, 0};
        mpz_export(words, NULL, -1, sizeof words[0], 0, 0, z);
        CU_ASSERT(ug_xsum_split_mpfr(x, &neg, &m, &e));
        CU_ASSERT(!neg && e == want_e && m == ((ug_u128)words[1] << 64 | words[0]));
    }
    mpfr_clears(x, back, low, (mpfr_ptr)0);
    mpz_clear(z);
}

UG_TEST_SUITE(exact_sum_suite, "exact_sum",
              UG_TEST(exact_zero_takes_mpfr_sum_sign),
              UG_TEST(wide_values_finish_like_ug_ref_finish),
              UG_TEST(bf16_and_f32_ties_round_to_even),
              UG_TEST(subnormal_results_round_like_mpfr),
              UG_TEST(overflow_thresholds_match),
              UG_TEST(sums_wider_than_128_bits_round_once),
              UG_TEST(random_sums_match_mpfr_sum),
              UG_TEST(directed_roundings_match_mpfr_get_d),
              UG_TEST(products_are_exact),
              UG_TEST(wide_products_are_exact),
              UG_TEST(product_windows_equal_the_accumulators),
              UG_TEST(windows_plus_a_value_equal_the_accumulator),
              UG_TEST(windows_equal_the_accumulator),
              UG_TEST(window_adds_match_the_portable_definition),
              UG_TEST(simd_windows_equal_the_accumulator),
              UG_TEST(simd_axpy_rounds_like_the_loop),
              UG_TEST(placing_on_a_grid),
              UG_TEST(distances_round_like_mpfr),
              UG_TEST(staging_without_mpfr_equals_ug_stage_operand),
              UG_TEST(product_staging_equals_ug_stage_operand),
              UG_TEST(fill_bounds_use_the_formats_ulp),
              UG_TEST(mpfr_results_equal_mpfr_sum),
              UG_TEST(reading_keeps_the_sum),
              UG_TEST(clear_resets_to_zero),
              UG_TEST(adds_out_of_range_are_reported),
              UG_TEST(mpfr_numbers_split_exactly));
