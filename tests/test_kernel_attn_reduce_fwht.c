/* SPDX-License-Identifier: MIT */
/* attn_reduce_fwht: both forms (the fused kernel and the pair reduce +
 * sign-undo) equal a plain scalar statement of SPEC §1.4 bit for bit on every
 * ISA path; the fused form equals the pair bit for bit on the inputs of every
 * swept case; validation is the seed's, then this contract's, rule for rule
 * and in order, writing nothing when it rejects; the nwg boundaries, the
 * masked cases and the dispatch-plan audit behave as documented. */
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "../harness/family.h"
#include "../harness/sweep.h"
#include "../kernels/attn_reduce_fwht.h"
#include "../kernels/attn_reduce_fwht_signs.h"
#include "../kernels/isa.h"
#include "tests.h"

static uint64_t rng_state;

static float uniform(float lo, float hi) { return ug_test_uniform(&rng_state, lo, hi); }

/* ---- a call's buffers, guarded so that an overrun fails the test -------- */

enum { HTMP, OUTPUT, N_BUFS };

typedef struct {
    attn_reduce_fwht_params p;
    ug_guarded mem[N_BUFS];
    ug_buf buf[N_BUFS];
} call;

static size_t partial_index(const attn_reduce_fwht_params *p, size_t r, size_t w, size_t d)
{
    return (r * p->head_dim / 4 * p->nwg + d / 4 * p->nwg + w) * 4 + d % 4;
}

static float *stats_of(const call *c, size_t r)
{
    return (float *)c->buf[HTMP].data + (size_t)c->p.nrows * c->p.head_dim * c->p.nwg + r * 2 * c->p.nwg;
}

/* Partials of a decode: per workgroup a maximum, a denominator >= 1 and
 * partials bounded by it; one workgroup in five masked (M = -FLT_MAX/2, or
 * -inf beside a live one), one row in four fully masked when rows > 2. */
static void fill(call *c)
{
    const attn_reduce_fwht_params *p = &c->p;
    float *htmp = c->buf[HTMP].data;
    for (size_t r = 0; r < p->nrows; r++) {
        bool row_masked = p->nrows > 2 && r % 4 == 3;
        float *stats = stats_of(c, r);
        for (size_t w = 0; w < p->nwg; w++) {
            bool masked = row_masked || (w > 0 && ug_test_next_u32(&rng_state) % 5 == 0);
            float s = masked ? 0.0f : uniform(1.0f, 40.0f);
            stats[2 * w] = s;
            stats[2 * w + 1] = !masked ? uniform(-8.0f, 12.0f) : row_masked || w % 2 ? -FLT_MAX / 2 : -INFINITY;
            for (size_t d = 0; d < p->head_dim; d++) htmp[partial_index(p, r, w, d)] = masked ? 0.0f : uniform(-s, s);
        }
    }
    float *out = c->buf[OUTPUT].data;
    for (size_t i = 0; i < c->buf[OUTPUT].count; i++) out[i] = ug_f32_from_bits(ug_test_next_u32(&rng_state));
}

static size_t htmp_count(const attn_reduce_fwht_params *p) { return (size_t)p->nrows * p->nwg * (p->head_dim + 2); }

static void call_open(call *c, const attn_reduce_fwht_params *p)
{
    memset(c, 0, sizeof *c);
    c->p = *p;
    const size_t counts[N_BUFS] = {htmp_count(p), (size_t)p->nrows * p->head_dim};
    for (int i = 0; i < N_BUFS; i++) {
        CU_ASSERT_EQUAL_FATAL(ug_guarded_alloc(&c->mem[i], counts[i] * sizeof(float)).code, UG_OK);
        c->buf[i] = (ug_buf){ug_guarded_data(&c->mem[i]), counts[i], UG_F32};
    }
    fill(c);
}

