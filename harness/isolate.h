/* SPDX-License-Identifier: MIT */
/* Kernels in worker processes: every kernel of `verify --kernel-lib`, and
 * the built-in kernels under `verify --isolate`, run in a child process, so
 * that a kernel which exits, crashes, corrupts memory or never returns fails
 * its case and cannot end, corrupt or hang the harness.
 *
 * A worker is a fork of the harness that loads the kernels itself (a
 * library's constructors and entry point run only there), reports which
 * families it provides over a socket, then runs one kernel call per request
 * on buffers in a memfd shared with the harness. The harness copies a call's
 * buffers into that mapping between guard zones (UG_GUARD_BYTES of 0xA5 before
 * every buffer, after every buffer's 64-byte padding, and up to the end of
 * the last page), with an inaccessible page before and after it in the
 * worker; after the call it checks every guard zone and copies every buffer
 * back (inputs too, so the runner sees an input the kernel modified). A
 * write far past the guards faults in the worker or lands in the worker's
 * own memory, never in the harness's.
 *
 * The source's run (ug_isolate_source) returns the kernel's status, or a
 * failure naming the kernels, the case ("family/label") and what happened:
 *  - UG_EGUARD "guard zone of buffer NAME overwritten (past its end|before its start)";
 *  - UG_EKERNEL when the worker exited ("exited with status N"), died on a
 *    signal ("was killed by signal SIGSEGV (Segmentation fault)"), or did not
 *    answer within the call's limit ("timed out after N s"; the worker is
 *    killed), or when valgrind counted errors in the worker during the call.
 * A worker that ended is replaced by a fresh one for the next call; so the
 * runner fails that case and goes on. The limit per kernel call is the
 * case_timeout given at open, or ug_isolate_default_timeout of the call's
 * buffer bytes. Calls from several threads at once run on as many workers
 * (one per concurrent caller, started on demand). The ISA path and kernel
 * thread count selected in the calling thread (kernels/isa.h,
 * kernels/parallel.h) are the worker's for the call. A worker's stdout goes
 * to the harness's stderr, so a kernel's prints never mix with the verdict. */
#ifndef UG_ISOLATE_H
#define UG_ISOLATE_H

#include <stdbool.h>

#include "runner.h"

/* What a worker runs, given by its owner (harness/plugin.c for a library).
 * load runs once in every fresh worker, before its first call: it sets
 * provided[i] for each family index of ug_family_at it can run and keeps its
 * state; a failure is reported by ug_isolate_open with load's message. run
 * runs one call in the worker on buffers in the shared mapping. */
typedef struct {
    const char *what;  /* names the kernels in messages: "libmine.so", "built-in kernels" */
    ug_status (*load)(void *arg, void **state, bool *provided);
    ug_status (*run)(void *state, const ug_case *c, ug_buf *bufs);
    void *arg;         /* passed to load; must stay valid until ug_isolate_close */
} ug_worker_kernels;

typedef struct ug_isolate ug_isolate;

/* Starts the first worker and waits for its table (at most max(case_timeout,
 * 60) s). label: the source's name in messages and reports ("plugin"), a
 * string that outlives the pool (run results keep it: a literal).
 * case_timeout: seconds per kernel call, 0 for ug_isolate_default_timeout,
 * else in (0, 1e6]. */
ug_status ug_isolate_open(const ug_worker_kernels *kernels, const char *label, double case_timeout,
                          ug_isolate **out);
/* The built-in kernels of every family in workers (`verify --isolate`). */
ug_status ug_isolate_open_builtin(double case_timeout, ug_isolate **out);
/* Ends every worker (EOF on its socket, then SIGKILL after 10 s); safe on NULL. */
void ug_isolate_close(ug_isolate *iso);

/* Valid until ug_isolate_close. Its run may be called from several threads. */
const ug_kernel_source *ug_isolate_source(const ug_isolate *iso);
/* Whether the worker's load marked family f as provided. */
bool ug_isolate_provides(const ug_isolate *iso, const ug_family *f);

/* The default limit of one kernel call, in seconds: 10 s + 1 s per MiB of
 * its buffers, times 20 under valgrind. */
double ug_isolate_default_timeout(size_t buffer_bytes);

#endif
