/* SPDX-License-Identifier: MIT */
/* merge: rebuilds the result of one run from the report.json files of its
 * shards (verify --shard I/N, e.g. a CI matrix or a Slurm array job), so that
 * the gate and the reports see exactly what the unsharded run would have
 * produced (timings aside). The shards must come from the same sweep (path
 * and content hash), the same filter and the same shard count, each index
 * once; the sweep file itself is reloaded from its recorded path. */
#ifndef UG_MERGE_H
#define UG_MERGE_H

#include <jansson.h>

#include "results.h"

#define UG_REPORT_SCHEMA "ulpgate-report/1"

/* The one check of a report.json read back (report, merge, compare): every
 * item any of them reads must be present with its type (core/json messages:
 * file, JSON path, expected, found); unknown keys are allowed, the report
 * being an output that grows. report and compare accept exactly the files
 * this accepts (and merge adds the checks of a shard set). */
ug_status ug_report_check(const char *path, const json_t *root);

/* sweep and out are filled (free with ug_sweep_free / ug_run_result_free;
 * out points into sweep). */
ug_status ug_merge_shards(const char *const *paths, size_t n, ug_sweep *sweep, ug_run_result *out);

#endif
