/* SPDX-License-Identifier: MIT */
/* The fast paths of gdn_chunk_o's and gdn_chunk_state's references against
 * their plain MPFR paths (ug_ref_set_fast(false)): every field of every
 * ug_ref_value (r_hi, r_lo, rn_bits, flagged, bound, abs_sum, wild,
 * no_bound) bit for bit, both modes, on every regime of the families and
 * on inputs built to reach the fast paths' edges: exact cancellation,
 * signed zeros, subnormals, exponents from the bottom to the top of bf16
 * and f32, gates past the fast path's domain, non-finite inputs, operands
 * on bf16 rounding boundaries. The cases go through the families'
 * `reference`, as the runner calls it. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../harness/family.h"
#include "../ref/rowsimd.h"
#include "tests.h"

/* A case of a family: parameters from "NAME=VALUE ..." text, the buffers,
 * regime inputs, and the outputs of both paths. */
typedef struct {
    const ug_family *f;
    ug_params p;
    ug_buf bufs[UG_MAX_BUFFERS];
    ug_ref_value *fast[UG_MAX_BUFFERS], *plain[UG_MAX_BUFFERS];
    size_t n_out, counts[UG_MAX_BUFFERS];
} path_case;

static void case_open(path_case *c, const char *family, const char *params, size_t regime, unsigned long seed)
{
    memset(c, 0, sizeof *c);
    c->f = ug_family_find(family);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->f);
    char text[256];
    snprintf(text, sizeof text, "%s", params);
    for (char *save = NULL, *tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        *eq = '\0';
        const int i = ug_family_param_index(c->f, tok);
        CU_ASSERT_FATAL(i >= 0);
        c->p.v[i] = strtod(eq + 1, NULL);
    }
    for (size_t i = 0; i < c->f->n_buffers; i++) {
        CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(c->f, &c->p, i, &c->bufs[i].count).code, UG_OK);
        c->bufs[i].dtype = c->f->buffers[i].dtype;
        c->bufs[i].data = calloc(c->bufs[i].count + 1, ug_dtype_size(c->bufs[i].dtype));
        if (!c->f->buffers[i].is_output) continue;
        c->counts[c->n_out] = c->bufs[i].count;
        c->fast[c->n_out] = calloc(c->bufs[i].count + 1, sizeof(ug_ref_value));
        c->plain[c->n_out++] = calloc(c->bufs[i].count + 1, sizeof(ug_ref_value));
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    CU_ASSERT_EQUAL_FATAL(c->f->generate(&c->p, regime, rng, c->bufs).code, UG_OK);
    gsl_rng_free(rng);
}

static void case_close(path_case *c)
{
    for (size_t i = 0; i < UG_MAX_BUFFERS; i++) {
        free(c->bufs[i].data);
        free(c->fast[i]);
        free(c->plain[i]);
    }
}

static void *buffer(path_case *c, const char *name)
{
    const int i = ug_family_buffer_index(c->f, name);
    CU_ASSERT_FATAL(i >= 0);
    return c->bufs[i].data;
}

static size_t count(path_case *c, const char *name) { return c->bufs[ug_family_buffer_index(c->f, name)].count; }

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Every field, bit for bit; a NaN's sign and payload are MPFR's choice
 * (mpfr_sum's NaN keeps its destination's sign): NaNs compare equal. */
static bool same_value(const ug_ref_value *a, const ug_ref_value *b)
{
    const bool nan = isnan(a->r_hi) && isnan(b->r_hi);
    return (same_bits(a->r_hi, b->r_hi) || nan) && same_bits(a->r_lo, b->r_lo) &&
           (a->rn_bits == b->rn_bits || nan) && a->flagged == b->flagged && same_bits(a->bound, b->bound) &&
           same_bits(a->abs_sum, b->abs_sum) && a->wild == b->wild && a->no_bound == b->no_bound;
}

/* Both modes through the MPFR path and through the fast path with its
 * portable loops and with its AVX-512 ones (where the CPU has them: not
 * under valgrind); the elements that differ in any field. */
