/* SPDX-License-Identifier: MIT */
/* Budgets: the gate's policy, versioned in fixtures/budgets/ (one file per
 * family; a single file works too).
 *
 * budgets.json (schema "ulpgate-budgets/1"):
 * { "schema": "ulpgate-budgets/1",
 *   "moderate_condition": 64,
 *   "regression_tolerance": { "max_ulp_dist": 0, "p99_ulp_dist": 0,
 *                             "share_cr": 0.002, "max_ratio": 0.05 },
 *   "stat_budgets": "built-in",            (optional; "all" when absent)
 *   "families": { "<family>": { "<output>": {
 *       "exact":  { "max_ratio": 1, "max_ulp_dist": 4, "p99_ulp_dist": 1, "min_share_cr": 0.9,
 *                   "max_rel_rms": 0.005,              (optional)
 *                   "always_enforced": ["max_rel_rms"] (optional) },
 *       "staged": { ... } } } } }
 *
 * Every family must be a registered family and every output one of its
 * output buffers (a misspelt name is an error naming it). A directory of
 * such files is read in name order; the files must agree on
 * moderate_condition and the tolerances and may not budget the same
 * (family, output, mode) twice.
 *
 * Policy (README "Budgets"): max_ratio is a correctness criterion for every
 * kernel. The statistics (max_ulp_dist, p99_ulp_dist, min_share_cr,
 * max_rel_rms) of a file with "stat_budgets": "built-in" are measurements of
 * the built-in kernels plus a margin: they gate the built-in kernels only,
 * and for any other kernel source (a --kernel-lib library, a score
 * candidate) an exceeded one is an INFO finding, unless the statistic is in
 * the entry's "always_enforced" list (gdn_e2e's relative RMS, the family's
 * accuracy criterion where no per-element bound exists) or the user passes
 * --enforce-stat-budgets. A file without "stat_budgets" (or "all") is the
 * user's own policy and gates every kernel. */
#ifndef UG_BUDGETS_H
#define UG_BUDGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "results.h"

/* The statistics a budget limits besides max_ratio (bit flags), and
 * max_ratio itself, which gates every kernel source. */
typedef enum {
    UG_STAT_MAX_ULP = 1,
    UG_STAT_P99_ULP = 2,
    UG_STAT_SHARE_CR = 4,
    UG_STAT_REL_RMS = 8,
    UG_STAT_MAX_RATIO = 16,
} ug_stat_flag;

typedef struct {
    double max_ratio;
    uint32_t max_ulp_dist;
    uint32_t p99_ulp_dist;
    double min_share_cr;
    double max_rel_rms;     /* optional in the file ("max_rel_rms"); +inf when absent */
    bool stats_builtin_only;/* the file says "stat_budgets": "built-in" */
    unsigned always_enforced; /* ug_stat_flag bits enforced for every kernel source */
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
    bool enforce_stats;     /* --enforce-stat-budgets: statistics gate every kernel source */
    size_t n;
    ug_budget_entry *entries;
} ug_budgets;

ug_status ug_budgets_load(const char *path, ug_budgets *out);
void ug_budgets_free(ug_budgets *b);
const ug_budget *ug_budgets_find(const ug_budgets *b, const char *family, const char *output, ug_ref_mode mode);
/* One figure of a summary against its budget: the gate's findings and the
 * reports' budget column both read these. */
typedef struct {
    ug_stat_flag stat;
    const char *figure; /* "max_ratio", "max_ulp_dist", ... */
    double value, limit;
    bool at_least;      /* the limit is a floor (share_cr) */
} ug_budget_figure;
enum { UG_BUDGET_FIGURES = 5 };
/* The figures b limits, max_ratio first (rel_rms only where its limit is
 * finite); returns how many. */
size_t ug_budget_figures(const ug_budget *b, const ug_summary *s, ug_budget_figure out[UG_BUDGET_FIGURES]);
/* Whether f is within its limit (NaN never is). */
bool ug_budget_figure_met(const ug_budget_figure *f);
/* Whether statistic stat of b gates a run whose kernels came from source_name
 * (NULL: the built-in kernels). */
bool ug_budget_enforces(const ug_budgets *all, const ug_budget *b, ug_stat_flag stat, const char *source_name);
/* The reports' budget column for s against b (NULL: "no budget") in a run of
 * source_name: "pass"; "FAIL" when a figure that gates this source breaks b;
 * "advisory" when only statistics that do not gate it do. */
const char *ug_budget_verdict(const ug_budgets *all, const ug_budget *b, const ug_summary *s, const char *source_name);

/* A "<mode>": {...} member found at JSON path where: its name must be a mode
 * ("exact", "staged") and its value an object (core/json messages). */
ug_status ug_json_mode(const char *file, const char *where, const char *name, const json_t *v, ug_ref_mode *out);

#endif
