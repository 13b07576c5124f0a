/* Report files of one verify run, each written atomically (temporary file in
 * the same directory, then rename), so a killed run leaves no half file:
 *   report.md   summary table (kernel x output x mode: max ulp_dist, p99,
 *               share correctly rounded, max ratio, budget, verdict), the
 *               rejected-shape table, failures and findings;
 *   report.json every figure, schema "ulpgate-report/1" (docs/report-format.md);
 *   cases.csv   one row per case x output x mode with every statistic;
 *   junit.xml   one test case per swept case (failures with their message)
 *               and one per failing gate finding, as CI systems ingest it. */
#ifndef UG_REPORT_H
#define UG_REPORT_H

#include <stdio.h>

#include "gate.h"

ug_status ug_report_write_all(const char *dir, const ug_run_result *run,
                              const ug_budgets *budgets, const ug_verdict *verdict);
/* The summary table and the verdict, for a terminal or CI log. */
void ug_report_print_summary(FILE *out, const ug_run_result *run, const ug_budgets *budgets,
                             const ug_verdict *verdict);

#endif
