/* gdn_recompute_wu: the kernel equals a plain scalar statement of SPEC §1.1
 * bit for bit on every ISA path, and its validation is the seed's, rule for
 * rule and in the seed's order, writing nothing when it rejects. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "../kernels/gdn_recompute_wu.h"
#include "../kernels/isa.h"
#include "tests.h"

enum { BUF_K, BUF_V, BUF_BETA, BUF_G, BUF_A, BUF_W, BUF_U, N_BUFS };
static const char *const buf_names[N_BUFS] = {"k", "v", "beta", "g", "A", "w", "u"};
static const ug_dtype buf_dtypes[N_BUFS] = {UG_BF16, UG_BF16, UG_F32, UG_F32, UG_F32, UG_BF16, UG_BF16};

/* The shape most rejection cases start from (the seed test's, with K = 128). */
static const gdn_recompute_wu_params valid_shape = {
    .b = 1, .t = 128, .hg = 2, .h = 4, .k = 128, .v = 128, .bt = 64};

static uint64_t rng_state;

static uint32_t next_u32(void) { return ug_test_next_u32(&rng_state); }
static float uniform(float lo, float hi) { return ug_test_uniform(&rng_state, lo, hi); }

/* ---- layouts (written here independently of the kernel) ---------------- */

static size_t at_bthd(const gdn_recompute_wu_params *p, size_t b, size_t t, size_t head, size_t heads,
                      size_t d, size_t dim)
{
    return ((b * p->t + t) * heads + head) * dim + d;
}

static size_t at_bth(const gdn_recompute_wu_params *p, size_t b, size_t t, size_t h)
{
    return (b * p->t + t) * p->h + h;
}

static size_t buf_count(const gdn_recompute_wu_params *p, int which)
{
    size_t rows = (size_t)p->b * p->t;
    switch (which) {
    case BUF_K: return rows * p->hg * p->k;
    case BUF_V: case BUF_U: return rows * p->h * p->v;
    case BUF_BETA: case BUF_G: return rows * p->h;
    case BUF_A: return rows * p->h * p->bt;
    case BUF_W: return rows * p->h * p->k;
    }
    return 0;
}

/* ---- a call's buffers, guarded so that an overrun fails the test -------- */

typedef struct {
    gdn_recompute_wu_params p;
    ug_guarded mem[N_BUFS];
    ug_buf buf[N_BUFS];
} wu_case;

/* Realistic inputs (SPEC §1.3): beta in (0, 1), g a within-chunk cumulative
 * sum of negative log-gates; outputs pre-filled with noise so that an element
 * the kernel skips cannot match by accident. */
static void fill(wu_case *c)
{
    const gdn_recompute_wu_params *p = &c->p;
    ug_bf16 *k = c->buf[BUF_K].data, *v = c->buf[BUF_V].data;
    float *beta = c->buf[BUF_BETA].data, *g = c->buf[BUF_G].data, *a = c->buf[BUF_A].data;
    for (size_t i = 0; i < c->buf[BUF_K].count; i++) k[i] = ug_bf16_from_f32(uniform(-1.0f, 1.0f));
    for (size_t i = 0; i < c->buf[BUF_V].count; i++) v[i] = ug_bf16_from_f32(uniform(-2.0f, 2.0f));
    for (size_t i = 0; i < c->buf[BUF_BETA].count; i++) beta[i] = uniform(0.0f, 1.0f);
    for (size_t i = 0; i < c->buf[BUF_A].count; i++) a[i] = uniform(-1.0f, 1.0f);
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++) {
            float cumulative = 0.0f;
            for (size_t t = 0; t < p->t; t++) {
                if (t % p->bt == 0) cumulative = 0.0f;
                cumulative += uniform(-0.5f, 0.0f);
                g[at_bth(p, b, t, h)] = cumulative;
            }
        }
    for (int out = BUF_W; out <= BUF_U; out++) {
        ug_bf16 *o = c->buf[out].data;
        for (size_t i = 0; i < c->buf[out].count; i++) o[i] = (ug_bf16)next_u32();
    }
}

