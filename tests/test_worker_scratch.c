/* SPDX-License-Identifier: MIT */
/* Per-worker scratch (kernels/worker_scratch.h): one guarded slice per
 * worker, an overwritten guard in any slice is reported, a failed
 * allocation leaves nothing allocated, and the worker count is checked.
 * The guards are no-access under valgrind: the byte a test corrupts on
 * purpose is marked defined first (as tests/test_guard.c does). */
#include <string.h>
#include <valgrind/memcheck.h>

#include "../core/guard.h"
#include "../kernels/worker_scratch.h"
#include "tests.h"

static void test_every_worker_has_its_own_slice(void)
{
    ug_worker_scratch s;
    CU_ASSERT_EQUAL_FATAL(ug_worker_scratch_alloc(&s, 3, 100).code, UG_OK);
    CU_ASSERT_EQUAL(s.workers, 3);
    for (unsigned w = 0; w < 3; w++) memset(ug_worker_scratch_data(&s, w), (int)w + 1, 100);
    for (unsigned w = 0; w < 3; w++) {
        const unsigned char *d = ug_worker_scratch_data(&s, w);
        CU_ASSERT(d[0] == w + 1 && d[99] == w + 1);
    }
    CU_ASSERT_EQUAL(ug_worker_scratch_free(&s, "test scratch").code, UG_OK);
    CU_ASSERT_EQUAL(s.workers, 0);
}

static void test_an_overrun_in_any_slice_is_reported(void)
{
    for (unsigned bad = 0; bad < 3; bad++) {
        ug_worker_scratch s;
        CU_ASSERT_EQUAL_FATAL(ug_worker_scratch_alloc(&s, 3, 64).code, UG_OK);
        unsigned char *guard = (unsigned char *)ug_worker_scratch_data(&s, bad) + 64;
        VALGRIND_MAKE_MEM_DEFINED(guard, 1);
        *guard ^= 0xFF;
        ug_status st = ug_worker_scratch_free(&s, "test scratch");
        CU_ASSERT_EQUAL(st.code, UG_EGUARD);
        CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "test scratch"));
    }
}

static void test_a_failed_allocation_leaves_nothing(void)
{
    for (long succeed = 0; succeed < 4; succeed++) {
        ug_worker_scratch s;
        ug_guarded_fail_after(succeed);
        ug_status st = ug_worker_scratch_alloc(&s, 4, 32);
        ug_guarded_fail_after(-1);
        CU_ASSERT_EQUAL(st.code, UG_ENOMEM);
        CU_ASSERT_EQUAL(s.workers, 0); /* freed (valgrind checks that nothing leaks) */
    }
}

static void test_worker_count_is_checked(void)
{
    ug_worker_scratch s;
    ug_status st = ug_worker_scratch_alloc(&s, 0, 8);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "0 workers"));
    st = ug_worker_scratch_alloc(&s, UG_KERNEL_MAX_THREADS + 1, 8);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_EQUAL(s.workers, 0);
}

UG_TEST_SUITE(worker_scratch_suite, "worker_scratch", UG_TEST(test_every_worker_has_its_own_slice),
              UG_TEST(test_an_overrun_in_any_slice_is_reported), UG_TEST(test_a_failed_allocation_leaves_nothing),
              UG_TEST(test_worker_count_is_checked));
