/* SPDX-License-Identifier: MIT */
/* The head_norm_rope reference: exact cases by hand first, then agreement
 * with a plain high-precision MPFR loop, then the angle deviation its f32
 * bound admits (every formula a kernel author writes lies within it, a wrong
 * one does not), the profile's sin/cos range, and answers the bound must
 * reject (a far bf16 neighbour, an f32 rotation by a few times the admitted
 * deviation). */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

#include "../harness/ulp.h"
#include "../ref/head_norm_rope.h"
#include "../ref/round.h"
#include "tests.h"

static uint64_t rng_state;

#define CPU ug_test_cpu_model()

static float uniform(float lo, float hi) { return ug_test_uniform(&rng_state, lo, hi); }

/* ---- exact cases ------------------------------------------------------------ */

/* x = (2,2,2,2,2,2): ss/d = 4, r = 1/2, y = 1 (weight 3: y = 3); pairs
 * (0,2), (1,3) with (c, s) = (0, 1) and (0.5, 0.5); 4 and 5 pass through. */
static void bf16_rotation_by_hand(void)
{
    ug_bf16 x[6], w[6];
    for (int i = 0; i < 6; i++) x[i] = ug_bf16_from_f32(2.0f), w[i] = ug_bf16_from_f32(3.0f);
    const float c[2] = {0.0f, 0.5f}, s[2] = {1.0f, 0.5f};
    const head_norm_rope_shape shape = {1, 6, 2, 0.0f};
    ug_ref_value out[6];
    for (int weighted = 0; weighted < 2; weighted++) {
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_bf16_reference(CPU, &shape, x, weighted ? w : NULL, c, s, out).code, UG_OK);
        const double scale = weighted ? 3.0 : 1.0;
        const double want[6] = {-1, 0, 1, 1, 1, 1};
        for (int i = 0; i < 6; i++) {
            CU_ASSERT_EQUAL(out[i].r_hi, want[i] * scale);
            CU_ASSERT_EQUAL(out[i].r_lo, 0.0);
            CU_ASSERT_EQUAL(out[i].rn_bits, ug_bf16_from_f32((float)(want[i] * scale)));
        }
        CU_ASSERT(fabs(out[1].abs_sum - scale) <= scale * 0x1p-30); /* |y1 c1| + |y3 s1|, rounded up */
    }
}

/* eps inside the root: x = (3, 0, 0, 0), eps = 1.75: v = 9/4 + 7/4 = 4, y0 = 3/2. */
static void bf16_eps_inside_the_root(void)
{
    ug_bf16 x[4] = {ug_bf16_from_f32(3.0f), 0, 0, 0};
    const head_norm_rope_shape shape = {1, 4, 0, 1.75f};
    ug_ref_value out[4];
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_bf16_reference(CPU, &shape, x, NULL, NULL, NULL, out).code, UG_OK);
    CU_ASSERT_EQUAL(out[0].r_hi, 1.5);
    for (int i = 1; i < 4; i++) CU_ASSERT_EQUAL(out[i].r_hi, 0.0);
}

/* Pair 0 turns by the position itself (theta^0 = 1); position 0 by nothing,
 * and there every formula's angle is exactly 0. */
static void f32_angle_of_pair_zero_is_the_position(void)
{
    const uint32_t positions[] = {0, 1, 4096, 500000, 16777215};
    for (size_t k = 0; k < sizeof positions / sizeof positions[0]; k++) {
        head_norm_rope_angle a;
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(CPU, positions[k], 0, 128, 1e6f, NULL, &a).code, UG_OK);
        CU_ASSERT_EQUAL(a.exact, (double)positions[k]);
        CU_ASSERT(positions[k] != 0 || a.deviation == 0);
    }
    head_norm_rope_angle a;
    const float ff = 3.0f;
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(CPU, 0, 17, 128, 1e4f, &ff, &a).code, UG_OK);
    CU_ASSERT_EQUAL(a.exact, 0.0);
    CU_ASSERT_EQUAL(a.deviation, 0.0);
}

/* Beyond 2^24 a kernel's f32 position is rounded: the deviation admits it. */
static void f32_position_beyond_2_24_is_rounded(void)
{
    head_norm_rope_angle a;
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(CPU, 16777217, 0, 64, 1e4f, NULL, &a).code, UG_OK);
    CU_ASSERT_EQUAL(a.exact, 16777217.0);
    CU_ASSERT(a.deviation >= 1.0);
}

/* ---- against a plain MPFR loop ------------------------------------------------- */

