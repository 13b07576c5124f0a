/* SPDX-License-Identifier: MIT */
/* The references' fast paths (ref/exact_sum.h) against their plain MPFR
 * paths (ug_ref_set_fast(false)): every field of every ug_ref_value must be
 * bit-identical, on the families' own input regimes and on adversarial
 * inputs built to reach the fast paths' edges (exact cancellation, signed
 * zeros, bf16 ties, subnormal results, exponents spread over the whole f32
 * and bf16 range, operands at rounding boundaries, non-finite inputs). */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/family.h"
#include "../ref/gdn_e2e.h"
#include "../ref/gdn_e2e_simd.h"
#include "../ref/gdn_recompute_wu.h"
#include "../ref/rowsimd.h"
#include "ref_fast.h"
#include "tests.h"

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* RN_bf16 bits, NaNs of either sign as one (MPFR leaves a NaN's sign
 * unspecified: mpfr_sum's NaN keeps whatever sign its destination had). */
static uint32_t class_bits(uint32_t bits)
{
    const bool nan = (bits & 0x7FFFu) > 0x7F80u; /* the outputs here are bf16 */
    return nan ? 0x7FC0u : bits;
}

static bool same_double(double a, double b) { return bits_of(a) == bits_of(b) || (isnan(a) && isnan(b)); }

/* Counts the elements of two reference outputs that differ in any field. */
size_t ug_test_count_ref_differences(const ug_ref_value *a, const ug_ref_value *b, size_t n, size_t *mismatches)
{
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        const bool both_nan = isnan(a[i].r_hi) && isnan(b[i].r_hi); /* then RN_T is a NaN of either sign */
        const bool same = same_double(a[i].r_hi, b[i].r_hi) && bits_of(a[i].r_lo) == bits_of(b[i].r_lo) &&
                          (class_bits(a[i].rn_bits) == class_bits(b[i].rn_bits) || both_nan) &&
                          a[i].flagged == b[i].flagged &&
                          bits_of(a[i].bound) == bits_of(b[i].bound) &&
                          bits_of(a[i].abs_sum) == bits_of(b[i].abs_sum) && a[i].wild == b[i].wild &&
                          a[i].no_bound == b[i].no_bound;
        if (!same) {
            differ++;
            UG_TEST_MISMATCH(*mismatches, "element %zu: fast r=%a+%a rn=%#x bound=%a abs=%a flagged=%u, mpfr r=%a+%a "
                             "rn=%#x bound=%a abs=%a flagged=%u", i, a[i].r_hi, a[i].r_lo, a[i].rn_bits, a[i].bound,
                             a[i].abs_sum, a[i].flagged, b[i].r_hi, b[i].r_lo, b[i].rn_bits, b[i].bound, b[i].abs_sum,
                             b[i].flagged);
        }
    }
    return differ;
}

/* ---- gdn_recompute_wu on its own regimes ------------------------------------- */

/* The fast path's row loops to compare: the portable ones, and the AVX-512
 * ones where this CPU has them (not under valgrind, whose CPU has none). */
static int row_loop_paths(void)
{
    ug_ref_simd_set_enabled(true);
    return ug_ref_simd_available() ? 2 : 1;
}

/* Every regime of a family on the given shapes (parameter values in the
 * order of names), both modes: fast and MPFR path bit for bit. Returns the
 * elements compared. */
size_t ug_test_family_fast_equals_mpfr(const char *family, const char *const *names, size_t n_names,
                                      const double *values, size_t n_shapes)
{
    const ug_family *f = ug_family_find(family);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t mismatches = 0, elements = 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (size_t v = 0; v < n_shapes; v++)
        for (size_t regime = 0; regime < f->n_regimes; regime++) {
            ug_params p;
            memset(&p, 0, sizeof p);
            for (size_t k = 0; k < n_names; k++) p.v[ug_family_param_index(f, names[k])] = values[v * n_names + k];
            ug_buf bufs[UG_MAX_BUFFERS];
            memset(bufs, 0, sizeof bufs);
            ug_ref_value *fast[UG_MAX_BUFFERS] = {0}, *plain[UG_MAX_BUFFERS] = {0};
            size_t counts[UG_MAX_BUFFERS], n_out = 0;
            for (size_t i = 0; i < f->n_buffers; i++) {
                CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(f, &p, i, &bufs[i].count).code, UG_OK);
                bufs[i].dtype = f->buffers[i].dtype;
                bufs[i].data = calloc(bufs[i].count, ug_dtype_size(bufs[i].dtype));
                if (f->buffers[i].is_output) {
                    counts[n_out] = bufs[i].count;
                    fast[n_out] = calloc(bufs[i].count, sizeof(ug_ref_value));
                    plain[n_out++] = calloc(bufs[i].count, sizeof(ug_ref_value));
                }
            }
            gsl_rng_set(rng, 1000 * v + regime);
            CU_ASSERT_EQUAL_FATAL(f->generate(&p, regime, rng, bufs).code, UG_OK);
            for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
                ug_ref_set_fast(false);
                CU_ASSERT_EQUAL(f->reference(&p, bufs, ug_test_cpu_model(), (ug_ref_mode)mode, plain).code, UG_OK);
                ug_ref_set_fast(true);
                for (int simd = 0, paths = row_loop_paths(); simd < paths; simd++) {
                    ug_ref_simd_set_enabled(simd);
                    CU_ASSERT_EQUAL(f->reference(&p, bufs, ug_test_cpu_model(), (ug_ref_mode)mode, fast).code, UG_OK);
                    for (size_t o = 0; o < n_out; o++) {
                        CU_ASSERT_EQUAL(ug_test_count_ref_differences(fast[o], plain[o], counts[o], &mismatches), 0);
                        elements += counts[o];
                    }
                }
                ug_ref_simd_set_enabled(true);
            }
            for (size_t i = 0; i < f->n_buffers; i++) free(bufs[i].data);
            for (size_t o = 0; o < n_out; o++) {
                free(fast[o]);
                free(plain[o]);
            }
        }
    gsl_rng_free(rng);
    return elements;
}

