/* SPDX-License-Identifier: MIT */
/* Resource failures: an allocation that fails (injected) gives a clear error,
 * writes nothing and leaks nothing; a full disk while writing reports is
 * reported and leaves no file behind. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/guard.h"
#include "../harness/gate.h"
#include "../harness/report.h"
#include "../harness/runner.h"
#include "tests.h"

/* The first accepted case of each family in the memcheck sweep. */
static const ug_case *first_accepted(const ug_sweep *sw, const ug_family *f)
{
    for (size_t i = 0; i < sw->n_cases; i++)
        if (sw->cases[i].family == f && !sw->cases[i].expect_reject) return &sw->cases[i];
    return NULL;
}

/* Every kernel's own scratch allocation failing: UG_ENOMEM with a message,
 * outputs untouched (ASan and valgrind check the leak part). */
static void test_kernel_scratch_allocation_failure(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    size_t checked = 0;
    for (size_t fi = 0; fi < ug_family_count(); fi++) {
        const ug_family *f = ug_family_at(fi);
        const ug_case *c = first_accepted(&sw, f);
        if (!c) continue;
        ug_guarded mem[UG_MAX_BUFFERS] = {{0}};
        ug_buf bufs[UG_MAX_BUFFERS] = {{0}};
        for (size_t i = 0; i < f->n_buffers; i++) {
            CU_ASSERT_FATAL(ug_family_buffer_count(f, &c->params, i, &bufs[i].count).code == UG_OK);
            bufs[i].dtype = f->buffers[i].dtype;
            CU_ASSERT_FATAL(ug_guarded_alloc(&mem[i], bufs[i].count * ug_dtype_size(bufs[i].dtype)).code == UG_OK);
            bufs[i].data = ug_guarded_data(&mem[i]);
            memset(bufs[i].data, f->buffers[i].is_output ? 0xA7 : 0, bufs[i].count * ug_dtype_size(bufs[i].dtype));
        }
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        CU_ASSERT_FATAL(f->generate(&c->params, c->regime, rng, bufs).code == UG_OK);
        gsl_rng_free(rng);
        ug_guarded_fail_after(0);
        ug_status st = f->run(&c->params, bufs);
        ug_guarded_fail_after(-1);
        bool uses_scratch = st.code != UG_OK;
        if (uses_scratch) {
            CU_ASSERT_EQUAL(st.code, UG_ENOMEM);
            CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "injected failure"));
            for (size_t i = 0; i < f->n_buffers; i++) {
                const unsigned char *d = bufs[i].data;
                for (size_t k = 0; f->buffers[i].is_output && k < bufs[i].count * ug_dtype_size(bufs[i].dtype); k++)
                    if (d[k] != 0xA7) {
                        CU_FAIL("a kernel wrote its output after its scratch allocation failed");
                        break;
                    }
            }
            checked++;
        }
        for (size_t i = 0; i < f->n_buffers; i++)
            CU_ASSERT_EQUAL(ug_guarded_free(&mem[i], f->buffers[i].name).code, UG_OK);
    }
    CU_ASSERT(checked >= 1);
    ug_sweep_free(&sw);
}

/* The runner's own buffer allocations failing: the case fails naming the
 * failure, the run goes on. */
static void test_case_buffer_allocation_failure_fails_the_case(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    CU_ASSERT_FATAL(ug_sweep_filter(&sw, "gdn_recompute_wu/K=256").code == UG_OK);
    CU_ASSERT_FATAL(sw.n_cases == 1);
    ug_run_options opt = {.model = ug_test_cpu_model(), .moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT};
    for (int i = 0; i < UG_ISA_COUNT; i++) opt.isa_enabled[i] = true;
    ug_run_result run;
    ug_guarded_fail_after(2);
    ug_status st = ug_run_sweep(&sw, &opt, &run);
    ug_guarded_fail_after(-1);
    CU_ASSERT_EQUAL(st.code, UG_OK);
    CU_ASSERT_FALSE(run.cases[0].passed);
    CU_ASSERT_PTR_NOT_NULL(strstr(run.cases[0].failure, "injected failure"));
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
}

