/* SPDX-License-Identifier: MIT */
/* gdn_chunk_scaled_kkt: the kernel equals a plain scalar statement of SPEC
 * §1.3 bit for bit on every ISA path and at 1 and 3 kernel threads, with L
 * small and large enough to be streamed (the dot products as FMA chains in
 * index order, the micro-kernels' contract), and its validation is its
 * header's contract, rule for rule and in order, writing nothing when it
 * rejects. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../kernels/gdn_chunk_scaled_kkt.h"
#include "../kernels/isa.h"
#include "../kernels/parallel.h"
#include "kernel_contract.h"
#include "tests.h"

typedef gdn_chunk_scaled_kkt_params params;
enum { BUF_K, BUF_BETA, BUF_G, BUF_L, N_BUFS };
static const kc_buffer buffers[N_BUFS] = {
    {"k", UG_BF16, false}, {"beta", UG_F32, false}, {"g", UG_F32, false}, {"L", UG_F32, true}};

static size_t count(const void *vp, size_t i)
{
    const params *p = vp;
    const size_t tokens = (size_t)p->b * p->t;
    switch (i) {
    case BUF_K: return tokens * p->hg * p->k;
    case BUF_L: return tokens * p->h * p->bt;
    default: return tokens * p->h;
    }
}

static ug_status run(const void *p, ug_buf *const *bufs)
{
    return gdn_chunk_scaled_kkt(p, bufs[BUF_K], bufs[BUF_BETA], bufs[BUF_G], bufs[BUF_L]);
}

/* Keys in (-1/4, 1/4), beta in (0, 1), g cumulative within each chunk. */
static void fill(const void *vp, ug_buf *bufs, uint64_t *rng)
{
    const params *p = vp;
    ug_bf16 *k = bufs[BUF_K].data;
    float *beta = bufs[BUF_BETA].data, *g = bufs[BUF_G].data;
    for (size_t i = 0; i < bufs[BUF_K].count; i++) k[i] = ug_bf16_from_f32(ug_test_uniform(rng, -0.25f, 0.25f));
    for (size_t i = 0; i < bufs[BUF_BETA].count; i++) beta[i] = ug_test_uniform(rng, 0.0f, 1.0f);
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++) {
            float cumulative = 0.0f;
            for (size_t t = 0; t < p->t; t++) {
                if (t % p->bt == 0) cumulative = 0.0f;
                cumulative += ug_test_uniform(rng, -0.5f, 0.0f);
                g[(b * p->t + t) * p->h + h] = cumulative;
            }
        }
}

static const kc_kernel kernel = {"gated_delta_net_chunk_scaled_kkt: ", N_BUFS, buffers, sizeof(params), count, run, fill};
static const params valid = {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 128, .bt = 64};

