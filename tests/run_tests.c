/* Test runner: registers every suite declared with UG_TEST_SUITE, runs them
 * (optionally only the suites whose name contains argv[1]), and fails when
 * any test fails or when no test ran at all. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "tests.h"

extern const ug_test_suite *const __start_ug_test_suites[];
extern const ug_test_suite *const __stop_ug_test_suites[];

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "run_tests: cannot initialise CUnit: %s\n", CU_get_error_msg());
        return 2;
    }
    for (const ug_test_suite *const *s = __start_ug_test_suites; s < __stop_ug_test_suites; s++) {
        if (filter && !strstr((*s)->name, filter)) continue;
        CU_pSuite suite = CU_add_suite((*s)->name, NULL, NULL);
        for (CU_TestInfo *t = (*s)->tests; suite && t->pName; t++)
            CU_add_test(suite, t->pName, t->pTestFunc);
    }
    CU_basic_set_mode(CU_BRM_NORMAL);
    CU_basic_run_tests();
    unsigned ran = CU_get_number_of_tests_run();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned asserts_failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    printf("%u passed, %u failed\n", ran - failed, failed);
    if (ran == 0) {
        fprintf(stderr, "run_tests: no test ran%s%s\n", filter ? " for filter " : "",
                filter ? filter : "");
        return 1;
    }
    return (failed || asserts_failed) ? 1 : 0;
}
