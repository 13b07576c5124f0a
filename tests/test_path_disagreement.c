/* SPDX-License-Identifier: MIT */
/* ISA paths that disagree (issue 16 item 9; e.g. a build with
 * -ffp-contract=fast): the gate names the paths and the number of cases, and
 * compares the run's maxima with a baseline of agreeing paths instead of
 * calling it a filtered run (the p99 and the share correctly rounded are not
 * compared: the extra elements of the disagreeing paths would skew them). The disagreement is real runner output: the built-in
 * kernels run through the runner's `isolated` hook (harness/runner.h), which
 * here runs them in this thread and nudges the last bit of the last output
 * element (a sum of 64 terms, whose bound allows it) on the AVX2 path only. A filtered run still fails its baseline
 * comparison, now saying that it is filtered. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/gate.h"
#include "../harness/runner.h"
#include "tests.h"

static const char sweep_path[] = "fixtures/sweeps/memcheck";

static ug_status nudged_on_avx2(__attribute__((unused)) void *ctx, const ug_case *c, ug_buf *bufs)
{
    UG_TRY(c->family->run(&c->params, bufs));
    if (ug_isa_current() != UG_ISA_AVX2) return ug_ok();
    size_t out = 0;
    while (!c->family->buffers[out].is_output) out++;
    if (bufs[out].count) ((uint32_t *)bufs[out].data)[bufs[out].count - 1] ^= 1; /* its last mantissa bit (f32) */
    return ug_ok();
}

static bool cumsum_accepted(const ug_case *c, __attribute__((unused)) const void *ctx)
{
    return !c->expect_reject && strcmp(c->family->name, "gdn_chunk_cumsum") == 0;
}

static ug_run_options two_paths(void)
{
    ug_run_options opt = {0};
    opt.moderate_cond = 64;
    opt.isa_enabled[UG_ISA_PORTABLE] = opt.isa_enabled[UG_ISA_AVX2] = true;
    opt.max_case_bytes = (size_t)1 << 30;
    opt.jobs = 1;
    opt.model = ug_test_cpu_model();
    return opt;
}

typedef struct {
    ug_sweep sweep;
    ug_budgets budgets;
    ug_baseline baseline;   /* of an agreeing run of the same cases */
} fixture;

static bool fixture_load(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    if (!ug_isa_supported(UG_ISA_AVX2)) return false;
    CU_ASSERT_FATAL(ug_sweep_load(sweep_path, &fx->sweep).code == UG_OK);
    ug_sweep_keep(&fx->sweep, cumsum_accepted, NULL);
    CU_ASSERT_FATAL(fx->sweep.n_cases >= 2);
    CU_ASSERT_FATAL(ug_budgets_load("fixtures/budgets", &fx->budgets).code == UG_OK);
    ug_run_options opt = two_paths();
    ug_run_result agreeing;
    CU_ASSERT_FATAL(ug_run_sweep(&fx->sweep, &opt, &agreeing).code == UG_OK);
    char path[] = "/tmp/ulpgate-test-paths-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(ug_baseline_write(path, &agreeing).code == UG_OK);
    CU_ASSERT_FATAL(ug_baseline_load(path, &fx->baseline).code == UG_OK);
    remove(path);
    ug_run_result_free(&agreeing);
    return true;
}

static void fixture_free(fixture *fx)
{
    ug_baseline_free(&fx->baseline);
    ug_budgets_free(&fx->budgets);
    ug_sweep_free(&fx->sweep);
}

static bool has_finding(const ug_verdict *v, const char *needle)
{
    for (size_t i = 0; i < v->n; i++)
        if (strstr(v->items[i].text, needle)) return true;
    return false;
}

static void print_findings(const ug_verdict *v)
{
    for (size_t i = 0; i < v->n; i++) printf("\n    finding: %s", v->items[i].text);
}

static void test_disagreeing_paths_are_named_and_compared_with_the_baseline(void)
{
    fixture fx;
    if (!fixture_load(&fx)) {
        CU_PASS("this CPU has no AVX2 path to disagree with the portable one");
        return;
    }
    const ug_kernel_source nudge = {"nudged", nudged_on_avx2, NULL};
    ug_run_options opt = two_paths();
    opt.isolated = &nudge;
    ug_run_result run;
    ug_verdict verdict;
    CU_ASSERT_FATAL(ug_run_sweep(&fx.sweep, &opt, &run).code == UG_OK);
    CU_ASSERT_FATAL(ug_gate_evaluate(&run, &fx.budgets, &fx.baseline, &verdict).code == UG_OK);
    char expected[160];
    snprintf(expected, sizeof expected,
             "gdn_chunk_cumsum: ISA paths disagree on %zu of %zu accepted cases "
             "(bits other than portable's: avx2 on %zu)",
             fx.sweep.n_cases, fx.sweep.n_cases, fx.sweep.n_cases);
    bool named = has_finding(&verdict, expected), compared = !has_finding(&verdict, "not compared");
    CU_ASSERT_TRUE(named);
    CU_ASSERT_TRUE(compared);
    CU_ASSERT_FALSE(has_finding(&verdict, "filtered"));
    CU_ASSERT_TRUE(has_finding(&verdict, "gdn_chunk_cumsum g exact: max_ulp_dist and max_ratio compared with the "
                                         "baseline; p99_ulp_dist and share_cr not"));
    CU_ASSERT_FALSE(has_finding(&verdict, "share_cr worsened"));
    CU_ASSERT_TRUE(verdict.pass); /* the nudge is within every bound, budget and tolerance */
    if (!named || !compared || !verdict.pass) print_findings(&verdict);
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    fixture_free(&fx);
}

static void test_a_filtered_run_says_it_is_filtered(void)
{
    fixture fx;
    if (!fixture_load(&fx)) {
        CU_PASS("this CPU has no AVX2 path");
        return;
    }
    CU_ASSERT_FATAL(ug_sweep_filter(&fx.sweep, "realistic").code == UG_OK);
    ug_run_options opt = two_paths();
    ug_run_result run;
    ug_verdict verdict;
    CU_ASSERT_FATAL(ug_run_sweep(&fx.sweep, &opt, &run).code == UG_OK);
    CU_ASSERT_FATAL(ug_gate_evaluate(&run, &fx.budgets, &fx.baseline, &verdict).code == UG_OK);
    CU_ASSERT_FALSE(verdict.pass);
    CU_ASSERT_TRUE(has_finding(&verdict, "this run is filtered with --filter 'realistic'; figures not compared"));
    CU_ASSERT_FALSE(has_finding(&verdict, "disagree"));
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    fixture_free(&fx);
}

UG_TEST_SUITE(path_disagreement_suite, "path_disagreement",
              UG_TEST(test_disagreeing_paths_are_named_and_compared_with_the_baseline),
              UG_TEST(test_a_filtered_run_says_it_is_filtered));