static void case_open(wu_case *c, const gdn_recompute_wu_params *p)
{
    memset(c, 0, sizeof *c);
    c->p = *p;
    for (int i = 0; i < N_BUFS; i++) {
        size_t count = buf_count(p, i);
        CU_ASSERT_EQUAL_FATAL(ug_guarded_alloc(&c->mem[i], count * ug_dtype_size(buf_dtypes[i])).code, UG_OK);
        c->buf[i] = (ug_buf){ug_guarded_data(&c->mem[i]), count, buf_dtypes[i]};
    }
    fill(c);
}

static void case_close(wu_case *c)
{
    for (int i = 0; i < N_BUFS; i++) CU_ASSERT_EQUAL(ug_guarded_free(&c->mem[i], buf_names[i]).code, UG_OK);
}

static ug_status run(const gdn_recompute_wu_params *p, ug_buf buf[N_BUFS])
{
    return gdn_recompute_wu(p, &buf[BUF_K], &buf[BUF_V], &buf[BUF_BETA], &buf[BUF_G], &buf[BUF_A],
                            &buf[BUF_W], &buf[BUF_U]);
}

/* ---- SPEC §1.1 as plain scalar loops ------------------------------------- */

static float f32_of(ug_bf16 x) { return ug_bf16_to_f32(x); }

/* out[t,h,:] = bf16(sum_j A[t,h,j] * staged[c*BT+j,h,:]), an FMA chain in j. */
static void chunked_product(const gdn_recompute_wu_params *p, const float *a, const ug_bf16 *staged,
                            size_t dim, ug_bf16 *out)
{
    for (size_t b = 0; b < p->b; b++)
        for (size_t t = 0; t < p->t; t++)
            for (size_t h = 0; h < p->h; h++)
                for (size_t d = 0; d < dim; d++) {
                    size_t chunk_start = t / p->bt * p->bt;
                    float acc = 0.0f;
                    for (size_t j = 0; j < p->bt; j++)
                        acc = fmaf(a[at_bthd(p, b, t, h, p->h, j, p->bt)],
                                   f32_of(staged[at_bthd(p, b, chunk_start + j, h, p->h, d, dim)]), acc);
                    out[at_bthd(p, b, t, h, p->h, d, dim)] = ug_bf16_from_f32(acc);
                }
}

static void reference(const wu_case *c, ug_bf16 *w, ug_bf16 *u)
{
    const gdn_recompute_wu_params *p = &c->p;
    const ug_bf16 *k = c->buf[BUF_K].data, *v = c->buf[BUF_V].data;
    const float *beta = c->buf[BUF_BETA].data, *g = c->buf[BUF_G].data, *a = c->buf[BUF_A].data;
    ug_bf16 *staged_v = malloc(buf_count(p, BUF_U) * sizeof *staged_v);
    ug_bf16 *staged_k = malloc(buf_count(p, BUF_W) * sizeof *staged_k); /* per value head */
    CU_ASSERT_FATAL(staged_v && staged_k);
    for (size_t b = 0; b < p->b; b++)
        for (size_t t = 0; t < p->t; t++)
            for (size_t h = 0; h < p->h; h++) {
                size_t kh = h / (p->h / p->hg);
                float beta_t = beta[at_bth(p, b, t, h)], exp_g = expf(g[at_bth(p, b, t, h)]);
                for (size_t d = 0; d < p->v; d++)
                    staged_v[at_bthd(p, b, t, h, p->h, d, p->v)] =
                        ug_bf16_from_f32(f32_of(v[at_bthd(p, b, t, h, p->h, d, p->v)]) * beta_t);
                for (size_t d = 0; d < p->k; d++)
                    staged_k[at_bthd(p, b, t, h, p->h, d, p->k)] =
                        ug_bf16_from_f32(f32_of(k[at_bthd(p, b, t, kh, p->hg, d, p->k)]) * beta_t * exp_g);
            }
    chunked_product(p, a, staged_v, p->v, u);
    chunked_product(p, a, staged_k, p->k, w);
    free(staged_v);
    free(staged_k);
}