static void recompute_wu_fast_equals_mpfr_on_every_regime(void)
{
    const char *const names[] = {"B", "T", "Hg", "H", "K", "V", "BT"};
    const double values[] = {1, 64, 1, 2, 64, 128, 64, /**/ 1, 64, 2, 4, 128, 64, 64};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("gdn_recompute_wu", names, 7, values, 2) > 50000);
}

static void scaled_kkt_fast_equals_mpfr_on_every_regime(void)
{
    const char *const names[] = {"B", "T", "Hg", "H", "K", "BT"};
    const double values[] = {1, 128, 1, 2, 64, 64, /**/ 1, 64, 2, 4, 128, 64};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("gdn_chunk_scaled_kkt", names, 6, values, 2) > 50000);
}

static void e2e_fast_equals_mpfr_on_every_regime(void)
{
    const char *const names[] = {"B", "T", "Hg", "H", "K", "V", "BT", "has_h0"};
    const double values[] = {1, 128, 1, 2, 128, 64, 64, 1, /**/ 2, 64, 2, 4, 128, 64, 64, 0};
    CU_ASSERT(ug_test_family_fast_equals_mpfr("gdn_e2e", names, 8, values, 2) > 50000);
}

/* ---- gdn_recompute_wu on adversarial chunks ------------------------------------ */

enum { BT = 64, K = 64, V = 64, T = 64 };

typedef struct {
    gdn_recompute_wu_shape s;
    ug_bf16 k[T * K], v[T * V];
    float beta[T], g[T], a[T * BT];
    ug_ref_value w[2][T * K], u[2][T * V];
} chunk;

/* The MPFR path against the fast path with the portable row loops and with
 * the AVX-512 ones (where the CPU has them), both modes, on c; the
 * differing elements. */
static size_t fast_vs_plain(chunk *c)
{
    size_t differ = 0, mismatches = 0;
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        ug_ref_set_fast(false);
        CU_ASSERT_EQUAL(gdn_recompute_wu_reference(&c->s, c->k, c->v, c->beta, c->g, c->a, ug_test_cpu_model(), (ug_ref_mode)mode, c->w[1],
                                                   c->u[1]).code, UG_OK);
        ug_ref_set_fast(true);
        for (int simd = 0, paths = row_loop_paths(); simd < paths; simd++) {
            ug_ref_simd_set_enabled(simd);
            CU_ASSERT_EQUAL(gdn_recompute_wu_reference(&c->s, c->k, c->v, c->beta, c->g, c->a, ug_test_cpu_model(), (ug_ref_mode)mode,
                                                       c->w[0], c->u[0]).code, UG_OK);
            differ += ug_test_count_ref_differences(c->w[0], c->w[1], T * K, &mismatches);
            differ += ug_test_count_ref_differences(c->u[0], c->u[1], T * V, &mismatches);
        }
        ug_ref_simd_set_enabled(true);
    }
    return differ;
}

static chunk *chunk_new(void)
{
    chunk *c = calloc(1, sizeof *c);
    c->s = (gdn_recompute_wu_shape){1, T, 1, 1, K, V, BT};
    return c;
}

/* A value 2^e·(1 + f), e uniform in [lo, hi], random sign. */
static float spread(uint64_t *state, int lo, int hi)
{
    const int e = lo + (int)(ug_test_next_u32(state) % (unsigned)(hi - lo + 1));
    const float x = ldexpf(1.0f + ug_test_uniform(state, 0, 1), e);
    return ug_test_next_u32(state) & 1 ? -x : x;
}

static void fill_lower_triangle(chunk *c, uint64_t *state, int lo, int hi)
{
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < BT; j++) c->a[t * BT + j] = j <= t ? spread(state, lo, hi) : 0.0f;
}

static void cancellation_to_exact_zero(void)
{
    /* Tokens in equal pairs and A rows with opposite weights on each pair:
     * every sum cancels exactly (both modes: the staged operands of a pair
     * are equal too). */
    chunk *c = chunk_new();
    uint64_t state = 11;
    for (size_t t = 0; t < T; t += 2) {
        c->beta[t] = c->beta[t + 1] = ug_test_uniform(&state, 0.1f, 1);
        c->g[t] = c->g[t + 1] = ug_test_uniform(&state, -3, 0);
        for (size_t d = 0; d < K; d++) c->k[t * K + d] = c->k[(t + 1) * K + d] = ug_bf16_from_f32(spread(&state, -4, 2));
        for (size_t d = 0; d < V; d++) c->v[t * V + d] = c->v[(t + 1) * V + d] = ug_bf16_from_f32(spread(&state, -4, 2));
    }
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j + 1 < BT; j += 2) c->a[t * BT + j + 1] = -(c->a[t * BT + j] = spread(&state, -10, 0));
    CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    CU_ASSERT_EQUAL(c->u[0][5].r_hi, 0.0);
    CU_ASSERT(!signbit(c->u[0][5].r_hi));
    free(c);
}

static void signed_zeros(void)
{
    /* Zero keys, values and betas of both signs (their operands are always
     * flagged, so staged through MPFR), negative weights on them, rows whose
     * only terms are -0. */
    chunk *c = chunk_new();
    uint64_t state = 12;
    fill_lower_triangle(c, &state, -6, 0);
    for (size_t t = 0; t < T; t++) {
        c->beta[t] = t % 5 == 0 ? (t % 2 ? -0.0f : 0.0f) : ug_test_uniform(&state, 0.1f, 1);
        c->g[t] = t % 7 == 0 ? 0.0f : ug_test_uniform(&state, -3, 0);
        for (size_t d = 0; d < K; d++)
            c->k[t * K + d] = (t + d) % 3 ? ug_bf16_from_f32(spread(&state, -4, 2)) : (d % 2 ? 0x8000 : 0);
        for (size_t d = 0; d < V; d++)
            c->v[t * V + d] = (t * d) % 4 ? ug_bf16_from_f32(spread(&state, -4, 2)) : (d % 2 ? 0x8000 : 0);
    }
    for (size_t d = 0; d < V; d++) c->v[d] = 0x8000; /* token 0: -0 everywhere */
    c->a[0] = 1.0f;                                  /* row 0 sums only -0 terms */
    CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    CU_ASSERT(signbit(c->u[0][0].r_hi));
    free(c);
}

