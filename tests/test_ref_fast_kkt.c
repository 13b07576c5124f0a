/* SPDX-License-Identifier: MIT */
/* gdn_chunk_scaled_kkt's fast path against its plain MPFR path
 * (ug_ref_set_fast(false)): every field of every ug_ref_value bit for bit,
 * both modes, the integer dot products portable and on AVX-512, on every
 * regime of the family at GQA shapes and B > 1, and on inputs built to reach
 * the fast path's edges: exponentials and products whose 128-bit rounding
 * shows in r_lo (a wrong last bit there differs in a field), exponentials
 * near a rounding boundary, signed zeros, keys from the bottom to the top of
 * bf16, gates past the fast path's domain, non-finite inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../ref/gdn_chunk_scaled_kkt.h"
#include "../ref/gdn_fast.h"
#include "../ref/rowsimd.h"
#include "ref_fast.h"
#include "tests.h"

/* ---- every regime ------------------------------------------------------------ */

static void kkt_fast_equals_mpfr_on_every_regime_gqa_and_batches(void)
{
    const char *const names[] = {"B", "T", "Hg", "H", "K", "BT"};
    const double values[] = {2, 64, 1, 3, 64, 64, /**/ 2, 64, 2, 4, 128, 64, /**/ 1, 64, 4, 8, 32, 64};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("gdn_chunk_scaled_kkt", names, 6, values, 3) > 1000000);
}

/* ---- built inputs ------------------------------------------------------------ */

typedef struct {
    gdn_chunk_scaled_kkt_shape s;
    ug_bf16 *k;
    float *beta, *g;
    ug_ref_value *fast, *plain;
    size_t n;
} kkt_case;

/* Keys U(-1, 1), gates a decreasing cumulative sum, beta U(0, 1). */
static kkt_case case_open(size_t b, size_t t, size_t hg, size_t h, size_t k, size_t bt, uint64_t seed)
{
    kkt_case c = {.s = {b, t, hg, h, k, bt}, .n = b * t * h * bt};
    c.k = calloc(b * t * hg * k, sizeof *c.k);
    c.beta = calloc(b * t * h, sizeof *c.beta);
    c.g = calloc(b * t * h, sizeof *c.g);
    c.fast = calloc(c.n, sizeof *c.fast);
    c.plain = calloc(c.n, sizeof *c.plain);
    CU_ASSERT_FATAL(c.k && c.beta && c.g && c.fast && c.plain);
    uint64_t rng = seed;
    for (size_t i = 0; i < b * t * hg * k; i++) c.k[i] = ug_bf16_from_f32(ug_test_uniform(&rng, -1.0f, 1.0f));
    for (size_t x = 0; x < b * h; x++) {
        float cumulative = 0;
        for (size_t i = 0; i < t; i++) {
            cumulative -= ug_test_uniform(&rng, 0.0f, 1.0f);
            c.g[((x / h) * t + i) * h + x % h] = cumulative;
            c.beta[((x / h) * t + i) * h + x % h] = ug_test_uniform(&rng, 0.0f, 1.0f);
        }
    }
    return c;
}

static void case_close(kkt_case *c)
{
    free(c->k);
    free(c->beta);
    free(c->g);
    free(c->fast);
    free(c->plain);
}

/* Elements where the fast path differs from the MPFR path in some field
 * (both modes; the dot products portable and on AVX-512 where the CPU has
 * it). */
static size_t case_differences(kkt_case *c)
{
    size_t differ = 0, mismatches = 0;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        CU_ASSERT_EQUAL(gdn_chunk_scaled_kkt_reference(&c->s, c->k, c->beta, c->g, ug_test_cpu_model(),
                                                       (ug_ref_mode)mode, c->plain).code, UG_OK);
        ug_ref_set_fast(true);
        for (int simd = 0; simd < 2; simd++) {
            ug_ref_simd_set_enabled(simd);
            CU_ASSERT_EQUAL(gdn_chunk_scaled_kkt_reference(&c->s, c->k, c->beta, c->g, ug_test_cpu_model(),
                                                           (ug_ref_mode)mode, c->fast).code, UG_OK);
            differ += ug_test_count_ref_differences(c->fast, c->plain, c->n, &mismatches);
        }
        ug_ref_simd_set_enabled(true);
    }
    return differ;
}