static size_t path_differences(path_case *c)
{
    size_t differ = 0, mismatches = 0;
    ug_ref_simd_set_enabled(true);
    const int vector_paths = ug_ref_simd_available() ? 2 : 1;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        CU_ASSERT_EQUAL(c->f->reference(&c->p, c->bufs, ug_test_cpu_model(), (ug_ref_mode)mode, c->plain).code, UG_OK);
        ug_ref_set_fast(true);
        for (int simd = 0; simd < vector_paths; simd++) {
            ug_ref_simd_set_enabled(simd);
            CU_ASSERT_EQUAL(c->f->reference(&c->p, c->bufs, ug_test_cpu_model(), (ug_ref_mode)mode, c->fast).code,
                            UG_OK);
            for (size_t o = 0; o < c->n_out; o++)
                for (size_t e = 0; e < c->counts[o]; e++) {
                    const ug_ref_value *a = &c->fast[o][e], *b = &c->plain[o][e];
                    if (same_value(a, b)) continue;
                    differ++;
                    UG_TEST_MISMATCH(mismatches, "%s %s%s output %zu element %zu: fast r=%a+%a rn=%#x bound=%a "
                                     "abs=%a flagged=%u wild=%d no_bound=%d, mpfr r=%a+%a rn=%#x bound=%a abs=%a "
                                     "flagged=%u wild=%d no_bound=%d", c->f->name,
                                     ug_ref_mode_name((ug_ref_mode)mode), simd ? " avx512" : "", o, e, a->r_hi,
                                     a->r_lo, a->rn_bits, a->bound, a->abs_sum, a->flagged, a->wild, a->no_bound,
                                     b->r_hi, b->r_lo, b->rn_bits, b->bound, b->abs_sum, b->flagged, b->wild,
                                     b->no_bound);
                }
        }
        ug_ref_simd_set_enabled(true);
    }
    return differ;
}

/* ---- every regime -------------------------------------------------------------- */

static void every_regime(const char *family, const char *const *shapes, size_t n_shapes)
{
    const ug_family *f = ug_family_find(family);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (size_t v = 0; v < n_shapes; v++)
        for (size_t regime = 0; regime < f->n_regimes; regime++) {
            path_case c;
            case_open(&c, family, shapes[v], regime, 100 * v + regime);
            CU_ASSERT_EQUAL(path_differences(&c), 0);
            case_close(&c);
        }
}

#define CHUNK_O_SHAPE "B=1 T=128 Hg=1 H=2 K=64 V=32 BT=64 scale_bits=1035273459"
#define CHUNK_STATE_SHAPE "B=1 T=128 Hg=1 H=2 K=32 V=32 BT=64 has_h0=1"

static void chunk_o_fast_equals_mpfr_on_every_regime(void)
{
    /* scale 1/sqrt(64), and a negative scale that is not a power of two */
    const char *const shapes[] = {CHUNK_O_SHAPE, "B=1 T=64 Hg=2 H=4 K=32 V=16 BT=32 scale_bits=3200171710"};
    every_regime("gdn_chunk_o", shapes, 2);
}

static void chunk_state_fast_equals_mpfr_on_every_regime(void)
{
    /* one head of three chunks: an odd number of state swaps in all; odd
     * row counts (the bound's rows go in pairs) and a width off the
     * 8-column blocks */
    const char *const shapes[] = {CHUNK_STATE_SHAPE, "B=1 T=48 Hg=1 H=1 K=16 V=32 BT=16 has_h0=0",
                                  "B=1 T=30 Hg=1 H=1 K=15 V=13 BT=15 has_h0=1"};
    every_regime("gdn_chunk_state", shapes, 3);
}

/* ---- adversarial inputs ---------------------------------------------------------- */

/* A value 2^e·(1 + f), e uniform in [lo, hi], random sign. */
static float spread(uint64_t *state, int lo, int hi)
{
    const int e = lo + (int)(ug_test_next_u32(state) % (unsigned)(hi - lo + 1));
    const float x = ldexpf(1.0f + ug_test_uniform(state, 0, 1), e);
    return ug_test_next_u32(state) & 1 ? -x : x;
}

static void fill_bf16(ug_bf16 *x, size_t n, uint64_t *state, int lo, int hi)
{
    for (size_t i = 0; i < n; i++) x[i] = ug_bf16_from_f32(spread(state, lo, hi));
}

