/* SPDX-License-Identifier: MIT */
/* core/bf16.h: encode/decode, spacing and ordered distance (SPEC §1, §3).
 *
 * Exhaustive over all 65,536 bf16 values where the property is about bf16;
 * f32 -> bf16 is checked on a table of hand-derived edge cases, exhaustively
 * at the rounding boundaries of every bf16 value, and on random f32 bit
 * patterns against MPFR's own emulation of an IEEE format (precision 8,
 * exponent range of bf16, mpfr_subnormalize) — a path independent of both
 * core/bf16.h and ref/round.c. */
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "tests.h"

enum { SEED = 20240611 };


static int is_nan_bf16(uint32_t h) { return (h & 0x7FFFu) > 0x7F80u; }
static int is_nan_f32(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }


/* RN of the finite or infinite x to precision 8 with the bf16 exponent range,
 * by MPFR's emulation recipe: round to 8 bits, then mpfr_check_range and
 * mpfr_subnormalize in the range [emin, emax] = [-132, 128] (values m·2^E with
 * 0.5 <= m < 1: the smallest subnormal 2^-133 has E = -132, the largest finite
 * value E = 128), which rounds once even where the first rounding is followed
 * by the subnormal one. Returns the bf16 bits; *exact_float is cleared when
 * the result was not a float whose low 16 bits are zero. */
static uint16_t mpfr_rn_bf16(const mpfr_t x, int *exact_float)
{
    mpfr_t y;
    mpfr_init2(y, 8);
    int t = mpfr_set(y, x, MPFR_RNDN);
    const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-132);
    mpfr_set_emax(128);
    t = mpfr_check_range(y, t, MPFR_RNDN);
    mpfr_subnormalize(y, t, MPFR_RNDN);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    const float f = mpfr_get_flt(y, MPFR_RNDN);
    const uint32_t u = ug_f32_bits(f);
    if ((u & 0xFFFFu) != 0 || (!mpfr_inf_p(y) && mpfr_cmp_d(y, f) != 0)) *exact_float = 0;
    mpfr_clear(y);
    return (uint16_t)(u >> 16);
}

/* The independent expectation for f32 bits u: NaN by the SPEC's rule, the
 * rest through MPFR. */
static uint16_t expected_bf16(uint32_t u, int *exact_float)
{
    if (is_nan_f32(u)) return (uint16_t)((u >> 16 & 0x8000u) | 0x7FC0u);
    mpfr_t x;
    mpfr_init2(x, 24);
    mpfr_set_flt(x, ug_f32_from_bits(u), MPFR_RNDN); /* exact */
    uint16_t h = mpfr_rn_bf16(x, exact_float);
    mpfr_clear(x);
    return h;
}

/* ---- decode / encode, exhaustive ---- */