static size_t differing(const ug_bf16 *got, const ug_bf16 *want, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0)
            printf("\n  %s on %s: element %zu = 0x%04x, want 0x%04x", what, ug_isa_name(ug_isa_current()), i,
                   got[i], want[i]);
    return bad;
}

static void test_matches_the_scalar_statement_on_every_isa(void)
{
    static const gdn_recompute_wu_params shapes[] = {
        {.b = 1, .t = 64, .hg = 1, .h = 1, .k = 64, .v = 64, .bt = 64},
        {.b = 2, .t = 128, .hg = 1, .h = 2, .k = 128, .v = 192, .bt = 64},
        {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 192, .v = 256, .bt = 64},
        {.b = 2, .t = 64, .hg = 2, .h = 4, .k = 64, .v = 128, .bt = 64},
    };
    rng_state = 0x2545F4914F6CDD1Du;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        wu_case c;
        case_open(&c, &shapes[s]);
        size_t n_w = c.buf[BUF_W].count, n_u = c.buf[BUF_U].count;
        ug_bf16 *want_w = malloc(n_w * sizeof *want_w), *want_u = malloc(n_u * sizeof *want_u);
        CU_ASSERT_FATAL(want_w && want_u);
        reference(&c, want_w, want_u);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
            memset(c.buf[BUF_W].data, 0xFF, n_w * sizeof(ug_bf16));
            memset(c.buf[BUF_U].data, 0xFF, n_u * sizeof(ug_bf16));
            ug_status st = run(&c.p, c.buf);
            CU_ASSERT_EQUAL(st.code, UG_OK);
            CU_ASSERT_EQUAL(differing(c.buf[BUF_W].data, want_w, n_w, "w"), 0);
            CU_ASSERT_EQUAL(differing(c.buf[BUF_U].data, want_u, n_u, "u"), 0);
        }
        free(want_w);
        free(want_u);
        case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* ---- rejections ------------------------------------------------------------ */

enum { NO_BUFFER = -1, MAX_EXPECT = 3 };
#define NO_DIM SIZE_MAX

/* One broken rule: a dim set to a bad value, or a buffer given one element
 * too many. Listed in the seed's order. */
typedef struct {
    size_t dim_offset; /* offsetof the dim it changes, or NO_DIM */
    uint32_t dim_value;
    int buffer;        /* the buffer whose count it spoils, or NO_BUFFER */
    const char *expect[MAX_EXPECT];
} broken_rule;

#define DIM(field, value, ...) {offsetof(gdn_recompute_wu_params, field), value, NO_BUFFER, {__VA_ARGS__}}
#define BUFFER(which, ...) {NO_DIM, 0, which, {__VA_ARGS__}}

static const broken_rule rules_in_seed_order[] = {
    DIM(b, 0, "all dims must be > 0", "B (0)"),
    DIM(t, 0, "all dims must be > 0", "T (0)"),
    DIM(hg, 0, "all dims must be > 0", "Hg (0)"),
    DIM(h, 0, "all dims must be > 0", "H (0)"),
    DIM(k, 0, "all dims must be > 0", "K (0)"),
    DIM(v, 0, "all dims must be > 0", "V (0)"),
    DIM(bt, 0, "all dims must be > 0", "BT (0)"),
    DIM(hg, 3, "h (4) must be a multiple of hg (3)"),
    DIM(k, 256, "K (256)", "MAX_K = 192", "32 KB threadgroup memory budget"),
    DIM(v, 320, "v (320)", "MAX_V (256)"),
    DIM(bt, 32, "bt must be 64 (got 32)"),
    DIM(t, 100, "t (100) must be a multiple of bt (64)"),
    DIM(k, 96, "k (96) must be a multiple of BK (64)"),
    DIM(v, 160, "v (160) must be a multiple of BV (64)"),
    /* The threadgroup-bytes rule cannot fire once bt == 64 is enforced. */
    BUFFER(BUF_K, "k must be bf16["),
    BUFFER(BUF_V, "v must be bf16["),
    BUFFER(BUF_BETA, "beta must be f32["),
    BUFFER(BUF_G, "g must be f32["),
    BUFFER(BUF_A, "A must be f32["),
    BUFFER(BUF_W, "w must be bf16["),
    BUFFER(BUF_U, "u must be bf16["),
};
enum { N_RULES = sizeof rules_in_seed_order / sizeof rules_in_seed_order[0] };

