/* SPDX-License-Identifier: MIT */
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
 * With a kernel source (ug_run_options.source), the source stands in for the
 * ISA paths: one run per case, the same checks.
 * Budgets and the baseline are the gate's business (gate.h). */
#ifndef UG_RUNNER_H
#define UG_RUNNER_H

#include <stdbool.h>

#include "results.h"

/* Where a case's outputs come from when they are not from the built-in kernels: a plugin library
 * (--kernel-lib) or a candidate's saved outputs (`score`). */
typedef struct ug_kernel_source {
    const char *name;  /* the path's label in messages and reports: "plugin", "candidate" */
    /* Writes the outputs of case c into bufs (descriptor order; inputs already generated, outputs
     * poisoned) as the kernel would, and returns the kernel's status (UG_EINVAL with its message for
     * a shape it rejects; the runner checks that like a built-in rejection). */
    ug_status (*run)(void *ctx, const ug_case *c, ug_buf *bufs);
    void *ctx;
} ug_kernel_source;

/* The default cap on one case's buffers, in bytes (--max-case-mib 1024). */
#define UG_MAX_CASE_BYTES_DEFAULT ((size_t)1 << 30)

typedef struct {
    double moderate_cond;     /* from the budgets */
    bool isa_enabled[UG_ISA_COUNT];
    size_t max_case_bytes;    /* refuse cases whose buffers exceed this; a case starts only while what it
                                 holds (its buffers and, accepted, one slice's gathered buffers and largest
                                 reference part, harness/chain.h) and what the cases running hold fit
                                 under it together */
    bool progress;            /* progress lines on stderr */
    int jobs;                 /* threads running cases (0 or 1: the caller only); results do not depend on it */
    unsigned kernel_threads;  /* threads inside each kernel call (kernels/parallel.h; 0 or 1: none); nor on this */
    /* NULL: the built-in kernels, every enabled ISA path. Otherwise each case runs once through
     * source->run (from several threads under jobs > 1), with the same poisoning, guard, input,
     * non-finite, ratio and statistics checks, labelled source->name instead of an ISA path. */
    const ug_kernel_source *source;
    /* NULL: the built-in kernels run in the calling thread. Otherwise through isolated->run (worker
     * processes, `--isolate`, harness/isolate.h) on the ISA path selected in the calling thread. */
    const ug_kernel_source *isolated;
    /* The arithmetic profile every bound is derived under (harness/profile.h; required). */
    const ug_f32_model *model;
    /* Sampled checking, only when asked (verify --sample-slices): 0 checks every slice of every case;
     * otherwise ceil(sample_fraction * n) of a case's n slices (harness/slice.h), chosen without
     * replacement by a generator seeded with sample_seed and the case's seed. Every element is still
     * run, checked for poison, guards and inputs; only the reference and the bound are sampled. */
    double sample_fraction;
    uint64_t sample_seed;
} ug_run_options;

ug_status ug_run_sweep(const ug_sweep *sweep, const ug_run_options *opt, ug_run_result *out);
/* Before a run: every case's buffers within max_bytes, or UG_EINVAL naming the
 * first case over it, its buffer and the cap (the run itself fails such a
 * case instead, for callers that skip this check). */
ug_status ug_run_check_sizes(const ug_sweep *sweep, size_t max_bytes);

/* The inputs of accepted case c exactly as a run draws them (`export` and
 * `score` rely on it): bufs in descriptor order with counts, dtypes and data
 * set; inputs are filled, then generated from the case seed (or loaded by
 * the case's load_inputs). */
ug_status ug_case_generate(const ug_case *c, ug_buf *bufs);
/* FNV-1a of a buffer's bytes (the input hashes of exported fixtures). */
uint64_t ug_buf_hash(const ug_buf *b);

/* The pieces ug_run_sweep is made of, for `merge`, which rebuilds a run from
 * shard results: an empty result for the sweep's cases and families, and the
 * fold of the case results into their families in case order (counts, bits
 * hashes, elements, and each case's pending statistics). */
ug_status ug_run_result_init(const ug_sweep *sweep, double moderate_cond, ug_run_result *out);
void ug_run_result_fold_cases(ug_run_result *out);

#endif
