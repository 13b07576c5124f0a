/* Runs a sweep: every case of every family, on every ISA path this CPU
 * supports, against the reference in both modes.
 *
 * Accepted case: inputs generated from the case seed; outputs poisoned before
 * each run (an unwritten element fails); the kernel must return UG_OK, leave
 * its inputs and every guard zone untouched, and every element must meet the
 * non-finite rules and its bound (ratio <= 1). Paths whose bits differ from
 * the first path's are measured too.
 * Rejected case: the kernel must return UG_EINVAL with every expected
 * substring in its message, and leave outputs bit-identical to their poison,
 * inputs and guards untouched.
 * Budgets and the baseline are the gate's business (gate.h). */
#ifndef UG_RUNNER_H
#define UG_RUNNER_H

#include <stdbool.h>

#include "results.h"

typedef struct {
    double moderate_cond;     /* from the budgets */
    bool isa_enabled[UG_ISA_COUNT];
    size_t max_case_bytes;    /* refuse cases whose buffers exceed this */
    bool progress;            /* progress lines on stderr */
    int jobs;                 /* threads running cases (0 or 1: the caller only); results do not depend on it */
} ug_run_options;

ug_status ug_run_sweep(const ug_sweep *sweep, const ug_run_options *opt, ug_run_result *out);

/* The pieces ug_run_sweep is made of, for `merge`, which rebuilds a run from
 * shard results: an empty result for the sweep's cases and families, and the
 * fold of the case results into their families in case order (counts, bits
 * hashes, elements, and each case's pending statistics). */
ug_status ug_run_result_init(const ug_sweep *sweep, double moderate_cond, ug_run_result *out);
void ug_run_result_fold_cases(ug_run_result *out);

#endif
