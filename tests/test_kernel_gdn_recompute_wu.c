/* SPDX-License-Identifier: MIT */
/* gdn_recompute_wu: the kernel equals a plain scalar statement of SPEC §1.1
 * bit for bit on every ISA path, and its validation is the seed's, rule for
 * rule and in the seed's order, writing nothing when it rejects. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../kernels/gdn_recompute_wu.h"
#include "../kernels/isa.h"
#include "kernel_contract.h"
#include "tests.h"

typedef gdn_recompute_wu_params params;
enum { BUF_K, BUF_V, BUF_BETA, BUF_G, BUF_A, BUF_W, BUF_U, N_BUFS };
static const kc_buffer buffers[N_BUFS] = {
    {"k", UG_BF16, false}, {"v", UG_BF16, false}, {"beta", UG_F32, false}, {"g", UG_F32, false},
    {"A", UG_F32, false},  {"w", UG_BF16, true},  {"u", UG_BF16, true},
};

/* The shape most rejection cases start from (the seed test's, with K = 128). */
static const params valid_shape = {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 128, .v = 128, .bt = 64};

/* ---- layouts (written here independently of the kernel) ---------------- */

static size_t at_bthd(const params *p, size_t b, size_t t, size_t head, size_t heads, size_t d, size_t dim)
{
    return ((b * p->t + t) * heads + head) * dim + d;
}

static size_t at_bth(const params *p, size_t b, size_t t, size_t h) { return (b * p->t + t) * p->h + h; }

static size_t count(const void *vp, size_t which)
{
    const params *p = vp;
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

static ug_status run(const void *p, ug_buf *const *b)
{
    return gdn_recompute_wu(p, b[BUF_K], b[BUF_V], b[BUF_BETA], b[BUF_G], b[BUF_A], b[BUF_W], b[BUF_U]);
}

/* Realistic inputs (SPEC §1.3): beta in (0, 1), g a within-chunk cumulative
 * sum of negative log-gates (the outputs are pre-filled with noise by
 * kc_case_open, so that an element the kernel skips cannot match by
 * accident). */
static void fill(const void *vp, ug_buf *bufs, uint64_t *rng)
{
    const params *p = vp;
    ug_bf16 *k = bufs[BUF_K].data, *v = bufs[BUF_V].data;
    float *beta = bufs[BUF_BETA].data, *g = bufs[BUF_G].data, *a = bufs[BUF_A].data;
    for (size_t i = 0; i < bufs[BUF_K].count; i++) k[i] = ug_bf16_from_f32(ug_test_uniform(rng, -1.0f, 1.0f));
    for (size_t i = 0; i < bufs[BUF_V].count; i++) v[i] = ug_bf16_from_f32(ug_test_uniform(rng, -2.0f, 2.0f));
    for (size_t i = 0; i < bufs[BUF_BETA].count; i++) beta[i] = ug_test_uniform(rng, 0.0f, 1.0f);
    for (size_t i = 0; i < bufs[BUF_A].count; i++) a[i] = ug_test_uniform(rng, -1.0f, 1.0f);
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++) {
            float cumulative = 0.0f;
            for (size_t t = 0; t < p->t; t++) {
                if (t % p->bt == 0) cumulative = 0.0f;
                cumulative += ug_test_uniform(rng, -0.5f, 0.0f);
                g[at_bth(p, b, t, h)] = cumulative;
            }
        }
}

static const kc_kernel kernel = {"gated_delta_net_recompute_wu: ", N_BUFS, buffers, sizeof(params), count, run, fill};

/* ---- SPEC §1.1 as plain scalar loops ------------------------------------- */

static float f32_of(ug_bf16 x) { return ug_bf16_to_f32(x); }