enum { HEADS = 2, DIM = 65, PAIRS = 24, SEQ = 3, PLAIN_PREC = 1000 };

/* r = 1/sqrt(sum x_i^2 / d + eps) at the precision of r (tmp: scratch). */
static void plain_rms_scale(mpfr_ptr r, mpfr_ptr tmp, const float *x, size_t d, float eps)
{
    mpfr_set_zero(r, 1);
    for (size_t i = 0; i < d; i++) {
        mpfr_set_flt(tmp, x[i], MPFR_RNDN);
        mpfr_sqr(tmp, tmp, MPFR_RNDN);
        mpfr_add(r, r, tmp, MPFR_RNDN);
    }
    mpfr_div_ui(r, r, d, MPFR_RNDN);
    mpfr_add_d(r, r, eps, MPFR_RNDN);
    mpfr_rec_sqrt(r, r, MPFR_RNDN);
}

/* out = rotation of x r w at 1000 bits, the angle pos theta^(-2i/d)/ff
 * formed with mpfr_pow. */
static double plain_mpfr_error(const float *x, const float *w, float eps, uint32_t pos, float theta, const float *ff,
                               size_t elem, const ug_ref_value *r)
{
    mpfr_t t, rr, lo, hi, angle, c, s, out;
    mpfr_inits2(PLAIN_PREC, t, rr, lo, hi, angle, c, s, out, (mpfr_ptr)0);
    plain_rms_scale(rr, t, x, DIM, eps);
    const size_t span = DIM / 2;
    size_t self = elem, pair = elem < span ? elem : elem - span;
    bool rotated = pair < PAIRS && (elem < PAIRS || (elem >= span && elem < span + PAIRS));
    mpfr_mul_d(lo, rr, x[self], MPFR_RNDN);
    mpfr_mul_d(lo, lo, w[self], MPFR_RNDN);
    if (rotated) {
        size_t other = elem < span ? elem + span : elem - span;
        mpfr_mul_d(hi, rr, x[other], MPFR_RNDN);
        mpfr_mul_d(hi, hi, w[other], MPFR_RNDN);
        mpfr_set_si(t, -(long)(2 * pair), MPFR_RNDN);
        mpfr_div_ui(t, t, DIM, MPFR_RNDN);
        mpfr_set_flt(angle, theta, MPFR_RNDN);
        mpfr_pow(angle, angle, t, MPFR_RNDN);
        mpfr_mul_ui(angle, angle, pos, MPFR_RNDN);
        mpfr_div_d(angle, angle, ff[pair], MPFR_RNDN);
        mpfr_sin_cos(s, c, angle, MPFR_RNDN);
        /* lo: out_self = y_self c -+ y_other s */
        mpfr_mul(out, lo, c, MPFR_RNDN);
        mpfr_mul(t, hi, s, MPFR_RNDN);
        if (elem < span) mpfr_sub(out, out, t, MPFR_RNDN);
        else mpfr_add(out, out, t, MPFR_RNDN);
    } else {
        mpfr_set(out, lo, MPFR_RNDN);
    }
    mpfr_sub_d(out, out, r->r_hi, MPFR_RNDN);
    mpfr_sub_d(out, out, r->r_lo, MPFR_RNDN);
    double err = fabs(mpfr_get_d(out, MPFR_RNDU));
    mpfr_clears(t, rr, lo, hi, angle, c, s, out, (mpfr_ptr)0);
    return err;
}

static void f32_reference_matches_plain_mpfr_loop(void)
{
    rng_state = 0x5DEECE66Du;
    static float x[SEQ * HEADS * DIM], w[DIM], ff[PAIRS];
    const uint32_t positions[SEQ] = {500000, 0, 4097};
    for (size_t i = 0; i < SEQ * HEADS * DIM; i++) x[i] = uniform(-3, 3);
    for (size_t i = 0; i < DIM; i++) w[i] = uniform(0.5f, 1.5f);
    for (size_t i = 0; i < PAIRS; i++) ff[i] = i % 5 == 4 ? 1e30f : uniform(1, 8);
    const head_norm_rope_shape shape = {HEADS, DIM, PAIRS, 1e-6f};
    static ug_ref_value out[SEQ * HEADS * DIM];
    const size_t step = RUNNING_ON_VALGRIND ? 7 : 1;
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_f32_reference(CPU, &shape, SEQ, 1e4f, x, w, positions, ff, out).code, UG_OK);
    double worst = 0;
    for (size_t k = 0; k < SEQ * HEADS * DIM; k += step) {
        size_t t = k / (HEADS * DIM), head_start = k - k % DIM;
        double err = plain_mpfr_error(x + head_start, w, 1e-6f, positions[t], 1e4f, ff, k % DIM, &out[k]);
        worst = fmax(worst, err / out[k].abs_sum);
    }
    /* r_hi + r_lo keeps 106 bits; the reference's roundings are 2^-120. */
    CU_ASSERT(worst <= 0x1p-100);
}