static void bf16_tie_results(void)
{
    /* u = 1 + m·2^-8 (m odd) and nearby: sums exactly at bf16 rounding
     * boundaries, and one f32 ulp beside them. */
    chunk *c = chunk_new();
    for (size_t t = 0; t < T; t++) {
        c->beta[t] = 1.0f;
        c->g[t] = 0.0f;
        for (size_t d = 0; d < V; d++)
            c->v[t * V + d] = ug_bf16_from_f32(t == 0 ? 1.0f : ldexpf((float)(2 * (d % 8) + 1), -8 - (int)(t % 3)));
        for (size_t d = 0; d < K; d++) c->k[t * K + d] = c->v[t * V + d];
        c->a[t * BT] = 1.0f;
        if (t > 0) c->a[t * BT + t] = t % 4 == 3 ? 1.0f + 0x1p-23f : 1.0f;
    }
    CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    free(c);
}

static void subnormal_results(void)
{
    /* Tiny betas (f32 subnormal too) and keys: results in bf16's and f32's
     * subnormal ranges, and below half their least subnormal. */
    chunk *c = chunk_new();
    uint64_t state = 14;
    fill_lower_triangle(c, &state, -8, 0);
    for (size_t t = 0; t < T; t++) {
        c->beta[t] = t % 3 ? ldexpf(1.5f, -126 - (int)(t % 20)) : 1.0f;
        c->g[t] = ug_test_uniform(&state, -2, 0);
        for (size_t d = 0; d < K; d++) c->k[t * K + d] = ug_bf16_from_f32(spread(&state, -30, -1));
        for (size_t d = 0; d < V; d++) c->v[t * V + d] = ug_bf16_from_f32(spread(&state, -30, -1));
    }
    CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    free(c);
}

static void exponents_spread_over_the_whole_range(void)
{
    /* Weights from f32 subnormals to 2^100, operands from 2^-133 to 2^120,
     * gates from e^-80 to e^80: wide sums, out-of-range rounding (overflow
     * to inf), and every staging fallback. */
    chunk *c = chunk_new();
    uint64_t state = 15;
    for (int round = 0; round < 2; round++) {
        fill_lower_triangle(c, &state, -140, 100);
        for (size_t t = 0; t < T; t++) {
            c->beta[t] = fabsf(spread(&state, -60, 60));
            c->g[t] = ug_test_uniform(&state, -80, 80);
            for (size_t d = 0; d < K; d++) c->k[t * K + d] = ug_bf16_from_f32(spread(&state, -133, 120));
            for (size_t d = 0; d < V; d++) c->v[t * V + d] = ug_bf16_from_f32(spread(&state, -133, 120));
        }
        CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    }
    free(c);
}

static void operands_at_rounding_boundaries(void)
{
    /* v·beta within an f32 ulp of a bf16 midpoint: flagged operands, staged
     * through MPFR, beside certified ones in the same sums. */
    chunk *c = chunk_new();
    uint64_t state = 16;
    fill_lower_triangle(c, &state, -4, 0);
    for (size_t t = 0; t < T; t++) {
        c->beta[t] = 1.0f + (float)(t % 3) * 0x1p-23f;
        c->g[t] = t % 2 ? 0.0f : -0x1p-20f;
        for (size_t d = 0; d < V; d++) {
            /* bf16 values m·2^-7 times beta: the products sit at or next to
             * the midpoints of the coarser grid when m is odd */
            c->v[t * V + d] = ug_bf16_from_f32(1.0f + (float)(2 * d + 1) * 0x1p-8f);
            c->k[t * K + d] = c->v[t * V + d];
        }
    }
    CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    free(c);
}

static void nonfinite_inputs_take_the_mpfr_path(void)
{
    chunk *c = chunk_new();
    uint64_t state = 17;
    fill_lower_triangle(c, &state, -4, 0);
    for (size_t t = 0; t < T; t++) {
        c->beta[t] = ug_test_uniform(&state, 0.1f, 1);
        c->g[t] = ug_test_uniform(&state, -3, 0);
        for (size_t d = 0; d < K; d++) c->k[t * K + d] = ug_bf16_from_f32(spread(&state, -4, 2));
        for (size_t d = 0; d < V; d++) c->v[t * V + d] = ug_bf16_from_f32(spread(&state, -4, 2));
    }
    c->k[3 * K + 5] = 0x7F80; /* +inf */
    c->v[9 * V + 1] = 0x7FC0; /* NaN */
    c->g[20] = -INFINITY;
    c->a[40 * BT + 2] = INFINITY;
    CU_ASSERT_EQUAL(fast_vs_plain(c), 0);
    free(c);
}

/* ---- gdn_e2e on adversarial heads ----------------------------------------------- */

enum { E2E_T = 48, E2E_K = 16, E2E_V = 8, E2E_H = 2 };

/* One batch, two value heads on two key heads (Hg = H = 2), with h0. */
typedef struct {
    gdn_e2e_shape s;
    ug_bf16 q[E2E_T * E2E_H * E2E_K], k[E2E_T * E2E_H * E2E_K], v[E2E_T * E2E_H * E2E_V];
    float beta[E2E_T * E2E_H], g[E2E_T * E2E_H], h0[E2E_H * E2E_K * E2E_V];
    ug_ref_value o[3][E2E_T * E2E_H * E2E_V], final[3][E2E_H * E2E_K * E2E_V]; /* plain, fast, fast portable */
} e2e_case;

static e2e_case *e2e_case_new(void)
{
    e2e_case *c = calloc(1, sizeof *c);
    c->s = (gdn_e2e_shape){1, E2E_T, E2E_H, E2E_H, E2E_K, E2E_V, true};
    return c;
}