static void call_close(call *c)
{
    CU_ASSERT_EQUAL(ug_guarded_free(&c->mem[HTMP], "htmp").code, UG_OK);
    CU_ASSERT_EQUAL(ug_guarded_free(&c->mem[OUTPUT], "output").code, UG_OK);
}

typedef enum { FUSED, PAIR, N_FORMS } form;
static const char *const form_names[N_FORMS] = {"fused", "pair"};

static ug_status run_form(form f, const attn_reduce_fwht_params *p, const ug_buf *htmp, ug_buf *output)
{
    if (f == FUSED) return attn_reduce_fwht_fused(p, htmp, output);
    UG_TRY(attn_reduce(p, htmp, output));
    return attn_fwht_sign_undo(p->nrows, p->head_dim, output);
}

/* ---- SPEC §1.4 as plain scalar loops ------------------------------------ */

/* M* by comparison, m_w = expf(M_w - M*), S and each y[d] by fmaf chains in
 * w order, y = sum * (1/S), butterflies stage by stage, then scale and sign. */
static void scalar_statement(const call *c, float *out)
{
    const attn_reduce_fwht_params *p = &c->p;
    const size_t dv = p->head_dim, nwg = p->nwg;
    const float *htmp = c->buf[HTMP].data;
    const float scale = (float)(1.0 / sqrt((double)dv));
    for (size_t r = 0; r < p->nrows; r++) {
        const float *stats = stats_of(c, r);
        float max = stats[1], m[32], s = 0.0f, y[512];
        for (size_t w = 1; w < nwg; w++) max = stats[2 * w + 1] > max ? stats[2 * w + 1] : max;
        for (size_t w = 0; w < nwg; w++) {
            m[w] = expf(stats[2 * w + 1] - max);
            s = fmaf(stats[2 * w], m[w], s);
        }
        float inv_s = s == 0.0f ? 0.0f : 1.0f / s;
        for (size_t d = 0; d < dv; d++) {
            float acc = 0.0f;
            for (size_t w = 0; w < nwg; w++) acc = fmaf(htmp[partial_index(p, r, w, d)], m[w], acc);
            y[d] = acc * inv_s;
        }
        for (size_t half = 1; half < dv; half *= 2)
            for (size_t j = 0; j < dv; j++)
                if (!(j & half)) {
                    float a = y[j], b = y[j + half];
                    y[j] = a + b;
                    y[j + half] = a - b;
                }
        for (size_t j = 0; j < dv; j++) {
            float z = y[j] * scale;
            out[r * dv + j] = attn_reduce_fwht_sign_is_negative(j) ? -z : z;
        }
    }
}

static size_t differing_bits(const float *got, const float *want, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (ug_f32_bits(got[i]) != ug_f32_bits(want[i]))
            UG_TEST_MISMATCH(bad, "%s on %s: element %zu = %a, want %a", what, ug_isa_name(ug_isa_current()), i,
                             (double)got[i], (double)want[i]);
    return bad;
}

static void test_both_forms_match_the_scalar_statement_on_every_isa(void)
{
    static const attn_reduce_fwht_params shapes[] = {
        {3, 256, 1}, {5, 512, 7}, {2, 256, 32}, {4, 512, 32}, {8, 256, 3}, {1, 512, 2},
    };
    rng_state = 0x9E3779B97F4A7C15u;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        call c;
        call_open(&c, &shapes[k]);
        size_t n = c.buf[OUTPUT].count;
        float *want = malloc(n * sizeof *want);
        CU_ASSERT_FATAL(want != NULL);
        scalar_statement(&c, want);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
            for (form f = 0; f < N_FORMS; f++) {
                memset(c.buf[OUTPUT].data, 0xFF, n * sizeof(float));
                CU_ASSERT_EQUAL(run_form(f, &c.p, &c.buf[HTMP], &c.buf[OUTPUT]).code, UG_OK);
                CU_ASSERT_EQUAL(differing_bits(c.buf[OUTPUT].data, want, n, form_names[f]), 0);
            }
        }
        free(want);
        call_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* The inputs of every accepted case of the default sweep (the generator and
 * seed the runner uses), through both forms on every ISA path: identical
 * bits. Under valgrind every 16th case. */