/* Token i's gate and beta in (batch 0, head h). */
static float *gate_at(kkt_case *c, size_t i, size_t h) { return &c->g[i * c->s.h + h]; }
static float *beta_at(kkt_case *c, size_t i, size_t h) { return &c->beta[i * c->s.h + h]; }
static ug_bf16 *key_at(kkt_case *c, size_t i, size_t kh) { return &c->k[(i * c->s.hg + kh) * c->s.k]; }

/* k_i = (x, 0, ...), k_j = (1, 0, ...) for every j: k_i . k_j = x. */
static void keys_of_dot(kkt_case *c, size_t i, float x)
{
    for (size_t kh = 0; kh < c->s.hg; kh++) {
        memset(key_at(c, i, kh), 0, c->s.k * sizeof(ug_bf16));
        key_at(c, i, kh)[0] = ug_bf16_from_f32(x);
    }
}

/* Gate pairs (g_t, g_s) found by search (MPFR at 600 bits): where the bits
 * of exp(g_t - g_s) after its leading 128 lie within 2^-18 of a half or of
 * an integer (the exponential's rounding decided near its boundary), and
 * where RN_128(exp(g_t - g_s)) differs from its other neighbour in r_lo
 * (a wrong rounding shows in a field). */
static const float near_boundary[][2] = {
    {-0x1.48315p+0f, -0x1.972f42p+4f},  {-0x1.534e06p+4f, -0x1.c6b422p+4f}, {-0x1.7810b2p+3f, -0x1.b87e92p+2f},
    {-0x1.e8e3fp+2f, -0x1.189726p-1f},  {-0x1.2437ep+4f, -0x1.b69a78p+4f},  {-0x1.6fffdp+3f, -0x1.56038ap+2f},
    {-0x1.c935ccp-1f, -0x1.9cdc8p-1f},  {-0x1.2113f8p+1f, -0x1.b8b5c4p+4f}, {-0x1.f9c79ap+0f, -0x1.763faap+3f},
};
static const float exp_visible[][2] = {
    {-0x1.a51664p+3f, -0x1.60cdaep+4f},
    {-0x1.2219dap+3f, -0x1.5abeeap+3f},
    {-0x1.4c00eep+3f, -0x1.3dea1ap+1f},
    {-0x1.c627fcp+4f, -0x1.a7f618p+4f},
    {-0x1.19e038p+4f, -0x1.159f7ap+4f},
    {-0x1.4fdc44p+4f, -0x1.67a5b6p+4f},
};

/* Pairs (t, s) = (2p + 1, 2p) of a chunk of 16 tokens carry the pairs;
 * every key 1 (dot 1 with K = 1), beta 1: L is RN_128(exp) itself. */
static void exponentials_near_rounding_boundaries(void)
{
    const float(*sets[2])[2] = {near_boundary, exp_visible};
    const size_t counts[2] = {sizeof near_boundary / sizeof near_boundary[0],
                              sizeof exp_visible / sizeof exp_visible[0]};
    for (int set = 0; set < 2; set++) {
        const size_t tokens = 16 * ((counts[set] * 2 + 15) / 16);
        kkt_case c = case_open(1, tokens, 1, 1, 1, 16, 5);
        for (size_t i = 0; i < tokens; i++) {
            key_at(&c, i, 0)[0] = ug_bf16_from_f32(1.0f);
            *beta_at(&c, i, 0) = 1.0f;
            *gate_at(&c, i, 0) = -(float)i; /* the unused tail */
        }
        for (size_t p = 0; p < counts[set]; p++) {
            *gate_at(&c, 2 * p + 1, 0) = sets[set][p][0];
            *gate_at(&c, 2 * p, 0) = sets[set][p][1];
        }
        CU_ASSERT_EQUAL(case_differences(&c), 0);
        case_close(&c);
    }
}

