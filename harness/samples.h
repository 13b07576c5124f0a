/* SPDX-License-Identifier: MIT */
/* A few elements per case x output x mode, kept for the plots (error against
 * condition number, with each element's bound): the elements with the worst
 * ratios and evenly spaced ones, chosen from element indices alone so that
 * the choice does not depend on threads or shards. */
#ifndef UG_SAMPLES_H
#define UG_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

enum { UG_SAMPLES_WORST = 4, UG_SAMPLES_SPREAD = 24 };

typedef struct {
    uint8_t output, mode;
    double cond, ulp_err, bound_ulps;
} ug_sample;

typedef struct {
    ug_sample *items;
    size_t n, cap;
} ug_samples;

ug_status ug_samples_push(ug_samples *s, const ug_sample *x);
void ug_samples_free(ug_samples *s);

#endif
