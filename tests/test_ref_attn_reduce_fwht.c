/* SPDX-License-Identifier: MIT */
/* The attn_reduce_fwht reference: the sign table against the SPEC and the
 * transform's self-inverse property, exact cases computed by hand, agreement
 * with the definition summed plainly in MPFR, the bound's assumption on
 * expf, its tightness, and the refusal of rows outside the contract. */
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../harness/family.h"
#include "../harness/ulp.h"
#include "../kernels/attn_reduce_fwht.h"
#include "../kernels/attn_reduce_fwht_signs.h"
#include "../ref/attn_reduce_fwht.h"
#include "tests.h"

enum { MAX_DV = 512, MAX_NWG = 32 };

/* One row's inputs in the kernel's layout, built by hand. */
typedef struct {
    attn_reduce_fwht_shape s;
    float htmp[MAX_NWG * (MAX_DV + 2)];
    ug_ref_value out[MAX_DV];
} one_row;

static one_row *row_new(size_t head_dim, size_t nwg)
{
    one_row *r = calloc(1, sizeof *r);
    r->s = (attn_reduce_fwht_shape){1, head_dim, nwg};
    return r;
}

static float *partial(one_row *r, size_t w, size_t d)
{
    return &r->htmp[(d / 4 * r->s.nwg + w) * 4 + d % 4];
}

static void set_stats(one_row *r, size_t w, float s, float m)
{
    r->htmp[r->s.head_dim * r->s.nwg + 2 * w] = s;
    r->htmp[r->s.head_dim * r->s.nwg + 2 * w + 1] = m;
}

static ug_status run_reference(one_row *r) { return attn_reduce_fwht_reference(&r->s, r->htmp, ug_test_cpu_model(), UG_REF_EXACT, r->out); }

/* The upstream SIGNS bytes as docs/spec.md §1.4 quotes them: the DV = 256
 * table, then the 32 bytes the DV = 512 table adds. The third copy, in a third
 * form: the kernel's and the reference's tables are checked against it. */
static const char upstream_signs[] = "a7 3b 91 f4 6d c2 58 0e b3 7f 24 d6 89 45 ea 1c "
                                     "63 af d8 52 97 0b e1 3d 76 c4 19 fe 4a 85 2c db "
                                     "d3 4e a8 17 9c 5b e6 31 72 b9 0d f5 43 8a 6e c7 "
                                     "58 2f 94 e1 b6 3d 0a 7c c5 61 d8 4f a3 97 1e 85";

static bool upstream_sign_is_negative(size_t j)
{
    const unsigned long byte = strtoul(upstream_signs + 3 * (j >> 3), NULL, 16);
    return (byte >> (j & 7)) & 1u;
}

static double sign_of(size_t j) { return upstream_sign_is_negative(j) ? -1.0 : 1.0; }

static int popcount_parity(size_t x) { return __builtin_popcountll(x) & 1; }

/* ---- the sign table ------------------------------------------------------ */

/* The kernel's table and the reference's own copy both equal the upstream
 * bytes, sign by sign, for DV = 512 (the DV = 256 table is its first half). */
static void test_both_sign_tables_are_the_upstream_bytes(void)
{
    CU_ASSERT_EQUAL(sizeof attn_reduce_fwht_signs, 64);
    CU_ASSERT(upstream_sign_is_negative(0));   /* 0xa7 bit 0 */
    CU_ASSERT(!upstream_sign_is_negative(3));  /* 0xa7 bit 3 */
    CU_ASSERT(upstream_sign_is_negative(511)); /* 0x85 bit 7 */
    int kernel_wrong = 0, reference_wrong = 0;
    for (size_t j = 0; j < 512; j++) {
        const bool negative = upstream_sign_is_negative(j);
        if (attn_reduce_fwht_sign_is_negative(j) != negative)
            UG_TEST_MISMATCH(kernel_wrong, "kernel sign %zu is %s", j, negative ? "+1" : "-1");
        if ((attn_reduce_fwht_reference_sign(j) < 0) != negative)
            UG_TEST_MISMATCH(reference_wrong, "reference sign %zu is %s", j, negative ? "+1" : "-1");
    }
    CU_ASSERT_EQUAL(kernel_wrong, 0);
    CU_ASSERT_EQUAL(reference_wrong, 0);
}

/* ---- the self-inverse property ------------------------------------------- */