/* ug_gdn_round_certified on 512-bit integers whose bits after the leading
 * 128 sit at a half, one unit beside it, and two units beside it: the
 * first two are refused, the others rounded to nearest. */
static void round_certified_refuses_only_near_a_half(void)
{
    static const uint64_t nexts[] = {UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1, (UINT64_C(1) << 63) + 1,
                                     (UINT64_C(1) << 63) - 2, 0, ~UINT64_C(0)};
    static const bool certified[] = {false, false, true, true, true, true};
    static const int up[] = {0, 0, 1, 0, 0, 1};
    for (size_t n = 0; n < sizeof nexts / sizeof nexts[0]; n++) {
        mp_limb_t d[8] = {0};
        d[7] = UINT64_C(0x8000000000000001); /* the leading 128 bits: d[7], d[6] */
        d[6] = UINT64_C(0x0123456789ABCDEF);
        d[5] = nexts[n];
        d[4] = 0x5555; /* below the 2^-64 window: does not decide */
        ug_gdn_fx out = {0, 0};
        CU_ASSERT_EQUAL(ug_gdn_round_certified(d, 8, -100, &out), certified[n]);
        if (!certified[n]) continue;
        CU_ASSERT(out.m == ((ug_u128)d[7] << 64 | d[6]) + (ug_u128)up[n]);
        CU_ASSERT_EQUAL(out.e, -100 + 384);
    }
    /* all ones rounding up: a carry into the next binade */
    mp_limb_t d[8] = {0, 0, 0, 0, 0, ~UINT64_C(0), ~UINT64_C(0), ~UINT64_C(0)};
    ug_gdn_fx out;
    CU_ASSERT_FATAL(ug_gdn_round_certified(d, 8, 0, &out));
    CU_ASSERT(out.m == (ug_u128)1 << 127);
    CU_ASSERT_EQUAL(out.e, 384 + 1);
}

/* Products at a rounding tie where the tie's rule shows in r_lo (found by
 * search, MPFR at 400 bits): e·dot (dot an integer of the keys) and
 * RN_128(e·dot)·beta with beta = 1.5. */
static const struct {
    float g_t, g_s;
    int dot;
    float beta;
} product_ties[] = {
    {-0x1.631366p+4f, -0x1.7923fep+3f, 3, 1.0f},
    {-0x1.38cf16p+3f, -0x1.3dc86ap+3f, 117, 1.0f},
    {-0x1.6eeacep+4f, -0x1.85bbap+2f, 3, 1.0f},
    {-0x1.ac3048p+4f, -0x1.99128p+2f, 31, 1.0f},
    {-0x1.80505ap+2f, -0x1.f538ccp+3f, 49, 1.0f},
    {-0x1.c16ebep+0f, -0x1.d7e742p+4f, 217, 1.0f},
    {-0x1.c2425p+4f, -0x1.badf92p+3f, 199, 1.5f},
    {-0x1.ddc0fp+4f, -0x1.fbd8e8p+2f, 185, 1.5f},
    {-0x1.0a0afcp+1f, -0x1.9ac204p+4f, 125, 1.5f},
    {-0x1.31b1aep+4f, -0x1.8b2bcap+3f, 67, 1.5f},
    {-0x1.71b68cp+4f, -0x1.5983dcp+4f, 185, 1.5f},
    {-0x1.558818p+4f, -0x1.2c9a44p+4f, 181, 1.5f},
};