static void test_bf16_decode_is_exact(void)
{
    unsigned bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++)
        if (ug_f32_bits(ug_bf16_to_f32((ug_bf16)h)) != h << 16) UG_TEST_MISMATCH(bad, "decode(%04x)", h);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_bf16_encode_decode_roundtrip(void)
{
    unsigned bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const uint16_t want = is_nan_bf16(h) ? (uint16_t)((h & 0x8000u) | 0x7FC0u) : (uint16_t)h;
        const uint16_t got = ug_bf16_from_f32(ug_bf16_to_f32((ug_bf16)h));
        if (got != want) UG_TEST_MISMATCH(bad, "encode(decode(%04x)) = %04x, want %04x", h, got, want);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- spacing ---- */

/* ulp of every finite bf16 value is the distance to the next value up in
 * magnitude (for 0 that is 2^-133); at the largest finite value, whose
 * successor is inf, it is 2^(127-7). Both signs. */
static void test_bf16_ulp_is_spacing(void)
{
    unsigned bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const uint32_t mag = h & 0x7FFFu;
        if (mag >= 0x7F80u) continue; /* inf, NaN */
        const double x = ug_bf16_to_f32((ug_bf16)h);
        const double want = mag == 0x7F7Fu ? ldexp(1, 120)
                                           : (double)ug_bf16_to_f32((ug_bf16)(mag + 1)) -
                                                 fabs(x);
        if (ug_ulp_bf16(x) != want) UG_TEST_MISMATCH(bad, "ulp_bf16(%04x) = %a, want %a", h, ug_ulp_bf16(x), want);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(ug_ulp_bf16(0.0), ldexp(1, -133));
    CU_ASSERT_EQUAL(ug_ulp_bf16(-0.0), ldexp(1, -133));
}

/* Between two consecutive bf16 values (and below 2^-133, and between the
 * largest finite value and 2^128) the spacing is that of the lower one. */
static void test_bf16_ulp_between_values(void)
{
    unsigned bad = 0;
    for (uint32_t mag = 0; mag < 0x7F80u; mag++) {
        const double a = ug_bf16_to_f32((ug_bf16)mag);
        const double b = mag == 0x7F7Fu ? ldexp(1, 128) : ug_bf16_to_f32((ug_bf16)(mag + 1));
        const double inner[3] = {(a + b) / 2, nextafter(b, 0), mag ? nextafter(a, INFINITY) : b / 3};
        for (int i = 0; i < 3; i++)
            for (int s = -1; s <= 1; s += 2)
                if (ug_ulp_bf16(s * inner[i]) != ug_ulp_bf16(a))
                    UG_TEST_MISMATCH(bad, "ulp_bf16(%a) = %a, want %a", s * inner[i], ug_ulp_bf16(s * inner[i]),
                             ug_ulp_bf16(a));
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(ug_ulp_bf16(ldexp(1, -1074)), ldexp(1, -133));
    CU_ASSERT_EQUAL(ug_ulp_bf16(ldexp(1, 128)), ldexp(1, 121));
    CU_ASSERT_EQUAL(ug_ulp_bf16(-1e300), ldexp(1, 996 - 7)); /* 1e300 in [2^996, 2^997) */
}

/* f32: ulp is the gap to nextafterf away from zero, over random finite f32. */
static void test_f32_ulp_is_spacing(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED);
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples();
    for (unsigned long i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)gsl_rng_get(rng);
        const float x = ug_f32_from_bits(u);
        if (!isfinite(x) || fabsf(x) == FLT_MAX) continue;
        const double want = (double)nextafterf(fabsf(x), INFINITY) - fabsf(x);
        if (ug_ulp_f32(x) != want) UG_TEST_MISMATCH(bad, "ulp_f32(%a) = %a, want %a", (double)x, ug_ulp_f32(x), want);
    }
    gsl_rng_free(rng);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(ug_ulp_f32(0.0), ldexp(1, -149));
    CU_ASSERT_EQUAL(ug_ulp_f32(ldexp(1, -149)), ldexp(1, -149));
    CU_ASSERT_EQUAL(ug_ulp_f32(ldexp(1, -126)), ldexp(1, -149));
    CU_ASSERT_EQUAL(ug_ulp_f32(ldexp(1, -160)), ldexp(1, -149));
    CU_ASSERT_EQUAL(ug_ulp_f32(FLT_MAX), ldexp(1, 104));
    CU_ASSERT_EQUAL(ug_ulp_f32(-1.0), ldexp(1, -23));
    CU_ASSERT_EQUAL(ug_ulp_f32(nextafter(1.0, 0)), ldexp(1, -24));
}

/* ---- ordered distance ---- */