/* The plain path against the fast path, with its dot products on AVX-512
 * where the CPU has it and on the portable loops: the differing elements. */
static size_t e2e_fast_vs_plain(e2e_case *c)
{
    size_t differ = 0, mismatches = 0;
    const float scale = gdn_e2e_reference_scale(E2E_K);
    for (int run = 0; run < 3; run++) {
        ug_ref_set_fast(run > 0);
        ug_ref_simd_set_enabled(run < 2);
        CU_ASSERT_EQUAL(gdn_e2e_reference(&c->s, GDN_E2E_REF_PREC, scale, c->q, c->k, c->v, c->beta, c->g, c->h0,
                                          c->o[run], c->final[run]).code, UG_OK);
    }
    ug_ref_set_fast(true);
    ug_ref_simd_set_enabled(true);
    for (int run = 1; run < 3; run++) {
        differ += ug_test_count_ref_differences(c->o[run], c->o[0], E2E_T * E2E_H * E2E_V, &mismatches);
        differ += ug_test_count_ref_differences(c->final[run], c->final[0], E2E_H * E2E_K * E2E_V, &mismatches);
        for (size_t i = 0; i < E2E_H * E2E_K * E2E_V; i++)
            differ += c->final[run][i].no_bound != c->final[0][i].no_bound || c->final[run][i].wild != c->final[0][i].wild;
    }
    return differ;
}

/* Random inputs: exponents of keys and queries over `span` binades (the fast
 * path takes spans up to 40 after the 8 significant bits), values, betas,
 * h0 over [lo, hi], gates in [g_lo, g_hi]. */
static void e2e_fill(e2e_case *c, uint64_t *state, int span, int lo, int hi, float g_lo, float g_hi)
{
    for (size_t i = 0; i < E2E_T * E2E_H * E2E_K; i++) {
        c->k[i] = ug_bf16_from_f32(spread(state, -span, 0));
        c->q[i] = ug_bf16_from_f32(spread(state, -span, 0));
    }
    for (size_t i = 0; i < E2E_T * E2E_H * E2E_V; i++) c->v[i] = ug_bf16_from_f32(spread(state, lo, hi));
    for (size_t i = 0; i < E2E_T * E2E_H; i++) {
        c->beta[i] = fabsf(spread(state, lo, hi));
        c->g[i] = ug_test_uniform(state, g_lo, g_hi);
    }
    for (size_t i = 0; i < E2E_H * E2E_K * E2E_V; i++) c->h0[i] = spread(state, lo, hi);
}

static void e2e_grids_coarsen_and_refine(void)
{
    /* Gates up to ±60 per token, betas and values over 2^-40 .. 2^40: the
     * columns' grids move by up to ~200 bits between tokens, both ways, and
     * every rounding limb of the update is reached. */
    e2e_case *c = e2e_case_new();
    uint64_t state = 21;
    for (int round = 0; round < 3; round++) {
        e2e_fill(c, &state, 40, -40, 40, -60, round == 0 ? 0 : 60);
        CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    }
    free(c);
}

static void e2e_rounding_ties(void)
{
    /* Column 0 of head 0: h0 = (1, ±2^-140, 0, ...) sits on the grid 2^-199
     * as (2^199, ±2^59); key e_0, gate 0, beta 1 and v = 2^59 make the update
     * 2^259 grid units, so the grid coarsens by 60 bits and ±2^59 lands on a
     * tie, rounded away from zero to ±1 on both paths. */
    e2e_case *c = e2e_case_new();
    for (int sign = 0; sign < 2; sign++) {
        memset(c->k, 0, sizeof c->k);
        memset(c->q, 0, sizeof c->q);
        memset(c->h0, 0, sizeof c->h0);
        for (size_t t = 0; t < E2E_T; t++)
            for (size_t h = 0; h < E2E_H; h++) {
                c->k[(t * E2E_H + h) * E2E_K + t % E2E_K] = ug_bf16_from_f32(1.0f);
                c->q[(t * E2E_H + h) * E2E_K + (t + 1) % E2E_K] = ug_bf16_from_f32(1.0f);
                c->beta[t * E2E_H + h] = 1.0f;
                c->g[t * E2E_H + h] = 0.0f;
                for (size_t d = 0; d < E2E_V; d++) c->v[(t * E2E_H + h) * E2E_V + d] = ug_bf16_from_f32(0x1p59f);
            }
        for (size_t h = 0; h < E2E_H; h++)
            for (size_t d = 0; d < E2E_V; d++) {
                c->h0[(h * E2E_K + 0) * E2E_V + d] = 1.0f;
                c->h0[(h * E2E_K + 1) * E2E_V + d] = sign ? -0x1p-140f : 0x1p-140f;
            }
        CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    }
    free(c);
}

static void e2e_magnitude_windows_undecided(void)
{
    /* |X|ᵀ|q| from the top 64 bits of each entry's magnitude, and the exact
     * sum where those cannot decide its rounding up. Columns (±(d+1), ±(d+1)
     * 2^-149, 0, ...) of h0 sit on the grid as (±(d+1) 2^199, ±(d+1) 2^50):
     * the small entry lies wholly below the window, so the window's sum is a
     * double and the exact one rounds up past it (every token: zero keys keep
     * the state). Queries (1, 3, 0, ...) and (1, 0, ...), h0 negative or not. */
    e2e_case *c = e2e_case_new();
    for (int sign = 0; sign < 2; sign++) {
        const float unit = sign ? -1.0f : 1.0f;
        memset(c->k, 0, sizeof c->k);
        memset(c->q, 0, sizeof c->q);
        memset(c->v, 0, sizeof c->v);
        memset(c->h0, 0, sizeof c->h0);
        for (size_t tok = 0; tok < E2E_T * E2E_H; tok++) { /* token t = tok / E2E_H */
            c->q[tok * E2E_K] = ug_bf16_from_f32(1.0f);
            c->q[tok * E2E_K + 1] = ug_bf16_from_f32(tok / E2E_H % 2 ? 3.0f : 0.0f);
            c->beta[tok] = 1.0f;
            c->g[tok] = 0.0f;
        }
        for (size_t i = 0; i < E2E_H * E2E_V; i++) { /* head i / E2E_V, column d = i % E2E_V */
            const float d1 = (float)(i % E2E_V + 1);
            c->h0[(i / E2E_V * E2E_K) * E2E_V + i % E2E_V] = unit * d1;
            c->h0[(i / E2E_V * E2E_K + 1) * E2E_V + i % E2E_V] = unit * 0x1p-149f * d1;
        }
        CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    }
    free(c);
}

