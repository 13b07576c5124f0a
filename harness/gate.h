/* The gate: budgets (policy, versioned in fixtures/budgets.json) and the
 * baseline (the last accepted measurement, fixtures/baseline.json).
 *
 * budgets.json (schema "ulpgate-budgets/1"):
 * { "schema": "ulpgate-budgets/1",
 *   "moderate_condition": 64,
 *   "regression_tolerance": { "max_ulp_dist": 0, "p99_ulp_dist": 0,
 *                             "share_cr": 0.002, "max_ratio": 0.05 },
 *   "families": { "<family>": { "<output>": {
 *       "exact":  { "max_ratio": 1, "max_ulp_dist": 4, "p99_ulp_dist": 1, "min_share_cr": 0.9 },
 *       "staged": { ... } } } } }
 *
 * The budgets may also be a directory of such files (one per family, read
 * in name order); they must agree on moderate_condition and the tolerances
 * and may not budget the same (family, output, mode) twice.
 *
 * baseline.json (schema "ulpgate-baseline/1"): the sweep's path and content
 * hash, and per family: per output and mode the summary figures
 * (elements, max_ulp_dist, p99_ulp_dist, share_cr, max_ratio, max_ulp_err),
 * and the bits hash per ISA path ("portable", "avx2", "avx512") as 16 hex
 * digits.
 *
 * Verdict rules: a case that failed fails the gate; every measured
 * (family, output, mode) needs a budget and must meet it (max_ratio <=, max and
 * p99 ulp_dist <=, share correctly rounded >=); with a baseline, a figure
 * worse than the baseline's by more than the tolerance fails, a better one is
 * reported, a changed bits hash is reported (not a failure), and a baseline
 * recorded on another sweep (content hash) fails with a hint to re-baseline. */
#ifndef UG_GATE_H
#define UG_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "results.h"

typedef struct {
    double max_ratio;
    uint32_t max_ulp_dist;
    uint32_t p99_ulp_dist;
    double min_share_cr;
    double max_rel_rms;     /* optional in the file ("max_rel_rms"); +inf when absent */
} ug_budget;

typedef struct {
    char family[64];
    char output[32];
    ug_ref_mode mode;
    ug_budget budget;
} ug_budget_entry;

typedef struct {
    double moderate_cond;
    struct {
        uint32_t max_ulp_dist, p99_ulp_dist;
        double share_cr, max_ratio;
    } tolerance;
    size_t n;
    ug_budget_entry *entries;
} ug_budgets;

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
} ug_baseline_bits;

typedef struct {
    char sweep_path[512];
    uint64_t sweep_hash;
    size_t n;
    ug_baseline_entry *entries;
    size_t n_bits;
    ug_baseline_bits *bits;
} ug_baseline;

typedef enum { UG_FINDING_FAIL, UG_FINDING_WORSE_OK, UG_FINDING_BETTER, UG_FINDING_INFO } ug_finding_kind;

typedef struct {
    ug_finding_kind kind;
    char text[UG_LABEL_LEN + UG_MSG_MAX + 64];
} ug_finding;

typedef struct {
    bool pass;
    size_t n;
    ug_finding *items;
} ug_verdict;

ug_status ug_budgets_load(const char *path, ug_budgets *out);
void ug_budgets_free(ug_budgets *b);
/* Every figure of s within b (the rule the gate applies per output and mode). */
bool ug_budget_met(const ug_budget *b, const ug_summary *s);
const ug_budget *ug_budgets_find(const ug_budgets *b, const char *family, const char *output,
                                 ug_ref_mode mode);

ug_status ug_baseline_load(const char *path, ug_baseline *out);
void ug_baseline_free(ug_baseline *b);
/* Writes the run's figures as a new baseline, atomically. */
ug_status ug_baseline_write(const char *path, const ug_run_result *run);

/* Loads the figures of either a report.json or a baseline.json. */
ug_status ug_figures_load(const char *path, ug_baseline *out);
/* Compares two results (ulpgate compare OLD NEW): a figure worse than OLD's
 * beyond the budgets' tolerance, a figure that disappeared, or results of
 * different sweeps FAIL; better figures are BETTER; changed bits INFO. */
ug_status ug_compare(const ug_baseline *old, const ug_baseline *new, const ug_budgets *budgets,
                     ug_verdict *out);

/* baseline may be NULL (no comparison). */
ug_status ug_gate_evaluate(const ug_run_result *run, const ug_budgets *budgets,
                           const ug_baseline *baseline, ug_verdict *out);
void ug_verdict_free(ug_verdict *v);

#endif