/* ---- the angle deviation ------------------------------------------------------ */

/* The angle formulas kernel authors write, in f32 with this machine's libm
 * (inside the cpu profile); ff <= 0: no freq_factors. */
enum {
    F_RECIP_POWF,      /* HF / PyTorch: 1 / theta ** (arange(0, d, 2).float() / d) */
    F_POWF_NEGATED,    /* powf(theta, -(2i/d)) */
    F_EXP2F_LOG2,      /* the built-in kernel: exp2f(-(e * (float)log2(theta))) */
    F_EXP2F_LOG2F,     /* the same with log2f */
    F_EXPF_LOGF,       /* expf(-(e * logf(theta))) */
    F_EXPF_SCALED,     /* expf(2i * (-logf(theta) / d)): the constant folded first */
    F_TWO_OVER_D,      /* 1 / powf(theta, i * (2.0f / d)) */
    F_F64_TABLE,       /* inv_freq in f64, stored as f32, times the f32 position */
    F_F64_ANGLE,       /* the whole angle in f64, rounded once */
    F_COUNT,
    F_WRONG_POSITION = F_COUNT, /* the next position's angle (positions counted from 1) */
    F_WRONG_EXPONENT,           /* theta^(-2i/(d - 2)): the exponent over another dimension */
};

static float angle_formula(int f, uint32_t pos, size_t i, size_t d, float theta, float ff)
{
    const float e = (float)(2 * i) / (float)d, p = (float)pos;
    float w;
    switch (f) {
    case F_RECIP_POWF: w = 1.0f / powf(theta, e); break;
    case F_POWF_NEGATED: w = powf(theta, -e); break;
    case F_EXP2F_LOG2: w = exp2f(-(e * (float)log2((double)theta))); break;
    case F_EXP2F_LOG2F: w = exp2f(-(e * log2f(theta))); break;
    case F_EXPF_LOGF: w = expf(-(e * logf(theta))); break;
    case F_EXPF_SCALED: w = expf((float)(2 * i) * (-logf(theta) / (float)d)); break;
    case F_TWO_OVER_D: w = 1.0f / powf(theta, (float)i * (2.0f / (float)d)); break;
    case F_F64_TABLE: return p * (float)(pow((double)theta, -2.0 * (double)i / (double)d) / (ff > 0 ? ff : 1.0));
    case F_F64_ANGLE:
        return (float)((double)pos * pow((double)theta, -2.0 * (double)i / (double)d) / (ff > 0 ? ff : 1.0));
    case F_WRONG_POSITION: return angle_formula(F_RECIP_POWF, pos + 1, i, d, theta, ff);
    default: w = 1.0f / powf(theta, (float)(2 * i) / (float)(d - 2)); break;
    }
    return p * (ff > 0 ? w / ff : w);
}

/* Every admitted formula lies within the deviation on every pair of the
 * swept head_dims, thetas, positions and freq_factors (huge ones included);
 * the bound is not vacuous (with normal frequencies some formula reaches
 * more than a fifth of it: 0.39, exp2f at theta 1e6), and the two wrong
 * formulas leave it. */
