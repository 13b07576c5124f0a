/* SPDX-License-Identifier: MIT */
/* gdn_chunk_o: the kernel equals a plain scalar statement of SPEC §1.2 bit
 * for bit on every ISA path, and its validation is the seed's, rule for rule
 * and in the seed's order, writing nothing when it rejects. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../kernels/gdn_chunk_o.h"
#include "../kernels/isa.h"
#include "kernel_contract.h"
#include "tests.h"

typedef gdn_chunk_o_params params;
enum { BUF_Q, BUF_K, BUF_V, BUF_H, BUF_G, BUF_O, N_BUFS };
static const kc_buffer buffers[N_BUFS] = {
    {"q", UG_BF16, false}, {"k", UG_BF16, false}, {"v", UG_BF16, false},
    {"h", UG_BF16, false}, {"g", UG_F32, false},  {"o", UG_BF16, true},
};

enum { BT = 64, KDIM = 128 };

/* The shape most rejection cases start from (the seed test's, with K = 128). */
static const params valid_shape = {
    .b = 1, .t = 128, .hg = 2, .h = 4, .k = 128, .v = 128, .bt = 64, .scale = 0.08838834764831845f};

/* ---- layouts (written here independently of the kernel) ---------------- */

static size_t at_bthd(const params *p, size_t b, size_t t, size_t head, size_t heads, size_t d, size_t dim)
{
    return ((b * p->t + t) * heads + head) * dim + d;
}

static size_t at_bth(const params *p, size_t b, size_t t, size_t h) { return (b * p->t + t) * p->h + h; }

/* h[b, c, head, v, k]: the state at the start of chunk c, V-major. */
static size_t at_state(const params *p, size_t b, size_t c, size_t head, size_t col, size_t kk)
{
    return (((b * (p->t / p->bt) + c) * p->h + head) * p->v + col) * p->k + kk;
}

static size_t count(const void *vp, size_t which)
{
    const params *p = vp;
    size_t rows = (size_t)p->b * p->t;
    switch (which) {
    case BUF_Q: case BUF_K: return rows * p->hg * p->k;
    case BUF_V: case BUF_O: return rows * p->h * p->v;
    case BUF_H: return (size_t)p->b * (p->t / p->bt) * p->h * p->v * p->k;
    case BUF_G: return rows * p->h;
    }
    return 0;
}

static ug_status run(const void *p, ug_buf *const *b)
{
    return gdn_chunk_o(p, b[BUF_Q], b[BUF_K], b[BUF_V], b[BUF_H], b[BUF_G], b[BUF_O]);
}

/* Inputs in the kernel's ranges (q, k of norm about 1, a state of moderate
 * entries, g a within-chunk cumulative sum of negative log-gates with some
 * zero gates); the output is pre-filled with noise by kc_case_open, so that
 * an element the kernel skips cannot match by accident. */
static void fill(const void *vp, ug_buf *bufs, uint64_t *rng)
{
    const params *p = vp;
    ug_bf16 *q = bufs[BUF_Q].data, *k = bufs[BUF_K].data, *v = bufs[BUF_V].data, *h = bufs[BUF_H].data;
    float *g = bufs[BUF_G].data;
    for (size_t i = 0; i < bufs[BUF_Q].count; i++) q[i] = ug_bf16_from_f32(ug_test_uniform(rng, -0.15f, 0.15f));
    for (size_t i = 0; i < bufs[BUF_K].count; i++) k[i] = ug_bf16_from_f32(ug_test_uniform(rng, -0.15f, 0.15f));
    for (size_t i = 0; i < bufs[BUF_V].count; i++) v[i] = ug_bf16_from_f32(ug_test_uniform(rng, -2.0f, 2.0f));
    for (size_t i = 0; i < bufs[BUF_H].count; i++) h[i] = ug_bf16_from_f32(ug_test_uniform(rng, -1.0f, 1.0f));
    for (size_t b = 0; b < p->b; b++)
        for (size_t head = 0; head < p->h; head++) {
            float cumulative = 0.0f;
            for (size_t t = 0; t < p->t; t++) {
                if (t % p->bt == 0) cumulative = 0.0f;
                if (ug_test_next_u32(rng) % 8) cumulative += ug_test_uniform(rng, -0.5f, 0.0f);
                g[at_bth(p, b, t, head)] = cumulative;
            }
        }
}

