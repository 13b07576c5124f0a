/* SPDX-License-Identifier: MIT */
/* gdn_solve_tril's fast reference path (X~ at 256 bits as integers, the
 * bound's column sums by vectors) against its plain MPFR path
 * (ug_ref_set_fast(false)): every field of every ug_ref_value bit for bit,
 * on every regime of the family (B > 1, several heads) and on L built to
 * reach the fast path's edges: chunks whose inverse grows until 256 bits do
 * not suffice (the precision doubles: the MPFR path), exact cancellations
 * and empty sums (signed zeros), 256-bit roundings at and next to ties,
 * terms too far apart for one window (dropped bits to certify), f32
 * exponents from the subnormals to the top, NaN and infinities, all-zero L. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/gdn_solve_tril.h"
#include "../ref/rowsimd.h"
#include "ref_fast.h"
#include "tests.h"

enum { BT = 64 };

static void solve_fast_equals_mpfr_on_every_regime(void)
{
    const char *const names[] = {"B", "T", "H", "BT"};
    const double values[] = {1, 128, 1, 64, 2, 128, 3, 64};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("gdn_solve_tril", names, 4, values, 2) > 10000);
}

/* The reference of `chunks` chunks of one head (L as given, freed here)
 * through the MPFR path and through the fast path, with and without its
 * vector loops: no element may differ in any field. */
static void expect_paths_agree(float *l, size_t chunks)
{
    const gdn_solve_tril_shape s = {1, chunks * BT, 1, BT};
    const size_t n = chunks * BT * BT;
    ug_ref_value *plain = calloc(n, sizeof *plain), *fast = calloc(n, sizeof *fast);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fast);
    size_t differ = 0, mismatches = 0;
    ug_ref_set_fast(false);
    CU_ASSERT_EQUAL(gdn_solve_tril_reference(&s, l, ug_test_cpu_model(), UG_REF_EXACT, plain).code, UG_OK);
    ug_ref_set_fast(true);
    ug_ref_simd_set_enabled(true);
    for (int simd = 0, paths = ug_ref_simd_available() ? 2 : 1; simd < paths; simd++) {
        ug_ref_simd_set_enabled(simd);
        memset(fast, 0, n * sizeof *fast);
        CU_ASSERT_EQUAL(gdn_solve_tril_reference(&s, l, ug_test_cpu_model(), UG_REF_EXACT, fast).code, UG_OK);
        differ += ug_test_count_ref_differences(fast, plain, n, &mismatches);
    }
    ug_ref_simd_set_enabled(true);
    CU_ASSERT_EQUAL(differ, 0);
    free(plain);
    free(fast);
    free(l);
}

/* A value 2^e·(1 + f), e uniform in [lo, hi], f with `bits` random bits, random sign. */
static float spread(uint64_t *state, int lo, int hi, int bits)
{
    const int e = lo + (int)(ug_test_next_u32(state) % (unsigned)(hi - lo + 1));
    const float f = (float)(ug_test_next_u32(state) >> (32 - bits)) * ldexpf(1.0f, -bits);
    const float x = ldexpf(1.0f + f, e);
    return ug_test_next_u32(state) & 1 ? -x : x;
}

static float *chunks_alloc(size_t chunks) { return calloc(chunks * BT * BT, sizeof(float)); }

static float *at(float *l, size_t chunk, size_t i, size_t j) { return &l[(chunk * BT + i) * BT + j]; }

static void solve_zeros_cancellation_and_empty_sums(void)
{
    enum { CHUNKS = 5 };
    float *l = chunks_alloc(CHUNKS);
    uint64_t state = 17;
    /* chunk 0: all zero (the identity; every sum below the diagonal is
     * empty: -0). Chunk 1: small integers, half of them zero and some -0,
     * so that many sums cancel exactly (+0, negated: -0) and zero entries
     * of X~ become terms (signed zeros). Chunk 2: one nonzero column, so
     * entries are zero sums of zero terms only. Chunk 3: ±1 and ±2 on
     * the subdiagonals only. Chunk 4: rows of -0 with a single 1. */
    for (size_t i = 0; i < BT; i++)
        for (size_t j = 0; j < i; j++) {
            const uint32_t r = ug_test_next_u32(&state);
            *at(l, 1, i, j) = r % 2 ? 0.0f : r % 7 == 0 ? -0.0f : (float)((int)(r % 5) - 2);
            *at(l, 2, i, j) = j == 3 ? (float)((int)(r % 3) - 1) : r % 3 ? -0.0f : 0.0f;
            *at(l, 3, i, j) = i - j <= 2 ? (float)((int)(r % 5) - 2) : 0.0f;
            *at(l, 4, i, j) = j == i / 2 ? 1.0f : -0.0f;
        }
    expect_paths_agree(l, CHUNKS);
}

/* A chunk whose column 0 makes one 256-bit rounding visible: X~[1][0] =
 * 2^-120, X~[2][0] = 2^-250 and X~[3][0] = 2^22 + 2^-200 (rows of a few
 * terms), then rows 4 .. 19 multiply by 1 + 2^-16, so X~[19][0] =
 * RN((1 + 2^-16)^16), 257 bits whose last is half a unit: a tie, to even
 * (down). `lsb` adds 2^-255 to row 19's sum (an odd tie: up); `far_below`
 * adds 2^-399, below any window of row 19's terms, and `partly_below`
 * 2^-149 X~[3][0], whose low limb falls below the window (either: just
 * above the tie, up, which the window alone cannot see). Row 20 takes
 * X~[19][0] - (1 + 2^-16) X~[18][0] less the added terms: the rounding
 * error itself, about 2^-256, so r_hi shows the rounding. */
