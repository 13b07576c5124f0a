/* SPDX-License-Identifier: MIT */
/* Test runner: registers every suite declared with UG_TEST_SUITE, runs them
 * and fails when any test fails or when no test ran at all.
 *   run_tests [FILTER | --suite NAME] [--list] [--verbose]
 * FILTER keeps the suites whose name contains it, --suite the one named
 * NAME; --list prints the kept suites' names, one a line, and runs nothing
 * (how `make memcheck` hands each suite to its own valgrind process);
 * --verbose names each test as it runs. */
#include <CUnit/Basic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

extern const ug_test_suite *const __start_ug_test_suites[];
extern const ug_test_suite *const __stop_ug_test_suites[];

typedef struct {
    const char *filter; /* a substring of the suite names, or */
    const char *suite;  /* one suite's whole name */
    bool list, verbose;
} options;

static int usage(const char *why)
{
    fprintf(stderr, "run_tests: %s\nusage: run_tests [FILTER | --suite NAME] [--list] [--verbose]\n", why);
    return 2;
}

static bool selected(const options *o, const char *name)
{
    return o->suite ? !strcmp(name, o->suite) : !o->filter || strstr(name, o->filter);
}

int main(int argc, char **argv)
{
    options o = {NULL, NULL, false, false};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose")) {
            o.verbose = true;
        } else if (!strcmp(argv[i], "--list")) {
            o.list = true;
        } else if (!strcmp(argv[i], "--suite")) {
            if (i + 1 == argc || o.filter || o.suite) return usage("--suite wants one suite name, and no FILTER");
            o.suite = argv[++i];
        } else if (argv[i][0] == '-' || o.filter || o.suite) {
            char why[160];
            snprintf(why, sizeof why, "unexpected argument '%s'", argv[i]);
            return usage(why);
        } else {
            o.filter = argv[i];
        }
    }
    if (o.list) {
        for (const ug_test_suite *const *s = __start_ug_test_suites; s < __stop_ug_test_suites; s++)
            if (selected(&o, (*s)->name)) printf("%s\n", (*s)->name);
        return 0;
    }
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "run_tests: cannot initialise CUnit: %s\n", CU_get_error_msg());
        return 2;
    }
    for (const ug_test_suite *const *s = __start_ug_test_suites; s < __stop_ug_test_suites; s++) {
        if (!selected(&o, (*s)->name)) continue;
        CU_pSuite suite = CU_add_suite((*s)->name, NULL, NULL);
        for (CU_TestInfo *t = (*s)->tests; suite && t->pName; t++) CU_add_test(suite, t->pName, t->pTestFunc);
    }
    CU_basic_set_mode(o.verbose ? CU_BRM_VERBOSE : CU_BRM_NORMAL);
    CU_basic_run_tests();
    unsigned ran = CU_get_number_of_tests_run();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned asserts_failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    printf("%u passed, %u failed\n", ran - failed, failed);
    if (ran == 0) {
        const char *what = o.suite ? o.suite : o.filter;
        fprintf(stderr, "run_tests: no test ran%s%s\n", what ? " for " : "", what ? what : "");
        return 1;
    }
    return (failed || asserts_failed) ? 1 : 0;
}
