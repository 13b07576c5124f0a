/* SPDX-License-Identifier: MIT */
/* What one verify run measured: per case, per family aggregate. Produced by
 * the runner, read by the gate and the report writers. */
#ifndef UG_RESULTS_H
#define UG_RESULTS_H

#include <stdbool.h>
#include <stdint.h>

#include "../kernels/isa.h"
#include "family.h"
#include "samples.h"
#include "stats.h"
#include "sweep.h"

typedef struct {
    const ug_case *c;
    bool passed;
    char failure[UG_MSG_MAX];   /* first reason, when !passed */
    ug_status kernel_status;    /* what the kernel returned (first ISA) */
    /* accepted cases: per output ordinal and mode (0 elements: not measured,
       an intermediate not handed over: harness/chain.h) */
    ug_summary sum[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    /* per output ordinal: an intermediate the kernel handed over that no
       stage checked, and the buffer index of the input its stage lacked
       (harness/chain.h ug_case_unchecked) */
    bool unchecked[UG_MAX_BUFFERS];
    uint8_t unchecked_missing[UG_MAX_BUFFERS];
    uint64_t bits_hash;         /* FNV-1a of all outputs' bytes (first ISA) */
    bool isa_bits_agree;        /* every ISA produced the same bits */
    double kernel_seconds, reference_seconds;
    bool isa_ran[UG_ISA_COUNT];     /* the kernel ran and returned UG_OK on the path */
    uint64_t isa_bits[UG_ISA_COUNT];/* FNV-1a of all outputs' bytes per path */
    bool source_ran;                /* the run's kernel source ran and returned UG_OK
                                       (its bits are bits_hash; no ISA path ran) */
    uint64_t elements;              /* output elements measured */
    uint64_t slices, slices_checked; /* the case's slices (harness/slice.h), and how many were measured
                                       (fewer only under sampled checking) */
    ug_stats *pending;              /* runner-internal: this case's statistics until
                                       they are merged, in case order; NULL after */
    ug_samples samples;             /* a few measured elements, for the plots */
    bool has_plan;              /* the family audits its seed's dispatch plan */
    ug_plan plan;
    char plan_finding[256];     /* empty when the plan is within limits and need */
} ug_case_result;

typedef struct {
    const ug_family *family;
    size_t n_outputs;
    int output_buffer[UG_MAX_BUFFERS];          /* buffer index of output ordinal */
    ug_stats agg[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    uint64_t bits_hash[UG_ISA_COUNT];           /* over the cases' isa_bits, in case order */
    bool isa_ran[UG_ISA_COUNT];
    uint64_t source_bits_hash;                  /* over the cases' source bits, in case order */
    bool source_ran;
    size_t cases_accepted, cases_rejected, cases_failed, plan_findings;
} ug_family_result;

typedef struct {
    const ug_sweep *sweep;
    const char *source_name;    /* the kernel source's label ("plugin"); NULL: built-in kernels */
    char source_detail[256];    /* what the source is, for reports ("libmine.so"); may be empty */
    bool has_source_hash;       /* source_hash: content hash of the source's file (a kernel library) */
    uint64_t source_hash;
    ug_profile_id profile;      /* the arithmetic profile of the bounds (ref/f32_model.h) */
    double moderate_cond;
    double sample_fraction;     /* 0: every slice checked; else the sampled checking asked for */
    uint64_t sample_seed;
    size_t n_cases;
    ug_case_result *cases;
    size_t n_families;
    ug_family_result *families;
    uint64_t elements_checked;
    double wall_seconds;
    uint64_t peak_rss_kib;      /* the process's peak resident memory at the end */
    char started_utc[32];       /* ISO 8601 */
} ug_run_result;

void ug_run_result_free(ug_run_result *r);

#endif