static void products_on_rounding_ties(void)
{
    const size_t n = sizeof product_ties / sizeof product_ties[0], tokens = 16 * ((2 * n + 15) / 16);
    kkt_case c = case_open(1, tokens, 1, 1, 1, 16, 6);
    for (size_t i = 0; i < tokens; i++) {
        keys_of_dot(&c, i, 1.0f);
        *gate_at(&c, i, 0) = -(float)i;
    }
    for (size_t p = 0; p < n; p++) {
        keys_of_dot(&c, 2 * p + 1, (float)product_ties[p].dot);
        *gate_at(&c, 2 * p + 1, 0) = product_ties[p].g_t;
        *gate_at(&c, 2 * p, 0) = product_ties[p].g_s;
        *beta_at(&c, 2 * p + 1, 0) = product_ties[p].beta;
    }
    CU_ASSERT_EQUAL(case_differences(&c), 0);
    case_close(&c);
    /* Keys and beta of few significant bits, random gates: ties in both
     * products on many elements, at a GQA shape with two batches. */
    static const float few_bits[] = {0, 1, -1, 1.5f, -1.5f, 1.25f, -1.75f, 3, -0.75f, 0.625f};
    static const float betas[] = {1.5f, -0.75f, 1.25f, 3, -1.5f, 0.625f, 0.5f};
    kkt_case r = case_open(2, 64, 2, 4, 8, 32, 7);
    uint64_t rng = 8;
    for (size_t i = 0; i < 2 * 64 * 2 * 8; i++) r.k[i] = ug_bf16_from_f32(few_bits[ug_test_next_u32(&rng) % 10]);
    for (size_t i = 0; i < 2 * 64 * 4; i++) r.beta[i] = betas[ug_test_next_u32(&rng) % 7];
    CU_ASSERT_EQUAL(case_differences(&r), 0);
    case_close(&r);
}

/* beta +-0 and negative, keys all zero, dot products cancelling exactly:
 * signed zeros as mpfr_mul gives them. */
static void signed_zeros_and_zero_keys(void)
{
    kkt_case c = case_open(2, 32, 2, 4, 16, 16, 9);
    uint64_t rng = 10;
    for (size_t i = 0; i < 2 * 32 * 4; i++) {
        const uint32_t pick = ug_test_next_u32(&rng) % 4;
        c.beta[i] = pick == 0 ? 0.0f : pick == 1 ? -0.0f : pick == 2 ? -c.beta[i] : c.beta[i];
    }
    for (size_t i = 0; i < 2 * 32 * 2; i++) {
        ug_bf16 *key = &c.k[i * 16];
        switch (i % 4) {
        case 0: memset(key, 0, 16 * sizeof *key); break; /* all zero */
        case 1: /* (1, -1, 0, ...) against (1, 1, ...): cancels exactly */
            for (size_t d = 0; d < 16; d++) key[d] = ug_bf16_from_f32(d == 0 ? 1.0f : d == 1 ? -1.0f : 0.0f);
            break;
        case 2:
            for (size_t d = 0; d < 16; d++) key[d] = ug_bf16_from_f32(d < 2 ? 1.0f : 0.0f);
            break;
        default: key[3] = 0x8000; /* -0 among nonzero entries */
        }
    }
    CU_ASSERT_EQUAL(case_differences(&c), 0);
    case_close(&c);
}

/* bf16 keys from 2^-133 (subnormal) to 2^127: vectors whose entries span
 * more than the integer grid holds, pairs whose product bits exceed 62, sums
 * of magnitudes past 2^53, and results past the double range. */
