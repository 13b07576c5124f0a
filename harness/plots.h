/* SPDX-License-Identifier: MIT */
/* report.html: the figures people would rather look at than read — per
 * kernel output, the histogram of ulp_dist and the error of sampled elements
 * against their condition number with each element's bound — as inline SVG
 * in one self-contained page (no script, no external file), which opens from
 * the file system. A sample without a bound (infinite) gets no bound mark and
 * is counted in a note; when the samples' condition numbers of an output lie
 * within half a decade, they are drawn by rank of their error instead. */
#ifndef UG_PLOTS_H
#define UG_PLOTS_H

#include <stdio.h>

#include "gate.h"

ug_status ug_plots_write_html(FILE *f, const ug_run_result *run, const ug_verdict *verdict);

#endif
