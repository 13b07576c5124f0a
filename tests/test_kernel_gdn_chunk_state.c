/* SPDX-License-Identifier: MIT */
/* gdn_chunk_state: the kernel equals a plain scalar statement of SPEC §1.3
 * bit for bit on every ISA path and at 1 and 3 kernel threads, with v_new
 * small and large enough to be streamed (products as FMA chains in index
 * order, the micro-kernels' contract), an absent h0 is a zero state, and its
 * validation is its header's contract, rule for rule and in order, writing
 * nothing when it rejects. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../kernels/gdn_chunk_state.h"
#include "../kernels/isa.h"
#include "../kernels/parallel.h"
#include "kernel_contract.h"
#include "tests.h"

typedef gdn_chunk_state_params params;
enum { BUF_K, BUF_W, BUF_U, BUF_G, BUF_H0, BUF_H, BUF_V_NEW, BUF_FINAL, N_BUFS };
static const kc_buffer buffers[N_BUFS] = {
    {"k", UG_BF16, false}, {"w", UG_BF16, false},   {"u", UG_BF16, false},         {"g", UG_F32, false},
    {"h0", UG_F32, false}, {"h", UG_BF16, true},    {"v_new", UG_BF16, true},      {"final_state", UG_F32, true},
};

static size_t count(const void *vp, size_t i)
{
    const params *p = vp;
    const size_t tokens = (size_t)p->b * p->t, kv = (size_t)p->k * p->v;
    switch (i) {
    case BUF_K: return tokens * p->hg * p->k;
    case BUF_W: return tokens * p->h * p->k;
    case BUF_U: case BUF_V_NEW: return tokens * p->h * p->v;
    case BUF_G: return tokens * p->h;
    case BUF_H0: return p->has_h0 ? (size_t)p->b * p->h * kv : 0;
    case BUF_H: return (size_t)p->b * (p->t / p->bt) * p->h * kv;
    default: return (size_t)p->b * p->h * kv;
    }
}

static ug_status run(const void *p, ug_buf *const *b)
{
    return gdn_chunk_state(p, b[BUF_K], b[BUF_W], b[BUF_U], b[BUF_G], b[BUF_H0], b[BUF_H], b[BUF_V_NEW], b[BUF_FINAL]);
}

static void fill_bf16(ug_buf *b, uint64_t *rng, float lo, float hi)
{
    ug_bf16 *x = b->data;
    for (size_t i = 0; i < b->count; i++) x[i] = ug_bf16_from_f32(ug_test_uniform(rng, lo, hi));
}

/* Keys and w in (-1/4, 1/4), u in (-1, 1), g cumulative within each chunk,
 * h0 in (-1/2, 1/2). */
static void fill(const void *vp, ug_buf *bufs, uint64_t *rng)
{
    const params *p = vp;
    fill_bf16(&bufs[BUF_K], rng, -0.25f, 0.25f);
    fill_bf16(&bufs[BUF_W], rng, -0.25f, 0.25f);
    fill_bf16(&bufs[BUF_U], rng, -1.0f, 1.0f);
    float *g = bufs[BUF_G].data, *h0 = bufs[BUF_H0].data;
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++) {
            float cumulative = 0.0f;
            for (size_t t = 0; t < p->t; t++) {
                if (t % p->bt == 0) cumulative = 0.0f;
                cumulative += ug_test_uniform(rng, -0.1f, 0.0f);
                g[(b * p->t + t) * p->h + h] = cumulative;
            }
        }
    for (size_t i = 0; i < bufs[BUF_H0].count; i++) h0[i] = ug_test_uniform(rng, -0.5f, 0.5f);
}

static const kc_kernel kernel = {"gated_delta_net_chunk_state: ", N_BUFS, buffers, sizeof(params), count, run, fill};
static const params valid = {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 64, .v = 64, .bt = 64, .has_h0 = 1};
static const params valid_without_h0 = {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 64, .v = 64, .bt = 64, .has_h0 = 0};