static void every_formula_lies_within_the_deviation(void)
{
    static const size_t dims[] = {64, 65, 97, 128, 129, 256, 257, 512, 513};
    static const float thetas[] = {1e4f, 1e6f, 5e5f};
    static const float ffs[] = {0, 1.0f, 3.7f, 8.0f, 1e30f, FLT_MAX};
    static const uint32_t positions[] = {1, 4095, 4096, 65536, 500000, 1000000, 16777217, 4000000000u};
    size_t bad = 0, wrong_caught[2] = {0}, wrong_checked = 0;
    double tightest = 0;
    const size_t step = RUNNING_ON_VALGRIND ? 16 : 1;
    for (size_t ti = 0; ti < sizeof thetas / sizeof thetas[0]; ti++)
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
            for (size_t fi = 0; fi < sizeof ffs / sizeof ffs[0]; fi++)
                for (size_t pi = 0; pi < sizeof positions / sizeof positions[0]; pi++)
                    for (size_t i = 0; i < dims[di] / 2; i += step) {
                        head_norm_rope_angle a;
                        CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(CPU, positions[pi], i, dims[di], thetas[ti],
                                                                      ffs[fi] > 0 ? &ffs[fi] : NULL, &a).code,
                                              UG_OK);
                        /* a.exact is the nearest double: half an ulp of slack. */
                        const double allowed = a.deviation + 0x1p-53 * fabs(a.exact);
                        for (int f = 0; f < F_COUNT; f++) {
                            double off = fabs((double)angle_formula(f, positions[pi], i, dims[di], thetas[ti],
                                                                    ffs[fi]) - a.exact);
                            if (off > allowed)
                                UG_TEST_MISMATCH(bad, "formula %d theta %g d %zu ff %g pos %u pair %zu: off %g > %g", f,
                                                 thetas[ti], dims[di], ffs[fi], positions[pi], i, off, allowed);
                            if (positions[pi] <= 1000000 && ffs[fi] <= 8) tightest = fmax(tightest, off / allowed);
                        }
                        if (i == 0 || positions[pi] > 1000000 || ffs[fi] > 8) continue;
                        wrong_checked++;
                        for (int k = 0; k < 2; k++)
                            wrong_caught[k] += fabs((double)angle_formula(F_WRONG_POSITION + k, positions[pi], i,
                                                                          dims[di], thetas[ti], ffs[fi]) -
                                                    a.exact) > allowed;
                    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(tightest > 0.2 && tightest <= 1);
    /* The wrong position moves a small angle (theta^-1 at pos 1) by less
     * than the deviation of a large one, but most pairs show it. */
    CU_ASSERT(wrong_caught[0] > wrong_checked / 2);
    CU_ASSERT(wrong_caught[1] > wrong_checked / 2);
}

/* A profile whose sin and cos are stated on [-pi, pi] only (a GPU's fast
 * sin): the elements whose angle may leave that range get no bound (the
 * runner reports them), the others a finite one. Under the cpu profile
 * every element has a finite bound. */
static void sin_cos_outside_their_stated_range_give_no_bound(void)
{
    ug_f32_model fast = *CPU;
    for (int op = UG_F32_SIN; op <= UG_F32_COS; op++)
        fast.ops[op] = (ug_f32_op_allowance){.abs = 0x1p-21, .range_lo = -M_PI, .range_hi = M_PI};
    enum { D = 64, ROTATED = 24, TOKENS = 3 };
    static float x[TOKENS * D];
    static ug_ref_value out[TOKENS * D];
    rng_state = 7;
    for (size_t i = 0; i < TOKENS * D; i++) x[i] = uniform(-2, 2);
    const uint32_t positions[TOKENS] = {0, 3, 500000};
    const head_norm_rope_shape shape = {1, D, ROTATED, 1e-6f};
    size_t unbounded = 0;
    for (int profile = 0; profile < 2; profile++) {
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_f32_reference(profile ? &fast : CPU, &shape, TOKENS, 1e4f, x, NULL,
                                                           positions, NULL, out).code, UG_OK);
        for (size_t t = 0; t < TOKENS; t++)
            for (size_t k = 0; k < D; k++) {
                const size_t i = k < D / 2 ? k : k - D / 2;
                bool in_range = true;
                if (i < ROTATED) {
                    head_norm_rope_angle a;
                    CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(CPU, positions[t], i, D, 1e4f, NULL, &a).code,
                                          UG_OK);
                    in_range = a.exact + a.deviation < 3.14159;
                }
                const double bound = out[t * D + k].bound;
                CU_ASSERT(profile && !in_range ? isinf(bound) : isfinite(bound));
                unbounded += isinf(bound);
            }
    }
    CU_ASSERT(unbounded > 0);
}

/* The f32 bound rejects a rotation by four times the admitted deviation at a
 * long position, on every pair: the angle term is tight to a small factor,
 * not a blanket allowance. */
