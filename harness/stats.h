/* SPDX-License-Identifier: MIT */
/* Error statistics over a set of output elements (one case, or one kernel x
 * output x mode aggregated over a sweep). ULP-distance figures count only the
 * elements whose condition number abs_sum/|r| is at most the budgets'
 * moderate-condition limit (an ill-conditioned sum legitimately loses ULPs);
 * the ratio, the share correctly rounded and the class checks count every
 * element. */
#ifndef UG_STATS_H
#define UG_STATS_H

#include <gsl/gsl_histogram.h>
#include <stdint.h>

#include "../core/status.h"
#include "ulp.h"

enum { UG_DIST_BINS = 1024 }; /* ulp_dist 0..1022 exact; the last bin holds the rest */

typedef struct {
    uint64_t elements;
    uint64_t moderate;          /* elements with cond <= the moderate limit */
    uint64_t correctly_rounded; /* ulp_dist == 0 */
    uint64_t class_failures;    /* non-finite rule broken */
    uint64_t over_bound;        /* ratio > 1 */
    uint64_t flagged;           /* elements with a flagged staged operand */
    uint32_t max_ulp_dist;      /* moderate elements */
    uint32_t p99_ulp_dist;      /* moderate elements; filled by ug_stats_summary */
    uint32_t max_ulp_dist_all;  /* every element */
    double max_ulp_err;         /* moderate elements */
    double max_ratio;
    double max_cond;
    size_t worst_index;         /* element with max_ratio (within its case) */
    double sum_sq_err;          /* sum of (y - r)^2 over elements with finite y, r */
    double sum_sq_ref;          /* sum of r^2 over the same elements */
} ug_summary;

typedef struct {
    ug_summary sum;
    gsl_histogram *dist;        /* ulp_dist of moderate elements */
} ug_stats;

ug_status ug_stats_init(ug_stats *s);
void ug_stats_free(ug_stats *s);
void ug_stats_add(ug_stats *s, const ug_elem_error *e, uint32_t flagged, double moderate_cond,
                  size_t index);
/* Adding one output's elements in one pass: the figures of ug_stats_add
 * element by element, with the ulp_dist bins counted in plain integers and
 * folded into s->dist (the histogram of record) by ug_stats_batch_end;
 * s->dist lacks them until then. */
typedef struct {
    ug_stats *s;
    double moderate_cond;
    uint64_t bins[UG_DIST_BINS];
} ug_stats_batch;

void ug_stats_batch_begin(ug_stats_batch *b, ug_stats *s, double moderate_cond);
void ug_stats_batch_add(ug_stats_batch *b, const ug_elem_error *e, uint32_t flagged, size_t index);
void ug_stats_batch_end(ug_stats_batch *b);
void ug_stats_merge(ug_stats *into, const ug_stats *from);
/* Smallest d such that at least fraction q of the moderate elements have
 * ulp_dist <= d (0 when there are none). */
uint32_t ug_stats_dist_quantile(const ug_stats *s, double q);
/* The summary with p99_ulp_dist filled in. */
ug_summary ug_stats_summary(const ug_stats *s);
double ug_summary_share_cr(const ug_summary *s); /* 1 when no elements */
/* Relative RMS error sqrt(sum (y-r)^2 / sum r^2), the figure upstream FLA
 * gates at 0.005 (0 when both sums are 0, +inf when only r is 0). */
double ug_summary_rel_rms(const ug_summary *s);

#endif