static void apply(const broken_rule *r, gdn_recompute_wu_params *p, ug_buf buf[N_BUFS])
{
    if (r->dim_offset != NO_DIM) memcpy((char *)p + r->dim_offset, &r->dim_value, sizeof r->dim_value);
    if (r->buffer != NO_BUFFER) buf[r->buffer].count++;
}

static void expect_message(const ug_status *s, const char *const expect[MAX_EXPECT])
{
    CU_ASSERT_EQUAL(s->code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(s->msg, "gated_delta_net_recompute_wu: "));
    for (int i = 0; i < MAX_EXPECT && expect[i]; i++)
        if (!strstr(s->msg, expect[i])) {
            printf("\n  message \"%s\" lacks \"%s\"", s->msg, expect[i]);
            CU_FAIL("message lacks an expected part");
        }
}

/* Runs a rejected call on a valid case's buffers, asserting that neither
 * output changed, and returns the status. */
static ug_status rejected_call(wu_case *c, const gdn_recompute_wu_params *p, ug_buf buf[N_BUFS])
{
    size_t w_bytes = c->buf[BUF_W].count * sizeof(ug_bf16), u_bytes = c->buf[BUF_U].count * sizeof(ug_bf16);
    unsigned char *w_before = malloc(w_bytes), *u_before = malloc(u_bytes);
    CU_ASSERT_FATAL(w_before && u_before);
    memcpy(w_before, c->buf[BUF_W].data, w_bytes);
    memcpy(u_before, c->buf[BUF_U].data, u_bytes);
    ug_status s = run(p, buf);
    CU_ASSERT_NOT_EQUAL(s.code, UG_OK);
    CU_ASSERT_EQUAL(memcmp(w_before, c->buf[BUF_W].data, w_bytes), 0);
    CU_ASSERT_EQUAL(memcmp(u_before, c->buf[BUF_U].data, u_bytes), 0);
    free(w_before);
    free(u_before);
    return s;
}

static void test_each_rule_reports_what_it_checks(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (size_t i = 0; i < N_RULES; i++) {
        gdn_recompute_wu_params p = c.p;
        ug_buf buf[N_BUFS];
        memcpy(buf, c.buf, sizeof buf);
        apply(&rules_in_seed_order[i], &p, buf);
        ug_status s = run(&p, buf);
        expect_message(&s, rules_in_seed_order[i].expect);
    }
    case_close(&c);
}

static bool same_dim(const broken_rule *a, const broken_rule *b)
{
    return a->dim_offset != NO_DIM && a->dim_offset == b->dim_offset;
}

/* Every pair of broken rules that can coexist: the earlier one is reported. */
static void test_rules_fire_in_the_seed_order(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (size_t i = 0; i < N_RULES; i++)
        for (size_t j = i + 1; j < N_RULES; j++) {
            if (same_dim(&rules_in_seed_order[i], &rules_in_seed_order[j])) continue;
            gdn_recompute_wu_params p = c.p;
            ug_buf buf[N_BUFS];
            memcpy(buf, c.buf, sizeof buf);
            apply(&rules_in_seed_order[j], &p, buf);
            apply(&rules_in_seed_order[i], &p, buf);
            ug_status s = run(&p, buf);
            expect_message(&s, rules_in_seed_order[i].expect);
        }
    case_close(&c);
}