static void test_fused_equals_the_pair_bit_for_bit_on_every_swept_case(void)
{
    ug_sweep sw;
    CU_ASSERT_EQUAL_FATAL(ug_sweep_load("fixtures/sweeps/default/attn_reduce_fwht.json", &sw).code, UG_OK);
    const size_t step = RUNNING_ON_VALGRIND ? 16 : 1;
    size_t compared = 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (size_t k = 0; k < sw.n_cases; k += step) {
        const ug_case *sc = &sw.cases[k];
        if (sc->expect_reject) continue;
        const ug_params *pp = &sc->params;
        const ug_family *f = sc->family;
        const attn_reduce_fwht_params p = {(uint32_t)pp->v[ug_family_param_index(f, "nrows")],
                                           (uint32_t)pp->v[ug_family_param_index(f, "head_dim")],
                                           (uint32_t)pp->v[ug_family_param_index(f, "nwg")]};
        call c;
        call_open(&c, &p);
        gsl_rng_set(rng, sc->seed);
        CU_ASSERT_EQUAL_FATAL(f->generate(pp, sc->regime, rng, c.buf).code, UG_OK);
        size_t n = c.buf[OUTPUT].count;
        float *pair = malloc(n * sizeof *pair);
        CU_ASSERT_FATAL(pair != NULL);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
            CU_ASSERT_EQUAL(run_form(PAIR, &p, &c.buf[HTMP], &c.buf[OUTPUT]).code, UG_OK);
            memcpy(pair, c.buf[OUTPUT].data, n * sizeof *pair);
            CU_ASSERT_EQUAL(run_form(FUSED, &p, &c.buf[HTMP], &c.buf[OUTPUT]).code, UG_OK);
            if (differing_bits(c.buf[OUTPUT].data, pair, n, "fused vs pair")) printf("\n    case %s", sc->label);
        }
        free(pair);
        call_close(&c);
        compared++;
    }
    CU_ASSERT(compared >= (RUNNING_ON_VALGRIND ? 5 : 100));
    gsl_rng_free(rng);
    ug_sweep_free(&sw);
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* ---- the nwg boundaries and the masked cases ---------------------------- */

/* nwg = 1 is accepted and merges nothing: y = P_0 * (1/S_0), then the undo. */
static void test_one_workgroup_is_the_undo_of_its_partial_over_its_sum(void)
{
    const attn_reduce_fwht_params p = {2, 512, 1};
    rng_state = 11;
    call c;
    call_open(&c, &p);
    for (form f = 0; f < N_FORMS; f++) {
        CU_ASSERT_EQUAL(run_form(f, &p, &c.buf[HTMP], &c.buf[OUTPUT]).code, UG_OK);
        float y[2 * 512];
        const float *htmp = c.buf[HTMP].data;
        for (size_t r = 0; r < p.nrows; r++) {
            float inv_s = 1.0f / stats_of(&c, r)[0];
            for (size_t d = 0; d < 512; d++) y[r * 512 + d] = htmp[partial_index(&p, r, 0, d)] * inv_s;
        }
        ug_buf x = {y, 2 * 512, UG_F32};
        CU_ASSERT_EQUAL(attn_fwht_sign_undo(p.nrows, p.head_dim, &x).code, UG_OK);
        CU_ASSERT_EQUAL(differing_bits(c.buf[OUTPUT].data, y, 2 * 512, form_names[f]), 0);
    }
    call_close(&c);
}

