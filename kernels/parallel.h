/* SPDX-License-Identifier: MIT */
/* Kernel-level threads: a kernel splits its independent work items (the
 * seeds' threadgroups: (batch, head) or (batch, head, chunk) tiles, rows)
 * over the calling thread's kernel-thread count.
 *
 * Contract for a kernel using it: every item is computed by the same code
 * whatever thread runs it, and items write disjoint output elements, so the
 * output bits do not depend on the thread count (the tests check this).
 * Workers run on the caller's ISA path (kernels/isa.h). Scratch memory is
 * allocated by the caller, one slice per worker index, before the parallel
 * region, so allocation failures are reported by the kernel as usual and the
 * guard zones of every slice are checked after it.
 *
 * The count is per thread, like the ISA path: `verify` already runs cases on
 * --jobs threads and keeps 1 (the default); the bench and `--kernel-threads`
 * set more. */
#ifndef UG_PARALLEL_H
#define UG_PARALLEL_H

#include <stddef.h>

#include "../core/status.h"

enum { UG_KERNEL_MAX_THREADS = 64 };

/* Sets the calling thread's kernel-thread count (1 .. UG_KERNEL_MAX_THREADS). */
ug_status ug_kernel_threads_set(unsigned n);
unsigned ug_kernel_threads(void);

/* body(ctx, worker, begin, end) for contiguous, disjoint ranges covering
 * [0, n) exactly once, worker < min(ug_kernel_threads(), n). A worker may be
 * given several ranges, one call at a time, and which worker runs which range
 * depends on timing (the ranges are handed out as workers become free), so a
 * body must not carry anything from one range to the next but its worker's
 * scratch. Returns when every range is done. When a thread cannot be started
 * the other workers (the caller among them) take its items: the result is the
 * same, only slower. */
typedef void ug_parallel_body(void *ctx, unsigned worker, size_t begin, size_t end);
void ug_parallel_for(size_t n, ug_parallel_body *body, void *ctx);

/* The number of workers ug_parallel_for(n, ...) uses: for sizing scratch. */
unsigned ug_parallel_workers(size_t n);

#endif