/* Every rejection in this file's tables, single and paired, and every
 * spoiled buffer: w and u keep their bits. */
static void test_rejections_leave_the_outputs_untouched(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (size_t i = 0; i < N_RULES; i++)
        for (size_t j = i; j < N_RULES; j++) {
            if (j != i && same_dim(&rules_in_seed_order[i], &rules_in_seed_order[j])) continue;
            gdn_recompute_wu_params p = c.p;
            ug_buf buf[N_BUFS];
            memcpy(buf, c.buf, sizeof buf);
            apply(&rules_in_seed_order[j], &p, buf);
            apply(&rules_in_seed_order[i], &p, buf);
            rejected_call(&c, &p, buf);
        }
    for (int which = 0; which < N_BUFS; which++) {
        ug_buf buf[N_BUFS];
        memcpy(buf, c.buf, sizeof buf);
        buf[which].dtype = buf[which].dtype == UG_BF16 ? UG_F32 : UG_BF16;
        rejected_call(&c, &c.p, buf);
        memcpy(buf, c.buf, sizeof buf);
        buf[which].count--;
        rejected_call(&c, &c.p, buf);
        memcpy(buf, c.buf, sizeof buf);
        buf[which].data = NULL;
        rejected_call(&c, &c.p, buf);
    }
    case_close(&c);
}

/* The seed's own test: K = 256 on its shape, with 1-element placeholder
 * buffers, because the K cap fires before any buffer is looked at. */
static void test_seed_k256_case_names_k_the_cap_and_the_budget(void)
{
    const gdn_recompute_wu_params p = {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 256, .v = 128, .bt = 64};
    uint32_t storage[N_BUFS] = {0};
    ug_buf buf[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) buf[i] = (ug_buf){&storage[i], 1, buf_dtypes[i]};
    ug_status s = run(&p, buf);
    const char *const expect[MAX_EXPECT] = {"256", "MAX_K = 192", "32 KB"};
    expect_message(&s, expect);
    for (int i = 0; i < N_BUFS; i++) CU_ASSERT_EQUAL(storage[i], 0);
}

static void test_wrong_count_of_each_buffer_names_it(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (int which = 0; which < N_BUFS; which++)
        for (int delta = -1; delta <= 1; delta += 2) {
            ug_buf buf[N_BUFS];
            memcpy(buf, c.buf, sizeof buf);
            buf[which].count += (size_t)delta;
            char want[96];
            snprintf(want, sizeof want, "%s must be %s[%zu] (got %zu %s)", buf_names[which],
                     ug_dtype_name(buf_dtypes[which]), c.buf[which].count, buf[which].count,
                     ug_dtype_name(buf_dtypes[which]));
            const char *const expect[MAX_EXPECT] = {want};
            ug_status s = run(&c.p, buf);
            expect_message(&s, expect);
        }
    case_close(&c);
}

static void test_wrong_dtype_of_each_buffer_names_it(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (int which = 0; which < N_BUFS; which++)
        for (int dtype = 0; dtype < UG_DTYPE_COUNT; dtype++) {
            if (dtype == (int)buf_dtypes[which]) continue;
            ug_buf buf[N_BUFS];
            memcpy(buf, c.buf, sizeof buf);
            buf[which].dtype = (ug_dtype)dtype;
            char want[96];
            snprintf(want, sizeof want, "%s must be %s[%zu] (got %zu %s)", buf_names[which],
                     ug_dtype_name(buf_dtypes[which]), c.buf[which].count, c.buf[which].count,
                     ug_dtype_name((ug_dtype)dtype));
            const char *const expect[MAX_EXPECT] = {want};
            ug_status s = run(&c.p, buf);
            expect_message(&s, expect);
        }
    case_close(&c);
}

/* An empty buffer with no data is a wrong count (every dim is > 0, so no
 * buffer may be empty), never a dereference. */
