/* SPDX-License-Identifier: MIT */
/* The fast paths of the head_norm_rope, attn_reduce_fwht and
 * gdn_chunk_cumsum references against their plain MPFR paths
 * (ug_ref_set_fast(false)): every field of every ug_ref_value bit for bit,
 * both modes, on each family's regimes and on adversarial inputs built for
 * the fast paths' edges: signed zeros and exact cancellation, subnormals,
 * exponents spread over the whole f32 and bf16 range (windows too wide,
 * results that overflow), values at f32, bf16 and double rounding
 * boundaries, and non-finite inputs. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../ref/attn_reduce_fwht.h"
#include "../ref/gdn_chunk_cumsum.h"
#include "../ref/head_norm_rope.h"
#include "ref_fast.h"
#include "tests.h"

#define CPU ug_test_cpu_model()

/* A value 2^e (1 + f), e uniform in [lo, hi], random sign. */
static float spread(uint64_t *state, int lo, int hi)
{
    const int e = lo + (int)(ug_test_next_u32(state) % (unsigned)(hi - lo + 1));
    const float x = ldexpf(1.0f + ug_test_uniform(state, 0, 1), e);
    return ug_test_next_u32(state) & 1 ? -x : x;
}

/* ---- every regime ----------------------------------------------------------- */

static void cumsum_fast_equals_mpfr_on_every_regime(void)
{
    const char *const names[] = {"B", "T", "H", "BT"};
    const double values[] = {1, 256, 4, 64, /**/ 2, 128, 3, 64};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("gdn_chunk_cumsum", names, 4, values, 2) > 10000);
}

static void head_norm_rope_fast_equals_mpfr_on_every_regime(void)
{
    /* both variants, partial and whole rotation, with and without weights
     * and freq_factors */
    const char *const names[] = {"variant",    "n_heads", "head_dim",  "half_rope_dim", "seq_len", "has_weight",
                                 "has_ff",     "eps_exp10", "theta", "pos_max", "cache_extra"};
    const double values[] = {0, 24, 128, 32, 0, 1, 0, 6, 10000, 4000, 0,
                             0, 8, 256, 128, 0, 0, 0, 5, 10000, 100, 3,
                             1, 4, 128, 16, 16, 1, 1, 6, 1000000, 8000, 0,
                             1, 2, 256, 128, 8, 0, 0, 6, 10000000, 131072, 2};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("head_norm_rope", names, 11, values, 4) > 20000);
}

static void attn_reduce_fwht_fast_equals_mpfr_on_every_regime(void)
{
    /* the ties regime wants head_dim 256 and a power-of-two nwg */
    const char *const names[] = {"nrows", "head_dim", "nwg", "fused"};
    const double values[] = {4, 256, 8, 1, /**/ 2, 256, 32, 0, /**/ 3, 256, 1, 1};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("attn_reduce_fwht", names, 4, values, 3) > 10000);
}

/* ---- gdn_chunk_cumsum on adversarial chunks --------------------------------- */

enum { CS_T = 64 * 8, CS_H = 2 };

/* Fast path against MPFR path on g_raw [1, CS_T, CS_H] in chunks of 64. */
static size_t cumsum_fast_vs_plain(const float *g_raw)
{
    static ug_ref_value fast[CS_T * CS_H], plain[CS_T * CS_H];
    const gdn_chunk_cumsum_shape s = {1, CS_T, CS_H, 64};
    size_t differ = 0, mismatches = 0;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        CU_ASSERT_EQUAL(gdn_chunk_cumsum_reference(&s, g_raw, CPU, (ug_ref_mode)mode, plain).code, UG_OK);
        ug_ref_set_fast(true);
        CU_ASSERT_EQUAL(gdn_chunk_cumsum_reference(&s, g_raw, CPU, (ug_ref_mode)mode, fast).code, UG_OK);
        differ += ug_test_count_ref_differences(fast, plain, CS_T * CS_H, &mismatches);
    }
    return differ;
}

/* g[t][h] for chunk c (of 8), as the reference indexes it. */
static float *at(float *g, size_t chunk, size_t i, size_t h) { return &g[(chunk * 64 + i) * CS_H + h]; }