/* x' = H (s' . x) / sqrt(DV): the rotation the undo inverts, with the table
 * s' (flip_j >= 0 inverts the sign of that element), summed from its
 * definition at 400 bits; out gets RN_f32(x') and err_sum an upper bound of
 * sum_d |RN_f32(x'_d) - x'_d|. */
static void sign_premultiply(size_t dv, const float *x, long flip_j, float *out, double *err_sum)
{
    mpfr_t acc, term, inv_sqrt;
    mpfr_inits2(400, acc, term, inv_sqrt, (mpfr_ptr)0);
    mpfr_set_ui(inv_sqrt, (unsigned long)dv, MPFR_RNDN);
    mpfr_rec_sqrt(inv_sqrt, inv_sqrt, MPFR_RNDN);
    *err_sum = 0;
    for (size_t j = 0; j < dv; j++) {
        mpfr_set_zero(acc, 1);
        for (size_t d = 0; d < dv; d++) {
            double s = sign_of(d) * ((long)d == flip_j ? -1 : 1);
            mpfr_set_d(term, s * (popcount_parity(j & d) ? -1.0 : 1.0) * x[d], MPFR_RNDN);
            mpfr_add(acc, acc, term, MPFR_RNDN);
        }
        mpfr_mul(acc, acc, inv_sqrt, MPFR_RNDN);
        out[j] = mpfr_get_flt(acc, MPFR_RNDN);
        mpfr_sub_d(term, acc, out[j], MPFR_RNDN);
        *err_sum += fabs(mpfr_get_d(term, MPFR_RNDU)) * (1 + 0x1p-40);
    }
    mpfr_clears(acc, term, inv_sqrt, (mpfr_ptr)0);
}

typedef struct {
    size_t within, mismatched_at_flip, total;
} roundtrip_result;

/* Premultiply then the kernel's undo: every element within the undo's bound
 * plus the premultiply's propagated rounding (sum_d |err_d| / sqrt(DV)). */
static roundtrip_result roundtrip(size_t dv, long flip_j, uint64_t seed)
{
    static float x[MAX_DV], rotated[MAX_DV], back[MAX_DV];
    static ug_ref_value ref[MAX_DV];
    uint64_t state = seed;
    for (size_t d = 0; d < dv; d++) x[d] = ug_test_uniform(&state, -4.0f, 4.0f);
    double err_sum;
    sign_premultiply(dv, x, flip_j, rotated, &err_sum);
    memcpy(back, rotated, dv * sizeof *back);
    ug_buf buf = {back, dv, UG_F32};
    CU_ASSERT_EQUAL(attn_fwht_sign_undo(1, (uint32_t)dv, &buf).code, UG_OK);
    CU_ASSERT_EQUAL(attn_fwht_undo_reference(1, dv, rotated, ug_test_cpu_model(), ref).code, UG_OK);
    const double propagated = err_sum / sqrt((double)dv) * (1 + 0x1p-40);
    roundtrip_result res = {0, 0, dv};
    for (size_t j = 0; j < dv; j++) {
        /* the kernel within the reference's bound on what it was given */
        ug_elem_error e = ug_measure(ug_f32_bits(back[j]), UG_F32, &ref[j]);
        CU_ASSERT(e.ratio <= 1);
        /* ... and the exact undo of the rounded rotation within the rounding of x' */
        CU_ASSERT(fabs(ref[j].r_hi + ref[j].r_lo - x[j]) <= propagated || (long)j == flip_j);
        bool within = fabs((double)back[j] - x[j]) <= ref[j].bound + propagated;
        res.within += within;
        res.mismatched_at_flip += !within && (long)j == flip_j;
    }
    return res;
}

static void test_undo_of_the_premultiply_returns_the_input(void)
{
    for (size_t dv = 256; dv <= 512; dv *= 2)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            roundtrip_result res = roundtrip(dv, -1, seed);
            CU_ASSERT_EQUAL(res.within, res.total);
        }
}

/* A premultiply whose table differs in one bit comes back with that one
 * element negated: the roundtrip sees a table that is not the undo's. */
static void test_roundtrip_detects_a_table_differing_in_one_bit(void)
{
    for (size_t dv = 256; dv <= 512; dv *= 2) {
        roundtrip_result res = roundtrip(dv, (long)dv - 3, 7);
        CU_ASSERT_EQUAL(res.within, res.total - 1);
        CU_ASSERT_EQUAL(res.mismatched_at_flip, 1);
    }
}

/* ---- exact cases by hand ------------------------------------------------- */

