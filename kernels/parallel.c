/* SPDX-License-Identifier: MIT */
/* Threads are started per call and joined before it returns: the kernels'
 * calls last milliseconds to seconds, so a thread start (tens of µs) is
 * noise, and no pool outlives a call (nothing to shut down, nothing left
 * running under valgrind or at exit).
 *
 * Ranges are handed out while the call runs, not fixed at its start: the two
 * CPUs of a shared VM do not run at the same speed (measured on the bench
 * machine: one vCPU 20-25 % slower than the other for seconds at a time, and
 * a started thread waiting 0.1-4 ms for its CPU), and a static half per
 * worker left the faster one idle for that difference (x 2/1 of 1.3-1.6
 * where each worker alone was at full speed). Each worker takes the next
 * contiguous range of ceil(rest / (2 * workers)) items (guided
 * self-scheduling): large ranges first, which keep a worker on neighbouring
 * rows, single items at the end, so that the workers finish within about one
 * item of each other. */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>

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
    size_t n;
    unsigned workers;
    ug_isa isa;
    atomic_size_t next; /* the first item no worker has taken */
} shared_loop;

typedef struct {
    shared_loop *loop;
    unsigned worker;
} worker_arg;

/* Claims the next range; false when every item is taken. */
static bool take_range(shared_loop *l, size_t *begin, size_t *end)
{
    size_t first = atomic_load_explicit(&l->next, memory_order_relaxed);
    for (;;) {
        if (first >= l->n) return false;
        const size_t share = 2 * (size_t)l->workers, size = (l->n - first + share - 1) / share;
        if (atomic_compare_exchange_weak_explicit(&l->next, &first, first + size, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *begin = first;
            *end = first + size;
            return true;
        }
    }
}

static void run_ranges(shared_loop *l, unsigned worker)
{
    size_t begin, end;
    while (take_range(l, &begin, &end)) l->body(l->ctx, worker, begin, end);
}

static void *run_worker(void *arg)
{
    const worker_arg *a = arg;
    (void)ug_isa_select(a->loop->isa); /* cannot fail: the caller runs on this path */
    run_ranges(a->loop, a->worker);
    return NULL;
}

void ug_parallel_for(size_t n, ug_parallel_body *body, void *ctx)
{
    const unsigned workers = ug_parallel_workers(n);
    if (workers <= 1) {
        if (n) body(ctx, 0, 0, n);
        return;
    }
    shared_loop loop = {body, ctx, n, workers, ug_isa_current(), 0};
    worker_arg args[UG_KERNEL_MAX_THREADS];
    pthread_t threads[UG_KERNEL_MAX_THREADS];
    bool started[UG_KERNEL_MAX_THREADS] = {false};
    /* Worker 0 is the caller itself; a thread that cannot be started leaves
     * its share to the others. */
    for (unsigned w = 1; w < workers; w++) {
        args[w] = (worker_arg){&loop, w};
        started[w] = pthread_create(&threads[w], NULL, run_worker, &args[w]) == 0;
    }
    run_ranges(&loop, 0);
    for (unsigned w = 1; w < workers; w++)
        if (started[w]) pthread_join(threads[w], NULL);
}
