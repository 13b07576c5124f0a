/* SPDX-License-Identifier: MIT */
/* Per-worker scratch for a kernel split with ug_parallel_for (parallel.h):
 * one guarded allocation of the same size per worker, so every worker has
 * the whole plan of one threadgroup to itself and each slice keeps its own
 * guard zones. Allocated on the calling thread before the parallel region
 * (an allocation failure is the kernel's ordinary error, nothing runs), and
 * checked when freed after it. */
#ifndef UG_WORKER_SCRATCH_H
#define UG_WORKER_SCRATCH_H

#include <stddef.h>

#include "../core/guard.h"
#include "../core/status.h"
#include "parallel.h"

typedef struct {
    ug_guarded slice[UG_KERNEL_MAX_THREADS];
    unsigned workers;
} ug_worker_scratch;

/* `workers` slices of `bytes` each; on failure none is left allocated. */
ug_status ug_worker_scratch_alloc(ug_worker_scratch *s, unsigned workers, size_t bytes);
static inline void *ug_worker_scratch_data(const ug_worker_scratch *s, unsigned worker)
{
    return ug_guarded_data(&s->slice[worker]);
}
/* Frees every slice; the first overwritten guard is reported as
 * ug_guarded_free reports it, naming `what`. */
ug_status ug_worker_scratch_free(ug_worker_scratch *s, const char *what);

#endif