/* r == want exactly (a zero of either sign matches 0). */
static void expect_exact(const ug_ref_value *r, double want)
{
    CU_ASSERT_EQUAL(r->r_hi, want);
    CU_ASSERT_EQUAL(r->r_lo, 0.0);
    CU_ASSERT_EQUAL(ug_f32_from_bits(r->rn_bits), (float)want);
}

/* y = delta_0: H y is all ones, out_j = s_j / 16. */
static void test_unit_impulse_gives_the_signs_over_sixteen(void)
{
    one_row *r = row_new(256, 1);
    set_stats(r, 0, 1.0f, 0.0f);
    *partial(r, 0, 0) = 1.0f;
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    for (size_t j = 0; j < 256; j++) expect_exact(&r->out[j], sign_of(j) / 16);
    free(r);
}

/* y = all ones: H y = 256 delta_0, out_0 = s_0 * 16 = -16, the rest 0. */
static void test_constant_row_gives_one_spike(void)
{
    one_row *r = row_new(256, 1);
    set_stats(r, 0, 2.0f, 5.0f);
    for (size_t d = 0; d < 256; d++) *partial(r, 0, d) = 2.0f;
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    expect_exact(&r->out[0], -16.0);
    for (size_t j = 1; j < 256; j++) expect_exact(&r->out[j], 0.0);
    free(r);
}

/* Weights e^0 and e^-1 cancel when both workgroups hold the same partial
 * per unit of S: y_0 = (1 + e^-1) / (1 + e^-1) = 1 exactly. */
static void test_weights_cancel_in_the_quotient(void)
{
    one_row *r = row_new(256, 2);
    set_stats(r, 0, 1.0f, 0.0f);
    set_stats(r, 1, 1.0f, -1.0f);
    *partial(r, 0, 0) = 1.0f;
    *partial(r, 1, 0) = 1.0f;
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    for (size_t j = 0; j < 256; j++) expect_exact(&r->out[j], sign_of(j) / 16);
    free(r);
}

/* Equal maxima, S = 1 + 3, P = 4 delta_5 twice: y = 2 delta_5 and
 * out_j = s_j (-1)^popcount(j & 5) 2 / sqrt(512). */
static void test_equal_maxima_merge_by_hand(void)
{
    one_row *r = row_new(512, 2);
    set_stats(r, 0, 1.0f, 2.5f);
    set_stats(r, 1, 3.0f, 2.5f);
    *partial(r, 0, 5) = 4.0f;
    *partial(r, 1, 5) = 4.0f;
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    mpfr_t want;
    mpfr_init2(want, 300);
    for (size_t j = 0; j < 512; j++) {
        mpfr_set_ui(want, 512, MPFR_RNDN);
        mpfr_rec_sqrt(want, want, MPFR_RNDN);
        mpfr_mul_d(want, want, 2 * sign_of(j) * (popcount_parity(j & 5) ? -1 : 1), MPFR_RNDN);
        mpfr_sub_d(want, want, r->out[j].r_hi, MPFR_RNDN);
        mpfr_sub_d(want, want, r->out[j].r_lo, MPFR_RNDN);
        CU_ASSERT(fabs(mpfr_get_d(want, MPFR_RNDN)) <= 0x1p-106);
    }
    mpfr_clear(want);
    free(r);
}

/* Every workgroup masked: the spec's S == 0 case, r = 0; the bound admits
 * only zero (the smallest subnormal already exceeds it). */
static void test_fully_masked_row_is_zero_and_admits_only_zero(void)
{
    one_row *r = row_new(512, 4);
    for (size_t w = 0; w < 4; w++) set_stats(r, w, 0.0f, -FLT_MAX / 2);
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    for (size_t j = 0; j < 512; j++) {
        expect_exact(&r->out[j], 0.0);
        CU_ASSERT_EQUAL(ug_measure(0, UG_F32, &r->out[j]).ratio, 0);
        CU_ASSERT(ug_measure(1, UG_F32, &r->out[j]).ratio > 1);
    }
    free(r);
}

/* ---- against the definition ---------------------------------------------- */