static const kc_rule rules[] = {
    KC_DIM(params, b, 0, "all dims must be > 0", "B (0)"),
    KC_DIM(params, t, 0, "all dims must be > 0", "T (0)"),
    KC_DIM(params, hg, 0, "all dims must be > 0", "Hg (0)"),
    KC_DIM(params, h, 0, "all dims must be > 0", "H (0)"),
    KC_DIM(params, k, 0, "all dims must be > 0", "K (0)"),
    KC_DIM(params, v, 0, "all dims must be > 0", "V (0)"),
    KC_DIM(params, bt, 0, "all dims must be > 0", "BT (0)"),
    KC_DIM(params, has_h0, 2, "has_h0 (2) must be 0 or 1"),
    KC_DIM(params, hg, 3, "h (4) must be a multiple of hg (3)"),
    KC_DIM(params, k, 320, "K (320) exceeds MAX_K = 256"),
    KC_DIM(params, v, 320, "V (320) exceeds MAX_V = 256"),
    KC_DIM(params, bt, 32, "bt must be 64 (got 32)"),
    KC_DIM(params, t, 100, "t (100) must be a multiple of bt (64)"),
    KC_BUFFER(BUF_K, "k must be bf16["),
    KC_BUFFER(BUF_W, "w must be bf16["),
    KC_BUFFER(BUF_U, "u must be bf16["),
    KC_BUFFER(BUF_G, "g must be f32["),
    KC_BUFFER(BUF_H0, "h0 must be f32["),
    KC_BUFFER(BUF_H, "h must be bf16["),
    KC_BUFFER(BUF_V_NEW, "v_new must be bf16["),
    KC_BUFFER(BUF_FINAL, "final_state must be f32["),
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

static float f32_of(ug_bf16 x) { return ug_bf16_to_f32(x); }

/* SPEC §1.3 chunk by chunk, element by element. */
static void scalar_state(const params *p, const kc_case *c, ug_bf16 *h_out, ug_bf16 *v_new, float *final_state)
{
    const ug_bf16 *k = c->buf[BUF_K].data, *w = c->buf[BUF_W].data, *u = c->buf[BUF_U].data;
    const float *g = c->buf[BUF_G].data, *h0 = c->buf[BUF_H0].data;
    const size_t dk = p->k, dv = p->v, bt = p->bt, nt = p->t / bt, kv = dk * dv;
    float *s = malloc(kv * sizeof *s), *staged = malloc(bt * dv * sizeof *staged);
    CU_ASSERT_FATAL(s && staged);
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++) {
            const size_t kh = h / (p->h / p->hg);
            for (size_t x = 0; x < kv; x++) s[x] = p->has_h0 ? h0[(b * p->h + h) * kv + x] : 0.0f;
            for (size_t ch = 0; ch < nt; ch++) {
                const size_t t0 = ch * bt;
                const float g_last = g[(b * p->t + t0 + bt - 1) * p->h + h];
                for (size_t kk = 0; kk < dk; kk++)
                    for (size_t vv = 0; vv < dv; vv++)
                        h_out[(((b * nt + ch) * p->h + h) * dv + vv) * dk + kk] = ug_bf16_from_f32(s[kk * dv + vv]);
                for (size_t i = 0; i < bt; i++) {
                    const size_t row = (b * p->t + t0 + i) * p->h + h;
                    const float decay = expf(g_last - g[row]);
                    for (size_t vv = 0; vv < dv; vv++) {
                        float ws = 0.0f;
                        for (size_t kk = 0; kk < dk; kk++)
                            ws = fmaf(f32_of(w[row * dk + kk]), f32_of(ug_bf16_from_f32(s[kk * dv + vv])), ws);
                        const float v = f32_of(u[row * dv + vv]) - ws;
                        v_new[row * dv + vv] = ug_bf16_from_f32(v);
                        staged[i * dv + vv] = f32_of(ug_bf16_from_f32(decay * v));
                    }
                }
                const float state_decay = expf(g_last);
                for (size_t kk = 0; kk < dk; kk++)
                    for (size_t vv = 0; vv < dv; vv++) {
                        float upd = 0.0f;
                        for (size_t i = 0; i < bt; i++)
                            upd = fmaf(f32_of(k[((b * p->t + t0 + i) * p->hg + kh) * dk + kk]), staged[i * dv + vv], upd);
                        s[kk * dv + vv] = fmaf(state_decay, s[kk * dv + vv], upd);
                    }
            }
            memcpy(final_state + (b * p->h + h) * kv, s, kv * sizeof *s);
        }
    free(s);
    free(staged);
}

static size_t differing(const void *got, const void *want, size_t n, size_t size, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)got + i * size, (const char *)want + i * size, size) != 0)
            UG_TEST_MISMATCH(bad, "%s on %s: element %zu differs", what, ug_isa_name(ug_isa_current()), i);
    return bad;
}