static void cumsum_adversarial_chunks(void)
{
    float *g = calloc(CS_T * CS_H, sizeof *g);
    uint64_t state = 31;
    for (size_t h = 0; h < CS_H; h++)
        for (size_t i = 0; i < 64; i++) {
            /* chunk 0: signed zeros only, then x, -x pairs (exact cancellation) */
            *at(g, 0, i, h) = i < 16 ? (i % 3 ? -0.0f : 0.0f) : (i % 2 ? -*at(g, 0, i - 1, h) : spread(&state, -8, 8));
            /* chunk 1: f32 subnormals beside small normals */
            *at(g, 1, i, h) = i % 2 ? ldexpf((float)(i + 1), -149) : spread(&state, -126, -100);
            /* chunk 2: the window's limit (quanta 96 binades apart: 127 bits
             * with the carries of 64 terms) and one binade beyond it */
            *at(g, 2, i, h) = i == 0 ? ldexpf(1.0f, -149) : i == 1 ? ldexpf(1.5f, -30 + (int)h) : 0.0f;
            /* chunk 3: the whole range (MPFR path) and sums beyond FLT_MAX
             * (inf), the latter also in one narrow window (h = 1) */
            *at(g, 3, i, h) = i < 8 ? FLT_MAX : h ? (i % 5 ? 0x1p127f : -FLT_MAX) : spread(&state, -149, 127);
            /* chunk 4: f32 ties (1 + 2^-24 between 1 and 1 + 2^-23) and their neighbours */
            *at(g, 4, i, h) = i == 0 ? 1.0f : i % 2 ? ldexpf(1.0f, -24 - (int)(i % 5)) : ldexpf(1.0f, -23);
            /* chunk 5: prefixes of 2^53 to 2^54 quanta 2^-53 (doubles of 54
             * bits: r_lo nonzero, double ties): 1 +- 2^-30 (1 + 2^-23) and
             * the like; for h = 1 more: 2^60 quanta and more */
            *at(g, 5, i, h) = i == 0  ? (h ? 0x1p7f : 1.0f)
                              : i % 2 ? ldexpf(i % 4 < 2 ? 1.0f + 0x1p-23f : -1.0f - 0x1p-23f, -30)
                                      : ldexpf(i % 4 < 2 ? 1.0f : -1.0f, -29);
            /* chunk 6: non-finite terms; chunk 7: NaN */
            *at(g, 6, i, h) = i == 10 ? (h ? -INFINITY : INFINITY) : i == 20 ? INFINITY : spread(&state, -4, 4);
            *at(g, 7, i, h) = i == 5 ? NAN : spread(&state, -4, 4);
        }
    CU_ASSERT_EQUAL(cumsum_fast_vs_plain(g), 0);
    free(g);
}

/* ---- head_norm_rope on adversarial heads ----------------------------------- */

enum { HD = 32, HEADS = 12, PAIRS = 8, SEQ = 3 };

/* bf16 and f32 variants on the same activations (x as bf16 values, so both
 * variants read the same numbers), weight w (NULL: none), eps: fast path
 * against MPFR path, the differing elements. */
static size_t norm_rope_fast_vs_plain(const float *x, const float *w, const float *cs, const float *sn, float eps,
                                      const uint32_t *positions, const float *ff)
{
    static ug_ref_value fast[SEQ * HEADS * HD], plain[SEQ * HEADS * HD];
    ug_bf16 xb[HEADS * HD], wb[HD];
    for (size_t i = 0; i < HEADS * HD; i++) xb[i] = ug_bf16_from_f32(x[i]);
    for (size_t i = 0; w && i < HD; i++) wb[i] = ug_bf16_from_f32(w[i]);
    float xs[SEQ * HEADS * HD];
    for (size_t t = 0; t < SEQ; t++)
        for (size_t i = 0; i < HEADS * HD; i++) xs[t * HEADS * HD + i] = x[i];
    size_t differ = 0, mismatches = 0;
    for (int variant = 0; variant < 2; variant++) {
        const head_norm_rope_shape s = {HEADS, HD, PAIRS, eps};
        const size_t n = variant ? SEQ * HEADS * HD : HEADS * HD;
        for (int fast_path = 0; fast_path < 2; fast_path++) {
            ug_ref_set_fast(fast_path);
            ug_ref_value *out = fast_path ? fast : plain;
            const ug_status st =
                variant ? head_norm_rope_f32_reference(CPU, &s, SEQ, 10000.0f, xs, w, positions, ff, out)
                        : head_norm_rope_bf16_reference(CPU, &s, xb, w ? wb : NULL, cs, sn, out);
            CU_ASSERT_EQUAL(st.code, UG_OK);
        }
        ug_ref_set_fast(true);
        differ += ug_test_count_ref_differences(fast, plain, n, &mismatches);
    }
    return differ;
}

typedef struct {
    float x[HEADS * HD], w[HD], cs[PAIRS], sn[PAIRS], ff[PAIRS];
    uint32_t positions[SEQ];
} rope_case;