static void chunk_o_cancellation_and_signed_zeros(void)
{
    /* A negative scale; queries whose entries come in equal pairs against
     * state rows whose pairs are opposite (q.h = 0 exactly); zero queries
     * (q.k = 0); values of both zero signs on those rows: elements whose
     * every term is a signed zero, others that cancel exactly. */
    path_case c;
    case_open(&c, "gdn_chunk_o", "B=1 T=64 Hg=1 H=1 K=32 V=16 BT=32 scale_bits=3200171710", 0, 7);
    ug_bf16 *q = buffer(&c, "q"), *h = buffer(&c, "h"), *v = buffer(&c, "v");
    for (size_t t = 0; t < 64; t++)
        for (size_t d = 0; d < 32; d += 2) q[t * 32 + d + 1] = t % 3 == 0 ? 0 : q[t * 32 + d];
    for (size_t r = 0; r < count(&c, "h") / 32; r++)
        for (size_t d = 0; d < 32; d += 2) h[r * 32 + d + 1] = h[r * 32 + d] ^ 0x8000;
    for (size_t t = 0; t < 64; t++)
        for (size_t col = 0; col < 16; col += 2) v[t * 16 + col] = col % 4 ? 0x8000 : 0;
    CU_ASSERT_EQUAL(path_differences(&c), 0);
    case_close(&c);
}

static void chunk_o_exponents_over_the_whole_range(void)
{
    /* Entries from bf16 subnormals to 2^120 (dot products wider than an
     * int64: the MPFR path), then a narrower spread that stays on the fast
     * path with huge and tiny gates (e^-1300 .. e^1300, and past the
     * domain). */
    uint64_t state = 21;
    for (int round = 0; round < 3; round++) {
        path_case c;
        case_open(&c, "gdn_chunk_o", "B=1 T=64 Hg=1 H=2 K=32 V=16 BT=32 scale_bits=1035273459", 0, 8 + round);
        const int lo = round == 0 ? -133 : -20, hi = round == 0 ? 120 : 10;
        fill_bf16(buffer(&c, "q"), count(&c, "q"), &state, lo, hi);
        fill_bf16(buffer(&c, "k"), count(&c, "k"), &state, lo, hi);
        fill_bf16(buffer(&c, "v"), count(&c, "v"), &state, -133, 120);
        fill_bf16(buffer(&c, "h"), count(&c, "h"), &state, lo, hi);
        float *g = buffer(&c, "g");
        for (size_t i = 0; i < count(&c, "g"); i++)
            g[i] = round == 2 ? ug_test_uniform(&state, -1300, 1300) : (i % 7 == 0 ? 1500.0f : -(float)i * 10);
        CU_ASSERT_EQUAL(path_differences(&c), 0);
        case_close(&c);
    }
}

static void chunk_o_vectors_on_their_own_grids(void)
{
    /* Each query, key and state row within 4 binades, the rows up to 30
     * binades apart: the chunk's entries spread beyond what an int64 dot
     * product holds on one grid per kind, each pair of vectors' do not
     * (the fast path on per-vector grids; one grid per kind sent the
     * chunk to MPFR). */
    uint64_t state = 33;
    path_case c;
    case_open(&c, "gdn_chunk_o", "B=1 T=64 Hg=1 H=1 K=32 V=16 BT=32 scale_bits=1035273459", 0, 12);
    const char *const names[] = {"q", "k", "h"};
    for (size_t n = 0; n < 3; n++) {
        ug_bf16 *x = buffer(&c, names[n]);
        const size_t rows = count(&c, names[n]) / 32;
        for (size_t r = 0; r < rows; r++) {
            const int top = -10 * (int)((r * 7 + n) % 4);
            fill_bf16(x + r * 32, 32, &state, top - 4, top);
        }
    }
    CU_ASSERT_EQUAL(path_differences(&c), 0);
    case_close(&c);
}

static void chunk_o_operands_at_rounding_boundaries(void)
{
    /* Equal gates (exp = 1: each operand is q.k exactly), queries and keys
     * whose dot products land on bf16 midpoints and one bf16 ulp beside
     * them: flagged operands, staged through MPFR beside certified ones. */
    path_case c;
    case_open(&c, "gdn_chunk_o", "B=1 T=32 Hg=1 H=1 K=8 V=8 BT=32 scale_bits=1065353216", 0, 9);
    ug_bf16 *q = buffer(&c, "q"), *k = buffer(&c, "k");
    float *g = buffer(&c, "g");
    for (size_t t = 0; t < 32; t++) {
        g[t] = t % 4 == 3 ? -0x1p-20f : -1.0f;
        for (size_t d = 0; d < 8; d++) {
            q[t * 8 + d] = ug_bf16_from_f32(d == 0 ? 1.0f : d == 1 ? ldexpf(1.0f, -8 - (int)(t % 3)) : 0.0f);
            k[t * 8 + d] = ug_bf16_from_f32(d < 2 ? 1.0f + (float)(t % 5) * 0x1p-7f : 0.0f);
        }
    }
    CU_ASSERT_EQUAL(path_differences(&c), 0);
    case_close(&c);
}