static void test_bf16_ordered_dist_consecutive(void)
{
    unsigned bad = 0;
    for (uint32_t mag = 0; mag < 0x7F80u; mag++) /* up to and including +-inf */
        for (uint32_t s = 0; s <= 0x8000u; s += 0x8000u) {
            const ug_bf16 a = (ug_bf16)(s | mag), b = (ug_bf16)(s | (mag + 1));
            if (ug_ordered_dist_bf16(a, b) != 1 || ug_ordered_dist_bf16(b, a) != 1)
                UG_TEST_MISMATCH(bad, "dist(%04x, %04x) = %u", a, b, ug_ordered_dist_bf16(a, b));
        }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_bf16_ordered_dist_signed_zero(void)
{
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0x0000, 0x8000), 0);
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0x8000, 0x0000), 0);
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0x8000, 0x8000), 0);
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0x8000, 0x0001), 1);
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0x0000, 0x8001), 1);
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0x8001, 0x0001), 2);
    CU_ASSERT_EQUAL(ug_ordered_dist_bf16(0xFF80, 0x7F80), 2 * 0x7F80);
    CU_ASSERT_EQUAL(ug_ordered_dist_f32(0x00000000u, 0x80000000u), 0);
    CU_ASSERT_EQUAL(ug_ordered_dist_f32(0x80000001u, 0x00000001u), 2);
    CU_ASSERT_EQUAL(ug_ordered_dist_f32(0xFF800000u, 0x7F800000u), 2u * 0x7F800000u);
}

static int cmp_value(const void *pa, const void *pb)
{
    const float a = ug_bf16_to_f32(*(const ug_bf16 *)pa), b = ug_bf16_to_f32(*(const ug_bf16 *)pb);
    return (a > b) - (a < b);
}

/* The ordered line built independently: sort every non-NaN bf16 by value;
 * a value's rank is the number of distinct values below it (+0 and -0 are one
 * value). dist(a, b) must be |rank(a) - rank(b)|, which makes it symmetric and
 * additive. Every value against a set of anchors, plus random pairs. */
static void test_bf16_ordered_dist_is_rank_difference(void)
{
    static ug_bf16 sorted[0x10000];
    static int32_t rank[0x10000];
    size_t n = 0;
    for (uint32_t h = 0; h < 0x10000u; h++)
        if (!is_nan_bf16(h)) sorted[n++] = (ug_bf16)h;
    qsort(sorted, n, sizeof sorted[0], cmp_value);
    int32_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && cmp_value(&sorted[i - 1], &sorted[i]) != 0) r++;
        rank[sorted[i]] = r;
    }
    CU_ASSERT_EQUAL(r, 2 * 0x7F80); /* -inf .. +inf, zero counted once */

    static const ug_bf16 anchors[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80,
                                      0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x4049, 0xC049, 0x1234, 0x9234};
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof anchors / sizeof anchors[0]; k++) {
            const ug_bf16 a = sorted[i], b = anchors[k];
            const uint32_t want = (uint32_t)abs(rank[a] - rank[b]);
            if (ug_ordered_dist_bf16(a, b) != want || ug_ordered_dist_bf16(b, a) != want)
                UG_TEST_MISMATCH(bad, "dist(%04x, %04x) = %u / %u, want %u", a, b, ug_ordered_dist_bf16(a, b),
                         ug_ordered_dist_bf16(b, a), want);
        }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 1);
    const unsigned long samples = ug_test_random_samples();
    for (unsigned long i = 0; i < samples; i++) {
        const ug_bf16 a = sorted[gsl_rng_uniform_int(rng, n)], b = sorted[gsl_rng_uniform_int(rng, n)];
        const uint32_t want = (uint32_t)abs(rank[a] - rank[b]);
        if (ug_ordered_dist_bf16(a, b) != want || ug_ordered_dist_bf16(b, a) != want)
            UG_TEST_MISMATCH(bad, "dist(%04x, %04x) = %u, want %u", a, b, ug_ordered_dist_bf16(a, b), want);
    }
    gsl_rng_free(rng);
    CU_ASSERT_EQUAL(bad, 0);
}

/* f32: k steps of nextafterf from a random start are k apart, both ways, and
 * a path through the start splits additively. */
