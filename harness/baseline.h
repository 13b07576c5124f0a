/* SPDX-License-Identifier: MIT */
/* Baselines: the last accepted measurement of one kernel source on one sweep
 * under one arithmetic profile (fixtures/baseline.json for the built-in
 * kernels; a kernel author keeps their own, README "Gating your own
 * kernel's pull requests").
 *
 * baseline.json (schema "ulpgate-baseline/1", docs/report-format.md):
 * { "schema": "ulpgate-baseline/1",
 *   "sweep":   { "path": "fixtures/sweeps/default", "content_hash": "<16 hex>" },
 *   "source":  { "kind": "built-in" } | { "kind": "plugin", "name": "libmine.so", "content_hash": "<16 hex>" }
 *            | { "kind": "candidate", "name": "cand" },        (optional: built-in)
 *   "profile": { "name": "cpu", "content_hash": "<16 hex>" },  (optional: cpu; hash optional)
 *   "families": { "<family>": {
 *       "bits": { "<isa path or source kind>": "<16 hex>" },
 *       "outputs": { "<output>": { "<mode>": { "elements", "max_ulp_dist", "p99_ulp_dist",
 *                                              "share_cr", "max_ratio", "max_ulp_err" } } } } } }
 *
 * Reading is strict (core/json) and checks the figures: families not empty,
 * elements >= 1, p99_ulp_dist <= max_ulp_dist, share_cr in [0, 1],
 * max_ratio and max_ulp_err in [0, inf] (not NaN), every family, output and
 * bits key known. A report.json's figures (ulpgate compare) are read through
 * the same parser after harness/merge's strict check of the report. */
#ifndef UG_BASELINE_H
#define UG_BASELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

typedef struct {
    char family[64];
    char output[32];
    ug_ref_mode mode;
    uint64_t elements;
    uint32_t max_ulp_dist, p99_ulp_dist;
    double share_cr, max_ratio, max_ulp_err;
} ug_baseline_entry;

typedef struct {
    char family[64];
    bool has[UG_ISA_COUNT];
    uint64_t hash[UG_ISA_COUNT];
    bool has_source;        /* bits of the kernel source (a library, a candidate) */
    uint64_t source_hash;
} ug_baseline_bits;

/* Which kernels were measured: kind "built-in", "plugin" or "candidate";
 * name the library's file name or the candidate's label ("" when built-in);
 * content hash of the library file when known. */
typedef struct {
    char kind[16];
    char name[256];
    bool has_hash;
    uint64_t hash;
} ug_kernel_identity;

typedef struct {
    char name[64];
    bool has_hash;
    uint64_t hash;
} ug_profile_identity;

typedef struct {
    char sweep_path[512];
    uint64_t sweep_hash;
    ug_kernel_identity source;
    ug_profile_identity profile;
    size_t n;
    ug_baseline_entry *entries;
    size_t n_bits;
    ug_baseline_bits *bits;
} ug_baseline;

ug_status ug_baseline_load(const char *path, ug_baseline *out);
void ug_baseline_free(ug_baseline *b);
/* Writes the run's figures, source and profile as a new baseline, atomically. */
ug_status ug_baseline_write(const char *path, const ug_run_result *run);
/* Loads the figures of either a report.json or a baseline.json. */
ug_status ug_figures_load(const char *path, ug_baseline *out);

/* What a run measured, in the baseline's terms. */
void ug_run_identity(const ug_run_result *run, ug_kernel_identity *source, ug_profile_identity *profile);

const ug_baseline_entry *ug_baseline_find(const ug_baseline *b, const char *family, const char *output,
                                          ug_ref_mode mode);
const ug_baseline_bits *ug_baseline_bits_find(const ug_baseline *b, const char *family);

#endif