static rope_case *rope_case_new(uint64_t *state)
{
    rope_case *c = calloc(1, sizeof *c);
    for (size_t i = 0; i < HEADS * HD; i++) c->x[i] = spread(state, -6, 3);
    for (size_t i = 0; i < HD; i++) c->w[i] = ug_test_uniform(state, 0.5f, 1.5f);
    for (size_t i = 0; i < PAIRS; i++) {
        const float angle = ug_test_uniform(state, -3, 3);
        c->cs[i] = cosf(angle);
        c->sn[i] = sinf(angle);
        c->ff[i] = ug_test_uniform(state, 1, 8);
    }
    c->positions[0] = 0;
    c->positions[1] = 77;
    c->positions[2] = 1u << 20;
    return c;
}

static size_t rope_run(const rope_case *c, float eps)
{
    return norm_rope_fast_vs_plain(c->x, c->w, c->cs, c->sn, eps, c->positions, c->ff) +
           norm_rope_fast_vs_plain(c->x, NULL, c->cs, c->sn, eps, c->positions, NULL);
}

static void norm_rope_signed_zeros_and_subnormals(void)
{
    uint64_t state = 41;
    rope_case *c = rope_case_new(&state);
    for (size_t h = 0; h < HEADS; h++)
        for (size_t i = 0; i < HD; i++) {
            float *x = &c->x[h * HD + i];
            if (h == 0) *x = i % 2 ? -0.0f : 0.0f;                      /* a zero head (eps keeps r finite) */
            if (h == 1 && i % 3) *x = i % 2 ? -0.0f : 0.0f;             /* zeros among values */
            if (h == 2) *x = ldexpf(i % 2 ? -1.0f : 1.0f, -133 + (int)(i % 7)); /* bf16 subnormals */
            if (h == 3 && i % 2) *x = ldexpf(1.0f, -130);
        }
    for (size_t i = 0; i < HD; i += 5) c->w[i] = i % 2 ? -0.0f : 0.0f;
    c->w[3] = ldexpf(1.0f, -130); /* a subnormal weight */
    c->cs[1] = 0.0f, c->sn[1] = -1.0f;
    c->cs[2] = -0.0f, c->sn[2] = -0.0f;
    c->cs[3] = 1.0f, c->sn[3] = 0.0f;
    CU_ASSERT_EQUAL(rope_run(c, 1e-6f), 0);
    CU_ASSERT_EQUAL(rope_run(c, 0.0f), 0); /* the zero head's r is +inf: MPFR path */
    free(c);
}

static void norm_rope_extreme_exponents(void)
{
    uint64_t state = 42;
    rope_case *c = rope_case_new(&state);
    for (size_t h = 0; h < HEADS; h++)
        for (size_t i = 0; i < HD; i++) {
            float *x = &c->x[h * HD + i];
            if (h < 4) *x = spread(&state, -133, 127);       /* the whole bf16 range in one head */
            else if (h < 6) *x = spread(&state, 100, 127);   /* ss beyond f32 */
            else if (h < 8) *x = spread(&state, -133, -120); /* r near 2^130 */
        }
    for (size_t i = 0; i < PAIRS; i++) c->sn[i] = ldexpf(c->sn[i], -(int)(20 * i)); /* down to 2^-140 */
    c->cs[5] = ldexpf(1.0f, -149);
    for (size_t i = 0; i < HD; i++) c->w[i] = spread(&state, -40, 40);
    CU_ASSERT_EQUAL(rope_run(c, 1e-6f), 0);
    CU_ASSERT_EQUAL(rope_run(c, 0.0f), 0);
    free(c);
}

static void norm_rope_rounding_boundaries(void)
{
    /* x = 1 everywhere but a few: r = 1/sqrt(1 + small) close to 1, and
     * with eps = 0 and x = 1, r = 1 exactly: y = x w exact, rotations of
     * bf16-tie values (1 + 2^-8 between 1 and 1 + 2^-7) and f32 ties. */
    uint64_t state = 43;
    rope_case *c = rope_case_new(&state);
    for (size_t h = 0; h < HEADS; h++)
        for (size_t i = 0; i < HD; i++) c->x[h * HD + i] = h < 6 ? 1.0f : 1.0f + (float)(i % 4) * 0x1p-7f;
    for (size_t i = 0; i < HD; i++) c->w[i] = i % 2 ? 1.0f + 0x1p-8f : 1.0f + 0x1p-7f;
    for (size_t i = 0; i < PAIRS; i++) {
        c->cs[i] = i % 2 ? 1.0f : 1.0f + 0x1p-8f;
        c->sn[i] = i % 3 ? 0x1p-8f : 0x1p-24f;
    }
    CU_ASSERT_EQUAL(rope_run(c, 0.0f), 0);
    CU_ASSERT_EQUAL(rope_run(c, 1e-6f), 0);
    free(c);
}