static void chunk_o_nonfinite_inputs(void)
{
    const char *const names[] = {"q", "k", "v", "h"};
    for (size_t n = 0; n < 5; n++) {
        path_case c;
        case_open(&c, "gdn_chunk_o", "B=1 T=64 Hg=1 H=1 K=16 V=16 BT=32 scale_bits=1035273459", 0, 10 + n);
        if (n < 4)
            ((ug_bf16 *)buffer(&c, names[n]))[37] = n % 2 ? 0x7FC0 : 0xFF80; /* NaN, -inf */
        else
            ((float *)buffer(&c, "g"))[40] = -INFINITY;
        CU_ASSERT_EQUAL(path_differences(&c), 0);
        case_close(&c);
    }
}

static void chunk_state_zeros_and_cancellation(void)
{
    /* Zero keys and corrections of both signs, u = -0 and +0, h0 of both
     * zero signs: states and values that stay exactly signed zeros, sums
     * whose terms cancel to zero (u = w.S with w a unit vector). */
    path_case c;
    case_open(&c, "gdn_chunk_state", "B=1 T=64 Hg=1 H=1 K=16 V=16 BT=32 has_h0=1", 0, 11);
    ug_bf16 *k = buffer(&c, "k"), *w = buffer(&c, "w"), *u = buffer(&c, "u");
    float *h0 = buffer(&c, "h0"), *g = buffer(&c, "g");
    for (size_t x = 0; x < 256; x++) h0[x] = x % 3 == 0 ? (x % 2 ? -0.0f : 0.0f) : ug_bf16_to_f32(ug_bf16_from_f32(h0[x]));
    for (size_t t = 0; t < 64; t++) {
        g[t] = 0;
        for (size_t d = 0; d < 16; d++) {
            k[t * 16 + d] = t % 2 ? 0x8000 : k[t * 16 + d];
            w[t * 16 + d] = d == t % 16 ? 0x3F80 : (t % 4 ? 0 : 0x8000); /* 1.0 on one entry */
            /* u = row t % 16 of bf16(h0): v = u - w.S cancels exactly in the first chunk */
            u[t * 16 + d] = t % 5 == 0 ? 0x8000 : ug_bf16_from_f32(h0[(t % 16) * 16 + d]);
        }
    }
    CU_ASSERT_EQUAL(path_differences(&c), 0);
    case_close(&c);
}

static void chunk_state_exponents_and_gates(void)
{
    /* Keys and corrections from bf16 subnormals to 2^100, h0 from f32
     * subnormals to 2^100, gates down to -1300 (e^G underflows every
     * format but the accumulator's) and past the fast path's domain. */
    uint64_t state = 31;
    for (int round = 0; round < 2; round++) {
        path_case c;
        case_open(&c, "gdn_chunk_state", "B=1 T=64 Hg=1 H=2 K=16 V=16 BT=32 has_h0=1", 0, 12 + round);
        fill_bf16(buffer(&c, "k"), count(&c, "k"), &state, -133, 100);
        fill_bf16(buffer(&c, "w"), count(&c, "w"), &state, -133, 100);
        fill_bf16(buffer(&c, "u"), count(&c, "u"), &state, -133, 100);
        float *h0 = buffer(&c, "h0"), *g = buffer(&c, "g");
        for (size_t x = 0; x < count(&c, "h0"); x++) h0[x] = spread(&state, -149, 100);
        for (size_t i = 0; i < count(&c, "g"); i++) g[i] = round ? -(float)(i % 32) * 40 : -(float)(i % 32) * 60;
        CU_ASSERT_EQUAL(path_differences(&c), 0);
        case_close(&c);
    }
}

