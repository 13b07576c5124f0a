/* SPDX-License-Identifier: MIT */
/* gdn_solve_tril: the kernel equals a plain scalar forward substitution bit
 * for bit on every ISA path and at 1 and 3 kernel threads, with A small and
 * large enough to be streamed, reads L strictly below the diagonal only, and
 * its validation is its header's contract, rule for rule and in order,
 * writing nothing when it rejects. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/gdn_solve_tril.h"
#include "../kernels/isa.h"
#include "../kernels/parallel.h"
#include "kernel_contract.h"
#include "tests.h"

typedef gdn_solve_tril_params params;
enum { BUF_L, BUF_A, N_BUFS };
static const kc_buffer buffers[N_BUFS] = {{"L", UG_F32, false}, {"A", UG_F32, true}};

static size_t count(const void *vp, __attribute__((unused)) size_t i)
{
    const params *p = vp;
    return (size_t)p->b * p->t * p->h * p->bt;
}

static ug_status run(const void *p, ug_buf *const *bufs) { return gdn_solve_tril(p, bufs[BUF_L], bufs[BUF_A]); }

/* Strictly lower entries in (-0.1, 0.1); on and above the diagonal, noise
 * the kernel must ignore. */
static void fill(const void *vp, ug_buf *bufs, uint64_t *rng)
{
    const params *p = vp;
    float *l = bufs[BUF_L].data;
    for (size_t x = 0; x < bufs[BUF_L].count; x++) {
        const size_t j = x % p->bt, i = x / (p->bt * p->h) % p->t % p->bt;
        l[x] = j < i ? ug_test_uniform(rng, -0.1f, 0.1f) : ug_test_uniform(rng, -1e3f, 1e3f);
    }
}

static const kc_kernel kernel = {"gated_delta_net_solve_tril: ", N_BUFS, buffers, sizeof(params), count, run, fill};
static const params valid = {.b = 1, .t = 128, .h = 4, .bt = 64};

static const kc_rule rules[] = {
    KC_DIM(params, b, 0, "all dims must be > 0", "B (0)"),
    KC_DIM(params, t, 0, "all dims must be > 0", "T (0)"),
    KC_DIM(params, h, 0, "all dims must be > 0", "H (0)"),
    KC_DIM(params, bt, 0, "all dims must be > 0", "BT (0)"),
    KC_DIM(params, bt, 128, "bt must be 64 (got 128)"),
    KC_DIM(params, t, 100, "t (100) must be a multiple of bt (64)"),
    KC_BUFFER(BUF_L, "L must be f32["),
    KC_BUFFER(BUF_A, "A must be f32["),
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

/* Forward substitution per chunk, element by element:
 * A[i][j] = -(fma chain over m = j..i-1 of L[i][m] A[m][j]). */
static void scalar_solve(const params *p, const float *l, float *a)
{
    const size_t bt = p->bt;
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++)
            for (size_t t0 = 0; t0 < p->t; t0 += bt) {
#define AT(i, j) (((b * p->t + t0 + (i)) * p->h + h) * bt + (j))
                for (size_t i = 0; i < bt; i++)
                    for (size_t j = 0; j < bt; j++) {
                        if (j >= i) {
                            a[AT(i, j)] = j == i ? 1.0f : 0.0f;
                            continue;
                        }
                        float acc = 0.0f;
                        for (size_t m = j; m < i; m++) acc = fmaf(l[AT(i, m)], a[AT(m, j)], acc);
                        a[AT(i, j)] = -acc;
                    }
#undef AT
            }
}

