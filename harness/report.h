/* SPDX-License-Identifier: MIT */
/* The report files of one run, written as one set (core/report_dir.h: they
 * replace the previous set together or not at all):
 *   report.md   summary table (kernel x output x mode: max ulp_dist, p99,
 *               share correctly rounded, max ratio, budget, verdict), the
 *               rejected-shape table, failures and findings;
 *   report.json every figure, schema "ulpgate-report/1" (docs/report-format.md);
 *   cases.csv   one row per case x output x mode with every statistic;
 *   junit.xml   one test case per swept case (failures with their message)
 *               and one per failing gate finding, as CI systems ingest it;
 *   report.html histograms and error-vs-condition plots (harness/plots.h). */
#ifndef UG_REPORT_H
#define UG_REPORT_H

#include <stdio.h>

#include "../core/report_dir.h"
#include "gate.h"

/* Before the run: checks, locks and stages the reports directory
 * (ug_report_dir_open with the set's file names; UG_EINVAL when unusable). */
ug_status ug_report_open(const char *dir, ug_report_dir *set);
/* After the gate: renders every file, writes it into the staging directory
 * and swaps the set in. On failure the previous set is unchanged; the caller
 * still calls ug_report_dir_close. */
ug_status ug_report_write(ug_report_dir *set, const ug_run_result *run, const ug_budgets *budgets,
                          const ug_verdict *verdict);
/* open, write and close in one call. */
ug_status ug_report_write_all(const char *dir, const ug_run_result *run,
                              const ug_budgets *budgets, const ug_verdict *verdict);
/* The summary table and the verdict, for a terminal or CI log. */
void ug_report_print_summary(FILE *out, const ug_run_result *run, const ug_budgets *budgets,
                             const ug_verdict *verdict);

#endif