static void e2e_magnitudes_leave_the_double_range(void)
{
    /* Zero keys keep the state; gates of -40 per token take head 0's columns
     * through the subnormal range and below it, +20 take head 1's past
     * 2^1024: |X|ᵀ|q| rounded up to a double on both sides of the normal
     * range, where the windows leave it to the exact sum. Entry 1 of every
     * column (2^-149 of the others) lies below the windows, so inside the
     * range their ends round apart too and the exact sum decides. */
    e2e_case *c = e2e_case_new(); /* calloc: zero keys and values */
    for (size_t tok = 0; tok < E2E_T * E2E_H; tok++) {
        c->q[tok * E2E_K] = ug_bf16_from_f32(1.0f);
        c->q[tok * E2E_K + 1] = ug_bf16_from_f32(3.0f);
        c->q[tok * E2E_K + 3] = ug_bf16_from_f32(-0.375f);
        c->beta[tok] = 0.5f;
        c->g[tok] = tok % E2E_H ? 20.0f : -40.0f;
    }
    for (size_t i = 0; i < E2E_H * E2E_K * E2E_V; i++) { /* entry i / V % K of column i % V */
        const size_t entry = i / E2E_V % E2E_K;
        c->h0[i] = (entry == 1 ? 0x1p-149f : (float)(entry % 7 + 1)) * (float)(i % E2E_V + 1) * (i % 3 ? 1.0f : -1.0f);
    }
    CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    free(c);
}

/* z = the two's complement integer w[0 .. n). */
static void mpz_from_twos_complement(mpz_t z, const uint64_t *w, size_t n)
{
    mpz_import(z, n, -1, sizeof w[0], 0, 0, w);
    if (w[n - 1] >> 63) {
        mpz_t wrap;
        mpz_init(wrap);
        mpz_setbit(wrap, 64 * n);
        mpz_sub(z, z, wrap);
        mpz_clear(wrap);
    }
}

static uint64_t random_word(uint64_t *state)
{
    const uint64_t hi = ug_test_next_u32(state);
    return hi << 32 | ug_test_next_u32(state);
}

/* want = sum_k m_k X_k over a planar column (limb i of entry k at col[i n + k]). */
static void planar_dot(mpz_t want, const uint64_t *col, size_t n, const int64_t *m, mpz_t x, mpz_t t)
{
    mpz_set_ui(want, 0);
    for (size_t k = 0; k < n; k++) {
        const uint64_t entry[4] = {col[k], col[n + k], col[2 * n + k], col[3 * n + k]};
        mpz_from_twos_complement(x, entry, 4);
        mpz_mul_si(t, x, (long)m[k]);
        mpz_add(want, want, t);
    }
}

