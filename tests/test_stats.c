/* SPDX-License-Identifier: MIT */
/* Error statistics (harness/stats.c): counts, maxima over the moderate and
 * over all elements, the ulp_dist histogram and its quantiles, merging. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../harness/stats.h"
#include "tests.h"

static const double moderate = 16.0;

/* A well-conditioned element at ulp_dist d (ulp_err d + 0.25, 0 when d == 0). */
static ug_elem_error elem(uint32_t d, double ratio, double cond)
{
    ug_elem_error e = {.ulp_err = d ? d + 0.25 : 0.25, .ulp_dist = d, .ratio = ratio, .cond = cond, .class_ok = true};
    return e;
}

static void add(ug_stats *s, uint32_t d, double ratio, double cond, size_t index)
{
    ug_elem_error e = elem(d, ratio, cond);
    ug_stats_add(s, &e, 0, moderate, index);
}

static void test_empty_stats(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_EQUAL(m.elements, 0);
    CU_ASSERT_EQUAL(m.moderate, 0);
    CU_ASSERT_EQUAL(m.p99_ulp_dist, 0);
    CU_ASSERT_EQUAL(m.max_ulp_dist, 0);
    CU_ASSERT_DOUBLE_EQUAL(ug_summary_share_cr(&m), 1.0, 0);
    ug_stats_free(&s);
}

static void test_counts(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    add(&s, 0, 0.1, 1, 0);         /* moderate, correctly rounded */
    add(&s, 2, 0.5, 100, 1);       /* ill-conditioned */
    add(&s, 1, 1.5, 2, 2);         /* over its bound */
    ug_elem_error bad = {.ulp_err = INFINITY, .ulp_dist = UINT32_MAX, .ratio = INFINITY, .cond = 1};
    ug_stats_add(&s, &bad, 1, moderate, 3); /* non-finite rule, flagged */
    ug_elem_error flagged = elem(0, 0.0, 16); /* cond exactly at the limit */
    ug_stats_add(&s, &flagged, 7, moderate, 4);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_EQUAL(m.elements, 5);
    CU_ASSERT_EQUAL(m.moderate, 4);
    CU_ASSERT_EQUAL(m.correctly_rounded, 2);
    CU_ASSERT_EQUAL(m.class_failures, 1);
    CU_ASSERT_EQUAL(m.over_bound, 2);
    CU_ASSERT_EQUAL(m.flagged, 2);
    CU_ASSERT_DOUBLE_EQUAL(m.max_cond, 100, 0);
    ug_stats_free(&s);
}

static void test_max_dist_moderate_vs_all(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    add(&s, 5, 0.1, 1, 0);
    add(&s, 50, 0.2, 1e6, 1); /* ill-conditioned: counts only for _all */
    add(&s, 3, 0.1, 16, 2);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_EQUAL(m.max_ulp_dist, 5);
    CU_ASSERT_EQUAL(m.max_ulp_dist_all, 50);
    CU_ASSERT_DOUBLE_EQUAL(m.max_ulp_err, 5.25, 0);
    CU_ASSERT_EQUAL(m.p99_ulp_dist, 5);
    ug_stats_free(&s);
}

static void test_max_ratio_and_worst_index(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    add(&s, 0, 0.25, 1, 10);
    add(&s, 0, 0.75, 1e9, 11); /* ratio counts every element */
    add(&s, 0, 0.5, 1, 12);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_DOUBLE_EQUAL(m.max_ratio, 0.75, 0);
    CU_ASSERT_EQUAL(m.worst_index, 11);
    ug_stats_free(&s);
}

static void test_p99_from_histogram(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    for (size_t i = 0; i < 98; i++) add(&s, 0, 0, 1, i);
    add(&s, 3, 0, 1, 98);
    add(&s, 7, 0, 1, 99);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_EQUAL(m.moderate, 100);
    CU_ASSERT_EQUAL(m.p99_ulp_dist, 3);
    CU_ASSERT_EQUAL(m.max_ulp_dist, 7);
    CU_ASSERT_EQUAL(ug_stats_dist_quantile(&s, 0.98), 0);
    CU_ASSERT_EQUAL(ug_stats_dist_quantile(&s, 1.0), 7);
    ug_stats_free(&s);
}

