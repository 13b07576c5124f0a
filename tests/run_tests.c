/* Test runner: registers every suite declared with UG_TEST_SUITE, runs them
 * and fails when any test fails or when no test ran at all.
 *   run_tests [FILTER] [--shard I/N] [--verbose]
 * FILTER keeps the suites whose name contains it. --shard keeps every N-th
 * test, starting at the I-th (0 <= I < N), counted over the selected suites
 * in registration order: N processes with I = 0 .. N-1 run each test exactly
 * once, which is how `make memcheck` spreads the valgrind run over the
 * cores. --verbose names each test as it runs. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

extern const ug_test_suite *const __start_ug_test_suites[];
extern const ug_test_suite *const __stop_ug_test_suites[];

typedef struct {
    const char *filter;
    unsigned long shard, shards;
    bool verbose;
} options;

static int usage(const char *why)
{
    fprintf(stderr, "run_tests: %s\nusage: run_tests [FILTER] [--shard I/N] [--verbose]\n", why);
    return 2;
}

static bool parse_shard(const char *text, options *o)
{
    char *end;
    errno = 0;
    o->shard = strtoul(text, &end, 10);
    if (errno || end == text || *end != '/') return false;
    const char *count = end + 1;
    o->shards = strtoul(count, &end, 10);
    return !errno && end != count && *end == '\0' && o->shards > 0 && o->shard < o->shards;
}

int main(int argc, char **argv)
{
    options o = {NULL, 0, 1, false};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose")) {
            o.verbose = true;
        } else if (!strcmp(argv[i], "--shard")) {
            if (i + 1 == argc || !parse_shard(argv[++i], &o))
                return usage("--shard wants I/N with 0 <= I < N (e.g. 0/2)");
        } else if (argv[i][0] == '-' || o.filter) {
            char why[160];
            snprintf(why, sizeof why, "unexpected argument '%s'", argv[i]);
            return usage(why);
        } else {
            o.filter = argv[i];
        }
    }
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "run_tests: cannot initialise CUnit: %s\n", CU_get_error_msg());
        return 2;
    }
    unsigned long counted = 0;
    for (const ug_test_suite *const *s = __start_ug_test_suites; s < __stop_ug_test_suites; s++) {
        if (o.filter && !strstr((*s)->name, o.filter)) continue;
        CU_pSuite suite = NULL;
        for (CU_TestInfo *t = (*s)->tests; t->pName; t++) {
            if (counted++ % o.shards != o.shard) continue;
            if (!suite) suite = CU_add_suite((*s)->name, NULL, NULL);
            if (suite) CU_add_test(suite, t->pName, t->pTestFunc);
        }
    }
    CU_basic_set_mode(o.verbose ? CU_BRM_VERBOSE : CU_BRM_NORMAL);
    CU_basic_run_tests();
    unsigned ran = CU_get_number_of_tests_run();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned asserts_failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    printf("%u passed, %u failed\n", ran - failed, failed);
    if (ran == 0) {
        fprintf(stderr, "run_tests: no test ran%s%s\n", o.filter ? " for filter " : "", o.filter ? o.filter : "");
        return 1;
    }
    return (failed || asserts_failed) ? 1 : 0;
}