static void e2e_simd_pass_against_gmp(void)
{
    /* gdn_e2e_simd_column_pass against GMP on 128-entry planar columns: the
     * update x + sign RNA(|key| D / 2^(64 L)) mod 2^256 for every rounding
     * limb L (past them and without a key: no change), both signs of the
     * delta, D all ones or random; then the bit length, Xᵀq, Xᵀnext and the
     * 96-bit windows at several shifts. Columns whose every biased half is
     * -2^31 (X = -2^255) or 2^31 - 1 (X = 2^255 - 1), random and sparse;
     * factors at the limit 2^25 - 1, zero and random, of one sign or mixed:
     * the lanes' sums come within 2^56 of 2^63, the windows' pieces within
     * 2^57 of 2^64, every carry chain runs to the top. */
    if (!ug_ref_simd_available()) return; /* valgrind's CPU: the portable loops only */
    enum { N = GDN_E2E_SIMD_MAX_N, LIMIT = (1 << GDN_E2E_SIMD_FACTOR_BITS) - 1 };
    uint64_t *col = malloc(4 * N * sizeof *col), *before = malloc(4 * N * sizeof *before);
    int64_t key[N], query[N], next[N];
    mpz_t want, got, x, t, d, half;
    mpz_inits(want, got, x, t, d, half, (mpz_ptr)0);
    uint64_t state = 41;
    size_t mismatches = 0;
    for (int trial = 0; trial < 48; trial++)
        for (int L = -1; L <= 5; L++) {
            const int kind = trial % 4, neg = trial / 4 % 2, signs = trial / 8 % 3;
            gdn_e2e_simd_pass_in in = {.key = L < 0 ? NULL : key, .neg = neg ? ~UINT64_C(0) : 0, .round_limbs = L,
                                       .query = query, .next = next};
            for (int i = 0; i < 4; i++) in.dm[i] = trial % 3 == 0 ? ~UINT64_C(0) : random_word(&state) >> (trial % 5);
            for (size_t k = 0; k < N; k++) {
                for (int i = 0; i < 4; i++)
                    col[i * N + k] = kind == 0   ? (i == 3 ? UINT64_C(1) << 63 : 0)
                                     : kind == 1 ? (i == 3 ? ~(UINT64_C(1) << 63) : ~UINT64_C(0))
                                     : kind == 2 ? random_word(&state) >> (i == 3 ? trial % 64 : 0)
                                                 : (k % 7 == 0 ? random_word(&state) >> (k % 64) : 0);
                const int64_t sign = signs == 0 || (signs == 2 && k % 3 == 0) ? 1 : -1;
                key[k] = (k % 5 == 0 ? 0 : k % 2 ? LIMIT : (int64_t)(random_word(&state) >> 39)) * (k % 3 ? 1 : -1);
                query[k] = sign * (trial % 2 ? LIMIT : (int64_t)(random_word(&state) >> 39));
                next[k] = -sign * (trial % 6 < 3 ? LIMIT : (int64_t)(random_word(&state) >> 40));
            }
            in.query_sum = in.next_sum = 0;
            for (size_t k = 0; k < N; k++) in.query_sum += query[k], in.next_sum += next[k];
            memcpy(before, col, 4 * N * sizeof *col);
            in.window_shift = (int)(random_word(&state) % 192);
            if (trial % 7 == 0) in.window_shift = trial % 2 ? 0 : 191;
            gdn_e2e_simd_pass_out out;
            gdn_e2e_simd_column_pass(col, N, &in, &out);
            /* the update */
            mpz_import(d, 4, -1, sizeof in.dm[0], 0, 0, in.dm);
            for (size_t k = 0; k < N; k++) {
                mpz_mul_ui(t, d, (unsigned long)(key[k] < 0 ? -key[k] : key[k]));
                if (L < 0 || L > 4) mpz_set_ui(t, 0);
                else if (L > 0) { /* RNA of a nonnegative value */
                    mpz_set_ui(half, 0);
                    mpz_setbit(half, (mp_bitcnt_t)(64 * L - 1));
                    mpz_add(t, t, half);
                    mpz_fdiv_q_2exp(t, t, (mp_bitcnt_t)(64 * L));
                }
                if ((key[k] < 0) != neg) mpz_neg(t, t);
                const uint64_t entry[4] = {before[k], before[N + k], before[2 * N + k], before[3 * N + k]};
                mpz_import(x, 4, -1, sizeof entry[0], 0, 0, entry);
                mpz_add(x, x, t);
                mpz_fdiv_r_2exp(x, x, 256);
                uint64_t wanted[4] = {0, 0, 0, 0};
                mpz_export(wanted, NULL, -1, sizeof wanted[0], 0, 0, x);
                for (int i = 0; i < 4; i++)
                    if (wanted[i] != col[i * N + k])
                        UG_TEST_MISMATCH(mismatches, "trial %d, L %d, entry %zu limb %d: update differs", trial, L, k, i);
            }
            /* the reads of the updated column */
            long bits = 0;
            mpz_set_ui(want, 0);
            for (size_t k = 0; k < N; k++) {
                const uint64_t entry[4] = {col[k], col[N + k], col[2 * N + k], col[3 * N + k]};
                mpz_from_twos_complement(x, entry, 4);
                if (mpz_sgn(x) < 0) mpz_com(x, x);
                const long len = mpz_sgn(x) ? (long)mpz_sizeinbase(x, 2) : 0;
                if (len > bits) bits = len;
                mpz_fdiv_q_2exp(x, x, (mp_bitcnt_t)in.window_shift); /* |q_k| floor(M_k / 2^sh) mod 2^96 */
                mpz_fdiv_r_2exp(x, x, 96);
                mpz_addmul_ui(want, x, (unsigned long)(query[k] < 0 ? -query[k] : query[k]));
            }
            const uint64_t halves[2] = {(uint64_t)out.window, (uint64_t)(out.window >> 64)};
            mpz_import(got, 2, -1, sizeof halves[0], 0, 0, halves);
            if (mpz_cmp(want, got) != 0)
                UG_TEST_MISMATCH(mismatches, "trial %d, L %d, shift %d: window sum differs", trial, L, in.window_shift);
            if (out.bits != bits) UG_TEST_MISMATCH(mismatches, "trial %d, L %d: bits %d, want %ld", trial, L, out.bits, bits);
            planar_dot(want, col, N, query, x, t);
            mpz_from_twos_complement(got, out.query_dot, 6);
            if (mpz_cmp(want, got) != 0) UG_TEST_MISMATCH(mismatches, "trial %d, L %d: Xᵀq differs", trial, L);
            planar_dot(want, col, N, next, x, t);
            mpz_from_twos_complement(got, out.next_dot, 6);
            if (mpz_cmp(want, got) != 0) UG_TEST_MISMATCH(mismatches, "trial %d, L %d: Xᵀnext differs", trial, L);
        }
    CU_ASSERT_EQUAL(mismatches, 0);
    mpz_clears(want, got, x, t, d, half, (mpz_ptr)0);
    free(col);
    free(before);
}