static void test_p99_ignores_ill_conditioned(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    for (size_t i = 0; i < 10; i++) add(&s, 1, 0, 1, i);
    for (size_t i = 0; i < 10; i++) add(&s, 900, 0, 1e4, 10 + i);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_EQUAL(m.p99_ulp_dist, 1);
    ug_stats_free(&s);
}

static void test_share_cr(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    add(&s, 0, 0, 1, 0);
    add(&s, 0, 0, 1e6, 1); /* counts although ill-conditioned */
    add(&s, 0, 0, 1, 2);
    add(&s, 1, 0, 1, 3);
    ug_summary m = ug_stats_summary(&s);
    CU_ASSERT_DOUBLE_EQUAL(ug_summary_share_cr(&m), 0.75, 0);
    ug_stats_free(&s);
}

static void test_last_bin_collects_large_distances(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    add(&s, 1022, 0, 1, 0);
    CU_ASSERT_EQUAL(ug_stats_dist_quantile(&s, 1.0), 1022);
    add(&s, 1023, 0, 1, 1);
    add(&s, 5000, 0, 1, 2);
    add(&s, UINT32_MAX - 1, 0, 1, 3);
    CU_ASSERT_DOUBLE_EQUAL(gsl_histogram_get(s.dist, UG_DIST_BINS - 1), 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(gsl_histogram_get(s.dist, UG_DIST_BINS - 2), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(gsl_histogram_sum(s.dist), 4, 0);
    CU_ASSERT_EQUAL(ug_stats_dist_quantile(&s, 1.0), UG_DIST_BINS - 1);
    CU_ASSERT_EQUAL(ug_stats_summary(&s).max_ulp_dist, UINT32_MAX - 1); /* exact, not binned */
    ug_stats_free(&s);
}

static void assert_same_summary(const ug_summary *a, const ug_summary *b)
{
    CU_ASSERT_EQUAL(a->elements, b->elements);
    CU_ASSERT_EQUAL(a->moderate, b->moderate);
    CU_ASSERT_EQUAL(a->correctly_rounded, b->correctly_rounded);
    CU_ASSERT_EQUAL(a->class_failures, b->class_failures);
    CU_ASSERT_EQUAL(a->over_bound, b->over_bound);
    CU_ASSERT_EQUAL(a->flagged, b->flagged);
    CU_ASSERT_EQUAL(a->max_ulp_dist, b->max_ulp_dist);
    CU_ASSERT_EQUAL(a->p99_ulp_dist, b->p99_ulp_dist);
    CU_ASSERT_EQUAL(a->max_ulp_dist_all, b->max_ulp_dist_all);
    CU_ASSERT_DOUBLE_EQUAL(a->max_ulp_err, b->max_ulp_err, 0);
    CU_ASSERT_DOUBLE_EQUAL(a->max_ratio, b->max_ratio, 0);
    CU_ASSERT_DOUBLE_EQUAL(a->max_cond, b->max_cond, 0);
    CU_ASSERT_EQUAL(a->worst_index, b->worst_index);
}

/* Element i of a small deterministic set: a mix of distances, conditions,
 * ratios, flags and one class failure. */
static void add_element(ug_stats *s, size_t i)
{
    uint32_t d = (uint32_t)((i * 37) % 11);
    if (i % 50 == 13) d = 2000;
    double cond = i % 7 == 3 ? 1e5 : 1.0 + (double)(i % 5);
    ug_elem_error e = {.ulp_err = d + 0.125, .ulp_dist = d, .ratio = (double)((i * 53) % 97) / 64.0, .cond = cond, .class_ok = i != 77};
    ug_stats_add(s, &e, i % 9 == 0, moderate, i);
}

static void test_merge_equals_adding_all(void)
{
    ug_stats a, b, all;
    CU_ASSERT_FATAL(ug_stats_init(&a).code == UG_OK);
    CU_ASSERT_FATAL(ug_stats_init(&b).code == UG_OK);
    CU_ASSERT_FATAL(ug_stats_init(&all).code == UG_OK);
    for (size_t i = 0; i < 300; i++) {
        add_element(i < 120 ? &a : &b, i);
        add_element(&all, i);
    }
    ug_stats_merge(&a, &b);
    ug_summary ma = ug_stats_summary(&a), mall = ug_stats_summary(&all);
    assert_same_summary(&ma, &mall);
    for (size_t bin = 0; bin < UG_DIST_BINS; bin++)
        CU_ASSERT_DOUBLE_EQUAL(gsl_histogram_get(a.dist, bin), gsl_histogram_get(all.dist, bin), 0);
    ug_stats_free(&a);
    ug_stats_free(&b);
    ug_stats_free(&all);
}

static void test_merge_into_empty(void)
{
    ug_stats empty, b;
    CU_ASSERT_FATAL(ug_stats_init(&empty).code == UG_OK);
    CU_ASSERT_FATAL(ug_stats_init(&b).code == UG_OK);
    for (size_t i = 0; i < 40; i++) add_element(&b, i);
    ug_stats_merge(&empty, &b);
    ug_summary me = ug_stats_summary(&empty), mb = ug_stats_summary(&b);
    assert_same_summary(&me, &mb);
    ug_stats_free(&empty);
    ug_stats_free(&b);
}

static void test_free_twice_is_safe(void)
{
    ug_stats s;
    CU_ASSERT_FATAL(ug_stats_init(&s).code == UG_OK);
    ug_stats_free(&s);
    CU_ASSERT_PTR_NULL(s.dist);
    ug_stats_free(&s);
}

/* rel RMS = sqrt(sum (y-r)^2 / sum r^2), merged sums add. */
static void test_rel_rms(void)
{
    ug_stats a, b;
    CU_ASSERT_FATAL(ug_stats_init(&a).code == UG_OK);
    CU_ASSERT_FATAL(ug_stats_init(&b).code == UG_OK);
    ug_elem_error e1 = {.class_ok = true, .abs_err = 3, .abs_ref = 4};
    ug_elem_error e2 = {.class_ok = true, .abs_err = 4, .abs_ref = 3};
    ug_stats_add(&a, &e1, 0, 16, 0);
    CU_ASSERT_DOUBLE_EQUAL(ug_summary_rel_rms(&a.sum), 0.75, 1e-15);
    ug_stats_add(&b, &e2, 0, 16, 0);
    ug_stats_merge(&a, &b);
    CU_ASSERT_DOUBLE_EQUAL(ug_summary_rel_rms(&a.sum), 1.0, 1e-15);
    ug_stats_free(&a);
    ug_stats_free(&b);
}

/* Element i of an adversarial set: every ulp_dist at and around the
 * histogram's edges, ratios and conditions at their limits, NaN, +-inf,
 * signed zeros and subnormal magnitudes. */
static ug_elem_error adversarial_element(size_t i)
{
    static const uint32_t dist[] = {0, 1, 2, UG_DIST_BINS - 2, UG_DIST_BINS - 1, UG_DIST_BINS, UG_DIST_BINS + 1,
                                    5000, UINT32_MAX - 1, UINT32_MAX};
    static const double ratio[] = {0, -0.0, 0.5, 1, 0x1.0000000000001p0, 1e300, INFINITY, NAN, 0x1p-1074};
    static const double cond[] = {0, 1, 16, 0x1.0000000000001p4, 1e300, INFINITY, NAN, -0.0};
    static const double ulp_err[] = {0, 0.5, 0x1p-1074, 1e6, INFINITY, NAN};
    static const double magnitude[] = {0, -0.0, 0x1p-1074, 0x1p-1022, 3.5, 1e154, INFINITY};
    const size_t n_mag = sizeof magnitude / sizeof magnitude[0];
    return (ug_elem_error){.ulp_dist = dist[i % 10], .ratio = ratio[i / 10 % 9], .cond = cond[i / 90 % 8],
                           .ulp_err = ulp_err[i / 7 % 6], .class_ok = i % 13 != 5,
                           .abs_err = magnitude[i / 11 % n_mag], .abs_ref = magnitude[i / 3 % n_mag]};
}

/* ug_stats_batch_add (plain integer bins, folded once) gives every figure
 * and every bin that ug_stats_add gives element by element, also over
 * several batches into one stats (a streamed output). */
static void test_batch_equals_adding_one_by_one(void)
{
    enum { N = 4000 };
    ug_stats one, batched;
    CU_ASSERT_FATAL(ug_stats_init(&one).code == UG_OK);
    CU_ASSERT_FATAL(ug_stats_init(&batched).code == UG_OK);
    ug_stats_batch b;
    for (size_t start = 0; start < N; start += 1500) {
        ug_stats_batch_begin(&b, &batched, moderate);
        for (size_t i = start; i < N && i < start + 1500; i++) {
            const ug_elem_error e = adversarial_element(i);
            ug_stats_add(&one, &e, (uint32_t)(i % 4), moderate, 7 * i + 3);
            ug_stats_batch_add(&b, &e, (uint32_t)(i % 4), 7 * i + 3);
        }
        ug_stats_batch_end(&b);
    }
    const ug_summary m1 = ug_stats_summary(&one), mb = ug_stats_summary(&batched);
    CU_ASSERT_EQUAL(m1.elements, mb.elements);
    CU_ASSERT_EQUAL(m1.moderate, mb.moderate);
    CU_ASSERT_EQUAL(m1.correctly_rounded, mb.correctly_rounded);
    CU_ASSERT_EQUAL(m1.class_failures, mb.class_failures);
    CU_ASSERT_EQUAL(m1.over_bound, mb.over_bound);
    CU_ASSERT_EQUAL(m1.flagged, mb.flagged);
    CU_ASSERT_EQUAL(m1.max_ulp_dist, mb.max_ulp_dist);
    CU_ASSERT_EQUAL(m1.p99_ulp_dist, mb.p99_ulp_dist);
    CU_ASSERT_EQUAL(m1.max_ulp_dist_all, mb.max_ulp_dist_all);
    CU_ASSERT_EQUAL(m1.worst_index, mb.worst_index);
    /* bit for bit: the maxima reach +inf */
    const double *doubles_one[] = {&m1.max_ulp_err, &m1.max_ratio, &m1.max_cond, &m1.sum_sq_err, &m1.sum_sq_ref};
    const double *doubles_batched[] = {&mb.max_ulp_err, &mb.max_ratio, &mb.max_cond, &mb.sum_sq_err, &mb.sum_sq_ref};
    for (size_t k = 0; k < sizeof doubles_one / sizeof doubles_one[0]; k++)
        CU_ASSERT_EQUAL(memcmp(doubles_one[k], doubles_batched[k], sizeof(double)), 0);
    for (size_t bin = 0; bin < UG_DIST_BINS; bin++)
        CU_ASSERT_DOUBLE_EQUAL(gsl_histogram_get(one.dist, bin), gsl_histogram_get(batched.dist, bin), 0);
    CU_ASSERT(gsl_histogram_get(one.dist, UG_DIST_BINS - 1) > 0);
    CU_ASSERT(gsl_histogram_get(one.dist, UG_DIST_BINS - 2) > 0);
    CU_ASSERT(gsl_histogram_get(one.dist, 0) > 0);
    ug_stats_free(&one);
    ug_stats_free(&batched);
}

UG_TEST_SUITE(stats_suite, "stats",
              UG_TEST(test_rel_rms), UG_TEST(test_empty_stats),
              UG_TEST(test_counts),
              UG_TEST(test_max_dist_moderate_vs_all),
              UG_TEST(test_max_ratio_and_worst_index),
              UG_TEST(test_p99_from_histogram),
              UG_TEST(test_p99_ignores_ill_conditioned),
              UG_TEST(test_share_cr),
              UG_TEST(test_last_bin_collects_large_distances),
              UG_TEST(test_merge_equals_adding_all),
              UG_TEST(test_merge_into_empty),
              UG_TEST(test_free_twice_is_safe),
              UG_TEST(test_batch_equals_adding_one_by_one));
