/* SPDX-License-Identifier: MIT */
/* The gate: a run's verdict from its cases, the budgets (harness/budgets.h)
 * and a baseline (harness/baseline.h); and `ulpgate compare` of two results.
 *
 * Verdict rules: a case that failed fails the gate; every measured (family,
 * output, mode) needs a budget; max_ratio above its budget fails for every
 * kernel source; the statistics budgets fail the kernels they apply to and
 * are INFO findings for the others (ug_budget_enforces). With a baseline:
 * it must record the same sweep (content hash), the same kernel source
 * (kind and name: built-in, the plugin library's file name, the candidate's
 * label) and the same profile, or the gate fails with a message naming both
 * and compares nothing else; a figure worse than the baseline's by more than
 * the tolerance fails, a better one is reported, changed bits (per ISA path,
 * or of the source) and a changed library content hash are INFO. */
#ifndef UG_GATE_H
#define UG_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "baseline.h"
#include "budgets.h"
#include "results.h"

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

/* Compares two results (ulpgate compare OLD NEW): results of different
 * sweeps, kernel sources or profiles FAIL uncompared; a figure worse than
 * OLD's beyond the budgets' tolerance or one that disappeared FAIL; better
 * figures are BETTER; changed bits INFO. */
ug_status ug_compare(const ug_baseline *old, const ug_baseline *new, const ug_budgets *budgets, ug_verdict *out);

/* baseline may be NULL (no comparison). */
ug_status ug_gate_evaluate(const ug_run_result *run, const ug_budgets *budgets, const ug_baseline *baseline,
                           ug_verdict *out);
void ug_verdict_free(ug_verdict *v);

#endif