/* A generated decode row, through the family's generator. */
static void generate_rows(const ug_family *f, size_t nrows, size_t head_dim, size_t nwg, size_t regime,
                          unsigned long seed, float *htmp)
{
    ug_params p = {{0}};
    p.v[ug_family_param_index(f, "nrows")] = (double)nrows;
    p.v[ug_family_param_index(f, "head_dim")] = (double)head_dim;
    p.v[ug_family_param_index(f, "nwg")] = (double)nwg;
    p.v[ug_family_param_index(f, "fused")] = 1;
    ug_buf bufs[2] = {{htmp, nrows * nwg * (head_dim + 2), UG_F32}, {NULL, nrows * head_dim, UG_F32}};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    CU_ASSERT_EQUAL_FATAL(f->generate(&p, regime, rng, bufs).code, UG_OK);
    gsl_rng_free(rng);
}

static size_t regime_index(const ug_family *f, const char *name)
{
    for (size_t i = 0; i < f->n_regimes; i++)
        if (strcmp(f->regimes[i], name) == 0) return i;
    CU_FAIL_FATAL("no such regime");
    return 0;
}

/* r_j against s_j / sqrt(DV) sum_d (-1)^popcount(j & d) (sum_w P_w[d] m_w) / S
 * with every operation at 1000 bits: within 2^-110 of the magnitude sum. */
static void check_against_definition(size_t head_dim, size_t nwg, const char *regime)
{
    const ug_family *f = ug_family_find("attn_reduce_fwht");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    one_row *r = row_new(head_dim, nwg);
    generate_rows(f, 1, head_dim, nwg, regime_index(f, regime), 99, r->htmp);
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);

    mpfr_t m[MAX_NWG], s, y[MAX_DV], acc, term;
    mpfr_inits2(1000, s, acc, term, (mpfr_ptr)0);
    const float *stats = r->htmp + head_dim * nwg;
    float m_star = stats[1];
    for (size_t w = 1; w < nwg; w++) m_star = fmaxf(m_star, stats[2 * w + 1]);
    mpfr_set_zero(s, 1);
    for (size_t w = 0; w < nwg; w++) {
        mpfr_init2(m[w], 1000);
        mpfr_set_flt(m[w], stats[2 * w + 1], MPFR_RNDN);
        mpfr_sub_d(m[w], m[w], m_star, MPFR_RNDN);
        mpfr_exp(m[w], m[w], MPFR_RNDN);
        mpfr_mul_d(term, m[w], stats[2 * w], MPFR_RNDN);
        mpfr_add(s, s, term, MPFR_RNDN);
    }
    for (size_t d = 0; d < head_dim; d++) {
        mpfr_init2(y[d], 1000);
        mpfr_set_zero(y[d], 1);
        for (size_t w = 0; w < nwg; w++) {
            mpfr_mul_d(term, m[w], *partial(r, w, d), MPFR_RNDN);
            mpfr_add(y[d], y[d], term, MPFR_RNDN);
        }
        mpfr_div(y[d], y[d], s, MPFR_RNDN);
    }
    double worst = 0;
    const size_t step = RUNNING_ON_VALGRIND ? 37 : 1;
    for (size_t j = 0; j < head_dim; j += step) {
        mpfr_set_zero(acc, 1);
        for (size_t d = 0; d < head_dim; d++) {
            if (popcount_parity(j & d)) mpfr_sub(acc, acc, y[d], MPFR_RNDN);
            else mpfr_add(acc, acc, y[d], MPFR_RNDN);
        }
        mpfr_set_ui(term, (unsigned long)head_dim, MPFR_RNDN);
        mpfr_rec_sqrt(term, term, MPFR_RNDN);
        mpfr_mul(acc, acc, term, MPFR_RNDN);
        mpfr_mul_d(acc, acc, sign_of(j), MPFR_RNDN);
        mpfr_sub_d(acc, acc, r->out[j].r_hi, MPFR_RNDN);
        mpfr_sub_d(acc, acc, r->out[j].r_lo, MPFR_RNDN);
        double rel = fabs(mpfr_get_d(acc, MPFR_RNDN)) / r->out[j].abs_sum;
        worst = fmax(worst, rel);
    }
    CU_ASSERT(worst <= 0x1p-100);
    for (size_t w = 0; w < nwg; w++) mpfr_clear(m[w]);
    for (size_t d = 0; d < head_dim; d++) mpfr_clear(y[d]);
    mpfr_clears(s, acc, term, (mpfr_ptr)0);
    mpfr_free_cache();
    free(r);
}

static void test_reference_matches_the_definition(void)
{
    check_against_definition(256, 5, "decode");
    check_against_definition(512, 3, "one_dominant");
    check_against_definition(256, 8, "large_range");
}