static void test_f32_ordered_dist_counts_steps(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 2);
    unsigned bad = 0;
    const unsigned long n = ug_test_random_samples() / 10;
    for (unsigned long i = 0; i < n; i++) {
        float x = ug_f32_from_bits((uint32_t)gsl_rng_get(rng));
        if (isnan(x)) continue;
        if (i % 4 == 0) x = ldexpf(x, -200); /* many starts near zero, crossing it */
        const float dir = gsl_rng_get(rng) & 1 ? INFINITY : -INFINITY;
        const unsigned k = (unsigned)gsl_rng_uniform_int(rng, 48);
        float y = x;
        unsigned steps = 0;
        while (steps < k && y != dir) {
            y = nextafterf(y, dir);
            steps++;
        }
        const uint32_t xb = ug_f32_bits(x), yb = ug_f32_bits(y);
        if (ug_ordered_dist_f32(xb, yb) != steps || ug_ordered_dist_f32(yb, xb) != steps)
            UG_TEST_MISMATCH(bad, "dist_f32(%08x, %08x) = %u, want %u", xb, yb, ug_ordered_dist_f32(xb, yb), steps);
        const uint32_t zb = (uint32_t)gsl_rng_get(rng);
        const float z = ug_f32_from_bits(zb);
        if (!isnan(z) && ((z <= x && x <= y) || (y <= x && x <= z)) &&
            ug_ordered_dist_f32(zb, yb) != ug_ordered_dist_f32(zb, xb) + steps)
            UG_TEST_MISMATCH(bad, "dist_f32 not additive at %08x %08x %08x", zb, xb, yb);
    }
    gsl_rng_free(rng);
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- f32 -> bf16 ---- */