/* No ": " in the prefix: some rules report as "gated_delta_net_chunk_o (iter 3): ". */
static const kc_kernel kernel = {"gated_delta_net_chunk_o", N_BUFS, buffers, sizeof(params), count, run, fill};

/* ---- SPEC §1.2 as plain scalar loops ------------------------------------- */

static float f32_of(ug_bf16 x) { return ug_bf16_to_f32(x); }

/* An f32 dot product of two bf16 rows: an FMA chain in increasing index. */
static float dot_f32(const ug_bf16 *a, const ug_bf16 *b, size_t n)
{
    float acc = 0.0f;
    for (size_t i = 0; i < n; i++) acc = fmaf(f32_of(a[i]), f32_of(b[i]), acc);
    return acc;
}

static void scalar_statement(const params *p, const kc_case *c, ug_bf16 *o)
{
    const ug_bf16 *q = c->buf[BUF_Q].data, *k = c->buf[BUF_K].data, *v = c->buf[BUF_V].data,
                  *h = c->buf[BUF_H].data;
    const float *g = c->buf[BUF_G].data;
    static ug_bf16 attention[BT][BT];
    for (size_t b = 0; b < p->b; b++)
        for (size_t head = 0; head < p->h; head++) {
            size_t kh = head / (p->h / p->hg);
            for (size_t c0 = 0; c0 < p->t; c0 += BT) {
                for (size_t i = 0; i < BT; i++)
                    for (size_t j = 0; j < BT; j++) {
                        size_t t = c0 + i, s = c0 + j;
                        float decay = expf(g[at_bth(p, b, t, head)] - g[at_bth(p, b, s, head)]);
                        float x = i >= j ? decay * dot_f32(q + at_bthd(p, b, t, kh, p->hg, 0, KDIM),
                                                           k + at_bthd(p, b, s, kh, p->hg, 0, KDIM), KDIM)
                                         : 0.0f;
                        attention[i][j] = ug_bf16_from_f32(x);
                    }
                for (size_t i = 0; i < BT; i++)
                    for (size_t col = 0; col < p->v; col++) {
                        size_t t = c0 + i;
                        float state = expf(g[at_bth(p, b, t, head)]) *
                                      dot_f32(q + at_bthd(p, b, t, kh, p->hg, 0, KDIM),
                                              h + at_state(p, b, c0 / BT, head, col, 0), KDIM);
                        float intra = 0.0f;
                        for (size_t j = 0; j < BT; j++)
                            intra = fmaf(f32_of(attention[i][j]), f32_of(v[at_bthd(p, b, c0 + j, head, p->h, col, p->v)]), intra);
                        o[at_bthd(p, b, t, head, p->h, col, p->v)] = ug_bf16_from_f32(state * p->scale + intra * p->scale);
                    }
            }
        }
}

static size_t differing(const ug_bf16 *got, const ug_bf16 *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            UG_TEST_MISMATCH(bad, "o on %s: element %zu = 0x%04x, want 0x%04x", ug_isa_name(ug_isa_current()), i,
                             got[i], want[i]);
    return bad;
}

