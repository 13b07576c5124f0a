/* The head_norm_rope reference: exact cases by hand first, then agreement
 * with a plain high-precision MPFR loop, then the assumptions its bounds make
 * (libm accuracy, the kernel's angle equal to the staged one where unflagged)
 * and a neighbour of RN exceeding the bound. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

#include "../harness/ulp.h"
#include "../ref/head_norm_rope.h"
#include "../ref/round.h"
#include "tests.h"

static uint64_t rng_state;

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
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_bf16_reference(&shape, x, weighted ? w : NULL, c, s, out).code, UG_OK);
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
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_bf16_reference(&shape, x, NULL, NULL, NULL, out).code, UG_OK);
    CU_ASSERT_EQUAL(out[0].r_hi, 1.5);
    for (int i = 1; i < 4; i++) CU_ASSERT_EQUAL(out[i].r_hi, 0.0);
}

/* Pair 0 turns by the position itself (theta^0 = 1); position 0 by nothing. */
static void f32_angle_of_pair_zero_is_the_position(void)
{
    const uint32_t positions[] = {0, 1, 4096, 500000, 16777215};
    for (size_t k = 0; k < sizeof positions / sizeof positions[0]; k++) {
        head_norm_rope_angle a;
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(positions[k], 0, 128, 1e6f, 1.0f, &a).code, UG_OK);
        CU_ASSERT_EQUAL(a.exact, (double)positions[k]);
        CU_ASSERT_EQUAL(a.staged, (float)positions[k]);
        CU_ASSERT_EQUAL(a.staged_error, 0.0);
        CU_ASSERT(!a.flagged);
        CU_ASSERT_EQUAL(a.kernel_vs_staged, 0.0);
    }
    head_norm_rope_angle a;
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(0, 17, 128, 1e4f, 3.0f, &a).code, UG_OK);
    CU_ASSERT_EQUAL(a.exact, 0.0);
    CU_ASSERT_EQUAL(a.staged, 0.0f);
}

/* Beyond 2^24 the position itself is rounded to f32 in the staged angle. */
static void f32_position_beyond_2_24_is_rounded(void)
{
    head_norm_rope_angle a;
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(16777217, 0, 64, 1e4f, 1.0f, &a).code, UG_OK);
    CU_ASSERT_EQUAL(a.exact, 16777217.0);
    CU_ASSERT_EQUAL(a.staged, 16777216.0f);
    CU_ASSERT(a.staged_error >= 1.0 && a.staged_error <= 1.0 + 0x1p-30);
}

/* ---- against a plain MPFR loop ------------------------------------------------- */

enum { HEADS = 2, DIM = 65, PAIRS = 24, SEQ = 3, PLAIN_PREC = 1000 };

/* out = rotation of x r w at 1000 bits, the angle pos theta^(-2i/d)/ff (exact)
 * or the staged f32 angle, formed with mpfr_pow. */