static void test_thirty_two_workgroups_are_accepted_and_thirty_three_refused(void)
{
    rng_state = 12;
    for (uint32_t nwg = 31; nwg <= 33; nwg++) {
        const attn_reduce_fwht_params p = {2, 256, nwg};
        call c;
        call_open(&c, &p);
        for (form f = 0; f < N_FORMS; f++) {
            ug_status st = run_form(f, &p, &c.buf[HTMP], &c.buf[OUTPUT]);
            CU_ASSERT_EQUAL(st.code, nwg <= 32 ? UG_OK : UG_EINVAL);
            if (nwg > 32) {
                CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "nwg (33) must be <= 32"));
                CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "1056 threads per threadgroup exceed the 1024-thread limit"));
            }
        }
        call_close(&c);
    }
}

/* A fully masked row (every S_w = 0) is the spec's S == 0 case: exact zeros,
 * never 0 * inf. */
static void test_fully_masked_row_is_exactly_zero(void)
{
    const attn_reduce_fwht_params p = {4, 256, 6};
    rng_state = 13;
    call c;
    call_open(&c, &p);
    for (form f = 0; f < N_FORMS; f++) {
        CU_ASSERT_EQUAL(run_form(f, &p, &c.buf[HTMP], &c.buf[OUTPUT]).code, UG_OK);
        const float *row = (const float *)c.buf[OUTPUT].data + 3 * 256; /* row 3: masked by fill() */
        for (size_t j = 0; j < 256; j++) CU_ASSERT_EQUAL(row[j], 0.0f);
    }
    call_close(&c);
}

/* A masked workgroup (S = 0, P = 0, M = -FLT_MAX/2 or -inf) beside live ones
 * changes no output value: the row equals the row without it. */
static void test_masked_workgroup_changes_nothing(void)
{
    const attn_reduce_fwht_params with = {1, 256, 3}, without = {1, 256, 2};
    rng_state = 14;
    call a, b;
    call_open(&a, &with);
    call_open(&b, &without);
    for (int sentinel = 0; sentinel < 2; sentinel++) {
        float *sa = stats_of(&a, 0), *sb = stats_of(&b, 0);
        sa[0] = sb[0] = 3.0f, sa[1] = sb[1] = 1.5f;
        sa[2] = 0.0f, sa[3] = sentinel ? -INFINITY : -FLT_MAX / 2;
        sa[4] = sb[2] = 7.0f, sa[5] = sb[3] = 4.25f;
        for (size_t d = 0; d < 256; d++) {
            float p0 = uniform(-3, 3), p1 = uniform(-7, 7);
            ((float *)a.buf[HTMP].data)[partial_index(&with, 0, 0, d)] = p0;
            ((float *)a.buf[HTMP].data)[partial_index(&with, 0, 1, d)] = 0.0f;
            ((float *)a.buf[HTMP].data)[partial_index(&with, 0, 2, d)] = p1;
            ((float *)b.buf[HTMP].data)[partial_index(&without, 0, 0, d)] = p0;
            ((float *)b.buf[HTMP].data)[partial_index(&without, 0, 1, d)] = p1;
        }
        CU_ASSERT_EQUAL(attn_reduce_fwht_fused(&with, &a.buf[HTMP], &a.buf[OUTPUT]).code, UG_OK);
        CU_ASSERT_EQUAL(attn_reduce_fwht_fused(&without, &b.buf[HTMP], &b.buf[OUTPUT]).code, UG_OK);
        size_t bad = 0;
        for (size_t j = 0; j < 256; j++)
            if (((float *)a.buf[OUTPUT].data)[j] != ((float *)b.buf[OUTPUT].data)[j]) bad++;
        CU_ASSERT_EQUAL(bad, 0);
    }
    call_close(&a);
    call_close(&b);
}

/* nrows = 0 (the seed does not refuse it) is an empty call: buffers of 0
 * elements, data may be NULL, nothing is touched. */
static void test_zero_rows_is_an_empty_call(void)
{
    const attn_reduce_fwht_params p = {0, 512, 8};
    ug_buf htmp = {NULL, 0, UG_F32}, output = {NULL, 0, UG_F32};
    for (form f = 0; f < N_FORMS; f++) CU_ASSERT_EQUAL(run_form(f, &p, &htmp, &output).code, UG_OK);
}