static void key_exponents_over_the_whole_range(void)
{
    for (int round = 0; round < 4; round++) {
        kkt_case c = case_open(1, 64, 1, 2, 16, 32, 11 + round);
        uint64_t rng = 20 + round;
        const int spread = round == 0 ? 60 : round == 1 ? 28 : round == 2 ? 120 : 260;
        for (size_t i = 0; i < 64 * 16; i++) {
            const int e = (int)(ug_test_next_u32(&rng) % (uint32_t)spread) - (round == 3 ? 133 : spread / 2);
            const float m = ug_test_uniform(&rng, -2.0f, 2.0f);
            c.k[i] = ug_bf16_from_f32(ldexpf(m, e < -133 ? -133 : e > 126 ? 126 : e));
        }
        if (round == 1) /* a few vectors of wide spread beside narrow ones */
            for (size_t i = 0; i < 64; i += 7) c.k[i * 16 + 5] = 0x0001; /* 2^-133 */
        CU_ASSERT_EQUAL(case_differences(&c), 0);
        case_close(&c);
    }
    /* Entries 19 binades apart in every key: each pair within the integer
     * grid, its sum of magnitudes past 2^53, where the MPFR path's binary64
     * sum of |products| rounds more than once. */
    kkt_case c = case_open(1, 32, 1, 1, 16, 16, 15);
    for (size_t i = 0; i < 32; i++) {
        ug_bf16 *key = key_at(&c, i, 0);
        memset(key, 0, 16 * sizeof *key);
        key[0] = ug_bf16_from_f32(ldexpf(i % 2 ? 255.0f : -253.0f, 6));
        key[1] = ug_bf16_from_f32(ldexpf(i % 3 ? 255.0f : 251.0f, -13));
        key[2] = ug_bf16_from_f32(ldexpf(i % 5 ? 253.0f : -255.0f, -13));
    }
    CU_ASSERT_EQUAL(case_differences(&c), 0);
    case_close(&c);
}

/* Gates at and past the fast path's domain (|g| <= 1400), past exp's
 * range, signed zeros and subnormals; gates equal across a pair. */
static void gates_past_the_fast_domain(void)
{
    static const float gates[] = {1400.0f, -1400.0f, 1400.0001f, -1401.0f, 700.0f, -745.5f, 1e5f, -1e5f,
                                  3e38f,   -3e38f,   0.0f,       -0.0f,     1e-45f, -1e-45f, 88.7f, -103.9f};
    kkt_case c = case_open(1, 64, 1, 2, 8, 32, 30);
    uint64_t rng = 31;
    for (size_t i = 0; i < 64 * 2; i++)
        if (ug_test_next_u32(&rng) % 2) c.g[i] = gates[ug_test_next_u32(&rng) % 16];
    CU_ASSERT_EQUAL(case_differences(&c), 0);
    case_close(&c);
}

static void nonfinite_inputs(void)
{
    for (int n = 0; n < 9; n++) {
        kkt_case c = case_open(2, 32, 1, 2, 8, 16, 40 + n);
        if (n >= 7) /* a key of large entries (in the integer grid's span) and one infinite or NaN */
            for (size_t d = 0; d < 8; d++) c.k[8 * 17 + d] = d == 4 ? (n == 7 ? 0x7F80 : 0xFFC1) : 0x7A40;
        switch (n) {
        case 0: c.g[21] = NAN; break;
        case 1: c.g[7] = INFINITY; break;
        case 2: c.g[40] = -INFINITY; break;
        case 3: c.beta[9] = NAN; break;
        case 4: c.beta[50] = -INFINITY; break;
        case 5: c.k[8 * 13 + 2] = 0x7FC0; break; /* NaN */
        case 6: c.k[8 * 40 + 1] = 0xFF80; break; /* -inf */
        default: break;
        }
        CU_ASSERT_EQUAL(case_differences(&c), 0);
        case_close(&c);
    }
}

/* Two suites, as ref_fast_chunk's: the regime sweep runs the MPFR path on
 * every regime. */
UG_TEST_SUITE(ref_fast_kkt_regimes_suite, "ref_fast_kkt_regimes",
              UG_TEST(kkt_fast_equals_mpfr_on_every_regime_gqa_and_batches));

UG_TEST_SUITE(ref_fast_kkt_suite, "ref_fast_kkt",
              UG_TEST(round_certified_refuses_only_near_a_half),
              UG_TEST(exponentials_near_rounding_boundaries),
              UG_TEST(products_on_rounding_ties),
              UG_TEST(signed_zeros_and_zero_keys),
              UG_TEST(key_exponents_over_the_whole_range),
              UG_TEST(gates_past_the_fast_domain),
              UG_TEST(nonfinite_inputs));