static double plain_mpfr_error(const float *x, const float *w, float eps, uint32_t pos, float theta, const float *ff,
                               ug_ref_mode mode, size_t elem, const ug_ref_value *r)
{
    mpfr_t ss, t, rr, lo, hi, angle, c, s, out;
    mpfr_inits2(PLAIN_PREC, ss, t, rr, lo, hi, angle, c, s, out, (mpfr_ptr)0);
    mpfr_set_zero(ss, 1);
    for (size_t i = 0; i < DIM; i++) {
        mpfr_set_flt(t, x[i], MPFR_RNDN);
        mpfr_sqr(t, t, MPFR_RNDN);
        mpfr_add(ss, ss, t, MPFR_RNDN);
    }
    mpfr_div_ui(ss, ss, DIM, MPFR_RNDN);
    mpfr_add_d(ss, ss, eps, MPFR_RNDN);
    mpfr_rec_sqrt(rr, ss, MPFR_RNDN);
    const size_t span = DIM / 2;
    size_t self = elem, pair = elem < span ? elem : elem - span;
    bool rotated = pair < PAIRS && (elem < PAIRS || (elem >= span && elem < span + PAIRS));
    mpfr_mul_d(lo, rr, x[self], MPFR_RNDN);
    mpfr_mul_d(lo, lo, w[self], MPFR_RNDN);
    if (rotated) {
        size_t other = elem < span ? elem + span : elem - span;
        mpfr_mul_d(hi, rr, x[other], MPFR_RNDN);
        mpfr_mul_d(hi, hi, w[other], MPFR_RNDN);
        if (mode == UG_REF_EXACT) {
            mpfr_set_si(t, -(long)(2 * pair), MPFR_RNDN);
            mpfr_div_ui(t, t, DIM, MPFR_RNDN);
            mpfr_set_flt(angle, theta, MPFR_RNDN);
            mpfr_pow(angle, angle, t, MPFR_RNDN);
            mpfr_mul_ui(angle, angle, pos, MPFR_RNDN);
            mpfr_div_d(angle, angle, ff[pair], MPFR_RNDN);
        } else {
            head_norm_rope_angle a;
            CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(pos, pair, DIM, theta, ff[pair], &a).code, UG_OK);
            mpfr_set_flt(angle, a.staged, MPFR_RNDN);
        }
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
    mpfr_clears(ss, t, rr, lo, hi, angle, c, s, out, (mpfr_ptr)0);
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
    for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_f32_reference(&shape, SEQ, 1e4f, x, w, positions, ff, (ug_ref_mode)mode,
                                                           out).code, UG_OK);
        double worst = 0;
        for (size_t k = 0; k < SEQ * HEADS * DIM; k += step) {
            size_t t = k / (HEADS * DIM), head_start = k - k % DIM;
            double err = plain_mpfr_error(x + head_start, w, 1e-6f, positions[t], 1e4f, ff, (ug_ref_mode)mode,
                                          k % DIM, &out[k]);
            worst = fmax(worst, err / out[k].abs_sum);
        }
        /* r_hi + r_lo keeps 106 bits; the reference's roundings are 2^-120. */
        CU_ASSERT(worst <= 0x1p-100);
    }
}

/* ---- the assumptions of the bounds ------------------------------------------------ */

/* The kernel's angle formula, as kernels/head_norm_rope.h states it. */
static float kernel_angle(uint32_t pos, size_t i, size_t d, float theta, float ff)
{
    const float log2_theta = (float)log2((double)theta);
    float f = exp2f(-(((float)(2 * i) / (float)d) * log2_theta)) / ff;
    return (float)pos * f;
}

/* Unflagged, the kernel's angle is the staged one bit for bit; flagged, it
 * lies within the stated deviations. Every pair of the sweep's head_dims for
 * both thetas at the longest position (theta 1e4, head_dim 257 holds a pair
 * where exp2f rounds to the other neighbour: the flag is needed). */
static void kernel_angle_is_staged_where_unflagged(void)
{
    static const size_t dims[] = {64, 65, 97, 128, 129, 256, 257, 512, 513};
    static const float thetas[] = {1e4f, 1e6f};
    size_t flagged = 0, differing = 0, bad = 0;
    const size_t step = RUNNING_ON_VALGRIND ? 16 : 1;
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
            for (size_t i = 0; i < dims[di] / 2; i += step) {
                head_norm_rope_angle a;
                CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(500000, i, dims[di], thetas[ti], 1.0f, &a).code, UG_OK);
                float k = kernel_angle(500000, i, dims[di], thetas[ti], 1.0f);
                flagged += a.flagged;
                differing += k != a.staged;
                /* a.exact is the nearest double: half an ulp of slack. */
                if ((!a.flagged && k != a.staged) || fabs((double)k - a.staged) > a.kernel_vs_staged ||
                    fabs((double)k - a.exact) > a.kernel_vs_exact + 0x1p-53 * fabs(a.exact))
                    UG_TEST_MISMATCH(bad, "theta %g head_dim %zu pair %zu: kernel %a staged %a exact %a", thetas[ti],
                                     dims[di], i, k, a.staged, a.exact);
            }
    CU_ASSERT_EQUAL(bad, 0);
    if (step == 1) CU_ASSERT(differing > 0 && flagged >= differing);
}

/* exp2f(x) is RN of some value within 2^-33 relative of 2^x: it lies
 * between RN(2^x (1 - 2^-33)) and RN(2^x (1 + 2^-33)). */