static void norm_rope_nonfinite_inputs(void)
{
    uint64_t state = 44;
    rope_case *c = rope_case_new(&state);
    c->x[1 * HD + 3] = INFINITY;
    c->x[2 * HD + 5] = -INFINITY;
    c->x[3 * HD + 7] = NAN;
    c->cs[2] = INFINITY;
    c->sn[4] = NAN;
    CU_ASSERT_EQUAL(rope_run(c, 1e-6f), 0);
    c->w[9] = NAN;
    CU_ASSERT_EQUAL(rope_run(c, 1e-6f), 0);
    free(c);
}

static void norm_rope_many_heads(void)
{
    /* An intermediate rounded wrongly at 2^-128 moves r_lo in only about one
     * output in 10^5: enough heads of the family's realistic data to see it
     * (a rounding that never went up was seen here). */
    const char *const names[] = {"variant", "n_heads", "head_dim", "half_rope_dim", "seq_len", "has_weight",
                                 "eps_exp10", "theta", "pos_max"};
    const double scale = (double)ug_test_random_samples() / 1e6; /* a tenth under valgrind */
    const double values[] = {0, 1536 * scale, 128, 32, 0, 1, 6, 10000, 4096,
                             1, 24, 256, 32, 32 * scale, 1, 6, 10000000, 8192};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("head_norm_rope", names, 9, values, 2) > 3000000 * scale);
}

/* ---- attn_reduce_fwht on adversarial rows ------------------------------------ */

enum { AR_ROWS = 6, AR_NWG = 8, AR_MAX_DV = 512 };

/* Fast path against MPFR path on htmp (rows of head_dim dv); both must give
 * the same status too. */
static size_t reduce_fast_vs_plain(const float *htmp, size_t dv)
{
    static ug_ref_value fast[AR_ROWS * AR_MAX_DV], plain[AR_ROWS * AR_MAX_DV];
    const attn_reduce_fwht_shape s = {AR_ROWS, dv, AR_NWG};
    size_t differ = 0, mismatches = 0;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        const ug_status plain_st = attn_reduce_fwht_reference(&s, htmp, CPU, (ug_ref_mode)mode, plain);
        ug_ref_set_fast(true);
        const ug_status fast_st = attn_reduce_fwht_reference(&s, htmp, CPU, (ug_ref_mode)mode, fast);
        CU_ASSERT_EQUAL(fast_st.code, plain_st.code);
        CU_ASSERT_EQUAL(plain_st.code, UG_OK);
        differ += ug_test_count_ref_differences(fast, plain, AR_ROWS * dv, &mismatches);
    }
    return differ;
}

/* Partial d of workgroup w of row r in the kernel's layout, and (S_w, M_w). */
static float *partial(float *htmp, size_t dv, size_t r, size_t w, size_t d)
{
    return &htmp[r * dv * AR_NWG + (d / 4 * AR_NWG + w) * 4 + d % 4];
}

static float *stats(float *htmp, size_t dv, size_t r, size_t w)
{
    return &htmp[AR_ROWS * dv * AR_NWG + r * 2 * AR_NWG + 2 * w];
}

/* Rows by kind: 0 signed zeros and exact cancellation, 1 subnormal
 * partials, 2 the whole f32 range, 3 masked workgroups (-inf and
 * -FLT_MAX/2) and weights down to exp(-84), 4 partials at f32 ties of
 * their sums, 5 weights down to exp(-2800) and a non-finite partial (when
 * nonfinite). */
static void fill_reduce(float *htmp, size_t dv, uint64_t *state, bool nonfinite)
{
    for (size_t r = 0; r < AR_ROWS; r++)
        for (size_t w = 0; w < AR_NWG; w++) {
            float *st = stats(htmp, dv, r, w);
            st[0] = ug_test_uniform(state, 1, 4);
            st[1] = r == 3 ? (w % 3 == 0 ? -INFINITY : w % 3 == 1 ? -FLT_MAX / 2 : -(float)(w * 12)) : -(float)(w % 3);
            if (r == 5 && w > 0) st[1] = -(float)(w * 400); /* weights down to e^-2800: beyond the accumulator */
            if (r == 3 && w % 3 < 2) st[0] = 0;
            for (size_t d = 0; d < dv; d++) {
                float *p = partial(htmp, dv, r, w, d);
                switch (r) {
                case 0: /* odd workgroups cancel even ones exactly */
                    *p = d % 5 == 0 ? (w % 2 ? -0.0f : 0.0f)
                                    : (w % 2 ? -*partial(htmp, dv, r, w - 1, d) : spread(state, -4, 4));
                    break;
                case 1: *p = ldexpf(w % 2 ? -1.0f : 1.0f, -149 + (int)((d + w) % 30)); break;
                case 2: *p = spread(state, -149, 120); break;
                case 4: *p = w == 0 ? 1.0f : ldexpf(1.0f, -24 - (int)(d % 3)); break;
                case 5: *p = w >= 4 ? spread(state, -6, 6) : 0.0f; break; /* only weights below 2^-2300 */
                default: *p = spread(state, -6, 6); break;
                }
            }
            if (r == 4) st[1] = 0; /* equal weights: exact sums of the partials */
        }
    if (nonfinite) *partial(htmp, dv, 5, 3, 17) = (dv == 256 ? INFINITY : NAN);
}