static void e2e_simd_regrid_against_gmp(void)
{
    /* gdn_e2e_simd_regrid against GMP: RNA(x / 2^s) (ties away from zero)
     * for shifts within a limb, at and across limb edges and past 2^256, on
     * random columns, columns of ties (x = ±(2 j + 1) 2^(s-1)), ±(2^255 -
     * 1), -1 and -2^255; x 2^-s for s < 0 on columns that keep below
     * 2^255. */
    if (!ug_ref_simd_available()) return;
    enum { N = 64 };
    static const long shifts[] = {1, 2, 63, 64, 65, 127, 128, 129, 191, 200, 254, 255, 256, 300,
                                  -1, -2, -63, -64, -65, -128, -191, -200, -254};
    uint64_t *col = malloc(4 * N * sizeof *col), *before = malloc(4 * N * sizeof *before);
    mpz_t x, half;
    mpz_inits(x, half, (mpz_ptr)0);
    uint64_t state = 44;
    size_t mismatches = 0;
    for (size_t si = 0; si < sizeof shifts / sizeof shifts[0]; si++)
        for (int kind = 0; kind < 3; kind++) {
            const long sh = shifts[si];
            for (size_t k = 0; k < N; k++) {
                uint64_t entry[4];
                for (int i = 0; i < 4; i++) entry[i] = random_word(&state);
                if (kind == 1 && sh > 0 && sh < 255) { /* a tie: an odd multiple of 2^(s-1) */
                    mpz_set_ui(x, (unsigned long)(2 * k + 1));
                    mpz_mul_2exp(x, x, (mp_bitcnt_t)(sh - 1));
                    if (k % 2) mpz_neg(x, x);
                    mpz_fdiv_r_2exp(x, x, 256);
                    memset(entry, 0, sizeof entry);
                    mpz_export(entry, NULL, -1, sizeof entry[0], 0, 0, x);
                } else if (kind == 2) { /* the extremes (-2^255 + 1 past 2^256: outside the contract) */
                    entry[0] = entry[1] = entry[2] = k % 3 == 0 ? sh >= 256 : k % 3 == 1 ? ~UINT64_C(0) : 1;
                    entry[3] = k % 3 == 0 ? UINT64_C(1) << 63 : k % 3 == 1 ? ~(UINT64_C(1) << 63) : ~UINT64_C(0);
                }
                if (sh < 0) /* keep x 2^-s below 2^255: an arithmetic shift right by -s + 1 */
                    for (long b = 0; b < -sh + 1; b++) {
                        for (int i = 0; i < 3; i++) entry[i] = entry[i] >> 1 | entry[i + 1] << 63;
                        entry[3] = (uint64_t)((int64_t)entry[3] >> 1);
                    }
                for (int i = 0; i < 4; i++) col[i * N + k] = entry[i];
            }
            memcpy(before, col, 4 * N * sizeof *col);
            gdn_e2e_simd_regrid(col, N, sh);
            for (size_t k = 0; k < N; k++) {
                const uint64_t entry[4] = {before[k], before[N + k], before[2 * N + k], before[3 * N + k]};
                mpz_from_twos_complement(x, entry, 4);
                if (sh < 0) {
                    mpz_mul_2exp(x, x, (mp_bitcnt_t)-sh);
                } else { /* sign(x) floor((|x| + 2^(s-1)) / 2^s) */
                    const int sign = mpz_sgn(x);
                    mpz_abs(x, x);
                    mpz_set_ui(half, 0);
                    mpz_setbit(half, (mp_bitcnt_t)(sh - 1));
                    mpz_add(x, x, half);
                    mpz_fdiv_q_2exp(x, x, (mp_bitcnt_t)sh);
                    if (sign < 0) mpz_neg(x, x);
                }
                mpz_fdiv_r_2exp(x, x, 256);
                uint64_t wanted[4] = {0, 0, 0, 0};
                mpz_export(wanted, NULL, -1, sizeof wanted[0], 0, 0, x);
                for (int i = 0; i < 4; i++)
                    if (wanted[i] != col[i * N + k])
                        UG_TEST_MISMATCH(mismatches, "shift %ld, kind %d, entry %zu limb %d: regrid differs", sh, kind,
                                         k, i);
            }
        }
    CU_ASSERT_EQUAL(mismatches, 0);
    mpz_clears(x, half, (mpz_ptr)0);
    free(col);
    free(before);
}

static void e2e_columns_shrink_and_refine(void)
{
    /* h0 columns (1, 2^-100, 0, ...): a unit key e_0 with beta 1 and v = 0
     * projects the 1 out, leaving 2^99 grid units; a small update (v =
     * 2^-90 on another unit key) then refines the grid by ~90 bits; v = 2^40
     * on e_0 coarsens it again, four tokens a cycle. */
    e2e_case *c = e2e_case_new();
    memset(c->k, 0, sizeof c->k);
    memset(c->q, 0, sizeof c->q);
    memset(c->h0, 0, sizeof c->h0);
    for (size_t t = 0; t < E2E_T; t++)
        for (size_t h = 0; h < E2E_H; h++) {
            const size_t tok = t * E2E_H + h, phase = t % 4;
            const size_t key = phase == 1 ? 2 + t % 8 : phase == 3 ? 1 : 0;
            const float value = phase == 0 ? 0.0f : phase == 1 ? 0x1p-90f : phase == 2 ? 0x1p40f : 0x1p-20f;
            c->k[tok * E2E_K + key] = ug_bf16_from_f32(1.0f);
            c->q[tok * E2E_K + 1] = ug_bf16_from_f32(1.0f);
            c->q[tok * E2E_K + 2 + t % 8] = ug_bf16_from_f32(-0.5f);
            c->beta[tok] = 1.0f;
            c->g[tok] = -0.25f * (float)h;
            for (size_t d = 0; d < E2E_V; d++) c->v[tok * E2E_V + d] = ug_bf16_from_f32(value * (float)(d + 1));
        }
    for (size_t h = 0; h < E2E_H; h++)
        for (size_t d = 0; d < E2E_V; d++) {
            c->h0[(h * E2E_K + 0) * E2E_V + d] = 1.0f;
            c->h0[(h * E2E_K + 1) * E2E_V + d] = 0x1p-100f * (float)(d + 1);
        }
    CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    free(c);
}

static void e2e_cancellation_and_zeros(void)
{
    /* Unit keys with beta 1 and v = 0 project a state component out to
     * exactly 0 (whole columns become zero and take a new grid), zero keys
     * and queries, signed zeros among the inputs, tokens whose d is 0. */
    e2e_case *c = e2e_case_new();
    uint64_t state = 23;
    e2e_fill(c, &state, 10, -4, 4, -1, 0);
    for (size_t t = 0; t < E2E_T; t++)
        for (size_t h = 0; h < E2E_H; h++) {
            ug_bf16 *k = c->k + (t * E2E_H + h) * E2E_K, *q = c->q + (t * E2E_H + h) * E2E_K;
            const size_t tok = t * E2E_H + h;
            if (t % 4 == 0) { /* a unit key, v = -0: the component is projected out */
                for (size_t d = 0; d < E2E_K; d++) k[d] = d == t % E2E_K ? ug_bf16_from_f32(1.0f) : 0x8000;
                c->beta[tok] = 1.0f;
                c->g[tok] = 0.0f;
                for (size_t d = 0; d < E2E_V; d++) c->v[tok * E2E_V + d] = 0x8000;
            }
            if (t % 5 == 1) memset(k, 0, E2E_K * sizeof *k);                  /* zero key: no update */
            if (t % 7 == 2) for (size_t d = 0; d < E2E_K; d++) q[d] = 0x8000; /* -0 query */
            if (t % 6 == 3) c->beta[tok] = -0.0f;                             /* d = -0 */
        }
    for (size_t i = 0; i < E2E_H * E2E_K * E2E_V; i += 3) c->h0[i] = i % 2 ? -0.0f : 0.0f;
    CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    free(c);
}