static const struct {
    uint32_t f32;
    uint16_t bf16;
    const char *what;
} edge_cases[] = {
    /* ties: kept LSB even -> down, odd -> up; both signs */
    {0x3F808000u, 0x3F80, "tie, even kept"},
    {0x3F818000u, 0x3F82, "tie, odd kept"},
    {0xBF808000u, 0xBF80, "tie, even kept, negative"},
    {0xBF818000u, 0xBF82, "tie, odd kept, negative"},
    {0x3FFF8000u, 0x4000, "tie, odd kept, carry into the exponent"},
    {0xBFFF8000u, 0xC000, "tie, odd kept, carry into the exponent, negative"},
    {0x3F7F8000u, 0x3F80, "tie below 1, odd kept, carry to 1.0"},
    /* just above / below ties */
    {0x3F808001u, 0x3F81, "just above tie, even kept"},
    {0x3F807FFFu, 0x3F80, "just below tie, even kept"},
    {0x3F818001u, 0x3F82, "just above tie, odd kept"},
    {0x3F817FFFu, 0x3F81, "just below tie, odd kept"},
    {0xBF808001u, 0xBF81, "just above tie, even kept, negative"},
    {0xBF817FFFu, 0xBF81, "just below tie, odd kept, negative"},
    {0x3F80FFFFu, 0x3F81, "all dropped bits set"},
    {0x3F800001u, 0x3F80, "lowest dropped bit set"},
    {0x3FFF7FFFu, 0x3FFF, "just below the carry"},
    /* overflow */
    {0x7F7F7FFFu, 0x7F7F, "just below the overflow threshold"},
    {0x7F7F8000u, 0x7F80, "overflow threshold (tie, odd kept)"},
    {0x7F7F8001u, 0x7F80, "just above the overflow threshold"},
    {0x7F7FFFFFu, 0x7F80, "FLT_MAX"},
    {0xFF7F7FFFu, 0xFF7F, "just below the overflow threshold, negative"},
    {0xFF7F8000u, 0xFF80, "overflow threshold, negative"},
    {0xFF7FFFFFu, 0xFF80, "-FLT_MAX"},
    {0x7F7E8000u, 0x7F7E, "tie below the largest finite, even kept"},
    {0x7F7E8001u, 0x7F7F, "just above that tie"},
    {0x7F7F0000u, 0x7F7F, "largest finite bf16"},
    /* subnormal boundary */
    {0x00800000u, 0x0080, "smallest normal (f32 and bf16)"},
    {0x807FFFFFu, 0x8080, "largest f32 subnormal, negative: rounds to the smallest normal"},
    {0x007FFFFFu, 0x0080, "largest f32 subnormal: rounds to the smallest normal"},
    {0x007F0000u, 0x007F, "largest bf16 subnormal"},
    {0x007F8000u, 0x0080, "tie between the largest subnormal and the smallest normal"},
    {0x007F7FFFu, 0x007F, "just below that tie"},
    {0x007E8000u, 0x007E, "subnormal tie, even kept"},
    {0x00010000u, 0x0001, "2^-133, smallest bf16 subnormal"},
    {0x80010000u, 0x8001, "-2^-133"},
    {0x00008000u, 0x0000, "2^-134, half the smallest subnormal: tie to zero"},
    {0x80008000u, 0x8000, "-2^-134: tie to -0"},
    {0x00008001u, 0x0001, "just above 2^-134"},
    {0x80008001u, 0x8001, "just above 2^-134, negative"},
    {0x00007FFFu, 0x0000, "just below 2^-134"},
    {0x00018000u, 0x0002, "3*2^-134: tie, odd kept"},
    {0x00017FFFu, 0x0001, "just below 3*2^-134"},
    {0x00000001u, 0x0000, "smallest f32 subnormal"},
    {0x80000001u, 0x8000, "smallest f32 subnormal, negative: -0"},
    /* NaN: every class to sign|0x7FC0 */
    {0x7FC00000u, 0x7FC0, "quiet NaN"},
    {0xFFC00000u, 0xFFC0, "quiet NaN, negative"},
    {0x7FC00001u, 0x7FC0, "quiet NaN, low payload"},
    {0x7FFFFFFFu, 0x7FC0, "quiet NaN, full payload (would carry into the sign)"},
    {0xFFFFFFFFu, 0xFFC0, "quiet NaN, full payload, negative"},
    {0x7FFF8000u, 0x7FC0, "quiet NaN, payload tie with odd kept (would carry)"},
    {0x7FD5AAAAu, 0x7FC0, "quiet NaN, mixed payload"},
    {0x7F800001u, 0x7FC0, "signalling NaN, lowest payload (would truncate to inf)"},
    {0xFF800001u, 0xFFC0, "signalling NaN, lowest payload, negative"},
    {0x7F807FFFu, 0x7FC0, "signalling NaN, payload only in dropped bits"},
    {0x7F808000u, 0x7FC0, "signalling NaN, payload tie"},
    {0x7F80FFFFu, 0x7FC0, "signalling NaN (would round to a different NaN)"},
    {0x7FBFFFFFu, 0x7FC0, "signalling NaN, largest payload (would round into quiet bit)"},
    {0xFFBF8000u, 0xFFC0, "signalling NaN, negative, payload tie"},
    {0x7F810000u, 0x7FC0, "signalling NaN, payload in kept bits"},
    /* inf, zero */
    {0x7F800000u, 0x7F80, "+inf"},
    {0xFF800000u, 0xFF80, "-inf"},
    {0x00000000u, 0x0000, "+0"},
    {0x80000000u, 0x8000, "-0"},
};
enum { N_EDGE = sizeof edge_cases / sizeof edge_cases[0] };