static const kc_rule rules[] = {
    KC_DIM(params, b, 0, "all dims must be > 0", "B (0)"),
    KC_DIM(params, t, 0, "all dims must be > 0", "T (0)"),
    KC_DIM(params, hg, 0, "all dims must be > 0", "Hg (0)"),
    KC_DIM(params, h, 0, "all dims must be > 0", "H (0)"),
    KC_DIM(params, k, 0, "all dims must be > 0", "K (0)"),
    KC_DIM(params, bt, 0, "all dims must be > 0", "BT (0)"),
    KC_DIM(params, hg, 3, "h (4) must be a multiple of hg (3)"),
    KC_DIM(params, k, 257, "K (257) exceeds MAX_K = 256"),
    KC_DIM(params, bt, 32, "bt must be 64 (got 32)"),
    KC_DIM(params, t, 100, "t (100) must be a multiple of bt (64)"),
    KC_BUFFER(BUF_K, "k must be bf16["),
    KC_BUFFER(BUF_BETA, "beta must be f32["),
    KC_BUFFER(BUF_G, "g must be f32["),
    KC_BUFFER(BUF_L, "L must be f32["),
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

/* L[t][j] = (beta_t * expf(g_t - g_s)) * dot for j < i, dot an FMA chain over
 * the key dimension in index order; 0 elsewhere. */
static void scalar_kkt(const params *p, const ug_bf16 *k, const float *beta, const float *g, float *l)
{
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++)
            for (size_t t = 0; t < p->t; t++)
                for (size_t j = 0; j < p->bt; j++) {
                    const size_t i = t % p->bt, s = t - i + j, kh = h / (p->h / p->hg);
                    const size_t row = (b * p->t + t) * p->h + h, col = (b * p->t + s) * p->h + h;
                    float out = 0.0f;
                    if (j < i) {
                        const ug_bf16 *kt = k + ((b * p->t + t) * p->hg + kh) * p->k;
                        const ug_bf16 *ks = k + ((b * p->t + s) * p->hg + kh) * p->k;
                        float dot = 0.0f;
                        for (size_t d = 0; d < p->k; d++) dot = fmaf(ug_bf16_to_f32(kt[d]), ug_bf16_to_f32(ks[d]), dot);
                        out = beta[row] * expf(g[row] - g[col]) * dot;
                    }
                    l[row * p->bt + j] = out;
                }
}

static void test_matches_the_scalar_statement_on_every_isa(void)
{
    static const params shapes[] = {
        {.b = 1, .t = 64, .hg = 1, .h = 1, .k = 64, .bt = 64},
        {.b = 2, .t = 128, .hg = 1, .h = 2, .k = 128, .bt = 64},
        {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 256, .bt = 64},
        {.b = 1, .t = 64, .hg = 3, .h = 6, .k = 37, .bt = 64}, /* a key dimension with vector tails */
        {.b = 1, .t = 4096, .hg = 1, .h = 4, .k = 16, .bt = 64}, /* L of 4 MiB: streamed (isa.h) */
    };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        kc_case c;
        kc_case_open(&c, &kernel, &shapes[sh], 0xABCD + sh);
        const size_t n = c.buf[BUF_L].count;
        float *want = malloc(n * sizeof *want);
        CU_ASSERT_FATAL(want != NULL);
        scalar_kkt(&shapes[sh], c.buf[BUF_K].data, c.buf[BUF_BETA].data, c.buf[BUF_G].data, want);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++)
            for (unsigned threads = 1; threads <= 3; threads += 2) {
                if (!ug_isa_supported((ug_isa)isa)) continue;
                CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
                CU_ASSERT_EQUAL_FATAL(ug_kernel_threads_set(threads).code, UG_OK);
                memset(c.buf[BUF_L].data, 0xFF, n * sizeof(float));
                CU_ASSERT_EQUAL(kc_run(&c, &shapes[sh], NULL).code, UG_OK);
                size_t bad = 0;
                const float *got = c.buf[BUF_L].data;
                for (size_t x = 0; x < n; x++)
                    if (memcmp(&got[x], &want[x], sizeof(float)) != 0)
                        UG_TEST_MISMATCH(bad, "%s, %u threads: L[%zu] = %a, want %a", ug_isa_name((ug_isa)isa),
                                         threads, x, got[x], want[x]);
                CU_ASSERT_EQUAL(bad, 0);
            }
        CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
        free(want);
        kc_case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

KC_CONTRACT_TESTS(kernel, rules, N_RULES, &valid)

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const params p = {.b = 1, .t = 1u << 31, .hg = 1u << 31, .h = 1u << 31, .k = 256, .bt = 64};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"k shape [B=1, T=2147483648, Hg=2147483648, K=256]",
                                               "more elements than size_t"};
    kc_expect_message(&kernel, &s, expect);
}

UG_TEST_SUITE(gdn_chunk_scaled_kkt_suite, "kernel_gdn_chunk_scaled_kkt",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              KC_CONTRACT_TEST_LIST,
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