/* No deliberate intermediate rounding: staged is the exact function. */
static void test_modes_are_identical(void)
{
    const ug_family *f = ug_family_find("attn_reduce_fwht");
    enum { ROWS = 3, DV = 256, NWG = 4 };
    static float htmp[ROWS * NWG * (DV + 2)];
    static ug_ref_value exact[ROWS * DV], staged[ROWS * DV];
    generate_rows(f, ROWS, DV, NWG, regime_index(f, "masked"), 5, htmp);
    attn_reduce_fwht_shape s = {ROWS, DV, NWG};
    CU_ASSERT_EQUAL(attn_reduce_fwht_reference(&s, htmp, ug_test_cpu_model(), UG_REF_EXACT, exact).code, UG_OK);
    CU_ASSERT_EQUAL(attn_reduce_fwht_reference(&s, htmp, ug_test_cpu_model(), UG_REF_STAGED, staged).code, UG_OK);
    CU_ASSERT_EQUAL(memcmp(exact, staged, sizeof exact), 0);
}

/* ---- the bound's assumption and tightness -------------------------------- */

/* The kernel's weights expf(x), x = fl(M_w - M*) <= 0: within 2^-23 exp(x) +
 * 2^-149, over the arguments the merge meets (0; a grid to -256; random ones
 * in the normal, subnormal and underflowing range; the masked sentinels). */