static void test_matches_the_scalar_statement_on_every_isa(void)
{
    static const params shapes[] = {
        {.b = 1, .t = 64, .hg = 1, .h = 1, .k = 128, .v = 32, .bt = 64, .scale = 0.08838834764831845f},
        {.b = 2, .t = 128, .hg = 1, .h = 2, .k = 128, .v = 96, .bt = 64, .scale = 1.0f},
        {.b = 1, .t = 64, .hg = 2, .h = 4, .k = 128, .v = 256, .bt = 64, .scale = -0.3f},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const params *p = &shapes[s];
        kc_case c;
        kc_case_open(&c, &kernel, p, 0x2545F4914F6CDD1Du + s);
        size_t n = c.buf[BUF_O].count;
        ug_bf16 *want = malloc(n * sizeof *want);
        CU_ASSERT_FATAL(want != NULL);
        scalar_statement(p, &c, want);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
            memset(c.buf[BUF_O].data, 0xFF, n * sizeof(ug_bf16));
            ug_status st = kc_run(&c, p, NULL);
            CU_ASSERT_EQUAL(st.code, UG_OK);
            CU_ASSERT_EQUAL(differing(c.buf[BUF_O].data, want, n), 0);
        }
        free(want);
        kc_case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* The attention tile is rounded after the mask and before Q v, the diagonal
 * included: with q = k = e_0, zero gates and a zero state, row i of o is
 * bf16(scale * sum_{j<=i} v_j) with every attention weight exactly 1. */
static void test_inclusive_mask_with_unit_attention(void)
{
    const params p = {.b = 1, .t = 64, .hg = 1, .h = 1, .k = 128, .v = 32, .bt = 64, .scale = 0.5f};
    kc_case c;
    kc_case_open(&c, &kernel, &p, 0);
    ug_bf16 *q = c.buf[BUF_Q].data, *k = c.buf[BUF_K].data, *v = c.buf[BUF_V].data, *h = c.buf[BUF_H].data;
    float *g = c.buf[BUF_G].data;
    memset(q, 0, c.buf[BUF_Q].count * sizeof *q);
    memset(k, 0, c.buf[BUF_K].count * sizeof *k);
    memset(h, 0, c.buf[BUF_H].count * sizeof *h);
    for (size_t t = 0; t < p.t; t++) {
        q[t * KDIM] = k[t * KDIM] = ug_bf16_from_f32(1.0f);
        g[t] = 0.0f;
        for (size_t col = 0; col < p.v; col++) v[t * p.v + col] = ug_bf16_from_f32((float)((int)(t + col) % 5 - 2));
    }
    CU_ASSERT_EQUAL(kc_run(&c, &p, NULL).code, UG_OK);
    const ug_bf16 *o = c.buf[BUF_O].data;
    size_t bad = 0;
    for (size_t t = 0; t < p.t; t++)
        for (size_t col = 0; col < p.v; col++) {
            float sum = 0.0f; /* small integers: exact */
            for (size_t s = 0; s <= t; s++) sum += f32_of(v[s * p.v + col]);
            if (o[t * p.v + col] != ug_bf16_from_f32(0.5f * sum))
                UG_TEST_MISMATCH(bad, "o[%zu][%zu] = %g, want %g", t, col, f32_of(o[t * p.v + col]), 0.5f * sum);
        }
    CU_ASSERT_EQUAL(bad, 0);
    kc_case_close(&c);
}

/* The state term reads h[c] V-major with its decay: with no attention (k = 0),
 * q_t = e_m (m = t % K) and scale 1, o[t, v] = bf16(expf(g_t) * h[c, v, m])
 * exactly, c the chunk holding t. */
static void test_state_term_reads_h_v_major_per_chunk(void)
{
    const params p = {.b = 1, .t = 128, .hg = 1, .h = 1, .k = 128, .v = 64, .bt = 64, .scale = 1.0f};
    kc_case c;
    kc_case_open(&c, &kernel, &p, 0);
    ug_bf16 *q = c.buf[BUF_Q].data, *k = c.buf[BUF_K].data;
    const ug_bf16 *h = c.buf[BUF_H].data;
    const float *g = c.buf[BUF_G].data;
    memset(q, 0, c.buf[BUF_Q].count * sizeof *q);
    memset(k, 0, c.buf[BUF_K].count * sizeof *k);
    for (size_t t = 0; t < p.t; t++) q[t * KDIM + t % KDIM] = ug_bf16_from_f32(1.0f);
    CU_ASSERT_EQUAL(kc_run(&c, &p, NULL).code, UG_OK);
    const ug_bf16 *o = c.buf[BUF_O].data;
    size_t bad = 0;
    for (size_t t = 0; t < p.t; t++)
        for (size_t col = 0; col < p.v; col++) {
            float want = expf(g[t]) * f32_of(h[at_state(&p, 0, t / BT, 0, col, t % KDIM)]);
            if (o[t * p.v + col] != ug_bf16_from_f32(want))
                UG_TEST_MISMATCH(bad, "o[%zu][%zu] = %g, want %g", t, col, f32_of(o[t * p.v + col]), want);
        }
    CU_ASSERT_EQUAL(bad, 0);
    kc_case_close(&c);
}

/* ---- rejections ------------------------------------------------------------ */

/* One broken rule each: a dim set to a bad value, the scale made non-finite
 * (its f32 bits), or a buffer given one element too many; in the seed's
 * order. */
static const kc_rule rules[] = {
    KC_DIM(params, b, 0, "all dims must be > 0", "B (0)"),
    KC_DIM(params, t, 0, "all dims must be > 0", "T (0)"),
    KC_DIM(params, hg, 0, "all dims must be > 0", "Hg (0)"),
    KC_DIM(params, h, 0, "all dims must be > 0", "H (0)"),
    KC_DIM(params, k, 0, "all dims must be > 0", "K (0)"),
    KC_DIM(params, v, 0, "all dims must be > 0", "V (0)"),
    KC_DIM(params, bt, 0, "all dims must be > 0", "BT (0)"),
    KC_DIM(params, hg, 3, "h (4) must be a multiple of hg (3)"),
    KC_DIM(params, k, 256, "K (256) must equal MAX_K = 128 exactly", "compile-time", "MMA"),
    KC_DIM(params, v, 288, "v (288) must be <= MAX_V (256)"),
    KC_DIM(params, bt, 32, "bt must be 64 (got 32)"),
    KC_DIM(params, t, 100, "t (100) must be a multiple of bt (64)"),
    /* k % BK cannot fire once K == 128 is enforced. */
    KC_DIM(params, v, 48, "v (48) must be a multiple of BV (32)"),
    KC_DIM(params, scale, KC_F32_INF, "scale must be finite (got inf)"),
    /* The threadgroup-bytes rule cannot fire once bt == 64 is enforced. */
    KC_BUFFER(BUF_Q, "q must be bf16["),
    KC_BUFFER(BUF_K, "k must be bf16["),
    KC_BUFFER(BUF_V, "v must be bf16["),
    KC_BUFFER(BUF_H, "h must be bf16["),
    KC_BUFFER(BUF_G, "g must be f32["),
    KC_BUFFER(BUF_O, "o must be bf16["),
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

KC_CONTRACT_TESTS(kernel, rules, N_RULES, &valid_shape)

/* The seed's own test: K = 256 on its shape, with 1-element placeholder
 * buffers, because the K rule fires before any buffer is looked at. */
static void test_seed_k256_case_names_k_the_cap_and_the_mma_loop(void)
{
    const uint32_t rejected_k[] = {256, 64, 96, 129};
    for (size_t i = 0; i < sizeof rejected_k / sizeof rejected_k[0]; i++) {
        params p = valid_shape;
        p.k = rejected_k[i];
        uint32_t storage[N_BUFS] = {0};
        ug_buf buf[N_BUFS];
        ug_buf *ptrs[N_BUFS];
        for (int b = 0; b < N_BUFS; b++) {
            buf[b] = (ug_buf){&storage[b], 1, buffers[b].dtype};
            ptrs[b] = &buf[b];
        }
        ug_status s = run(&p, ptrs);
        char named[32];
        snprintf(named, sizeof named, "K (%u)", rejected_k[i]);
        const char *const expect[KC_MAX_EXPECT] = {named, "MAX_K = 128", "compile-time", "MMA"};
        kc_expect_message(&kernel, &s, expect);
        for (int b = 0; b < N_BUFS; b++) CU_ASSERT_EQUAL(storage[b], 0);
    }
}

/* +inf, -inf and NaN are each refused naming the value, o untouched. */
static void test_non_finite_scale_is_rejected_naming_it(void)
{
    const float scales[] = {INFINITY, -INFINITY, NAN};
    const char *const named[] = {"scale must be finite (got inf)", "scale must be finite (got -inf)",
                                 "scale must be finite (got nan)"};
    kc_case c;
    kc_case_open(&c, &kernel, &valid_shape, 0);
    const size_t bytes = c.buf[BUF_O].count * sizeof(ug_bf16);
    unsigned char *before = malloc(bytes);
    CU_ASSERT_FATAL(before != NULL);
    memcpy(before, c.buf[BUF_O].data, bytes);
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
        params p = valid_shape;
        p.scale = scales[i];
        ug_status s = kc_run(&c, &p, NULL);
        const char *const expect[KC_MAX_EXPECT] = {named[i]};
        kc_expect_message(&kernel, &s, expect);
        CU_ASSERT_EQUAL(memcmp(before, c.buf[BUF_O].data, bytes), 0);
    }
    free(before);
    kc_case_close(&c);
}

/* h has one state per chunk, B*NT*H*V*K elements (NT = T/BT = 2 here); a
 * per-token state is refused naming the per-chunk count. */
static void test_h_counts_chunks_not_tokens(void)
{
    kc_case c;
    kc_case_open(&c, &kernel, &valid_shape, 0);
    CU_ASSERT_EQUAL(c.buf[BUF_H].count, (size_t)1 * 2 * 4 * 128 * 128);
    ug_buf buf[KC_MAX_BUFFERS];
    memcpy(buf, c.buf, sizeof buf);
    buf[BUF_H].count = (size_t)1 * 128 * 4 * 128 * 128;
    ug_status s = kc_run(&c, &valid_shape, buf);
    const char *const expect[KC_MAX_EXPECT] = {"h must be bf16[131072] (got 8388608 bf16)"};
    kc_expect_message(&kernel, &s, expect);
    kc_case_close(&c);
}

/* The seed multiplies u32 dims: B*NT*H*V*K = 1 * 2^16 * 2^9 * 2^7 * 2^7 wraps
 * to 0 in u32, so its check would accept an empty h for a state of 2^39
 * elements. Counted in size_t, the empty h is a wrong count stating the true
 * size. */
static void test_counts_do_not_wrap_at_32_bits(void)
{
    const params p = {.b = 1, .t = 1u << 22, .hg = 1, .h = 512, .k = 128, .v = 128, .bt = 64, .scale = 1.0f};
    ug_buf buf[N_BUFS];
    ug_buf *ptrs[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) {
        buf[i] = (ug_buf){NULL, 0, buffers[i].dtype};
        ptrs[i] = &buf[i];
    }
    buf[BUF_Q].count = buf[BUF_K].count = (size_t)p.t * p.k;
    buf[BUF_V].count = (size_t)p.t * p.h * p.v;
    uint16_t placeholder;
    buf[BUF_Q].data = buf[BUF_K].data = buf[BUF_V].data = &placeholder;
    ug_status s = run(&p, ptrs);
    const char *const expect[KC_MAX_EXPECT] = {"h must be bf16[549755813888] (got 0 bf16)"};
    kc_expect_message(&kernel, &s, expect);
}

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const params p = {.b = 1u << 31, .t = 1u << 31, .hg = 1u << 31, .h = 1u << 31,
                      .k = 128, .v = 128, .bt = 64, .scale = 1.0f};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"q shape [B=2147483648, T=2147483648, Hg=2147483648, K=128]",
                                               "more elements than size_t"};
    kc_expect_message(&kernel, &s, expect);
}

UG_TEST_SUITE(gdn_chunk_o_suite, "kernel_gdn_chunk_o",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_inclusive_mask_with_unit_attention),
              UG_TEST(test_state_term_reads_h_v_major_per_chunk),
              KC_CONTRACT_TEST_LIST,
              UG_TEST(test_seed_k256_case_names_k_the_cap_and_the_mma_loop),
              UG_TEST(test_non_finite_scale_is_rejected_naming_it),
              UG_TEST(test_h_counts_chunks_not_tokens),
              UG_TEST(test_counts_do_not_wrap_at_32_bits),
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
