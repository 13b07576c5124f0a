/* SPDX-License-Identifier: MIT */
/* Kernel libraries (`ulpgate verify --kernel-lib PATH`): a shared library that
 * exposes the kernel C ABI of include/ulpgate/kernel_abi.h, presented to the
 * runner as a ug_kernel_source labelled "plugin". The harness never loads
 * it: worker processes do (harness/isolate.h), each with dlopen, and run
 * every call there; a call that exits, crashes or outlives its limit fails
 * its case (the source returns UG_EKERNEL naming the library, the case and
 * what happened) and the next call gets a fresh worker.
 *
 * Opening refuses (UG_EINVAL), naming the value: a library dlopen cannot load, a
 * worker that ends or hangs while loading it (a constructor calling exit), a missing
 * entry symbol, a NULL table, another ABI version, an empty table, a family
 * `ulpgate list` does not know, a family listed twice, a NULL run function.
 * A run marshals the case's parameters and buffers (descriptor order, by name)
 * into the ABI's arrays and maps the returned status back (ULPGATE_EINVAL to
 * UG_EINVAL with the library's message), so the runner checks a plugin's
 * rejections and outputs exactly as a built-in kernel's. Safe to run from
 * several threads at once (the library's own thread safety is its contract). */
#ifndef UG_PLUGIN_H
#define UG_PLUGIN_H

#include "isolate.h"

typedef struct ug_plugin ug_plugin;

/* case_timeout: seconds per kernel call, 0 for the default (ug_isolate_default_timeout). */
ug_status ug_plugin_open(const char *path, double case_timeout, ug_plugin **out);
/* Ends the workers; safe on NULL. */
void ug_plugin_close(ug_plugin *p);

/* The source the runner uses (name "plugin"); valid until ug_plugin_close. */
const ug_kernel_source *ug_plugin_source(const ug_plugin *p);
/* The library's file name without its directory: "libmine.so". */
const char *ug_plugin_basename(const ug_plugin *p);
bool ug_plugin_provides(const ug_plugin *p, const ug_family *f);

/* Keeps only the sweep's cases of families the library provides; writes the
 * names of the sweep's other families, comma-separated, to skipped ("" when
 * none). Fails when no case is left. */
ug_status ug_plugin_restrict_sweep(const ug_plugin *p, ug_sweep *s, char *skipped, size_t size);

#endif