static void tie_probe(float *l, size_t chunk, bool lsb, bool far_below, bool partly_below)
{
    const float factor = -(1.0f + 0x1p-16f);
    *at(l, chunk, 1, 0) = -0x1p-120f;
    *at(l, chunk, 2, 1) = -0x1p-130f;
    *at(l, chunk, 3, 0) = -0x1p22f;
    *at(l, chunk, 3, 1) = -0x1p-80f;
    *at(l, chunk, 4, 0) = factor;
    for (size_t k = 5; k <= 19; k++) *at(l, chunk, k, k - 1) = factor;
    *at(l, chunk, 20, 19) = 1.0f;
    *at(l, chunk, 20, 18) = factor;
    if (lsb) {
        *at(l, chunk, 19, 1) = -0x1p-135f;
        *at(l, chunk, 20, 1) = -0x1p-135f;
    }
    if (far_below) *at(l, chunk, 19, 2) = -0x1p-149f;
    if (partly_below) {
        *at(l, chunk, 19, 3) = -0x1p-149f;
        *at(l, chunk, 20, 3) = -0x1p-149f;
    }
}

static void solve_roundings_at_and_near_ties(void)
{
    /* Four probes (an even tie, an odd tie, a tie plus a term below the
     * window or partly below it); then subdiagonal factors -(1 + 2^-a), a in [14, 18]:
     * X~[i][j] is the product of (1 + 2^-a) over rows j+1 .. i, exact
     * until its lowest term 2^-(sum a) leaves 256 bits; where the sum is
     * 256 the dropped part is exactly half a unit. Some chunks add a
     * second diagonal that carries the roundings on, and terms far below. */
    enum { PROBES = 4, CHUNKS = PROBES + 6 };
    float *l = chunks_alloc(CHUNKS);
    uint64_t state = 23;
    tie_probe(l, 0, false, false, false);
    tie_probe(l, 1, true, false, false);
    tie_probe(l, 2, false, true, false);
    tie_probe(l, 3, false, false, true);
    for (size_t c = PROBES; c < CHUNKS; c++)
        for (size_t i = 1; i < BT; i++) {
            const int a = 14 + (int)(ug_test_next_u32(&state) % 5);
            *at(l, c, i, i - 1) = -(1.0f + ldexpf(1.0f, -a));
            if (c % 2 && i >= 2) *at(l, c, i, i - 2) = ldexpf(c % 4 == 1 ? 1.0f : -1.0f, -(int)(c * 7 % 23) - 100);
            if (c >= PROBES + 4 && i % 3 == 0) *at(l, c, i, 0) = ldexpf(1.0f + ldexpf(1.0f, -23), -40);
        }
    expect_paths_agree(l, CHUNKS);
}

static void solve_exponents_and_windows(void)
{
    /* Terms far apart (the window drops the smaller ones' low bits, to be
     * certified), exponents from f32 subnormals to 2^+60, X~ entries
     * below the normal doubles (finished by MPFR), and 24-bit significands. */
    enum { CHUNKS = 6 };
    float *l = chunks_alloc(CHUNKS);
    uint64_t state = 29;
    static const int ranges[CHUNKS][2] = {{-40, 0}, {-120, -1}, {-149, -126}, {-80, -60}, {-5, 2}, {-200, 60}};
    for (size_t c = 0; c < CHUNKS; c++)
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j < i; j++) {
                const int lo = ranges[c][0] < -149 ? -149 : ranges[c][0];
                float v = spread(&state, lo, ranges[c][1], 23);
                if (c == 4) v *= 0.05f; /* moderate growth of X~ */
                if (c == 5 && ug_test_next_u32(&state) % 4) v = ldexpf(v, -100); /* mostly tiny, a few large */
                *at(l, c, i, j) = v;
            }
    expect_paths_agree(l, CHUNKS);
}

static void solve_growth_past_256_bits(void)
{
    /* Near-singular chunks: X~ grows like 2^(i - j) or faster, so tau at
     * 256 bits exceeds 2^-190 and the precision doubles (the MPFR path),
     * up to 2048 bits. */
    enum { CHUNKS = 4 };
    float *l = chunks_alloc(CHUNKS);
    uint64_t state = 31;
    for (size_t i = 1; i < BT; i++) {
        *at(l, 0, i, i - 1) = -2.0f;
        *at(l, 1, i, i - 1) = -1.5f;
        *at(l, 2, i, i - 1) = -0x1p12f; /* 2^756: 2048 bits */
        for (size_t j = 0; j < i; j++) *at(l, 3, i, j) = spread(&state, -1, 0, 23);
    }
    expect_paths_agree(l, CHUNKS);
}

static void solve_nonfinite_inputs(void)
{
    enum { CHUNKS = 4 };
    float *l = chunks_alloc(CHUNKS);
    uint64_t state = 37;
    for (size_t c = 0; c < CHUNKS; c++)
        for (size_t i = 0; i < BT; i++)
            for (size_t j = 0; j < i; j++) *at(l, c, i, j) = spread(&state, -12, -4, 23);
    *at(l, 0, 9, 3) = NAN;
    *at(l, 1, 40, 39) = INFINITY;
    *at(l, 2, 63, 0) = -INFINITY;
    *at(l, 3, 5, 2) = 0x1p127f; /* finite, huge: X~ and the bounds overflow */
    expect_paths_agree(l, CHUNKS);
}

UG_TEST_SUITE(ref_fast_solve_suite, "ref_fast_solve",
              UG_TEST(solve_fast_equals_mpfr_on_every_regime),
              UG_TEST(solve_zeros_cancellation_and_empty_sums),
              UG_TEST(solve_roundings_at_and_near_ties),
              UG_TEST(solve_exponents_and_windows),
              UG_TEST(solve_growth_past_256_bits),
              UG_TEST(solve_nonfinite_inputs));
