/* SPDX-License-Identifier: MIT */
#include "stats.h"

#include <math.h>
#include <string.h>

ug_status ug_stats_init(ug_stats *s)
{
    memset(&s->sum, 0, sizeof s->sum);
    s->dist = gsl_histogram_alloc(UG_DIST_BINS);
    if (!s->dist) return ug_fail(UG_ENOMEM, "cannot allocate a %d-bin histogram", UG_DIST_BINS);
    gsl_histogram_set_ranges_uniform(s->dist, 0.0, (double)UG_DIST_BINS);
    return ug_ok();
}

void ug_stats_free(ug_stats *s)
{
    if (s->dist) gsl_histogram_free(s->dist);
    s->dist = NULL;
}

/* The summary's share of adding one element; true where it is moderate
 * (its ulp_dist then goes into the histogram). */
static inline bool summary_add(ug_summary *m, const ug_elem_error *e, uint32_t flagged, double moderate_cond,
                               size_t index)
{
    m->elements++;
    if (!e->class_ok) m->class_failures++;
    if (e->ratio > 1.0) m->over_bound++;
    if (flagged) m->flagged++;
    if (e->ulp_dist == 0) m->correctly_rounded++;
    if (e->ulp_dist > m->max_ulp_dist_all) m->max_ulp_dist_all = e->ulp_dist;
    if (e->ratio > m->max_ratio || (m->elements == 1)) {
        if (e->ratio > m->max_ratio) m->max_ratio = e->ratio;
        m->worst_index = index;
    }
    if (e->cond > m->max_cond) m->max_cond = e->cond;
    m->sum_sq_err += e->abs_err * e->abs_err;
    m->sum_sq_ref += e->abs_ref * e->abs_ref;
    if (!(e->cond <= moderate_cond)) return false;
    m->moderate++;
    if (e->ulp_dist > m->max_ulp_dist) m->max_ulp_dist = e->ulp_dist;
    if (e->ulp_err > m->max_ulp_err) m->max_ulp_err = e->ulp_err;
    return true;
}

static inline uint32_t dist_bin(uint32_t ulp_dist)
{
    return ulp_dist < UG_DIST_BINS - 1 ? ulp_dist : UG_DIST_BINS - 1;
}

void ug_stats_add(ug_stats *s, const ug_elem_error *e, uint32_t flagged, double moderate_cond,
                  size_t index)
{
    if (summary_add(&s->sum, e, flagged, moderate_cond, index))
        gsl_histogram_increment(s->dist, dist_bin(e->ulp_dist) + 0.5);
}

void ug_stats_batch_begin(ug_stats_batch *b, ug_stats *s, double moderate_cond)
{
    b->s = s;
    b->moderate_cond = moderate_cond;
    memset(b->bins, 0, sizeof b->bins);
}

void ug_stats_batch_add(ug_stats_batch *b, const ug_elem_error *e, uint32_t flagged, size_t index)
{
    if (summary_add(&b->s->sum, e, flagged, b->moderate_cond, index)) b->bins[dist_bin(e->ulp_dist)]++;
}

void ug_stats_batch_end(ug_stats_batch *b)
{
    /* A count of n added at once is the sum of n increments of 1: exact below 2^53. */
    for (uint32_t i = 0; i < UG_DIST_BINS; i++)
        if (b->bins[i]) gsl_histogram_accumulate(b->s->dist, i + 0.5, (double)b->bins[i]);
}

void ug_stats_merge(ug_stats *into, const ug_stats *from)
{
    ug_summary *a = &into->sum;
    const ug_summary *b = &from->sum;
    a->elements += b->elements;
    a->moderate += b->moderate;
    a->correctly_rounded += b->correctly_rounded;
    a->class_failures += b->class_failures;
    a->over_bound += b->over_bound;
    a->flagged += b->flagged;
    if (b->max_ulp_dist > a->max_ulp_dist) a->max_ulp_dist = b->max_ulp_dist;
    if (b->max_ulp_dist_all > a->max_ulp_dist_all) a->max_ulp_dist_all = b->max_ulp_dist_all;
    if (b->max_ulp_err > a->max_ulp_err) a->max_ulp_err = b->max_ulp_err;
    if (b->max_ratio > a->max_ratio) {
        a->max_ratio = b->max_ratio;
        a->worst_index = b->worst_index;
    }
    if (b->max_cond > a->max_cond) a->max_cond = b->max_cond;
    a->sum_sq_err += b->sum_sq_err;
    a->sum_sq_ref += b->sum_sq_ref;
    gsl_histogram_add(into->dist, from->dist);
}

uint32_t ug_stats_dist_quantile(const ug_stats *s, double q)
{
    double total = gsl_histogram_sum(s->dist);
    if (total == 0) return 0;
    double need = ceil(q * total), seen = 0;
    for (size_t i = 0; i < UG_DIST_BINS; i++) {
        seen += gsl_histogram_get(s->dist, i);
        if (seen >= need) return (uint32_t)i;
    }
    return UG_DIST_BINS - 1;
}

ug_summary ug_stats_summary(const ug_stats *s)
{
    ug_summary m = s->sum;
    m.p99_ulp_dist = ug_stats_dist_quantile(s, 0.99);
    return m;
}

double ug_summary_share_cr(const ug_summary *s)
{
    return s->elements ? (double)s->correctly_rounded / (double)s->elements : 1.0;
}

double ug_summary_rel_rms(const ug_summary *s)
{
    if (s->sum_sq_err == 0) return 0;
    return s->sum_sq_ref == 0 ? INFINITY : sqrt(s->sum_sq_err / s->sum_sq_ref);
}