static void f32_rotation_by_four_deviations_exceeds_the_bound(void)
{
    enum { D = 128, ROTATED = 64 };
    static float x[D];
    static ug_ref_value out[D];
    rng_state = 11;
    for (size_t i = 0; i < D; i++) x[i] = uniform(0.5f, 2.0f) * (i % 3 ? 1.0f : -1.0f);
    const uint32_t pos = 500000;
    const head_norm_rope_shape shape = {1, D, ROTATED, 1e-6f};
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_f32_reference(CPU, &shape, 1, 1e4f, x, NULL, &pos, NULL, out).code, UG_OK);
    mpfr_t scale, y_lo, y_hi, c, s, o;
    mpfr_inits2(256, scale, y_lo, y_hi, c, s, o, (mpfr_ptr)0);
    plain_rms_scale(scale, o, x, D, 1e-6f);
    size_t checked = 0, caught = 0;
    for (size_t i = 1; i < ROTATED; i++) {
        head_norm_rope_angle a;
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(CPU, pos, i, D, 1e4f, NULL, &a).code, UG_OK);
        if (a.deviation < 1e-3 || a.deviation > 0.25) continue; /* where the angle term dominates */
        mpfr_mul_d(y_lo, scale, x[i], MPFR_RNDN);
        mpfr_mul_d(y_hi, scale, x[i + D / 2], MPFR_RNDN);
        mpfr_set_d(o, a.exact + 4 * a.deviation, MPFR_RNDN);
        mpfr_sin_cos(s, c, o, MPFR_RNDN);
        /* The error vector has length 4 dev |y|: one of its components is
         * at least 2.8 dev |y|, beyond the bound's dev |y| and rounding. */
        mpfr_mul(o, y_hi, s, MPFR_RNDN);
        mpfr_fms(o, y_lo, c, o, MPFR_RNDN); /* out_lo = y_lo c - y_hi s */
        const double lo_ratio = ug_measure(ug_mpfr_to_f32_bits(o), UG_F32, &out[i]).ratio;
        mpfr_mul(o, y_lo, s, MPFR_RNDN);
        mpfr_fma(o, y_hi, c, o, MPFR_RNDN); /* out_hi = y_hi c + y_lo s */
        const double hi_ratio = ug_measure(ug_mpfr_to_f32_bits(o), UG_F32, &out[i + D / 2]).ratio;
        checked++;
        caught += fmax(lo_ratio, hi_ratio) > 1;
    }
    mpfr_clears(scale, y_lo, y_hi, c, s, o, (mpfr_ptr)0);
    CU_ASSERT(checked >= 4);
    CU_ASSERT_EQUAL(caught, checked);
}

/* ---- the bound can fail ----------------------------------------------------------- */

/* A kernel answering the far neighbour of RN(r) on a well-conditioned bf16
 * element exceeds the bound. */
static void far_neighbour_exceeds_bf16_bound(void)
{
    rng_state = 99;
    enum { H = 8, D = 128, P = 48 };
    static ug_bf16 x[H * D], w[D];
    static float c[P], s[P];
    static ug_ref_value out[H * D];
    for (size_t i = 0; i < H * D; i++) x[i] = ug_bf16_from_f32(uniform(-2, 2));
    for (size_t i = 0; i < D; i++) w[i] = ug_bf16_from_f32(uniform(0.5f, 1.5f));
    for (size_t i = 0; i < P; i++) c[i] = cosf((float)i * 0.37f), s[i] = sinf((float)i * 0.37f);
    const head_norm_rope_shape shape = {H, D, P, 1e-6f};
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_bf16_reference(CPU, &shape, x, w, c, s, out).code, UG_OK);
    size_t checked = 0, caught = 0;
    for (size_t i = 0; i < H * D; i++) {
        const ug_ref_value *r = &out[i];
        if (r->r_hi == 0 || r->abs_sum / fabs(r->r_hi) > 4 || (r->rn_bits & 0x7F) == 0) continue;
        float rn = ug_bf16_to_f32((ug_bf16)r->rn_bits);
        bool r_above = r->r_hi + r->r_lo > rn;
        ug_bf16 far = (ug_bf16)(r->rn_bits + (((r->rn_bits & 0x8000) != 0) == r_above ? 1 : -1));
        ug_elem_error e = ug_measure(far, UG_BF16, r);
        checked++;
        caught += e.ratio > 1;
    }
    CU_ASSERT(checked > 500);
    CU_ASSERT_EQUAL(caught, checked);
}

UG_TEST_SUITE(ref_head_norm_rope_suite, "ref_head_norm_rope", UG_TEST(bf16_rotation_by_hand),
              UG_TEST(bf16_eps_inside_the_root), UG_TEST(f32_angle_of_pair_zero_is_the_position),
              UG_TEST(f32_position_beyond_2_24_is_rounded), UG_TEST(f32_reference_matches_plain_mpfr_loop),
              UG_TEST(every_formula_lies_within_the_deviation),
              UG_TEST(sin_cos_outside_their_stated_range_give_no_bound),
              UG_TEST(f32_rotation_by_four_deviations_exceeds_the_bound), UG_TEST(far_neighbour_exceeds_bf16_bound));