static void test_matches_the_scalar_statement_on_every_isa(void)
{
    static const params shapes[] = {
        {.b = 1, .t = 64, .h = 1, .bt = 64},
        {.b = 2, .t = 128, .h = 3, .bt = 64},
        {.b = 1, .t = 4096, .h = 4, .bt = 64}, /* A of 4 MiB: streamed (isa.h) */
    };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        kc_case c;
        kc_case_open(&c, &kernel, &shapes[sh], 0x5151 + sh);
        const size_t n = c.buf[BUF_A].count;
        float *want = malloc(n * sizeof *want);
        CU_ASSERT_FATAL(want != NULL);
        scalar_solve(&shapes[sh], c.buf[BUF_L].data, want);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++)
            for (unsigned threads = 1; threads <= 3; threads += 2) {
                if (!ug_isa_supported((ug_isa)isa)) continue;
                CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
                CU_ASSERT_EQUAL_FATAL(ug_kernel_threads_set(threads).code, UG_OK);
                memset(c.buf[BUF_A].data, 0xFF, n * sizeof(float));
                CU_ASSERT_EQUAL(kc_run(&c, &shapes[sh], NULL).code, UG_OK);
                CU_ASSERT_EQUAL(memcmp(c.buf[BUF_A].data, want, n * sizeof(float)), 0);
            }
        CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
        free(want);
        kc_case_close(&c);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* An infinite L[i][m] enters only the sums of the columns j <= m: the SIMD
 * solvers must leave term m out of the lanes j > m (where x[m][j] is zero),
 * not multiply it in (inf * 0 = NaN). Every path equals the scalar statement,
 * NaNs included, bit for bit. */
static void test_infinite_entries_reach_only_the_columns_they_feed(void)
{
    const params p = {.b = 1, .t = 64, .h = 2, .bt = 64};
    kc_case c;
    kc_case_open(&c, &kernel, &p, 7);
    float *l = c.buf[BUF_L].data;
    const size_t n = c.buf[BUF_A].count;
    for (size_t k = 0; k < 6; k++) l[(20 + 7 * k) * p.h * 64 + 64 + 3 + 5 * k] = k % 2 ? -INFINITY : INFINITY;
    float *want = malloc(n * sizeof *want);
    CU_ASSERT_FATAL(want != NULL);
    scalar_solve(&p, l, want);
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        memset(c.buf[BUF_A].data, 0xFF, n * sizeof(float));
        CU_ASSERT_EQUAL(kc_run(&c, &p, NULL).code, UG_OK);
        CU_ASSERT_EQUAL(memcmp(c.buf[BUF_A].data, want, n * sizeof(float)), 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
    free(want);
    kc_case_close(&c);
}

/* Whatever lies on and above L's diagonal (NaN included), A is the same,
 * and A times (I + L) is the identity up to f32 rounding. */
static void test_reads_l_strictly_below_the_diagonal(void)
{
    const params p = {.b = 1, .t = 64, .h = 1, .bt = 64};
    kc_case c;
    kc_case_open(&c, &kernel, &p, 99);
    float *l = c.buf[BUF_L].data, *a = c.buf[BUF_A].data;
    CU_ASSERT_EQUAL_FATAL(kc_run(&c, &p, NULL).code, UG_OK);
    float first[64 * 64];
    memcpy(first, a, sizeof first);
    for (size_t i = 0; i < 64; i++)
        for (size_t j = i; j < 64; j++) l[i * 64 + j] = NAN;
    CU_ASSERT_EQUAL_FATAL(kc_run(&c, &p, NULL).code, UG_OK);
    CU_ASSERT_EQUAL(memcmp(first, a, sizeof first), 0);
    double worst = 0;
    for (size_t i = 0; i < 64; i++)
        for (size_t j = 0; j < 64; j++) {
            double s = a[i * 64 + j]; /* (A (I + L))[i][j] */
            for (size_t m = j + 1; m <= i; m++) s += (double)a[i * 64 + m] * l[m * 64 + j];
            worst = fmax(worst, fabs(s - (i == j)));
        }
    CU_ASSERT(worst < 1e-5);
    kc_case_close(&c);
}

KC_CONTRACT_TESTS(kernel, rules, N_RULES, &valid)

static void test_count_beyond_size_t_is_rejected_naming_the_shape(void)
{
    const params p = {.b = 1u << 31, .t = 1u << 31, .h = 1u << 31, .bt = 64};
    ug_status s = kc_run_on_empty_buffers(&kernel, &p);
    const char *const expect[KC_MAX_EXPECT] = {"L shape [B=2147483648, T=2147483648, H=2147483648, BT=64]",
                                               "more elements than size_t"};
    kc_expect_message(&kernel, &s, expect);
}

UG_TEST_SUITE(gdn_solve_tril_suite, "kernel_gdn_solve_tril",
              UG_TEST(test_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_infinite_entries_reach_only_the_columns_they_feed),
              UG_TEST(test_reads_l_strictly_below_the_diagonal),
              KC_CONTRACT_TEST_LIST,
              UG_TEST(test_count_beyond_size_t_is_rejected_naming_the_shape));