static void reduce_adversarial_rows(void)
{
    uint64_t state = 51;
    float *htmp = calloc(AR_ROWS * AR_NWG * (AR_MAX_DV + 2), sizeof *htmp);
    for (size_t dv = 256; dv <= AR_MAX_DV; dv *= 2)
        for (int nonfinite = 0; nonfinite < 2; nonfinite++) {
            fill_reduce(htmp, dv, &state, nonfinite);
            CU_ASSERT_EQUAL(reduce_fast_vs_plain(htmp, dv), 0);
        }
    free(htmp);
}

static void fwht_undo_192_bit_roundings(void)
{
    /* The transform's 192-bit roundings show in r_lo only at its ties: rows
     * 2^127 + 2^20 (+ 2^-32) + 2^-33, a tie of r_lo's rounding whose even
     * neighbour lies up (down without 2^-32), with every sign the transform
     * gives the terms, plus a last term a butterfly must round away at 192
     * bits (ulp 2^-64): exactly half an ulp, a quarter or less, of either
     * sign, and a further 2^-140 that only a sticky bit keeps. */
    enum { ROWS = 24, DV_MAX = 512 };
    static float x[ROWS * DV_MAX];
    static ug_ref_value fast[ROWS * DV_MAX], plain[ROWS * DV_MAX];
    size_t mismatches = 0, differ = 0;
    for (size_t dv = 256; dv <= DV_MAX; dv *= 2) {
        memset(x, 0, sizeof x);
        for (size_t r = 0; r < ROWS; r++) {
            float *row = x + r * dv;
            const float sign = r % 2 ? -1.0f : 1.0f;
            row[0] = 0x1p127f;
            row[1] = 0x1p20f;
            row[2] = r / 2 % 2 ? 0.0f : 0x1p-32f;
            row[3] = 0x1p-33f;
            row[4] = sign * (r / 4 % 3 == 0 ? 0x1p-65f : r / 4 % 3 == 1 ? 0x1p-73f : 0x1p-66f);
            row[5] = r >= 12 ? sign * 0x1p-140f : 0.0f;
        }
        for (int fast_path = 0; fast_path < 2; fast_path++) {
            ug_ref_set_fast(fast_path);
            CU_ASSERT_EQUAL(attn_fwht_undo_reference(ROWS, dv, x, CPU, fast_path ? fast : plain).code, UG_OK);
        }
        ug_ref_set_fast(true);
        differ += ug_test_count_ref_differences(fast, plain, ROWS * dv, &mismatches);
    }
    CU_ASSERT_EQUAL(differ, 0);
}

/* The regime sweeps run the MPFR path on every regime: a suite apart, as
 * make memcheck runs the long suites each in its own process. */
UG_TEST_SUITE(ref_fast_norm_reduce_cumsum_regimes_suite, "ref_fast_norm_reduce_cumsum_regimes",
              UG_TEST(cumsum_fast_equals_mpfr_on_every_regime),
              UG_TEST(head_norm_rope_fast_equals_mpfr_on_every_regime),
              UG_TEST(attn_reduce_fwht_fast_equals_mpfr_on_every_regime));

UG_TEST_SUITE(ref_fast_norm_reduce_cumsum_suite, "ref_fast_norm_reduce_cumsum",
              UG_TEST(cumsum_adversarial_chunks),
              UG_TEST(norm_rope_signed_zeros_and_subnormals),
              UG_TEST(norm_rope_extreme_exponents),
              UG_TEST(norm_rope_rounding_boundaries),
              UG_TEST(norm_rope_nonfinite_inputs),
              UG_TEST(norm_rope_many_heads),
              UG_TEST(reduce_adversarial_rows),
              UG_TEST(fwht_undo_192_bit_roundings));
