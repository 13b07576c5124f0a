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
#include "../ref/round.h"
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
              UG_TEST(test_division_by_c_falls_back_at_midpoints_and_keeps_zero_signs));