/* ---- rejections ------------------------------------------------------------ */

enum { MAX_EXPECT = 4, NO_BUFFER = -1 };

/* One broken rule, in the order validation checks them: a field set to a
 * bad value, or a buffer given one element too many. */
typedef struct {
    size_t field; /* offsetof in attn_reduce_fwht_params, or SIZE_MAX */
    uint32_t value;
    int buffer;
    const char *expect[MAX_EXPECT];
} broken_rule;

#define FIELD(f, v, ...) {offsetof(attn_reduce_fwht_params, f), v, NO_BUFFER, {__VA_ARGS__}}
#define BUFFER(b, ...) {SIZE_MAX, 0, b, {__VA_ARGS__}}

static const broken_rule rules_in_order[] = {
    /* the seed's rules, in its order */
    FIELD(nwg, 0, "nwg must be > 0 (got 0)"),
    FIELD(head_dim, 128, "unsupported head_dim 128 (supported: 256, 512)"),
    /* this contract's */
    FIELD(nwg, 33, "nwg (33) must be <= 32", "one workgroup per lane of a 32-lane SIMD group",
          "32*nwg = 1056 threads per threadgroup exceed the 1024-thread limit"),
    BUFFER(HTMP, "htmp must be f32["),
    BUFFER(OUTPUT, "output must be f32["),
};
enum { N_RULES = sizeof rules_in_order / sizeof rules_in_order[0] };

static const attn_reduce_fwht_params valid_shape = {3, 256, 4};

static void apply(const broken_rule *r, attn_reduce_fwht_params *p, ug_buf buf[N_BUFS])
{
    if (r->field != SIZE_MAX) memcpy((char *)p + r->field, &r->value, sizeof r->value);
    if (r->buffer != NO_BUFFER) buf[r->buffer].count++;
}

static const char *kernel_name(form f) { return f == FUSED ? "flash_attn_vec_reduce_tq_hb_undo: " : "flash_attn_vec_reduce: "; }

static void expect_message(const ug_status *s, const char *prefix, const char *const expect[MAX_EXPECT])
{
    CU_ASSERT_EQUAL(s->code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(s->msg, prefix));
    for (int i = 0; i < MAX_EXPECT && expect[i]; i++)
        if (!strstr(s->msg, expect[i])) {
            printf("\n  message \"%s\" lacks \"%s\"", s->msg, expect[i]);
            CU_FAIL("message lacks an expected part");
        }
}

/* Runs a call that must be rejected and checks that neither buffer changed. */
static ug_status rejected_call(form f, call *c, const attn_reduce_fwht_params *p, ug_buf buf[N_BUFS])
{
    size_t bytes[N_BUFS];
    unsigned char *before[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) {
        bytes[i] = c->buf[i].count * sizeof(float);
        before[i] = malloc(bytes[i]);
        CU_ASSERT_FATAL(before[i] != NULL);
        memcpy(before[i], c->buf[i].data, bytes[i]);
    }
    ug_status s = run_form(f, p, &buf[HTMP], &buf[OUTPUT]);
    CU_ASSERT_NOT_EQUAL(s.code, UG_OK);
    for (int i = 0; i < N_BUFS; i++) {
        CU_ASSERT_EQUAL(memcmp(before[i], c->buf[i].data, bytes[i]), 0);
        free(before[i]);
    }
    return s;
}

static void test_each_rule_reports_what_it_checks(void)
{
    rng_state = 21;
    call c;
    call_open(&c, &valid_shape);
    for (form f = 0; f < N_FORMS; f++)
        for (size_t i = 0; i < N_RULES; i++) {
            attn_reduce_fwht_params p = c.p;
            ug_buf buf[N_BUFS];
            memcpy(buf, c.buf, sizeof buf);
            apply(&rules_in_order[i], &p, buf);
            ug_status s = rejected_call(f, &c, &p, buf);
            expect_message(&s, kernel_name(f), rules_in_order[i].expect);
        }
    call_close(&c);
}