static void e2e_key_spans_at_the_fast_limit(void)
{
    /* Head 0's keys span 40 binades beyond their 8 bits (1.5 and 2^-40: the
     * fast path's limit), head 1's queries 41 in every other token (the
     * head goes to the plain path): both give the plain path's bits. */
    e2e_case *c = e2e_case_new();
    uint64_t state = 24;
    e2e_fill(c, &state, 20, -6, 6, -2, 0);
    for (size_t t = 0; t < E2E_T; t++) {
        c->k[(t * E2E_H + 0) * E2E_K + 1] = ug_bf16_from_f32(1.5f);
        c->k[(t * E2E_H + 0) * E2E_K + 2] = ug_bf16_from_f32(0x1p-40f);
        c->q[(t * E2E_H + 1) * E2E_K + 1] = ug_bf16_from_f32(1.5f);
        c->q[(t * E2E_H + 1) * E2E_K + 2] = ug_bf16_from_f32(t % 2 ? 0x1p-41f : 0x1p-40f);
    }
    CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    free(c);
}

static void e2e_tokens_alternate_between_the_pass_and_the_loops(void)
{
    /* Keys and queries within 10 binades, but every third token's key and
     * every fifth token's query with one component 2^-30 (factors past
     * 2^25: that column step runs the portable loops inside an AVX-512
     * head), so Xᵀk handed to the next token comes from either and the
     * window shift of the pass meets columns left by the loops. */
    e2e_case *c = e2e_case_new();
    uint64_t state = 27;
    e2e_fill(c, &state, 10, -4, 4, -1, 0);
    for (size_t t = 0; t < E2E_T; t++)
        for (size_t h = 0; h < E2E_H; h++) {
            if (t % 3 == 0) c->k[(t * E2E_H + h) * E2E_K + (t + h) % E2E_K] = ug_bf16_from_f32(0x1p-30f);
            if (t % 5 == 1) c->q[(t * E2E_H + h) * E2E_K + t % E2E_K] = ug_bf16_from_f32(-0x1p-30f);
        }
    CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    free(c);
}

static void e2e_tiny_and_subnormal_inputs(void)
{
    /* bf16 subnormal values, f32 subnormal betas and h0, beside values near
     * 2^60: columns spanning ~260 binades, entries that fall off their grid
     * (head 0 on the fast path); head 1's keys subnormal too (plain path). */
    e2e_case *c = e2e_case_new();
    uint64_t state = 25;
    e2e_fill(c, &state, 30, -130, 60, -3, 0);
    for (size_t t = 0; t < E2E_T; t++) c->k[(t * E2E_H + 1) * E2E_K + t % E2E_K] = (ug_bf16)(1 + t); /* subnormal */
    for (size_t i = 0; i < E2E_T * E2E_H; i += 3) c->beta[i] = ldexpf(1.0f, -149 + (int)(i % 20));
    for (size_t i = 0; i < E2E_H * E2E_K * E2E_V; i += 2) c->h0[i] = ldexpf(1.5f, -140);
    CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    free(c);
}

static void e2e_heads_outside_the_grid_form(void)
{
    /* Non-finite inputs, values at 2^64 and gates beyond ±64 send their
     * head to the floating form, on either path alike. */
    e2e_case *c = e2e_case_new();
    uint64_t state = 26;
    for (int kind = 0; kind < 4; kind++) {
        e2e_fill(c, &state, 8, -4, 4, -1, 0);
        switch (kind) {
        case 0: c->k[5 * E2E_H * E2E_K + 3] = 0x7F80; break;   /* +inf key, head 0 */
        case 1: c->v[7 * E2E_H * E2E_V + E2E_V] = 0x7FC0; break; /* NaN value, head 1 */
        case 2: c->h0[4] = 0x1p64f; break;
        default: c->g[9 * E2E_H] = -65.0f; c->g[3 * E2E_H + 1] = 64.0f; break;
        }
        CU_ASSERT_EQUAL(e2e_fast_vs_plain(c), 0);
    }
    free(c);
}

/* Two suites: the regime sweeps run the MPFR path on every regime and are
 * the longest of all under valgrind, so make memcheck runs them apart. */
UG_TEST_SUITE(ref_fast_path_regimes_suite, "ref_fast_path_regimes",
              UG_TEST(recompute_wu_fast_equals_mpfr_on_every_regime),
              UG_TEST(scaled_kkt_fast_equals_mpfr_on_every_regime),
              UG_TEST(e2e_fast_equals_mpfr_on_every_regime));

UG_TEST_SUITE(ref_fast_path_suite, "ref_fast_path",
              UG_TEST(cancellation_to_exact_zero),
              UG_TEST(signed_zeros),
              UG_TEST(bf16_tie_results),
              UG_TEST(subnormal_results),
              UG_TEST(exponents_spread_over_the_whole_range),
              UG_TEST(operands_at_rounding_boundaries),
              UG_TEST(nonfinite_inputs_take_the_mpfr_path),
              UG_TEST(e2e_grids_coarsen_and_refine),
              UG_TEST(e2e_rounding_ties),
              UG_TEST(e2e_magnitude_windows_undecided),
              UG_TEST(e2e_simd_pass_against_gmp),
              UG_TEST(e2e_simd_regrid_against_gmp),
              UG_TEST(e2e_magnitudes_leave_the_double_range),
              UG_TEST(e2e_columns_shrink_and_refine),
              UG_TEST(e2e_cancellation_and_zeros),
              UG_TEST(e2e_key_spans_at_the_fast_limit),
              UG_TEST(e2e_tokens_alternate_between_the_pass_and_the_loops),
              UG_TEST(e2e_tiny_and_subnormal_inputs),
              UG_TEST(e2e_heads_outside_the_grid_form));
