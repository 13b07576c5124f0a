/* SPDX-License-Identifier: MIT */
/* The exact recurrence of the gated delta rule (ref/gdn_e2e.c): exact special
 * cases first (no gate and no beta leave h0 untouched, two tokens by hand,
 * one decay), then agreement with a plain 500-bit MPFR loop that keeps the
 * whole state decayed in place (no rescaling), on mild, strong, zero and
 * growing gates; then what the descriptor makes of it (no bound: the ratio
 * reads 0; staged == exact, computed once). */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../harness/family.h"
#include "../harness/ulp.h"
#include "../kernels/gdn_e2e.h"
#include "../ref/gdn_e2e.h"
#include "../ref/gdn_e2e_divide.h"
#include "../ref/gdn_e2e_wide.h"
#include "../ref/ref.h"
#include "../ref/round.h"
#include "../ref/rowsimd.h"
#include "tests.h"

/* Inputs and outputs of one reference call, any shape. */
typedef struct {
    gdn_e2e_shape s;
    float scale;
    ug_bf16 *q, *k, *v;
    float *beta, *g, *h0;
    ug_ref_value *o, *final_state;
} ref_case;

static ref_case *ref_case_new(gdn_e2e_shape s, float scale)
{
    ref_case *c = calloc(1, sizeof *c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    c->s = s;
    c->scale = scale;
    const size_t tokens = s.b * s.t, kv = s.k * s.v;
    c->q = calloc(tokens * s.hg * s.k, sizeof *c->q);
    c->k = calloc(tokens * s.hg * s.k, sizeof *c->k);
    c->v = calloc(tokens * s.h * s.v, sizeof *c->v);
    c->beta = calloc(tokens * s.h, sizeof *c->beta);
    c->g = calloc(tokens * s.h, sizeof *c->g);
    c->h0 = calloc(s.b * s.h * kv, sizeof *c->h0);
    c->o = calloc(tokens * s.h * s.v, sizeof *c->o);
    c->final_state = calloc(s.b * s.h * kv, sizeof *c->final_state);
    CU_ASSERT_FATAL(c->q && c->k && c->v && c->beta && c->g && c->h0 && c->o && c->final_state);
    return c;
}

static void ref_case_free(ref_case *c)
{
    free(c->q), free(c->k), free(c->v), free(c->beta), free(c->g), free(c->h0);
    free(c->o), free(c->final_state);
    free(c);
}

static void ref_case_run(ref_case *c, mpfr_prec_t prec)
{
    ug_status st = gdn_e2e_reference(&c->s, prec, c->scale, c->q, c->k, c->v, c->beta, c->g,
                                     c->s.has_h0 ? c->h0 : NULL, c->o, c->final_state);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
}

/* r == x exactly (x a double). */
static void expect_exact(const ug_ref_value *r, double x, ug_dtype t)
{
    CU_ASSERT_EQUAL(r->r_hi, x);
    CU_ASSERT_EQUAL(r->r_lo, 0.0);
    CU_ASSERT_EQUAL(r->rn_bits, t == UG_BF16 ? ug_bf16_from_f32((float)x) : ug_f32_bits((float)x));
}

/* The reference value r_hi + r_lo (106 bits) is want to within 2^-104
 * relative, and its correct rounding is want's. */
static bool agrees(const mpfr_t want, const ug_ref_value *r, ug_dtype t)
{
    const uint32_t rn = t == UG_BF16 ? ug_mpfr_to_bf16(want) : ug_mpfr_to_f32_bits(want);
    if (r->rn_bits != rn) return false;
    if (mpfr_zero_p(want)) return r->r_hi == 0 && r->r_lo == 0;
    mpfr_t diff;
    mpfr_init2(diff, mpfr_get_prec(want) + 200);
    mpfr_sub_d(diff, want, r->r_hi, MPFR_RNDN);
    mpfr_sub_d(diff, diff, r->r_lo, MPFR_RNDN);
    bool close = mpfr_zero_p(diff) || mpfr_get_exp(diff) <= mpfr_get_exp(want) - 104;
    mpfr_clear(diff);
    return close;
}

static void test_scale_is_the_kernels(void)
{
    CU_ASSERT_EQUAL(ug_f32_bits(gdn_e2e_reference_scale(128)), 0x3DB504F3u);
    CU_ASSERT_EQUAL(ug_f32_bits(gdn_e2e_reference_scale(128)), ug_f32_bits(gdn_e2e_scale(128)));
    CU_ASSERT_EQUAL(gdn_e2e_reference_scale(64), 0.125f);
    CU_ASSERT_EQUAL(gdn_e2e_reference_scale(4), 0.5f);
}

/* g = 0 and beta = 0: S stays h0 (final_state == h0 exactly) and
 * o = scale h0ᵀq, formed here as one exact sum (f32 x bf16 products are
 * exact in binary64; their sum and the f32 scale exact at 400 bits). */
static void test_no_gate_and_no_beta_leave_h0_untouched(void)
{
    gdn_e2e_shape s = {1, 3, 1, 2, 128, 8, true};
    ref_case *c = ref_case_new(s, gdn_e2e_reference_scale(128));
    uint64_t rng = 42;
    for (size_t i = 0; i < s.t * s.k; i++) {
        c->q[i] = ug_bf16_from_f32(ug_test_uniform(&rng, -0.2f, 0.2f));
        c->k[i] = ug_bf16_from_f32(ug_test_uniform(&rng, -0.2f, 0.2f));
    }
    for (size_t i = 0; i < s.t * s.h * s.v; i++) c->v[i] = ug_bf16_from_f32(ug_test_uniform(&rng, -1, 1));
    for (size_t i = 0; i < s.h * s.k * s.v; i++) c->h0[i] = ug_test_uniform(&rng, -2, 2);
    ref_case_run(c, GDN_E2E_REF_PREC);

    for (size_t i = 0; i < s.h * s.k * s.v; i++) expect_exact(&c->final_state[i], c->h0[i], UG_F32);
    mpfr_t sum, want;
    mpfr_inits2(400, sum, want, (mpfr_ptr)0);
    for (size_t t = 0; t < s.t; t++)
        for (size_t h = 0; h < s.h; h++)
            for (size_t vv = 0; vv < s.v; vv++) {
                mpfr_set_zero(sum, 1);
                double abs_sum = 0;
                for (size_t kk = 0; kk < s.k; kk++) {
                    double term = (double)c->h0[(h * s.k + kk) * s.v + vv] * ug_bf16_to_f32(c->q[t * s.k + kk]);
                    mpfr_add_d(sum, sum, term, MPFR_RNDN); /* exact at 400 bits */
                    abs_sum += fabs(term);
                }
                mpfr_mul_d(want, sum, c->scale, MPFR_RNDN);
                const ug_ref_value *r = &c->o[(t * s.h + h) * s.v + vv];
                CU_ASSERT_TRUE(agrees(want, r, UG_BF16));
                CU_ASSERT_DOUBLE_EQUAL(r->abs_sum, abs_sum * c->scale, 1e-12 * abs_sum);
            }
    mpfr_clears(sum, want, (mpfr_ptr)0);
    ref_case_free(c);
}

/* K = 2, V = 1, no gates, by hand:
 *   token 0: h0 = (1, 2), k = (1/2, 1/4), v = 3, beta = 1/2, q = (1, -1)
 *            kᵀS = 1, d = 1/2 (3 - 1) = 1, S = (3/2, 9/4), o = scale (3/2 - 9/4)
 *   token 1: k = (1, 0), v = 0, beta = 1, q = (0, 1): the key's component is
 *            projected out: kᵀS = 3/2, d = -3/2, S = (0, 9/4), o = scale 9/4
 * abs_sum: o_0 = scale (3/2 + 9/4), o_1 = scale 9/4; final = |S'| + |k||d|
 * of token 1 = (3/2 + 3/2, 9/4 + 0). */
static void test_two_tokens_by_hand(void)
{
    gdn_e2e_shape s = {1, 2, 1, 1, 2, 1, true};
    ref_case *c = ref_case_new(s, 0.5f);
    const float k[] = {0.5f, 0.25f, 1.0f, 0.0f}, q[] = {1.0f, -1.0f, 0.0f, 1.0f};
    for (size_t i = 0; i < 4; i++) c->k[i] = ug_bf16_from_f32(k[i]), c->q[i] = ug_bf16_from_f32(q[i]);
    c->v[0] = ug_bf16_from_f32(3.0f);
    c->v[1] = ug_bf16_from_f32(0.0f);
    c->beta[0] = 0.5f;
    c->beta[1] = 1.0f;
    c->h0[0] = 1.0f;
    c->h0[1] = 2.0f;
    ref_case_run(c, GDN_E2E_REF_PREC);
    expect_exact(&c->o[0], 0.5 * (1.5 - 2.25), UG_BF16);
    expect_exact(&c->o[1], 0.5 * 2.25, UG_BF16);
    expect_exact(&c->final_state[0], 0.0, UG_F32);
    expect_exact(&c->final_state[1], 2.25, UG_F32);
    CU_ASSERT_DOUBLE_EQUAL(c->o[0].abs_sum, 0.5 * 3.75, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(c->o[1].abs_sum, 0.5 * 2.25, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(c->final_state[0].abs_sum, 3.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(c->final_state[1].abs_sum, 2.25, 1e-15);
    ref_case_free(c);
}

/* One token, beta = 0, gate g: final = RN_f32(e^g h0), from MPFR directly. */
static void test_one_decay_is_correctly_rounded(void)
{
    static const float gates[] = {-1.0f, -0.0625f, -17.5f, -300.0f, 2.0f};
    gdn_e2e_shape s = {1, 1, 1, 1, 4, 2, true};
    for (size_t gi = 0; gi < sizeof gates / sizeof gates[0]; gi++) {
        ref_case *c = ref_case_new(s, 1.0f);
        c->g[0] = gates[gi];
        for (size_t i = 0; i < 8; i++) c->h0[i] = (float)(i + 1) * 0.375f;
        ref_case_run(c, GDN_E2E_REF_PREC);
        mpfr_t e;
        mpfr_init2(e, 300);
        for (size_t i = 0; i < 8; i++) {
            mpfr_set_flt(e, gates[gi], MPFR_RNDN);
            mpfr_exp(e, e, MPFR_RNDN);
            mpfr_mul_d(e, e, c->h0[i], MPFR_RNDN);
            CU_ASSERT_EQUAL(c->final_state[i].rn_bits, ug_mpfr_to_f32_bits(e));
            CU_ASSERT_DOUBLE_EQUAL(c->final_state[i].r_hi, mpfr_get_d(e, MPFR_RNDN), 0);
        }
        mpfr_clear(e);
        ref_case_free(c);
    }
}

/* ---- against a plain 500-bit loop -------------------------------------------------- */

typedef enum { GATES_MILD, GATES_STRONG, GATES_ZERO, GATES_GROWING, N_GATE_KINDS } gate_kind;

static float draw_gate(gsl_rng *rng, gate_kind kind)
{
    switch (kind) {
    case GATES_MILD: return (float)-gsl_ran_flat(rng, 0, 0.5);
    case GATES_STRONG: return (float)-gsl_ran_flat(rng, 2, 20); /* the rescaling folds c into Ŝ often */
    case GATES_ZERO: return 0.0f;
    default: return (float)gsl_ran_flat(rng, 2, 4);             /* c grows past 2^200 */
    }
}

static void fill_random(ref_case *c, gsl_rng *rng, gate_kind kind)
{
    const gdn_e2e_shape *s = &c->s;
    for (size_t i = 0; i < s->b * s->t * s->hg * s->k; i++) {
        c->q[i] = ug_bf16_from_f32((float)gsl_ran_gaussian(rng, 0.2));
        c->k[i] = ug_bf16_from_f32((float)gsl_ran_gaussian(rng, 1.0 / sqrt((double)s->k)));
    }
    for (size_t i = 0; i < s->b * s->t * s->h * s->v; i++) c->v[i] = ug_bf16_from_f32((float)gsl_ran_gaussian(rng, 1));
    for (size_t i = 0; i < s->b * s->t * s->h; i++) {
        c->beta[i] = (float)gsl_rng_uniform(rng);
        c->g[i] = draw_gate(rng, kind);
    }
    for (size_t i = 0; i < s->b * s->h * s->k * s->v; i++) c->h0[i] = (float)gsl_ran_gaussian(rng, 0.5);
}

/* The recurrence as written in SPEC §1.3, the whole state decayed in place,
 * at 500 bits; compares every output with the reference's double-double
 * (106 bits: agreement to 2^-104 relative) and its correct rounding. */
static void compare_with_plain_loop(const ref_case *c)
{
    const gdn_e2e_shape *s = &c->s;
    enum { PREC = 500 };
    mpfr_t *state = malloc(s->k * s->v * sizeof *state), e, acc, d, x;
    CU_ASSERT_PTR_NOT_NULL_FATAL(state);
    for (size_t i = 0; i < s->k * s->v; i++) mpfr_init2(state[i], PREC);
    mpfr_inits2(PREC, e, acc, d, x, (mpfr_ptr)0);
    size_t bad = 0;
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++) {
            const size_t kh = h / (s->h / s->hg), kv = s->k * s->v;
            for (size_t i = 0; i < kv; i++)
                mpfr_set_flt(state[i], s->has_h0 ? c->h0[(b * s->h + h) * kv + i] : 0.0f, MPFR_RNDN);
            for (size_t t = 0; t < s->t; t++) {
                const size_t tok = (b * s->t + t) * s->h + h, key_row = ((b * s->t + t) * s->hg + kh) * s->k;
                const ug_bf16 *k = c->k + key_row, *q = c->q + key_row;
                mpfr_set_flt(e, c->g[tok], MPFR_RNDN);
                mpfr_exp(e, e, MPFR_RNDN);
                for (size_t i = 0; i < s->k * s->v; i++) mpfr_mul(state[i], state[i], e, MPFR_RNDN);
                for (size_t vv = 0; vv < s->v; vv++) {
                    mpfr_set_zero(acc, 1);
                    for (size_t kk = 0; kk < s->k; kk++) {
                        mpfr_mul_d(x, state[kk * s->v + vv], ug_bf16_to_f32(k[kk]), MPFR_RNDN);
                        mpfr_add(acc, acc, x, MPFR_RNDN);
                    }
                    mpfr_d_sub(d, ug_bf16_to_f32(c->v[tok * s->v + vv]), acc, MPFR_RNDN);
                    mpfr_mul_d(d, d, c->beta[tok], MPFR_RNDN);
                    for (size_t kk = 0; kk < s->k; kk++) {
                        mpfr_mul_d(x, d, ug_bf16_to_f32(k[kk]), MPFR_RNDN);
                        mpfr_add(state[kk * s->v + vv], state[kk * s->v + vv], x, MPFR_RNDN);
                    }
                }
                for (size_t vv = 0; vv < s->v; vv++) {
                    mpfr_set_zero(acc, 1);
                    for (size_t kk = 0; kk < s->k; kk++) {
                        mpfr_mul_d(x, state[kk * s->v + vv], ug_bf16_to_f32(q[kk]), MPFR_RNDN);
                        mpfr_add(acc, acc, x, MPFR_RNDN);
                    }
                    mpfr_mul_d(acc, acc, c->scale, MPFR_RNDN);
                    const ug_ref_value *r = &c->o[tok * s->v + vv];
                    if (!agrees(acc, r, UG_BF16))
                        UG_TEST_MISMATCH(bad, "o[%zu]: reference %a + %a, plain loop %a", tok * s->v + vv, r->r_hi,
                                         r->r_lo, mpfr_get_d(acc, MPFR_RNDN));
                }
            }
            for (size_t i = 0; i < s->k * s->v; i++) {
                const ug_ref_value *r = &c->final_state[(b * s->h + h) * s->k * s->v + i];
                if (!agrees(state[i], r, UG_F32))
                    UG_TEST_MISMATCH(bad, "final_state[%zu]: reference %a + %a, plain loop %a", i, r->r_hi, r->r_lo,
                                     mpfr_get_d(state[i], MPFR_RNDN));
            }
        }
    CU_ASSERT_EQUAL(bad, 0);
    for (size_t i = 0; i < s->k * s->v; i++) mpfr_clear(state[i]);
    free(state);
    mpfr_clears(e, acc, d, x, (mpfr_ptr)0);
}

static void test_agrees_with_a_plain_500_bit_loop(void)
{
    const gdn_e2e_shape s = {2, RUNNING_ON_VALGRIND ? 24 : 96, 1, 2, 32, 8, true};
    const size_t kinds = RUNNING_ON_VALGRIND ? 2 : N_GATE_KINDS;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (size_t kind = 0; kind < kinds; kind++) {
        gsl_rng_set(rng, 500 + kind);
        ref_case *c = ref_case_new(s, gdn_e2e_reference_scale(s.k));
        fill_random(c, rng, (gate_kind)kind);
        ref_case_run(c, GDN_E2E_REF_PREC);
        compare_with_plain_loop(c);
        ref_case_free(c);
    }
    gsl_rng_free(rng);
}

/* GQA: value heads 2h and 2h+1 read key head h. */
static void test_agrees_with_the_plain_loop_under_gqa_without_h0(void)
{
    const gdn_e2e_shape s = {1, RUNNING_ON_VALGRIND ? 16 : 64, 2, 4, 16, 8, false};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 9);
    ref_case *c = ref_case_new(s, gdn_e2e_reference_scale(s.k));
    fill_random(c, rng, GATES_MILD);
    ref_case_run(c, GDN_E2E_REF_PREC);
    compare_with_plain_loop(c);
    ref_case_free(c);
    gsl_rng_free(rng);
}

/* ---- through the descriptor ----------------------------------------------------------- */

typedef struct {
    const ug_family *f;
    ug_params p;
    ug_buf bufs[UG_MAX_BUFFERS];
} descriptor_case;

static void descriptor_case_open(descriptor_case *dc, unsigned long seed)
{
    dc->f = ug_family_find("gdn_e2e");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dc->f);
    /* The reference takes any K (the kernel only K = 128): small, so that
     * the several reference runs below stay cheap. */
    static const char *const names[] = {"B", "T", "Hg", "H", "K", "V", "BT", "has_h0"};
    static const double values[] = {1, 64, 1, 2, 16, 8, 64, 1};
    memset(&dc->p, 0, sizeof dc->p);
    for (size_t i = 0; i < 8; i++) dc->p.v[ug_family_param_index(dc->f, names[i])] = values[i];
    for (size_t i = 0; i < dc->f->n_buffers; i++) {
        CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(dc->f, &dc->p, i, &dc->bufs[i].count).code, UG_OK);
        dc->bufs[i].dtype = dc->f->buffers[i].dtype;
        dc->bufs[i].data = calloc(dc->bufs[i].count, ug_dtype_size(dc->bufs[i].dtype));
        CU_ASSERT_PTR_NOT_NULL_FATAL(dc->bufs[i].data);
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    CU_ASSERT_EQUAL_FATAL(dc->f->generate(&dc->p, 0, rng, dc->bufs).code, UG_OK);
    gsl_rng_free(rng);
}

static void descriptor_case_close(descriptor_case *dc)
{
    for (size_t i = 0; i < dc->f->n_buffers; i++) free(dc->bufs[i].data);
}

/* Reference values of both outputs in one mode (o first, then final_state). */
static ug_ref_value **descriptor_reference(const descriptor_case *dc, ug_ref_mode mode)
{
    ug_ref_value **outs = calloc(2, sizeof *outs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(outs);
    for (int o = 0; o < 2; o++) {
        outs[o] = calloc(dc->bufs[6 + o].count, sizeof **outs);
        CU_ASSERT_PTR_NOT_NULL_FATAL(outs[o]);
    }
    CU_ASSERT_EQUAL_FATAL(dc->f->reference(&dc->p, dc->bufs, ug_test_cpu_model(), mode, outs).code, UG_OK);
    return outs;
}

static void free_values(ug_ref_value **outs)
{
    free(outs[0]);
    free(outs[1]);
    free(outs);
}

static bool same_values(ug_ref_value *const *a, ug_ref_value *const *b, const descriptor_case *dc)
{
    return memcmp(a[0], b[0], dc->bufs[6].count * sizeof **a) == 0 &&
           memcmp(a[1], b[1], dc->bufs[7].count * sizeof **a) == 0;
}

/* No a-priori bound: every bound is +inf, and a kernel answer reads ratio 0
 * with its condition number defined. */
static void test_bounds_are_infinite_and_ratios_read_zero(void)
{
    descriptor_case dc;
    descriptor_case_open(&dc, 3);
    ug_ref_value **exact = descriptor_reference(&dc, UG_REF_EXACT);
    for (int o = 0; o < 2; o++)
        for (size_t i = 0; i < dc.bufs[6 + o].count; i++) {
            const ug_ref_value *r = &exact[o][i];
            CU_ASSERT(isinf(r->bound) && r->bound > 0);
            const uint32_t neighbour = r->rn_bits + 3; /* a wrong answer, three values off */
            ug_elem_error e = ug_measure(neighbour, o == 0 ? UG_BF16 : UG_F32, r);
            CU_ASSERT_EQUAL(e.ratio, 0.0);
            CU_ASSERT_EQUAL(e.ulp_dist, 3);
            CU_ASSERT(isfinite(e.cond) && e.cond >= 0);
        }
    free_values(descriptor_reference(&dc, UG_REF_STAGED));
    free_values(exact);
    descriptor_case_close(&dc);
}

/* staged == exact, and the staged call after an exact one on the same inputs
 * takes the kept values; on changed inputs it computes afresh. */
static void test_staged_mode_equals_exact_and_follows_the_inputs(void)
{
    descriptor_case dc;
    descriptor_case_open(&dc, 4);
    ug_ref_value **exact = descriptor_reference(&dc, UG_REF_EXACT);
    ug_ref_value **staged = descriptor_reference(&dc, UG_REF_STAGED);
    CU_ASSERT_TRUE(same_values(exact, staged, &dc));
    ug_ref_value **staged_again = descriptor_reference(&dc, UG_REF_STAGED); /* nothing kept: computed */
    CU_ASSERT_TRUE(same_values(exact, staged_again, &dc));
    free_values(staged_again);
    free_values(staged);

    ug_ref_value **before = descriptor_reference(&dc, UG_REF_EXACT);
    ug_bf16 *v = dc.bufs[2].data;
    v[0] = ug_bf16_from_f32(ug_bf16_to_f32(v[0]) + 1.0f); /* token 0, head 0, column 0 */
    ug_ref_value **after = descriptor_reference(&dc, UG_REF_STAGED);
    CU_ASSERT_FALSE(same_values(before, after, &dc));
    ug_ref_value **fresh = descriptor_reference(&dc, UG_REF_EXACT);
    CU_ASSERT_TRUE(same_values(fresh, after, &dc));
    free_values(descriptor_reference(&dc, UG_REF_STAGED));
    free_values(fresh);
    free_values(after);
    free_values(before);
    free_values(exact);
    descriptor_case_close(&dc);
}

/* ---- the division by c (ref/gdn_e2e_divide.h) ------------------------------------------- */

/* gdn_e2e_divide(d / c) against mpfr_div, value and sign; returns whether the reciprocal decided. */
static bool divide_agrees(mpfr_srcptr d, mpfr_srcptr c, mpfr_prec_t prec)
{
    gdn_e2e_divider dv;
    gdn_e2e_divider_init(&dv, prec);
    gdn_e2e_divider_set(&dv, c);
    mpfr_t got, want;
    mpfr_inits2(prec, got, want, (mpfr_ptr)0);
    const bool decided = gdn_e2e_divide(got, d, c, &dv);
    mpfr_div(want, d, c, MPFR_RNDN);
    if (mpfr_nan_p(want)) {
        CU_ASSERT_TRUE(mpfr_nan_p(got));
    } else {
        CU_ASSERT_TRUE(mpfr_equal_p(got, want) || (mpfr_zero_p(got) && mpfr_zero_p(want)));
        CU_ASSERT_EQUAL(mpfr_signbit(got), mpfr_signbit(want));
    }
    mpfr_clears(got, want, (mpfr_ptr)0);
    gdn_e2e_divider_clear(&dv);
    return decided;
}

/* Random quotients at the production precision (the limb check) and at
 * 100 bits (mpfr_can_round), c in [1/2, 1) as the grid form keeps it and
 * anywhere the floating form's does, d of any sign and far exponents:
 * every one equals mpfr_div's, and the reciprocal decides (nearly) all. */
static void test_division_by_c_is_mpfr_div_on_random_values(void)
{
    const mpfr_prec_t precs[] = {GDN_E2E_REF_PREC, 100};
    gmp_randstate_t rs;
    gmp_randinit_default(rs);
    gmp_randseed_ui(rs, 20261126);
    for (size_t pi = 0; pi < 2; pi++) {
        mpfr_t d, c;
        mpfr_inits2(precs[pi], d, c, (mpfr_ptr)0);
        size_t decided = 0, n = 0;
        for (int i = 0; i < 4000; i++, n++) {
            mpfr_urandomb(c, rs);
            if (mpfr_zero_p(c)) mpfr_set_ui(c, 1, MPFR_RNDN);
            mpfr_set_exp(c, i % 4 == 0 ? 0 : (i % 4 == 1 ? -200 : (i % 4 == 2 ? 200 : 1)));
            mpfr_urandomb(d, rs);
            if (mpfr_zero_p(d)) mpfr_set_ui(d, 1, MPFR_RNDN);
            const long exps[] = {0, -1000000, 1000000, 37};
            mpfr_set_exp(d, exps[(i / 4) % 4]);
            if (i % 3 == 0) mpfr_neg(d, d, MPFR_RNDN);
            if (i % 5 == 0) mpfr_neg(c, c, MPFR_RNDN);
            decided += divide_agrees(d, c, precs[pi]);
        }
        CU_ASSERT_TRUE(decided + 2 >= n);
        mpfr_clears(d, c, (mpfr_ptr)0);
    }
    gmp_randclear(rs);
}

/* Quotients the reciprocal cannot decide, at prec = 192 (the limb check)
 * and 100 bits (mpfr_can_round): with c = 1 -+ 2^-(prec - 10) the
 * reciprocal rounds to 1 +- 2^-(prec - 10) (its next term lies below its
 * last bit), d times it lands exactly on a midpoint of the prec-bit grid
 * while d / c lies about 2^-(2 prec - 19) above it: the correct rounding
 * is up, ties to even would go down; mpfr_div must decide. Then zeros of
 * either sign, infinities and NaN (a wild input's cone) over c of either
 * sign: mpfr_div decides those too (a singular value has no significand to
 * read: under valgrind, reading it is an uninitialised-value error). */
static void test_division_by_c_falls_back_at_midpoints_and_keeps_zero_signs(void)
{
    const mpfr_prec_t precs[] = {GDN_E2E_REF_PREC, 100};
    for (size_t pi = 0; pi < 2; pi++) {
        const mpfr_prec_t prec = precs[pi];
        mpfr_t d, c;
        mpfr_inits2(prec, d, c, (mpfr_ptr)0);
        for (int below = 0; below < 2; below++)
            for (int neg = 0; neg < 2; neg++) {
                mpfr_set_d(d, 0.5 + 0x1p-11, MPFR_RNDN); /* exact */
                if (below) { /* d's last bit set */
                    mpfr_set_ui_2exp(c, 1, -prec, MPFR_RNDN);
                    mpfr_add(d, d, c, MPFR_RNDN); /* exact: prec bits */
                }
                mpfr_set_ui_2exp(c, 1, -(prec - 10), MPFR_RNDN);
                if (below)
                    mpfr_add_ui(c, c, 1, MPFR_RNDN); /* 1 + 2^-(prec - 10), exact */
                else
                    mpfr_ui_sub(c, 1, c, MPFR_RNDN); /* 1 - 2^-(prec - 10), exact */
                if (neg) mpfr_neg(d, d, MPFR_RNDN);
                CU_ASSERT_FALSE(divide_agrees(d, c, prec));
            }
        for (int i = 0; i < 12; i++) {
            if (i < 4) mpfr_set_zero(d, i & 1 ? -1 : 1);
            else if (i < 8) mpfr_set_inf(d, i & 1 ? -1 : 1);
            else mpfr_set_nan(d);
            mpfr_set_d(c, i & 2 ? -0.75 : 0.75, MPFR_RNDN);
            CU_ASSERT_FALSE(divide_agrees(d, c, prec));
        }
        mpfr_clears(d, c, (mpfr_ptr)0);
    }
}

/* ---- the fast path's column scalars (ref/gdn_e2e_wide.h) -------------------------------- */

enum { WIDE_BITS = GDN_E2E_WIDE_BITS };

/* got (a gdn_e2e_wide) equals want (an MPFR number of WIDE_BITS bits), value and sign. */
static bool wide_equals(const gdn_e2e_wide *got, mpfr_srcptr want)
{
    mpfr_t view;
    uint64_t limbs[GDN_E2E_WIDE_LIMBS];
    mpfr_srcptr g = gdn_e2e_wide_view(view, limbs, got);
    return mpfr_signbit(g) == mpfr_signbit(want) && (mpfr_equal_p(g, want) || (mpfr_zero_p(g) && mpfr_zero_p(want)));
}

/* A random WIDE_BITS-bit number: random significand (sometimes all ones, or a single bit, or low bits
 * set for ties), exponent spread over exp_range, either sign; zero now and then. */
static void random_wide(mpfr_ptr x, gmp_randstate_t rs, gsl_rng *rng, long exp_range)
{
    const unsigned long kind = gsl_rng_uniform_int(rng, 8);
    if (kind == 0) {
        mpfr_set_zero(x, gsl_rng_uniform_int(rng, 2) ? -1 : 1);
        return;
    }
    if (kind == 1) { /* all ones: rounding up carries out of the top */
        mpfr_set_ui_2exp(x, 1, WIDE_BITS, MPFR_RNDN);
        mpfr_sub_ui(x, x, 1, MPFR_RNDN); /* exact */
    } else if (kind == 2) {
        mpfr_set_ui(x, 1, MPFR_RNDN);
    } else {
        do mpfr_urandomb(x, rs);
        while (mpfr_zero_p(x));
    }
    mpfr_set_exp(x, (mpfr_exp_t)gsl_rng_uniform_int(rng, (unsigned long)(2 * exp_range + 1)) - exp_range);
    if (gsl_rng_uniform_int(rng, 2)) mpfr_neg(x, x, MPFR_RNDN);
}

/* Every operation of gdn_e2e_wide.h against MPFR's at WIDE_BITS bits on
 * random operands: products by 192-bit c and by doubles of few bits (many
 * ties to even, carries out of the top), v - a near and far apart (exact
 * cancellation included), |a| rounded up to a double in and out of the
 * normal range, two's complement integers, the reciprocal's quotient and
 * the shifted limbs. Where a function declines, the reason must hold. */
static void test_wide_scalars_are_mpfrs(void)
{
    const int rounds = RUNNING_ON_VALGRIND ? 400 : 20000;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20261126);
    gmp_randstate_t rs;
    gmp_randinit_default(rs);
    gmp_randseed_ui(rs, 20261126);
    mpfr_t a, b, want, inverse, vf;
    mpfr_inits2(WIDE_BITS, a, b, want, vf, (mpfr_ptr)0);
    mpfr_init2(inverse, WIDE_BITS + GDN_E2E_RECIPROCAL_EXTRA);
    mpz_t z, shifted;
    mpz_inits(z, shifted, (mpz_ptr)0);
    size_t bad = 0, declined_near = 0;
    for (int i = 0; i < rounds; i++) {
        random_wide(a, rs, rng, i % 4 == 0 ? 1100 : 60);
        gdn_e2e_wide x;
        gdn_e2e_wide_from_mpfr(&x, a);
        CU_ASSERT_TRUE(wide_equals(&x, a));
        /* times c in [1/2, 1) */
        do mpfr_urandomb(b, rs);
        while (mpfr_zero_p(b));
        mpfr_set_exp(b, 0);
        gdn_e2e_wide r = x;
        gdn_e2e_wide_mul(&r, mpfr_custom_get_significand(b), -WIDE_BITS);
        mpfr_mul(want, a, b, MPFR_RNDN);
        if (!wide_equals(&r, want)) UG_TEST_MISMATCH(bad, "round %d: a c", i);
        /* times a double of few bits (ties) or of 53 */
        const double factors[] = {3.0, -5.0, 0.75, 1.0 + 0x1p-52, -0x1.fffffffffffffp-3, 0.0, -0.0};
        const double f = i % 8 < 7 ? factors[i % 8] : gsl_ran_gaussian(rng, 1.0);
        r = x;
        gdn_e2e_wide_mul_double(&r, f);
        mpfr_mul_d(want, a, f, MPFR_RNDN);
        if (!wide_equals(&r, want)) UG_TEST_MISMATCH(bad, "round %d: a * %a", i, f);
        /* v - a: v near a (its float, cancelling exactly), or anywhere in the float range */
        float v = (float)ldexp(gsl_ran_gaussian(rng, 1.0), (int)gsl_rng_uniform_int(rng, 260) - 140);
        if (i % 3 == 0 && isfinite(mpfr_get_flt(a, MPFR_RNDN))) v = mpfr_get_flt(a, MPFR_RNDN);
        if (i % 6 == 0) { /* a = v: the difference cancels exactly */
            mpfr_set_flt(a, v, MPFR_RNDN);
            gdn_e2e_wide_from_mpfr(&x, a);
        }
        mpfr_set_flt(vf, v, MPFR_RNDN);
        mpfr_sub(want, vf, a, MPFR_RNDN);
        if (gdn_e2e_wide_float_minus(&r, v, &x)) {
            if (!wide_equals(&r, want)) UG_TEST_MISMATCH(bad, "round %d: %a - a", i, (double)v);
        } else if (mpfr_zero_p(a) || v == 0 || labs((long)(mpfr_get_exp(a) - mpfr_get_exp(vf))) < 200) {
            declined_near++;
        }
        /* |a| rounded up to a double */
        double up = -1;
        const double want_up = fabs(mpfr_get_d(a, MPFR_RNDA));
        if (gdn_e2e_wide_abs_up(&x, &up)) {
            if (up != want_up) UG_TEST_MISMATCH(bad, "round %d: |a| up %a, MPFR %a", i, up, want_up);
        } else if (want_up >= 0x1p-1022 && want_up < 0x1p1023) { /* the top binade may go to MPFR */
            UG_TEST_MISMATCH(bad, "round %d: |a| up %a declined", i, want_up);
        }
        /* a / c by the reciprocal */
        mpfr_ui_div(inverse, 1, b, MPFR_RNDN);
        r = x;
        mpfr_div(want, a, b, MPFR_RNDN);
        if (gdn_e2e_wide_divide(&r, mpfr_custom_get_significand(inverse), mpfr_get_exp(inverse))) {
            if (!wide_equals(&r, want)) UG_TEST_MISMATCH(bad, "round %d: a / c", i);
        } else {
            declined_near++; /* about 2^-58 of random quotients */
        }
        /* the significand shifted into four limbs */
        if (!mpfr_zero_p(a)) {
            uint64_t limbs[4];
            const long shift = (long)gsl_rng_uniform_int(rng, 64);
            gdn_e2e_wide_limbs(&x, shift, limbs, 4);
            mpz_import(z, GDN_E2E_WIDE_LIMBS, -1, sizeof(uint64_t), 0, 0, x.m);
            mpz_mul_2exp(shifted, z, (mp_bitcnt_t)shift);
            for (int l = 0; l < 4; l++)
                if (limbs[l] != mpz_getlimbn(shifted, l)) UG_TEST_MISMATCH(bad, "round %d: limb %d << %ld", i, l, shift);
        }
        /* a two's complement integer of 1 to 6 limbs, times 2^e */
        uint64_t twos[6];
        const int n = 1 + (int)gsl_rng_uniform_int(rng, 6);
        for (int l = 0; l < n; l++) twos[l] = gsl_rng_get(rng) | (uint64_t)gsl_rng_get(rng) << 32;
        if (i % 5 == 0) twos[n - 1] >>= gsl_rng_uniform_int(rng, 64); /* short ones, positive */
        if (i % 7 == 0) for (int l = 0; l < n; l++) twos[l] = l + 1 < n ? ~UINT64_C(0) : UINT64_C(1); /* 2^(64n - 63) - 1 */
        const uint64_t flip = (uint64_t)((int64_t)twos[n - 1] >> 63);
        mpz_import(z, (size_t)n, -1, sizeof(uint64_t), 0, 0, twos);
        if (flip) { /* z - 2^(64 n) */
            mpz_set_ui(shifted, 0);
            mpz_setbit(shifted, (mp_bitcnt_t)(64 * n));
            mpz_sub(z, z, shifted);
        }
        const long e = (long)gsl_rng_uniform_int(rng, 400) - 200;
        gdn_e2e_wide_from_twos(&r, twos, n, e);
        mpfr_set_z_2exp(want, z, e, MPFR_RNDN);
        if (!wide_equals(&r, want)) UG_TEST_MISMATCH(bad, "round %d: %d-limb integer", i, n);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(declined_near <= 2);
    mpz_clears(z, shifted, (mpz_ptr)0);
    mpfr_clears(a, b, want, inverse, vf, (mpfr_ptr)0);
    gmp_randclear(rs);
    gsl_rng_free(rng);
}

/* The cases the limbs leave to MPFR, each declined with its output
 * untouched: a quotient on a midpoint of the 192-bit grid (d = 1 + 2^-43,
 * 1/c = 1 + 2^-149: d/c's bits below the grid read 2^63, the half), v
 * and a 1000 binades apart, |a| beyond the normal doubles; and the edges
 * they keep: all-ones significands rounding up to the next binade, a
 * double rounded up to 2^53 units. */
static void test_wide_scalars_decline_where_mpfr_decides(void)
{
    mpfr_t d, inverse, a;
    mpfr_inits2(WIDE_BITS, d, a, (mpfr_ptr)0);
    mpfr_init2(inverse, WIDE_BITS + GDN_E2E_RECIPROCAL_EXTRA);
    mpfr_set_ui_2exp(d, 1, -43, MPFR_RNDN);
    mpfr_add_ui(d, d, 1, MPFR_RNDN); /* exact */
    mpfr_set_ui_2exp(inverse, 1, -149, MPFR_RNDN);
    mpfr_add_ui(inverse, inverse, 1, MPFR_RNDN); /* exact */
    gdn_e2e_wide x, before;
    gdn_e2e_wide_from_mpfr(&x, d);
    before = x;
    CU_ASSERT_FALSE(gdn_e2e_wide_divide(&x, mpfr_custom_get_significand(inverse), mpfr_get_exp(inverse)));
    CU_ASSERT_EQUAL(memcmp(&x, &before, sizeof x), 0);
    mpfr_set_ui_2exp(a, 3, 1000, MPFR_RNDN);
    gdn_e2e_wide_from_mpfr(&x, a);
    CU_ASSERT_FALSE(gdn_e2e_wide_float_minus(&before, 1.0f, &x));
    double up = 0;
    mpfr_set_ui_2exp(a, 1, -1030, MPFR_RNDN);
    gdn_e2e_wide_from_mpfr(&x, a);
    CU_ASSERT_FALSE(gdn_e2e_wide_abs_up(&x, &up));
    mpfr_set_ui_2exp(a, 1, 1024, MPFR_RNDN);
    gdn_e2e_wide_from_mpfr(&x, a);
    CU_ASSERT_FALSE(gdn_e2e_wide_abs_up(&x, &up));
    /* 2^192 - 1 (all ones) rounds up to 2^53 double units; (2^193 - 1) 2^-193 rounds up to 1 */
    mpfr_set_ui_2exp(a, 1, WIDE_BITS, MPFR_RNDN);
    mpfr_sub_ui(a, a, 1, MPFR_RNDN);
    gdn_e2e_wide_from_mpfr(&x, a);
    CU_ASSERT_TRUE(gdn_e2e_wide_abs_up(&x, &up));
    CU_ASSERT_EQUAL(up, 0x1p192);
    const uint64_t ones[4] = {~UINT64_C(0), ~UINT64_C(0), ~UINT64_C(0), 1};
    gdn_e2e_wide_from_twos(&x, ones, 4, -193);
    mpfr_set_ui(a, 1, MPFR_RNDN);
    CU_ASSERT_TRUE(wide_equals(&x, a));
    mpfr_clears(d, inverse, a, (mpfr_ptr)0);
}

/* Every field of two reference values, bit for bit. */
static bool same_fields(const ug_ref_value *a, const ug_ref_value *b)
{
    return memcmp(&a->r_hi, &b->r_hi, sizeof a->r_hi) == 0 && memcmp(&a->r_lo, &b->r_lo, sizeof a->r_lo) == 0 &&
           a->rn_bits == b->rn_bits && a->flagged == b->flagged && memcmp(&a->bound, &b->bound, sizeof a->bound) == 0 &&
           memcmp(&a->abs_sum, &b->abs_sum, sizeof a->abs_sum) == 0 && a->wild == b->wild && a->no_bound == b->no_bound;
}

/* fast's inputs copied to plain, fast run on the fast path and plain on
 * the plain one (GMP and MPFR): every field of every output equal. */
static void fast_equals_plain(ref_case *fast, ref_case *plain, int scenario)
{
    const gdn_e2e_shape s = fast->s;
    const size_t nq = s.t * s.k, nv = s.t * s.v, nh = s.k * s.v;
    memcpy(plain->q, fast->q, nq * sizeof *fast->q), memcpy(plain->k, fast->k, nq * sizeof *fast->k);
    memcpy(plain->v, fast->v, nv * sizeof *fast->v), memcpy(plain->beta, fast->beta, s.t * sizeof *fast->beta);
    memcpy(plain->g, fast->g, s.t * sizeof *fast->g), memcpy(plain->h0, fast->h0, nh * sizeof *fast->h0);
    ref_case_run(fast, GDN_E2E_REF_PREC);
    ug_ref_set_fast(false);
    ref_case_run(plain, GDN_E2E_REF_PREC);
    ug_ref_set_fast(true);
    size_t bad = 0;
    for (size_t i = 0; i < nv; i++)
        if (!same_fields(&fast->o[i], &plain->o[i])) UG_TEST_MISMATCH(bad, "scenario %d: o[%zu]", scenario, i);
    for (size_t i = 0; i < nh; i++)
        if (!same_fields(&fast->final_state[i], &plain->final_state[i]))
            UG_TEST_MISMATCH(bad, "scenario %d: final_state[%zu] abs_sum %a vs %a", scenario, i,
                             fast->final_state[i].abs_sum, plain->final_state[i].abs_sum);
    CU_ASSERT_EQUAL(bad, 0);
}

/* The fast path (limbs, gdn_e2e_wide) against the plain one (GMP and
 * MPFR) on heads at the ends of its range, every field equal: keys and
 * queries all bf16 subnormals (their grid below 2^-133), and gates of -60
 * that take the state below the normal doubles by the last token (d's
 * magnitude rounded up through MPFR, final_state's abs_sum from it). */
static void test_fast_path_is_the_plain_one_at_the_ends_of_its_range(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int run = 0; run < 4; run++) {
        const int scenario = run % 2;
        ug_ref_simd_set_enabled(run < 2); /* the AVX-512 pass where the CPU has it, then the portable loops */
        gsl_rng_set(rng, 77 + scenario);
        const gdn_e2e_shape s = {1, 13, 1, 1, 16, 8, true};
        ref_case *fast = ref_case_new(s, gdn_e2e_reference_scale(s.k)), *plain = ref_case_new(s, fast->scale);
        fill_random(fast, rng, GATES_MILD);
        for (size_t i = 0; scenario == 0 && i < s.t * s.k; i++) { /* m 2^-133, m < 2^7: bf16 subnormals */
            const float sign = gsl_rng_uniform_int(rng, 2) ? -1.0f : 1.0f;
            fast->q[i] = ug_bf16_from_f32(sign * ldexpf((float)(1 + gsl_rng_uniform_int(rng, 127)), -133));
            fast->k[i] = ug_bf16_from_f32(-sign * ldexpf((float)(1 + gsl_rng_uniform_int(rng, 127)), -133));
        }
        for (size_t t = 0; scenario == 1 && t < s.t; t++) {
            fast->g[t] = -60.0f;
            for (size_t vv = 0; t > 0 && vv < s.v; vv++) fast->v[t * s.v + vv] = 0;
        }
        fast_equals_plain(fast, plain, scenario);
        if (scenario == 1) CU_ASSERT_TRUE(fast->final_state[0].abs_sum < 0x1p-1022); /* the range was left */
        ref_case_free(fast);
        ref_case_free(plain);
    }
    ug_ref_simd_set_enabled(true);
    gsl_rng_free(rng);
}

/* The divisions' fallbacks to mpfr_div, which only a quotient within the
 * midpoint margin takes (~2^-58 of them: no test input reaches one): with
 * the margin widened so that every quotient but an exact one declines, the
 * fast path still equals the plain one in every field (the column deltas'
 * mpfr_div), and gdn_e2e_divide still equals mpfr_div (its own). A wrong
 * column-delta fallback (a product for the quotient) fails here and
 * nowhere else; one rounded toward zero changes only the state's 192nd
 * bit, below every output field, and passes (gdn_e2e_divide's own fallback
 * rounded so fails the check below). */
static void test_division_fallbacks_equal_the_plain_path(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 91);
    gdn_e2e_midpoint_margin = (UINT64_C(1) << 63) - 1;
    for (int run = 0; run < 2; run++) {
        ug_ref_simd_set_enabled(run == 0);
        const gdn_e2e_shape s = {1, 11, 1, 1, 16, 8, true};
        ref_case *fast = ref_case_new(s, gdn_e2e_reference_scale(s.k)), *plain = ref_case_new(s, fast->scale);
        fill_random(fast, rng, GATES_MILD);
        fast_equals_plain(fast, plain, 2 + run);
        ref_case_free(fast);
        ref_case_free(plain);
    }
    ug_ref_simd_set_enabled(true);
    mpfr_t d, c;
    mpfr_inits2(GDN_E2E_REF_PREC, d, c, (mpfr_ptr)0);
    int declined = 0;
    for (int i = 0; i < 200; i++) { /* divide_agrees asserts the quotient */
        mpfr_set_d(d, gsl_ran_gaussian(rng, 1.0), MPFR_RNDN);
        mpfr_set_d(c, exp(-gsl_rng_uniform(rng)), MPFR_RNDN);
        declined += !divide_agrees(d, c, GDN_E2E_REF_PREC);
    }
    CU_ASSERT_EQUAL(declined, 200);
    mpfr_clears(d, c, (mpfr_ptr)0);
    gdn_e2e_midpoint_margin = GDN_E2E_MIDPOINT_MARGIN;
    gsl_rng_free(rng);
}

UG_TEST_SUITE(gdn_e2e_ref_suite, "ref_gdn_e2e",
              UG_TEST(test_scale_is_the_kernels),
              UG_TEST(test_no_gate_and_no_beta_leave_h0_untouched),
              UG_TEST(test_two_tokens_by_hand),
              UG_TEST(test_one_decay_is_correctly_rounded),
              UG_TEST(test_agrees_with_a_plain_500_bit_loop),
              UG_TEST(test_agrees_with_the_plain_loop_under_gqa_without_h0),
              UG_TEST(test_bounds_are_infinite_and_ratios_read_zero),
              UG_TEST(test_staged_mode_equals_exact_and_follows_the_inputs),
              UG_TEST(test_division_by_c_is_mpfr_div_on_random_values),
              UG_TEST(test_division_by_c_falls_back_at_midpoints_and_keeps_zero_signs),
              UG_TEST(test_wide_scalars_are_mpfrs),
              UG_TEST(test_wide_scalars_decline_where_mpfr_decides),
              UG_TEST(test_fast_path_is_the_plain_one_at_the_ends_of_its_range),
              UG_TEST(test_division_fallbacks_equal_the_plain_path));