/* out[t,h,:] = bf16(sum_j A[t,h,j] * staged[c*BT+j,h,:]), an FMA chain in j. */
static void chunked_product(const params *p, const float *a, const ug_bf16 *staged,
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

static void reference(const params *p, const kc_case *c, ug_bf16 *w, ug_bf16 *u)
{
    const ug_bf16 *k = c->buf[BUF_K].data, *v = c->buf[BUF_V].data;
    const float *beta = c->buf[BUF_BETA].data, *g = c->buf[BUF_G].data, *a = c->buf[BUF_A].data;
    ug_bf16 *staged_v = malloc(count(p, BUF_U) * sizeof *staged_v);
    ug_bf16 *staged_k = malloc(count(p, BUF_W) * sizeof *staged_k); /* per value head */
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
    static const params shapes[] = {
        {.b = 1, .t = 64, .hg = 1, .h = 1, .k = 64, .v = 64, .bt = 64},
        {.b = 2, .t = 128, .hg = 1, .h = 2, .k = 128, .v = 192, .bt = 64},
        {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 192, .v = 256, .bt = 64},
        {.b = 2, .t = 64, .hg = 2, .h = 4, .k = 64, .v = 128, .bt = 64},
        /* Too many heads for one item's scratch: several head groups per chunk. */
        {.b = 2, .t = 128, .hg = 4, .h = 32, .k = 192, .v = 256, .bt = 64},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const params *p = &shapes[s];
        kc_case c;
        kc_case_open(&c, &kernel, p, 0x2545F4914F6CDD1Du + s);
        size_t n_w = c.buf[BUF_W].count, n_u = c.buf[BUF_U].count;
        ug_bf16 *want_w = malloc(n_w * sizeof *want_w), *want_u = malloc(n_u * sizeof *want_u);
        CU_ASSERT_FATAL(want_w && want_u);
        reference(p, &c, want_w, want_u);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
            memset(c.buf[BUF_W].data, 0xFF, n_w * sizeof(ug_bf16));
            memset(c.buf[BUF_U].data, 0xFF, n_u * sizeof(ug_bf16));
            ug_status st = kc_run(&c, p, NULL);
            CU_ASSERT_EQUAL(st.code, UG_OK);
            CU_ASSERT_EQUAL(differing(c.buf[BUF_W].data, want_w, n_w, "w"), 0);
            CU_ASSERT_EQUAL(differing(c.buf[BUF_U].data, want_u, n_u, "u"), 0);
        }
        free(want_w);
        free(want_u);
        kc_case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* ---- rejections ------------------------------------------------------------ */

/* One broken rule each, in the seed's order. */
static const kc_rule rules[] = {
    KC_DIM(params, b, 0, "all dims must be > 0", "B (0)"),
    KC_DIM(params, t, 0, "all dims must be > 0", "T (0)"),
    KC_DIM(params, hg, 0, "all dims must be > 0", "Hg (0)"),
    KC_DIM(params, h, 0, "all dims must be > 0", "H (0)"),
    KC_DIM(params, k, 0, "all dims must be > 0", "K (0)"),
    KC_DIM(params, v, 0, "all dims must be > 0", "V (0)"),
    KC_DIM(params, bt, 0, "all dims must be > 0", "BT (0)"),
    KC_DIM(params, hg, 3, "h (4) must be a multiple of hg (3)"),
    KC_DIM(params, k, 256, "K (256)", "MAX_K = 192", "32 KB threadgroup memory budget"),
    KC_DIM(params, v, 320, "v (320)", "MAX_V (256)"),
    KC_DIM(params, bt, 32, "bt must be 64 (got 32)"),
    KC_DIM(params, t, 100, "t (100) must be a multiple of bt (64)"),
    KC_DIM(params, k, 96, "k (96) must be a multiple of BK (64)"),
    KC_DIM(params, v, 160, "v (160) must be a multiple of BV (64)"),
    /* The threadgroup-bytes rule cannot fire once bt == 64 is enforced. */
    KC_BUFFER(BUF_K, "k must be bf16["),
    KC_BUFFER(BUF_V, "v must be bf16["),
    KC_BUFFER(BUF_BETA, "beta must be f32["),
    KC_BUFFER(BUF_G, "g must be f32["),
    KC_BUFFER(BUF_A, "A must be f32["),
    KC_BUFFER(BUF_W, "w must be bf16["),
    KC_BUFFER(BUF_U, "u must be bf16["),
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

KC_CONTRACT_TESTS(kernel, rules, N_RULES, &valid_shape)

/* The seed's own test: K = 256 on its shape, with 1-element placeholder
 * buffers, because the K cap fires before any buffer is looked at. */
static void test_seed_k256_case_names_k_the_cap_and_the_budget(void)
{
    const params p = {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 256, .v = 128, .bt = 64};
    uint32_t storage[N_BUFS] = {0};
    ug_buf buf[N_BUFS];
    ug_buf *ptrs[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) {
        buf[i] = (ug_buf){&storage[i], 1, buffers[i].dtype};
        ptrs[i] = &buf[i];
    }
    ug_status s = run(&p, ptrs);
    const char *const expect[KC_MAX_EXPECT] = {"256", "MAX_K = 192", "32 KB"};
    kc_expect_message(&kernel, &s, expect);
    for (int i = 0; i < N_BUFS; i++) CU_ASSERT_EQUAL(storage[i], 0);
}

/* The seed multiplies u32 dims: 2^20 * 64 * 64 wraps to 0, so its check would
 * accept an empty k for a shape of 2^32 elements. Counted in size_t, the
 * empty buffer is a wrong count that states the true size. */
static void test_counts_do_not_wrap_at_32_bits(void)
{
    const params p = {.b = 1, .t = 1u << 20, .hg = 64, .h = 64, .k = 64, .v = 64, .bt = 64};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"k must be bf16[4294967296] (got 0 bf16)"};
    kc_expect_message(&kernel, &s, expect);
}

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const params p = {.b = 1, .t = 1u << 31, .hg = 1u << 31, .h = 1u << 31, .k = 64, .v = 64, .bt = 64};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"k shape [B=1, T=2147483648, Hg=2147483648, K=64]",
                                               "more elements than size_t"};
    kc_expect_message(&kernel, &s, expect);
}

UG_TEST_SUITE(gdn_recompute_wu_suite, "kernel_gdn_recompute_wu",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              KC_CONTRACT_TEST_LIST,
              UG_TEST(test_seed_k256_case_names_k_the_cap_and_the_budget),
              UG_TEST(test_counts_do_not_wrap_at_32_bits),
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