static void chunk_state_operands_at_rounding_boundaries(void)
{
    /* h0 on bf16 midpoints and one f32 ulp beside them, no decay: the
     * operands bf16(S) are flagged or ties, staged through MPFR beside
     * certified ones. */
    path_case c;
    case_open(&c, "gdn_chunk_state", "B=1 T=64 Hg=1 H=1 K=16 V=16 BT=32 has_h0=1", 6, 13);
    float *h0 = buffer(&c, "h0");
    for (size_t x = 0; x < 256; x++)
        h0[x] = (1.0f + (float)(2 * (x % 64) + 1) * 0x1p-8f + (float)((int)(x % 3) - 1) * 0x1p-23f) * (x % 2 ? -1 : 1);
    CU_ASSERT_EQUAL(path_differences(&c), 0);
    case_close(&c);
}

static void chunk_state_window_edges(void)
{
    /* Rows of w and k whose entries spread over 0 to 120 binades (each
     * row's weights on or off a grid of 52 bits, rowsimd.h's digits, and
     * of 64, the portable windows'), corrections u far above, far below
     * and beside the products (the leading term fits the window's read or
     * goes to the accumulator), initial states spread over 140 binades
     * in a column (windows of every width), a chunk of zero gates before
     * a decaying one (e^G = 1: a leading term of S's own bits). */
    path_case c;
    case_open(&c, "gdn_chunk_state", "B=1 T=64 Hg=1 H=1 K=16 V=16 BT=32 has_h0=1", 0, 19);
    ug_bf16 *k = buffer(&c, "k"), *w = buffer(&c, "w"), *u = buffer(&c, "u");
    float *g = buffer(&c, "g"), *h0 = buffer(&c, "h0");
    const int lead_exponent[4] = {120, -60, -120, 0};
    for (size_t t = 0; t < 64; t++) {
        const int step = (int)(t % 9); /* binades between neighbours: a row spans 15 steps */
        for (size_t d = 0; d < 16; d++) {
            const float sign = (t + d) % 3 ? 1.0f : -1.0f, scale = ldexpf(sign, -(int)d * step);
            k[t * 16 + d] = ug_bf16_from_f32(scale * (1.0f + (float)(d % 5) / 8));
            w[t * 16 + d] = ug_bf16_from_f32(-scale * (1.0f + (float)(t % 7) / 8));
            u[t * 16 + d] = ug_bf16_from_f32(ldexpf(sign, lead_exponent[(t + d) % 4]));
        }
        if (t < 32) g[t] = 0; /* the first chunk */
    }
    for (size_t x = 0; x < 256; x++) h0[x] = ldexpf(h0[x], -(int)(x % 15) * 10); /* columns of 140 binades */
    CU_ASSERT_EQUAL(path_differences(&c), 0);
    case_close(&c);
}

static void chunk_state_nonfinite_inputs(void)
{
    const char *const names[] = {"k", "w", "u"};
    for (size_t n = 0; n < 5; n++) {
        path_case c;
        case_open(&c, "gdn_chunk_state", "B=1 T=64 Hg=1 H=2 K=16 V=16 BT=32 has_h0=1", 0, 14 + n);
        if (n < 3)
            ((ug_bf16 *)buffer(&c, names[n]))[21] = n % 2 ? 0x7FC0 : 0x7F80; /* NaN, +inf */
        else if (n == 3)
            ((float *)buffer(&c, "g"))[40] = NAN;
        else
            ((float *)buffer(&c, "h0"))[3] = INFINITY;
        CU_ASSERT_EQUAL(path_differences(&c), 0);
        case_close(&c);
    }
}

/* Two suites, as ref_fast_path's: the regime sweeps run the MPFR path on
 * every regime, the longest part under valgrind. */
UG_TEST_SUITE(ref_fast_chunk_regimes_suite, "ref_fast_chunk_regimes",
              UG_TEST(chunk_o_fast_equals_mpfr_on_every_regime),
              UG_TEST(chunk_state_fast_equals_mpfr_on_every_regime));

UG_TEST_SUITE(ref_fast_chunk_suite, "ref_fast_chunk",
              UG_TEST(chunk_o_cancellation_and_signed_zeros),
              UG_TEST(chunk_o_exponents_over_the_whole_range),
              UG_TEST(chunk_o_vectors_on_their_own_grids),
              UG_TEST(chunk_o_operands_at_rounding_boundaries),
              UG_TEST(chunk_o_nonfinite_inputs),
              UG_TEST(chunk_state_zeros_and_cancellation),
              UG_TEST(chunk_state_exponents_and_gates),
              UG_TEST(chunk_state_operands_at_rounding_boundaries),
              UG_TEST(chunk_state_window_edges),
              UG_TEST(chunk_state_nonfinite_inputs));