/* The hand-derived table, against the code under test. */
static void test_bf16_from_f32_edge_cases(void)
{
    unsigned bad = 0;
    for (size_t i = 0; i < N_EDGE; i++) {
        const uint16_t got = ug_bf16_from_f32(ug_f32_from_bits(edge_cases[i].f32));
        if (got != edge_cases[i].bf16)
            UG_TEST_MISMATCH(bad, "%s: bf16(%08x) = %04x, want %04x", edge_cases[i].what, edge_cases[i].f32, got,
                     edge_cases[i].bf16);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The same table against the MPFR path: checks the checker. */
static void test_bf16_edge_cases_match_mpfr(void)
{
    unsigned bad = 0;
    int exact = 1;
    for (size_t i = 0; i < N_EDGE; i++) {
        const uint16_t want = expected_bf16(edge_cases[i].f32, &exact);
        if (want != edge_cases[i].bf16)
            UG_TEST_MISMATCH(bad, "%s: MPFR gives %04x, table %04x", edge_cases[i].what, want, edge_cases[i].bf16);
    }
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(exact);
}

/* Exhaustive at the rounding boundaries: every bf16 value h with dropped
 * bits 0, 1, just below/at/above half, all ones, against MPFR. */
static void test_bf16_from_f32_every_boundary_vs_mpfr(void)
{
    static const uint32_t low[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
    unsigned bad = 0;
    int exact = 1;
    unsigned long n = 0;
    for (uint32_t h = 0; h < 0x10000u; h++)
        for (size_t k = 0; k < sizeof low / sizeof low[0]; k++, n++) {
            const uint32_t u = h << 16 | low[k];
            const uint16_t want = expected_bf16(u, &exact);
            const uint16_t got = ug_bf16_from_f32(ug_f32_from_bits(u));
            if (got != want) UG_TEST_MISMATCH(bad, "bf16(%08x) = %04x, MPFR %04x", u, got, want);
        }
    mpfr_free_cache();
    CU_ASSERT_EQUAL(n, 6ul * 65536);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(exact);
}

/* Random raw 32-bit patterns (every exponent equally likely), against MPFR. */
static void test_bf16_from_f32_random_vs_mpfr(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, SEED + 3);
    unsigned bad = 0;
    int exact = 1;
    const unsigned long n = ug_test_random_samples();
    for (unsigned long i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)gsl_rng_get(rng);
        const uint16_t want = expected_bf16(u, &exact);
        const uint16_t got = ug_bf16_from_f32(ug_f32_from_bits(u));
        if (got != want) UG_TEST_MISMATCH(bad, "bf16(%08x) = %04x, MPFR %04x", u, got, want);
    }
    gsl_rng_free(rng);
    mpfr_free_cache();
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(exact);
}

/* The MPFR path leaves MPFR's exponent range as it found it. */
static void test_bf16_mpfr_path_restores_exponent_range(void)
{
    const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    int exact = 1;
    (void)expected_bf16(0x3F808000u, &exact);
    CU_ASSERT_EQUAL(mpfr_get_emin(), emin);
    CU_ASSERT_EQUAL(mpfr_get_emax(), emax);
    mpfr_free_cache();
}

UG_TEST_SUITE(bf16_suite, "bf16", UG_TEST(test_bf16_decode_is_exact),
              UG_TEST(test_bf16_encode_decode_roundtrip), UG_TEST(test_bf16_ulp_is_spacing),
              UG_TEST(test_bf16_ulp_between_values), UG_TEST(test_f32_ulp_is_spacing),
              UG_TEST(test_bf16_ordered_dist_consecutive), UG_TEST(test_bf16_ordered_dist_signed_zero),
              UG_TEST(test_bf16_ordered_dist_is_rank_difference),
              UG_TEST(test_f32_ordered_dist_counts_steps), UG_TEST(test_bf16_from_f32_edge_cases),
              UG_TEST(test_bf16_edge_cases_match_mpfr),
              UG_TEST(test_bf16_from_f32_every_boundary_vs_mpfr),
              UG_TEST(test_bf16_from_f32_random_vs_mpfr),
              UG_TEST(test_bf16_mpfr_path_restores_exponent_range));