/* A full disk (here: a 2 KiB file-size limit, so writes fail with EFBIG) is
 * reported as UG_EIO and no report or temporary file is left. */
static void test_full_disk_is_reported_and_leaves_nothing(void)
{
    char dir[] = "/tmp/ug_test_fulldisk_XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    CU_ASSERT_FATAL(ug_sweep_filter(&sw, "gdn_recompute_wu/").code == UG_OK);
    size_t kept = 0;
    for (size_t i = 0; i < sw.n_cases; i++)
        if (sw.cases[i].expect_reject) sw.cases[kept++] = sw.cases[i];
    sw.n_cases = kept;
    ug_run_options opt = {.model = ug_test_cpu_model(), .moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT};
    for (int i = 0; i < UG_ISA_COUNT; i++) opt.isa_enabled[i] = true;
    ug_run_result run;
    ug_budgets budgets = {0};
    ug_verdict verdict = {0};
    CU_ASSERT_FATAL(ug_run_sweep(&sw, &opt, &run).code == UG_OK);
    CU_ASSERT_FATAL(ug_gate_evaluate(&run, &budgets, NULL, &verdict).code == UG_OK);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit small = {2048, 2048};
        setrlimit(RLIMIT_FSIZE, &small);
        ug_status st = ug_report_write_all(dir, &run, &budgets, &verdict);
        _exit(st.code == UG_EIO && strstr(st.msg, dir) ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", dir);
    CU_ASSERT_EQUAL(system(cmd), 0); /* nothing half-written */
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
    ug_test_remove_tree(dir);
}

/* A run killed while writing its reports (SIGKILL at random points) leaves
 * each report either absent or complete: never a truncated report.json. */
static void test_killed_while_writing_leaves_no_partial_report(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    CU_ASSERT_FATAL(ug_sweep_filter(&sw, "gdn_recompute_wu/").code == UG_OK);
    size_t kept = 0;
    for (size_t i = 0; i < sw.n_cases; i++)
        if (sw.cases[i].expect_reject) sw.cases[kept++] = sw.cases[i];
    sw.n_cases = kept;
    ug_run_options opt = {.model = ug_test_cpu_model(), .moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT};
    for (int i = 0; i < UG_ISA_COUNT; i++) opt.isa_enabled[i] = true;
    ug_run_result run;
    ug_budgets budgets = {0};
    ug_verdict verdict = {0};
    CU_ASSERT_FATAL(ug_run_sweep(&sw, &opt, &run).code == UG_OK);
    CU_ASSERT_FATAL(ug_gate_evaluate(&run, &budgets, NULL, &verdict).code == UG_OK);
    for (int attempt = 0; attempt < 20; attempt++) {
        char dir[] = "/tmp/ug_test_killed_XXXXXX", reports[64];
        CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
        snprintf(reports, sizeof reports, "%s/reports", dir); /* the set's leftovers go beside it, into dir */
        pid_t pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
            for (;;) (void)ug_report_write_all(reports, &run, &budgets, &verdict); /* until killed */
        }
        usleep(200 + 700 * attempt);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        char path[96];
        snprintf(path, sizeof path, "%s/report.json", reports);
        if (access(path, F_OK) == 0) {
            json_error_t err;
            json_t *j = json_load_file(path, 0, &err);
            CU_ASSERT_PTR_NOT_NULL(j); /* complete, or not there at all */
            json_decref(j);
        }
        ug_test_remove_tree(dir);
    }
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
}

UG_TEST_SUITE(faults_suite, "faults", UG_TEST(test_kernel_scratch_allocation_failure),
              UG_TEST(test_case_buffer_allocation_failure_fails_the_case),
              UG_TEST(test_full_disk_is_reported_and_leaves_nothing),
              UG_TEST(test_killed_while_writing_leaves_no_partial_report));