static void test_matches_the_scalar_statement_on_every_isa(void)
{
    static const params shapes[] = {
        {.b = 1, .t = 64, .hg = 1, .h = 1, .k = 64, .v = 64, .bt = 64, .has_h0 = 0},
        {.b = 2, .t = 192, .hg = 1, .h = 2, .k = 64, .v = 128, .bt = 64, .has_h0 = 1},
        {.b = 1, .t = 128, .hg = 2, .h = 4, .k = 48, .v = 40, .bt = 64, .has_h0 = 1},
        /* Head groups (an item's heads) across key heads: one group of 6 at
         * 1 thread, groups of 2 at 3, the middle one straddling two key heads. */
        {.b = 1, .t = 128, .hg = 2, .h = 6, .k = 64, .v = 64, .bt = 64, .has_h0 = 1},
        /* Too many heads for one item's scratch: groups of 4, two key heads each. */
        {.b = 1, .t = 128, .hg = 8, .h = 16, .k = 256, .v = 256, .bt = 64, .has_h0 = 1},
        /* v_new of 4 MiB: streamed (isa.h); a streamed h needs 64x its
         * multiply-adds, too slow here: ug_rows_store's own test covers it */
        {.b = 1, .t = 4096, .hg = 1, .h = 4, .k = 2, .v = 128, .bt = 64, .has_h0 = 1},
    };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const params *p = &shapes[sh];
        kc_case c;
        kc_case_open(&c, &kernel, p, 0x7777 + sh);
        const size_t n_h = c.buf[BUF_H].count, n_v = c.buf[BUF_V_NEW].count, n_s = c.buf[BUF_FINAL].count;
        ug_bf16 *want_h = malloc(n_h * 2), *want_v = malloc(n_v * 2);
        float *want_s = malloc(n_s * 4);
        CU_ASSERT_FATAL(want_h && want_v && want_s);
        scalar_state(p, &c, want_h, want_v, want_s);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++)
            for (unsigned threads = 1; threads <= 3; threads += 2) {
                if (!ug_isa_supported((ug_isa)isa)) continue;
                CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
                CU_ASSERT_EQUAL_FATAL(ug_kernel_threads_set(threads).code, UG_OK);
                for (int o = BUF_H; o <= BUF_FINAL; o++)
                    memset(c.buf[o].data, 0xFF, c.buf[o].count * ug_dtype_size(c.buf[o].dtype));
                CU_ASSERT_EQUAL(kc_run(&c, p, NULL).code, UG_OK);
                CU_ASSERT_EQUAL(differing(c.buf[BUF_H].data, want_h, n_h, 2, "h"), 0);
                CU_ASSERT_EQUAL(differing(c.buf[BUF_V_NEW].data, want_v, n_v, 2, "v_new"), 0);
                CU_ASSERT_EQUAL(differing(c.buf[BUF_FINAL].data, want_s, n_s, 4, "final_state"), 0);
            }
        CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
        free(want_h);
        free(want_v);
        free(want_s);
        kc_case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* has_h0 = 0 with an empty h0 (no data at all) gives the bits of an
 * explicit all-zero h0. */
static void test_absent_h0_is_a_zero_state(void)
{
    params with = {.b = 1, .t = 128, .hg = 1, .h = 2, .k = 64, .v = 64, .bt = 64, .has_h0 = 1};
    kc_case c;
    kc_case_open(&c, &kernel, &with, 5);
    memset(c.buf[BUF_H0].data, 0, c.buf[BUF_H0].count * sizeof(float));
    CU_ASSERT_EQUAL_FATAL(kc_run(&c, &with, NULL).code, UG_OK);
    size_t bytes[N_BUFS];
    unsigned char *first[N_BUFS] = {0};
    for (int o = BUF_H; o <= BUF_FINAL; o++) {
        bytes[o] = c.buf[o].count * ug_dtype_size(c.buf[o].dtype);
        first[o] = malloc(bytes[o]);
        CU_ASSERT_FATAL(first[o] != NULL);
        memcpy(first[o], c.buf[o].data, bytes[o]);
        memset(c.buf[o].data, 0xFF, bytes[o]);
    }
    params without = with;
    without.has_h0 = 0;
    ug_buf bufs[KC_MAX_BUFFERS];
    memcpy(bufs, c.buf, sizeof bufs);
    bufs[BUF_H0] = (ug_buf){NULL, 0, UG_F32};
    CU_ASSERT_EQUAL(kc_run(&c, &without, bufs).code, UG_OK);
    for (int o = BUF_H; o <= BUF_FINAL; o++) {
        CU_ASSERT_EQUAL(memcmp(first[o], c.buf[o].data, bytes[o]), 0);
        free(first[o]);
    }
    kc_case_close(&c);
}

KC_CONTRACT_TESTS(kernel, rules, N_RULES, &valid, &valid_without_h0)

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const params p = {.b = 1, .t = 1u << 31, .hg = 1u << 31, .h = 1u << 31, .k = 64, .v = 64, .bt = 64, .has_h0 = 0};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"k shape [B=1, T=2147483648, Hg=2147483648, K=64]",
                                               "more elements than size_t"};
    kc_expect_message(&kernel, &s, expect);
}

UG_TEST_SUITE(gdn_chunk_state_suite, "kernel_gdn_chunk_state",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_absent_h0_is_a_zero_state),
              KC_CONTRACT_TEST_LIST,
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
