/* SPDX-License-Identifier: MIT */
/* Kernel threads: ug_parallel_for covers [0, n) exactly once in contiguous
 * ranges, uses worker indices below the thread count and the item count,
 * lets the other workers take the items of one that is held up, runs workers
 * on the caller's ISA path, and the count is validated and per thread. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "../kernels/isa.h"
#include "../kernels/parallel.h"
#include "tests.h"

enum { ITEMS_MAX = 1000 };

typedef struct {
    atomic_int visits[ITEMS_MAX];
    atomic_int workers_seen[UG_KERNEL_MAX_THREADS];
    atomic_int wrong_isa, bad_range;
    ug_isa expected_isa;
} coverage;

static void count_visits(void *ctx, unsigned worker, size_t begin, size_t end)
{
    coverage *c = ctx;
    if (begin >= end || worker >= UG_KERNEL_MAX_THREADS) atomic_fetch_add(&c->bad_range, 1);
    else atomic_fetch_add(&c->workers_seen[worker], 1);
    if (ug_isa_current() != c->expected_isa) atomic_fetch_add(&c->wrong_isa, 1);
    for (size_t i = begin; i < end && i < ITEMS_MAX; i++) atomic_fetch_add(&c->visits[i], 1);
}

static coverage *run_coverage(unsigned threads, size_t n)
{
    static coverage c;
    memset(&c, 0, sizeof c);
    c.expected_isa = ug_isa_current();
    CU_ASSERT_EQUAL_FATAL(ug_kernel_threads_set(threads).code, UG_OK);
    ug_parallel_for(n, count_visits, &c);
    CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
    return &c;
}

static void test_every_item_once(void)
{
    const unsigned threads[] = {1, 2, 3, 7, 64};
    const size_t sizes[] = {0, 1, 2, 5, 64, 999};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            coverage *c = run_coverage(threads[t], sizes[s]);
            int wrong = 0;
            for (size_t i = 0; i < ITEMS_MAX; i++)
                if (atomic_load(&c->visits[i]) != (i < sizes[s]))
                    UG_TEST_MISMATCH(wrong, "threads %u n %zu: item %zu visited %d times", threads[t], sizes[s], i,
                                     atomic_load(&c->visits[i]));
            CU_ASSERT_EQUAL(wrong, 0);
            CU_ASSERT_EQUAL(atomic_load(&c->bad_range), 0);
        }
}

static void test_worker_count_bounded(void)
{
    /* Ranges are handed out as workers become free: how many each worker
     * gets depends on timing (under valgrind, whose threads take turns, the
     * started workers may take every range before the caller takes one),
     * the worker indices do not. */
    coverage *c = run_coverage(3, 10);
    for (unsigned w = 3; w < UG_KERNEL_MAX_THREADS; w++) CU_ASSERT_EQUAL(atomic_load(&c->workers_seen[w]), 0);
    c = run_coverage(64, 3);
    for (unsigned w = 3; w < UG_KERNEL_MAX_THREADS; w++) CU_ASSERT_EQUAL(atomic_load(&c->workers_seen[w]), 0);
    CU_ASSERT_EQUAL(ug_parallel_workers(10), 1u); /* back to the default */
    CU_ASSERT_EQUAL(ug_kernel_threads_set(4).code, UG_OK);
    CU_ASSERT_EQUAL(ug_parallel_workers(2), 2u);
    CU_ASSERT_EQUAL(ug_parallel_workers(0), 1u);
    CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
}

/* Worker 0 (the caller) holds its first range until the other worker has
 * done every later item, or for at most 5 s. */
typedef struct {
    size_t n;
    atomic_size_t done_by_others;
    atomic_int timed_out;
} held_up;

static void hold_worker_0(void *ctx, unsigned worker, size_t begin, size_t end)
{
    held_up *h = ctx;
    if (worker != 0) {
        atomic_fetch_add(&h->done_by_others, end - begin);
        return;
    }
    const struct timespec tick = {0, 1000000};
    for (int waited_ms = 0; atomic_load(&h->done_by_others) < h->n - end; waited_ms++) {
        if (waited_ms == 5000) {
            atomic_store(&h->timed_out, 1);
            return;
        }
        nanosleep(&tick, NULL);
    }
}

static void test_held_up_worker(void)
{
    held_up h = {.n = 100};
    CU_ASSERT_EQUAL_FATAL(ug_kernel_threads_set(2).code, UG_OK);
    ug_parallel_for(h.n, hold_worker_0, &h);
    CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
    CU_ASSERT_EQUAL(atomic_load(&h.timed_out), 0);
}

static void test_workers_inherit_isa(void)
{
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        coverage *c = run_coverage(4, 64);
        CU_ASSERT_EQUAL(atomic_load(&c->wrong_isa), 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

static void test_count_validated(void)
{
    ug_status st = ug_kernel_threads_set(0);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "0 is outside 1 .. 64"));
    st = ug_kernel_threads_set(UG_KERNEL_MAX_THREADS + 1);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "65"));
    CU_ASSERT_EQUAL(ug_kernel_threads(), 1u);
}

static void *read_count(void *out)
{
    *(unsigned *)out = ug_kernel_threads();
    return NULL;
}

static void test_count_per_thread(void)
{
    CU_ASSERT_EQUAL_FATAL(ug_kernel_threads_set(5).code, UG_OK);
    unsigned other = 0;
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, read_count, &other), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(other, 1u);
    CU_ASSERT_EQUAL(ug_kernel_threads(), 5u);
    CU_ASSERT_EQUAL(ug_kernel_threads_set(1).code, UG_OK);
}

UG_TEST_SUITE(parallel_suite, "parallel", UG_TEST(test_every_item_once), UG_TEST(test_worker_count_bounded),
              UG_TEST(test_held_up_worker), UG_TEST(test_workers_inherit_isa), UG_TEST(test_count_validated),
              UG_TEST(test_count_per_thread));
