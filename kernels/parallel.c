/* Threads are started per call and joined before it returns: the kernels'
 * calls last milliseconds to seconds, so a thread start (tens of µs) is
 * noise, and no pool outlives a call (nothing to shut down, nothing left
 * running under valgrind or at exit). The ranges are static and contiguous:
 * the work items of one kernel cost the same, and a fixed split is what
 * makes a run reproducible to inspect. */
#include "parallel.h"

#include <pthread.h>
#include <stdbool.h>

#include "isa.h"

static _Thread_local unsigned thread_kernel_threads = 1;

ug_status ug_kernel_threads_set(unsigned n)
{
    if (n < 1 || n > UG_KERNEL_MAX_THREADS)
        return ug_fail(UG_EINVAL, "kernel threads: %u is outside 1 .. %d", n, UG_KERNEL_MAX_THREADS);
    thread_kernel_threads = n;
    return ug_ok();
}

unsigned ug_kernel_threads(void) { return thread_kernel_threads; }

unsigned ug_parallel_workers(size_t n)
{
    return n < thread_kernel_threads ? (unsigned)(n ? n : 1) : thread_kernel_threads;
}

typedef struct {
    ug_parallel_body *body;
    void *ctx;
    unsigned worker;
    size_t begin, end;
    ug_isa isa;
} range_job;

static void *run_range(void *arg)
{
    range_job *j = arg;
    (void)ug_isa_select(j->isa); /* cannot fail: the caller runs on this path */
    j->body(j->ctx, j->worker, j->begin, j->end);
    return NULL;
}

void ug_parallel_for(size_t n, ug_parallel_body *body, void *ctx)
{
    unsigned workers = ug_parallel_workers(n);
    if (workers <= 1) {
        if (n) body(ctx, 0, 0, n);
        return;
    }
    range_job jobs[UG_KERNEL_MAX_THREADS];
    pthread_t threads[UG_KERNEL_MAX_THREADS];
    bool started[UG_KERNEL_MAX_THREADS] = {false};
    for (unsigned w = 0; w < workers; w++)
        jobs[w] = (range_job){body, ctx, w, n * w / workers, n * (w + 1) / workers, ug_isa_current()};
    /* Worker 0 is the caller itself. */
    for (unsigned w = 1; w < workers; w++)
        started[w] = pthread_create(&threads[w], NULL, run_range, &jobs[w]) == 0;
    body(ctx, 0, jobs[0].begin, jobs[0].end);
    for (unsigned w = 1; w < workers; w++) {
        if (started[w]) pthread_join(threads[w], NULL);
        else body(ctx, w, jobs[w].begin, jobs[w].end);
    }
}