/* Every pair of broken rules that can coexist: the earlier one is reported,
 * and nothing is written. */
static void test_rules_fire_in_order(void)
{
    rng_state = 22;
    call c;
    call_open(&c, &valid_shape);
    for (form f = 0; f < N_FORMS; f++)
        for (size_t i = 0; i < N_RULES; i++)
            for (size_t j = i + 1; j < N_RULES; j++) {
                if (rules_in_order[i].field != SIZE_MAX && rules_in_order[i].field == rules_in_order[j].field) continue;
                attn_reduce_fwht_params p = c.p;
                ug_buf buf[N_BUFS];
                memcpy(buf, c.buf, sizeof buf);
                apply(&rules_in_order[j], &p, buf);
                apply(&rules_in_order[i], &p, buf);
                ug_status s = rejected_call(f, &c, &p, buf);
                expect_message(&s, kernel_name(f), rules_in_order[i].expect);
            }
    call_close(&c);
}

static void test_wrong_count_dtype_or_data_of_each_buffer_names_it(void)
{
    static const char *const names[N_BUFS] = {"htmp", "output"};
    rng_state = 23;
    call c;
    call_open(&c, &valid_shape);
    for (form f = 0; f < N_FORMS; f++)
        for (int which = 0; which < N_BUFS; which++)
            for (int spoil = 0; spoil < 4; spoil++) {
                ug_buf buf[N_BUFS];
                memcpy(buf, c.buf, sizeof buf);
                char want[96];
                size_t count = c.buf[which].count;
                if (spoil < 2) {
                    buf[which].count = spoil ? count + 1 : count - 1;
                    snprintf(want, sizeof want, "%s must be f32[%zu] (got %zu f32)", names[which], count, buf[which].count);
                } else if (spoil == 2) {
                    buf[which].dtype = UG_BF16;
                    snprintf(want, sizeof want, "%s must be f32[%zu] (got %zu bf16)", names[which], count, count);
                } else {
                    buf[which].data = NULL;
                    snprintf(want, sizeof want, "%s has %zu elements but no data (NULL)", names[which], count);
                }
                const char *const expect[MAX_EXPECT] = {want};
                ug_status s = rejected_call(f, &c, &c.p, buf);
                expect_message(&s, kernel_name(f), expect);
            }
    ug_status s = attn_reduce_fwht_fused(&c.p, &c.buf[HTMP], NULL);
    const char *const no_buffer[MAX_EXPECT] = {"output must be f32[768] (got no buffer)"};
    expect_message(&s, kernel_name(FUSED), no_buffer);
    s = attn_reduce(NULL, &c.buf[HTMP], &c.buf[OUTPUT]);
    const char *const no_params[MAX_EXPECT] = {"no params (NULL)"};
    expect_message(&s, kernel_name(PAIR), no_params);
    call_close(&c);
}

/* The standalone sign-undo: head_dim first, then x; nothing written. */
static void test_sign_undo_validates_head_dim_then_x(void)
{
    float x[2 * 256];
    for (size_t i = 0; i < 2 * 256; i++) x[i] = (float)i;
    ug_buf buf = {x, 2 * 256, UG_F32};
    ug_status s = attn_fwht_sign_undo(2, 128, &buf);
    const char *const head_dim[MAX_EXPECT] = {"unsupported head_dim 128 (supported: 256, 512)"};
    expect_message(&s, "fwht_sign_undo: ", head_dim);
    s = attn_fwht_sign_undo(3, 256, &buf);
    const char *const count[MAX_EXPECT] = {"x must be f32[768] (got 512 f32)"};
    expect_message(&s, "fwht_sign_undo: ", count);
    s = attn_fwht_sign_undo(3, 1000, &buf);
    const char *const order[MAX_EXPECT] = {"unsupported head_dim 1000"};
    expect_message(&s, "fwht_sign_undo: ", order);
    for (size_t i = 0; i < 2 * 256; i++) CU_ASSERT_EQUAL(x[i], (float)i);
}