static void test_empty_buffer_without_data_is_a_wrong_count(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (int which = 0; which < N_BUFS; which++) {
        ug_buf buf[N_BUFS];
        memcpy(buf, c.buf, sizeof buf);
        buf[which] = (ug_buf){NULL, 0, buf_dtypes[which]};
        char want[64];
        snprintf(want, sizeof want, "%s must be %s[%zu] (got 0 ", buf_names[which],
                 ug_dtype_name(buf_dtypes[which]), c.buf[which].count);
        const char *const expect[MAX_EXPECT] = {want};
        ug_status s = run(&c.p, buf);
        expect_message(&s, expect);
    }
    case_close(&c);
}

static void test_missing_data_or_buffer_is_rejected_naming_it(void)
{
    wu_case c;
    case_open(&c, &valid_shape);
    for (int which = 0; which < N_BUFS; which++) {
        ug_buf buf[N_BUFS];
        memcpy(buf, c.buf, sizeof buf);
        buf[which].data = NULL;
        char want[64];
        snprintf(want, sizeof want, "%s has %zu elements but no data", buf_names[which], c.buf[which].count);
        const char *const expect_null_data[MAX_EXPECT] = {want};
        ug_status s = run(&c.p, buf);
        expect_message(&s, expect_null_data);
    }
    ug_status s = gdn_recompute_wu(&c.p, &c.buf[BUF_K], &c.buf[BUF_V], &c.buf[BUF_BETA], NULL,
                                   &c.buf[BUF_A], &c.buf[BUF_W], &c.buf[BUF_U]);
    const char *const expect_no_buffer[MAX_EXPECT] = {"g must be f32[", "(got no buffer)"};
    expect_message(&s, expect_no_buffer);
    s = run(NULL, c.buf);
    CU_ASSERT_EQUAL(s.code, UG_EINVAL);
    case_close(&c);
}

/* The seed multiplies u32 dims: 2^20 * 64 * 64 wraps to 0, so its check would
 * accept an empty k for a shape of 2^32 elements. Counted in size_t, the
 * empty buffer is a wrong count that states the true size. */
static void test_counts_do_not_wrap_at_32_bits(void)
{
    const gdn_recompute_wu_params p = {.b = 1, .t = 1u << 20, .hg = 64, .h = 64, .k = 64, .v = 64, .bt = 64};
    ug_buf buf[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) buf[i] = (ug_buf){NULL, 0, buf_dtypes[i]};
    ug_status s = run(&p, buf);
    const char *const expect[MAX_EXPECT] = {"k must be bf16[4294967296] (got 0 bf16)"};
    expect_message(&s, expect);
}

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const gdn_recompute_wu_params p = {.b = 1, .t = 1u << 31, .hg = 1u << 31, .h = 1u << 31,
                                       .k = 64, .v = 64, .bt = 64};
    ug_buf buf[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) buf[i] = (ug_buf){NULL, 0, buf_dtypes[i]};
    ug_status s = run(&p, buf);
    const char *const expect[MAX_EXPECT] = {"k shape [B=1, T=2147483648, Hg=2147483648, K=64]",
                                            "more elements than size_t"};
    expect_message(&s, expect);
}

UG_TEST_SUITE(gdn_recompute_wu_suite, "kernel_gdn_recompute_wu",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_each_rule_reports_what_it_checks),
              UG_TEST(test_rules_fire_in_the_seed_order),
              UG_TEST(test_rejections_leave_the_outputs_untouched),
              UG_TEST(test_seed_k256_case_names_k_the_cap_and_the_budget),
              UG_TEST(test_wrong_count_of_each_buffer_names_it),
              UG_TEST(test_wrong_dtype_of_each_buffer_names_it),
              UG_TEST(test_empty_buffer_without_data_is_a_wrong_count),
              UG_TEST(test_missing_data_or_buffer_is_rejected_naming_it),
              UG_TEST(test_counts_do_not_wrap_at_32_bits),
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
