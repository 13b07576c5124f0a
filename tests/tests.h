/* SPDX-License-Identifier: MIT */
/* CUnit glue: each tests/test_*.c declares its suites with UG_TEST_SUITE and
 * the runner (run_tests.c) finds them through a linker section, so adding a
 * test file needs no edit anywhere else. One property per test, MPFR-style. */
#ifndef UG_TESTS_H
#define UG_TESTS_H

#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *name;
    CU_TestInfo *tests;
} ug_test_suite;

#define UG_TEST(fn) {#fn, fn}

/* Random-sample counts: full natively, a tenth under valgrind (make
 * memcheck). Exhaustive loops are never reduced. */
unsigned long ug_test_random_samples(void);

/* A small deterministic generator for tests that need no distribution:
 * xorshift64 on a state the test seeds. */
uint32_t ug_test_next_u32(uint64_t *state);
float ug_test_uniform(uint64_t *state, float lo, float hi);

/* The `cpu` profile (fixtures/profiles/cpu.json, loaded once; tests run from
 * the repository root): the model tests pass to the references. */
struct ug_f32_model;
const struct ug_f32_model *ug_test_cpu_model(void);

/* Removes a test's temporary directory and everything below it. */
void ug_test_remove_tree(const char *dir);

/* Counts mismatches and prints the first five. */
#define UG_TEST_MISMATCH(count, ...)                   \
    do {                                               \
        if ((count)++ < 5) {                           \
            printf("\n    mismatch: ");                \
            printf(__VA_ARGS__);                       \
        }                                              \
    } while (0)

#define UG_TEST_SUITE(var, suite_name, ...)                                        \
    static CU_TestInfo var##_tests[] = {__VA_ARGS__, CU_TEST_INFO_NULL};           \
    static const ug_test_suite var = {suite_name, var##_tests};                    \
    static const ug_test_suite *const var##_entry                                  \
        __attribute__((used, section("ug_test_suites"), aligned(sizeof(void *)))) = &var

#endif