static void test_expf_within_one_ulp_on_merge_arguments(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    mpfr_t e, diff;
    mpfr_inits2(200, e, diff, (mpfr_ptr)0);
    size_t bad = 0;
    const size_t samples = RUNNING_ON_VALGRIND ? 20000 : 400000;
    for (size_t i = 0; i < samples + 4; i++) {
        float x = i < 2048                 ? -(float)i * 0.125f
                  : i < samples / 2        ? (float)(-110 * gsl_rng_uniform(rng))
                  : i < samples            ? (float)(-ldexp(1, (int)gsl_rng_uniform_int(rng, 40) - 30) * gsl_rng_uniform(rng))
                  : i == samples           ? -FLT_MAX / 2
                  : i == samples + 1       ? -INFINITY
                  : i == samples + 2       ? -FLT_MIN
                                           : -0.0f;
        mpfr_set_flt(e, x, MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        mpfr_sub_d(diff, e, (double)expf(x), MPFR_RNDN);
        double err = fabs(mpfr_get_d(diff, MPFR_RNDU));
        const ug_f32_error exp = ug_f32_op_error(ug_test_cpu_model(), UG_F32_EXP, x, x);
        double allowed = exp.rel * mpfr_get_d(e, MPFR_RNDD) + exp.abs;
        bad += !(err <= allowed);
    }
    CU_ASSERT_EQUAL(bad, 0);
    mpfr_clears(e, diff, (mpfr_ptr)0);
    mpfr_free_cache();
    gsl_rng_free(rng);
}

/* The bound has the size its derivation gives, with no blow-up: for a
 * realistic 32-workgroup merge at head_dim 512, bound <= 64 u (abs_sum + |r|)
 * + ulp(r) everywhere (nwg + log2(DV) + a few roundings, docs §3). So where
 * cond <= 64 an answer off by 2^-10 relative fails, and a flipped sign fails
 * wherever cond <= 2^16. (The Hadamard sum of a random row has cond ~ 18 /
 * |N(0,1)|, times the merge's own cancellation: few elements have cond <= 16.) */
static void test_bound_is_tight_on_well_conditioned_elements(void)
{
    const ug_family *f = ug_family_find("attn_reduce_fwht");
    enum { ROWS = 2, DV = 512, NWG = 32 };
    static float htmp[ROWS * NWG * (DV + 2)];
    static ug_ref_value ref[ROWS * DV];
    generate_rows(f, ROWS, DV, NWG, regime_index(f, "decode"), 17, htmp);
    attn_reduce_fwht_shape s = {ROWS, DV, NWG};
    CU_ASSERT_EQUAL_FATAL(attn_reduce_fwht_reference(&s, htmp, ug_test_cpu_model(), UG_REF_EXACT, ref).code, UG_OK);
    size_t too_loose = 0, moderate = 0, off_caught = 0, signed_elems = 0, flip_caught = 0;
    for (size_t i = 0; i < ROWS * DV; i++) {
        const ug_ref_value *r = &ref[i];
        const double magnitude = fabs(r->r_hi), cond = r->abs_sum / magnitude;
        too_loose += r->bound > 64 * 0x1p-24 * (r->abs_sum + magnitude) + ug_ulp_f32(magnitude);
        const float rn = ug_f32_from_bits(r->rn_bits);
        if (cond <= 0x1p16) {
            signed_elems++;
            flip_caught += ug_measure(ug_f32_bits(-rn), UG_F32, r).ratio > 1;
        }
        if (cond <= 64) {
            moderate++;
            off_caught += ug_measure(ug_f32_bits(rn * (1 + 0x1p-10f)), UG_F32, r).ratio > 1;
        }
    }
    CU_ASSERT_EQUAL(too_loose, 0);
    CU_ASSERT(moderate > 20);
    CU_ASSERT_EQUAL(off_caught, moderate);
    CU_ASSERT(signed_elems > ROWS * DV * 9 / 10);
    CU_ASSERT_EQUAL(flip_caught, signed_elems);
}

/* ---- rows outside the contract ------------------------------------------- */

static void expect_refused(one_row *r, const char *what)
{
    ug_status st = run_reference(r);
    CU_ASSERT_EQUAL(st.code, UG_EREF);
    if (!strstr(st.msg, what)) {
        printf("\n  message \"%s\" lacks \"%s\"", st.msg, what);
        CU_FAIL("message lacks an expected part");
    }
}

static void test_rows_outside_the_contract_are_refused(void)
{
    one_row *r = row_new(256, 2);
    set_stats(r, 0, 0.0f, -INFINITY);
    set_stats(r, 1, 0.0f, -INFINITY);
    expect_refused(r, "every M_w = -inf");
    set_stats(r, 0, NAN, 1.0f);
    expect_refused(r, "workgroup 0 has S = nan");
    set_stats(r, 0, 1e-35f, 0.0f);
    set_stats(r, 1, 0.0f, -FLT_MAX / 2);
    expect_refused(r, "has S = 1e-35");
    free(r);
}

/* A non-finite partial is no refusal (docs/nonfinite.md): the transform
 * spreads it over the row, with the signs of H and the sign table, and no
 * bound is stated. A weight 0 (M_w = -inf) times inf is NaN. */
static void test_nonfinite_partials_reach_the_whole_row(void)
{
    one_row *r = row_new(256, 2);
    set_stats(r, 0, 1.0f, 0.0f);
    set_stats(r, 1, 1.0f, -1.0f);
    *partial(r, 1, 7) = INFINITY;
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    size_t wrong = 0;
    for (size_t j = 0; j < 256; j++) {
        double expect = sign_of(j) * (popcount_parity(j & 7) ? -INFINITY : INFINITY);
        wrong += r->out[j].r_hi != expect || r->out[j].bound != INFINITY;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    set_stats(r, 1, 1.0f, -INFINITY);
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    for (size_t j = 0; j < 256; j++) wrong += !isnan(r->out[j].r_hi);
    CU_ASSERT_EQUAL(wrong, 0);
    *partial(r, 1, 7) = NAN;
    set_stats(r, 1, 1.0f, -1.0f);
    CU_ASSERT_EQUAL_FATAL(run_reference(r).code, UG_OK);
    for (size_t j = 0; j < 256; j++) wrong += !isnan(r->out[j].r_hi);
    CU_ASSERT_EQUAL(wrong, 0);
    free(r);
}

UG_TEST_SUITE(ref_attn_reduce_fwht_suite, "ref_attn_reduce_fwht",
              UG_TEST(test_both_sign_tables_are_the_upstream_bytes),
              UG_TEST(test_undo_of_the_premultiply_returns_the_input),
              UG_TEST(test_roundtrip_detects_a_table_differing_in_one_bit),
              UG_TEST(test_unit_impulse_gives_the_signs_over_sixteen),
              UG_TEST(test_constant_row_gives_one_spike),
              UG_TEST(test_weights_cancel_in_the_quotient),
              UG_TEST(test_equal_maxima_merge_by_hand),
              UG_TEST(test_fully_masked_row_is_zero_and_admits_only_zero),
              UG_TEST(test_reference_matches_the_definition),
              UG_TEST(test_modes_are_identical),
              UG_TEST(test_expf_within_one_ulp_on_merge_arguments),
              UG_TEST(test_bound_is_tight_on_well_conditioned_elements),
              UG_TEST(test_rows_outside_the_contract_are_refused),
              UG_TEST(test_nonfinite_partials_reach_the_whole_row));