static void exp2f_is_a_rounding_within_the_assumed_window(void)
{
    rng_state = 0xA5A5A5A5u;
    mpfr_t e, lo, hi;
    mpfr_inits2(200, e, lo, hi, (mpfr_ptr)0);
    size_t bad = 0;
    const unsigned long samples = ug_test_random_samples() / 10;
    for (unsigned long k = 0; k < samples; k++) {
        float x = -uniform(0.0f, 40.0f);
        mpfr_set_flt(e, x, MPFR_RNDN);
        mpfr_exp2(e, e, MPFR_RNDN);
        mpfr_mul_d(lo, e, 1 - HEAD_NORM_ROPE_EXP2F_REL, MPFR_RNDD);
        mpfr_mul_d(hi, e, 1 + HEAD_NORM_ROPE_EXP2F_REL, MPFR_RNDU);
        float y = exp2f(x), ylo = ug_f32_from_bits(ug_mpfr_to_f32_bits(lo)), yhi = ug_f32_from_bits(ug_mpfr_to_f32_bits(hi));
        if (!(ylo <= y && y <= yhi)) UG_TEST_MISMATCH(bad, "exp2f(%a) = %a outside [%a, %a]", x, y, ylo, yhi);
    }
    CU_ASSERT_EQUAL(bad, 0);
    mpfr_clears(e, lo, hi, (mpfr_ptr)0);
}

/* log2 (binary64) within 2^-52 relative; cosf and sinf within one ulp
 * (2^-23 relative) plus 2^-149, up to angles of 2^32. */
static void log2_cosf_sinf_within_the_assumed_accuracy(void)
{
    rng_state = 0x12345678u;
    mpfr_t v, ref, d;
    mpfr_inits2(200, v, ref, d, (mpfr_ptr)0);
    size_t bad = 0;
    const unsigned long samples = ug_test_random_samples() / 10;
    for (unsigned long k = 0; k < samples; k++) {
        float theta = ldexpf(uniform(1.0f, 2.0f), (int)(k % 40) - 5);
        mpfr_set_flt(v, theta, MPFR_RNDN);
        mpfr_log2(ref, v, MPFR_RNDN);
        mpfr_sub_d(d, ref, log2((double)theta), MPFR_RNDN);
        if (fabs(mpfr_get_d(d, MPFR_RNDA)) > HEAD_NORM_ROPE_LOG2_REL * fabs(mpfr_get_d(ref, MPFR_RNDZ)))
            UG_TEST_MISMATCH(bad, "log2(%a)", theta);
        float a = ldexpf(uniform(1.0f, 2.0f), (int)(k % 56) - 24);
        mpfr_set_flt(v, a, MPFR_RNDN);
        for (int f = 0; f < 2; f++) {
            if (f) mpfr_sin(ref, v, MPFR_RNDN);
            else mpfr_cos(ref, v, MPFR_RNDN);
            mpfr_sub_d(d, ref, f ? (double)sinf(a) : (double)cosf(a), MPFR_RNDN);
            double allowed = HEAD_NORM_ROPE_TRIG_REL * fabs(mpfr_get_d(ref, MPFR_RNDZ)) + 0x1p-149;
            if (fabs(mpfr_get_d(d, MPFR_RNDA)) > allowed) UG_TEST_MISMATCH(bad, "%s(%a)", f ? "sinf" : "cosf", a);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    mpfr_clears(v, ref, d, (mpfr_ptr)0);
}

/* The finding of docs/error-model-head_norm_rope.md §5: at position 500000
 * the f32 angle is off the exact one by up to a few hundredths of a radian
 * (theta 1e4, head_dim 128), never more than the bound lets through. */
static void long_position_angle_error_is_centiradians(void)
{
    double worst = 0;
    for (size_t i = 0; i < 64; i += RUNNING_ON_VALGRIND ? 8 : 1) {
        head_norm_rope_angle a;
        CU_ASSERT_EQUAL_FATAL(head_norm_rope_angle_of(500000, i, 128, 1e4f, 1.0f, &a).code, UG_OK);
        worst = fmax(worst, a.staged_error);
        CU_ASSERT(a.staged_error <= a.kernel_vs_exact);
    }
    CU_ASSERT(worst > 0.005 && worst < 0.1);
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
    CU_ASSERT_EQUAL_FATAL(head_norm_rope_bf16_reference(&shape, x, w, c, s, out).code, UG_OK);
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
              UG_TEST(kernel_angle_is_staged_where_unflagged), UG_TEST(exp2f_is_a_rounding_within_the_assumed_window),
              UG_TEST(log2_cosf_sinf_within_the_assumed_accuracy), UG_TEST(long_position_angle_error_is_centiradians),
              UG_TEST(far_neighbour_exceeds_bf16_bound));
