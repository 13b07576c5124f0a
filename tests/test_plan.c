/* SPDX-License-Identifier: MIT */
/* ug_plan_finding: a plan within limits and need says nothing; each way a
 * plan can be wrong is named with its figures. */
#include <string.h>

#include "../harness/family.h"
#include "tests.h"

static void plan_within_limits_and_need_has_no_finding(void)
{
    ug_plan p = {256, 1, 24576, 24576};
    char text[256];
    ug_plan_finding(&p, text, sizeof text);
    CU_ASSERT_STRING_EQUAL(text, "");
}

static void short_threadgroup_memory_is_named(void)
{
    ug_plan p = {256, 256, 1024, 2048};
    char text[256];
    ug_plan_finding(&p, text, sizeof text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "reserves 1024 threadgroup bytes, the algorithm needs 2048"));
}

static void limits_exceeded_are_named_together(void)
{
    ug_plan p = {2048, 64, 65536, 65536};
    char text[256];
    ug_plan_finding(&p, text, sizeof text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "2048 threads per threadgroup exceed the limit 1024"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "65536 threadgroup bytes exceed the 32768-byte cap"));
}

static void too_few_threads_is_named(void)
{
    ug_plan p = {32, 64, 0, 0};
    char text[256];
    ug_plan_finding(&p, text, sizeof text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "launches 32 threads, the algorithm needs 64"));
}

UG_TEST_SUITE(plan_suite, "plan", UG_TEST(plan_within_limits_and_need_has_no_finding),
              UG_TEST(short_threadgroup_memory_is_named), UG_TEST(limits_exceeded_are_named_together),
              UG_TEST(too_few_threads_is_named));