/* The seed multiplies u32 values; here counts are size_t: 2^26 rows of 32
 * workgroups at head_dim 512 need 2^26 * 32 * 514 (> 2^32) elements, and
 * the message states that count. */
static void test_counts_do_not_wrap_at_32_bits(void)
{
    const attn_reduce_fwht_params p = {1u << 26, 512, 32};
    ug_buf htmp = {NULL, 0, UG_F32}, output = {NULL, 0, UG_F32};
    ug_status s = attn_reduce_fwht_fused(&p, &htmp, &output);
    const char *const expect[MAX_EXPECT] = {"htmp must be f32[1103806595072] (got 0 f32)"};
    expect_message(&s, kernel_name(FUSED), expect);
}

/* ---- the dispatch-plan audit (SPEC §1.6) ----------------------------------- */

static void plan_of(uint32_t head_dim, uint32_t nwg, ug_plan *plan, char *finding, size_t size)
{
    const ug_family *f = ug_family_find("attn_reduce_fwht");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ug_params p = {{0}};
    p.v[ug_family_param_index(f, "nrows")] = 4;
    p.v[ug_family_param_index(f, "head_dim")] = head_dim;
    p.v[ug_family_param_index(f, "nwg")] = nwg;
    p.v[ug_family_param_index(f, "fused")] = 1;
    CU_ASSERT_EQUAL(f->plan(&p, plan).code, UG_OK);
    ug_plan_finding(plan, finding, size);
}

/* 32 * nwg threads and head_dim * 4 bytes: within the limits and the need
 * for nwg <= 32; at nwg = 33 the seed's plan exceeds the 1024-thread limit
 * (the kernel refuses that shape, so only this audit sees the plan). */
static void test_plan_audit_of_the_nwg_boundaries(void)
{
    ug_plan plan;
    char finding[256];
    plan_of(512, 1, &plan, finding, sizeof finding);
    CU_ASSERT_EQUAL(plan.threads_planned, 32);
    CU_ASSERT_EQUAL(plan.threads_needed, 32);
    CU_ASSERT_EQUAL(plan.tg_bytes_planned, 2048);
    CU_ASSERT_EQUAL(plan.tg_bytes_needed, 2048);
    CU_ASSERT_STRING_EQUAL(finding, "");
    plan_of(256, 32, &plan, finding, sizeof finding);
    CU_ASSERT_EQUAL(plan.threads_planned, 1024);
    CU_ASSERT_EQUAL(plan.tg_bytes_planned, 1024);
    CU_ASSERT_STRING_EQUAL(finding, "");
    plan_of(512, 33, &plan, finding, sizeof finding);
    CU_ASSERT_PTR_NOT_NULL(strstr(finding, "1056 threads per threadgroup exceed the limit 1024"));
}

UG_TEST_SUITE(kernel_attn_reduce_fwht_suite, "kernel_attn_reduce_fwht",
              UG_TEST(test_both_forms_match_the_scalar_statement_on_every_isa),
              UG_TEST(test_fused_equals_the_pair_bit_for_bit_on_every_swept_case),
              UG_TEST(test_one_workgroup_is_the_undo_of_its_partial_over_its_sum),
              UG_TEST(test_thirty_two_workgroups_are_accepted_and_thirty_three_refused),
              UG_TEST(test_fully_masked_row_is_exactly_zero),
              UG_TEST(test_masked_workgroup_changes_nothing),
              UG_TEST(test_zero_rows_is_an_empty_call),
              UG_TEST(test_each_rule_reports_what_it_checks),
              UG_TEST(test_rules_fire_in_order),
              UG_TEST(test_wrong_count_dtype_or_data_of_each_buffer_names_it),
              UG_TEST(test_sign_undo_validates_head_dim_then_x),
              UG_TEST(test_counts_do_not_wrap_at_32_bits),
              UG_TEST(test_plan_audit_of_the_nwg_boundaries));
