/* SPDX-License-Identifier: MIT */
/* libFuzzer target for every parser of the tool's own files: the bytes are
 * written to a file and read as a sweep, as budgets, and as a baseline or
 * report (ug_figures_load). Each must return a status — never crash, hang or
 * leak — whatever the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "../harness/gate.h"
#include "../harness/sweep.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) snprintf(path, sizeof path, "/tmp/ulpgate-fuzz-%d.json", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    ug_sweep sweep;
    if (ug_sweep_load(path, &sweep).code == UG_OK) ug_sweep_free(&sweep);
    ug_budgets budgets;
    if (ug_budgets_load(path, &budgets).code == UG_OK) ug_budgets_free(&budgets);
    ug_baseline baseline;
    if (ug_figures_load(path, &baseline).code == UG_OK) ug_baseline_free(&baseline);
    return 0;
}
