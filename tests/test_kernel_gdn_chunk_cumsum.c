/* SPDX-License-Identifier: MIT */
/* gdn_chunk_cumsum: the kernel equals a plain scalar statement of SPEC §1.3
 * bit for bit on every ISA path, and its validation is its header's
 * contract, rule for rule and in order, writing nothing when it rejects. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/gdn_chunk_cumsum.h"
#include "../kernels/isa.h"
#include "kernel_contract.h"
#include "tests.h"

typedef gdn_chunk_cumsum_params params;
enum { BUF_G_RAW, BUF_G, N_BUFS };
static const kc_buffer buffers[N_BUFS] = {{"g_raw", UG_F32, false}, {"g", UG_F32, true}};

static size_t count(const void *vp, __attribute__((unused)) size_t i)
{
    const params *p = vp;
    return (size_t)p->b * p->t * p->h;
}

static ug_status run(const void *p, ug_buf *const *bufs) { return gdn_chunk_cumsum(p, bufs[BUF_G_RAW], bufs[BUF_G]); }

/* Raw log-gates in (-2, 0], some exactly 0. */
static void fill(__attribute__((unused)) const void *p, ug_buf *bufs, uint64_t *rng)
{
    float *g_raw = bufs[BUF_G_RAW].data;
    for (size_t i = 0; i < bufs[BUF_G_RAW].count; i++)
        g_raw[i] = ug_test_next_u32(rng) % 8 == 0 ? 0.0f : ug_test_uniform(rng, -2.0f, 0.0f);
}

static const kc_kernel kernel = {"gated_delta_net_chunk_cumsum: ", N_BUFS, buffers, sizeof(params), count, run, fill};
static const params valid = {.b = 1, .t = 128, .h = 4, .bt = 64};

static const kc_rule rules[] = {
    KC_DIM(params, b, 0, "all dims must be > 0", "B (0)"),
    KC_DIM(params, t, 0, "all dims must be > 0", "T (0)"),
    KC_DIM(params, h, 0, "all dims must be > 0", "H (0)"),
    KC_DIM(params, bt, 0, "all dims must be > 0", "BT (0)"),
    KC_DIM(params, bt, 32, "bt must be 64 (got 32)"),
    KC_DIM(params, t, 100, "t (100) must be a multiple of bt (64)"),
    KC_BUFFER(BUF_G_RAW, "g_raw must be f32["),
    KC_BUFFER(BUF_G, "g must be f32["),
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

/* g[t] = g_raw[start] + ... + g_raw[t] in f32, left to right. */
static void scalar_cumsum(const params *p, const float *g_raw, float *g)
{
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++)
            for (size_t t = 0; t < p->t; t++) {
                float acc = 0.0f;
                for (size_t s = t - t % p->bt; s <= t; s++) acc += g_raw[(b * p->t + s) * p->h + h];
                g[(b * p->t + t) * p->h + h] = acc;
            }
}

static void test_matches_the_scalar_statement_on_every_isa(void)
{
    static const params shapes[] = {
        {.b = 1, .t = 64, .h = 1, .bt = 64},
        {.b = 2, .t = 192, .h = 3, .bt = 64},
        {.b = 1, .t = 128, .h = 130, .bt = 64}, /* more heads than one block */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        kc_case c;
        kc_case_open(&c, &kernel, &shapes[i], 0x1234 + i);
        const size_t n = c.buf[BUF_G].count;
        float *want = malloc(n * sizeof *want);
        CU_ASSERT_FATAL(want != NULL);
        scalar_cumsum(&shapes[i], c.buf[BUF_G_RAW].data, want);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
            memset(c.buf[BUF_G].data, 0xFF, n * sizeof(float));
            ug_status st = kc_run(&c, &shapes[i], NULL);
            CU_ASSERT_EQUAL(st.code, UG_OK);
            CU_ASSERT_EQUAL(memcmp(c.buf[BUF_G].data, want, n * sizeof(float)), 0);
        }
        free(want);
        kc_case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* The first row of every chunk is its own raw gate, exactly: the sum restarts. */
static void test_each_chunk_restarts_from_its_first_gate(void)
{
    const params p = {.b = 1, .t = 256, .h = 2, .bt = 64};
    kc_case c;
    kc_case_open(&c, &kernel, &p, 77);
    CU_ASSERT_EQUAL_FATAL(kc_run(&c, &p, NULL).code, UG_OK);
    const float *g_raw = c.buf[BUF_G_RAW].data, *g = c.buf[BUF_G].data;
    for (size_t t = 0; t < p.t; t += p.bt)
        for (size_t h = 0; h < p.h; h++) CU_ASSERT_EQUAL(g[t * p.h + h], g_raw[t * p.h + h]);
    kc_case_close(&c);
}

KC_CONTRACT_TESTS(kernel, rules, N_RULES, &valid)

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const params p = {.b = 1u << 31, .t = 1u << 31, .h = 1u << 31, .bt = 64};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"g_raw shape [B=2147483648, T=2147483648, H=2147483648]",
                                               "more elements than size_t"};
    kc_expect_message(&kernel, &s, expect);
}

UG_TEST_SUITE(gdn_chunk_cumsum_suite, "kernel_gdn_chunk_cumsum",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_each_chunk_restarts_from_its_first_gate),
              KC_CONTRACT_TEST_LIST,
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
