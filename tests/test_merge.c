/* Shards merged equal the unsharded run: verify --shard I/N then merge gives
 * the same report.json as one verify, timings aside. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/gate.h"
#include "../harness/merge.h"
#include "../harness/report.h"
#include "../harness/runner.h"
#include "tests.h"

static const char sweep_text[] =
    "{\"schema\": \"ulpgate-sweep/1\", \"seed\": 3, \"families\": {\"gdn_recompute_wu\": {\n"
    " \"accepted\": [{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 1]], \"K\": [64], \"V\": [64], \"BT\": [64],\n"
    "                \"regime\": [\"realistic\", \"strong_decay\", \"gates_zero\"]}],\n"
    " \"rejected\": [{\"name\": \"K=256\", \"params\": {\"B\": 1, \"T\": 64, \"Hg\": 1, \"H\": 1, \"K\": 256,\n"
    "               \"V\": 64, \"BT\": 64}, \"expect\": [\"MAX_K = 192\"]},\n"
    "              {\"name\": \"T=100\", \"params\": {\"B\": 1, \"T\": 100, \"Hg\": 1, \"H\": 1, \"K\": 64,\n"
    "               \"V\": 64, \"BT\": 64}, \"expect\": [\"t (100)\"]}]}}}\n";

static const char budgets_text[] =
    "{\"schema\": \"ulpgate-budgets/1\", \"moderate_condition\": 16,\n"
    " \"regression_tolerance\": {\"max_ulp_dist\": 0, \"p99_ulp_dist\": 0, \"share_cr\": 0.002, \"max_ratio\": 0.05},\n"
    " \"families\": {}}\n";

typedef struct {
    char dir[64], sweep[128], budgets[128];
    ug_budgets b;
} fixture;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Runs the sweep (optionally one shard) and writes its reports to DIR/name. */
static void run_and_report(fixture *fx, size_t shard, size_t shards, const char *name)
{
    ug_sweep sw;
    ug_run_result run;
    ug_verdict v;
    CU_ASSERT_FATAL(ug_sweep_load(fx->sweep, &sw).code == UG_OK);
    if (shards) CU_ASSERT_FATAL(ug_sweep_shard(&sw, shard, shards).code == UG_OK);
    ug_run_options opt = {.moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT};
    for (int i = 0; i < UG_ISA_COUNT; i++) opt.isa_enabled[i] = true;
    CU_ASSERT_FATAL(ug_run_sweep(&sw, &opt, &run).code == UG_OK);
    CU_ASSERT_FATAL(ug_gate_evaluate(&run, &fx->b, NULL, &v).code == UG_OK);
    char dir[160];
    snprintf(dir, sizeof dir, "%s/%s", fx->dir, name);
    CU_ASSERT_FATAL(ug_report_write_all(dir, &run, &fx->b, &v).code == UG_OK);
    ug_verdict_free(&v);
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
}

/* Removes what legitimately differs between runs: timings, memory and the shard tag. */
static void strip_timings(json_t *j)
{
    static const char *const keys[] = {"wall_seconds", "elements_per_second", "started_utc", "kernel_seconds",
                                       "reference_seconds", "shard", "memory", NULL};
    if (json_is_object(j)) {
        for (const char *const *k = keys; *k; k++) json_object_del(j, *k);
        const char *key;
        json_t *v;
        json_object_foreach(j, key, v) strip_timings(v);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) strip_timings(v);
    }
}

static json_t *load_report(const fixture *fx, const char *name)
{
    char path[200];
    snprintf(path, sizeof path, "%s/%s/report.json", fx->dir, name);
    json_t *j = json_load_file(path, 0, NULL);
    CU_ASSERT_FATAL(j != NULL);
    strip_timings(j);
    return j;
}

static void test_merged_shards_equal_unsharded_run(void)
{
    fixture fx = {0};
    snprintf(fx.dir, sizeof fx.dir, "/tmp/ug_test_merge_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx.dir) != NULL);
    snprintf(fx.sweep, sizeof fx.sweep, "%s/sweep.json", fx.dir);
    snprintf(fx.budgets, sizeof fx.budgets, "%s/budgets.json", fx.dir);
    write_file(fx.sweep, sweep_text);
    write_file(fx.budgets, budgets_text);
    CU_ASSERT_FATAL(ug_budgets_load(fx.budgets, &fx.b).code == UG_OK);
    run_and_report(&fx, 0, 0, "full");
    run_and_report(&fx, 1, 2, "shard1");
    run_and_report(&fx, 0, 2, "shard0");
    char p0[200], p1[200];
    snprintf(p0, sizeof p0, "%s/shard0/report.json", fx.dir);
    snprintf(p1, sizeof p1, "%s/shard1/report.json", fx.dir);
    const char *paths[] = {p1, p0};
    ug_sweep sw;
    ug_run_result run;
    ug_verdict v;
    ug_status st = ug_merge_shards(paths, 2, &sw, &run);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_FATAL(ug_gate_evaluate(&run, &fx.b, NULL, &v).code == UG_OK);
    char dir[160];
    snprintf(dir, sizeof dir, "%s/merged", fx.dir);
    CU_ASSERT_FATAL(ug_report_write_all(dir, &run, &fx.b, &v).code == UG_OK);
    json_t *full = load_report(&fx, "full"), *merged = load_report(&fx, "merged");
    CU_ASSERT_TRUE(json_equal(full, merged));
    json_decref(full);
    json_decref(merged);
    /* one shard alone is not the run */
    ug_sweep sw1;
    ug_run_result run1;
    st = ug_merge_shards(paths, 1, &sw1, &run1);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    ug_run_result_free(&run1);
    ug_sweep_free(&sw1);
    ug_verdict_free(&v);
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
    ug_budgets_free(&fx.b);
    ug_test_remove_tree(fx.dir);
}

/* Two runs of the same sweep give the same report.json, timings aside, and
 * the same bits whatever the thread count (determinism). */
static void test_two_runs_give_identical_reports(void)
{
    fixture fx = {0};
    snprintf(fx.dir, sizeof fx.dir, "/tmp/ug_test_repeat_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx.dir) != NULL);
    snprintf(fx.sweep, sizeof fx.sweep, "%s/sweep.json", fx.dir);
    snprintf(fx.budgets, sizeof fx.budgets, "%s/budgets.json", fx.dir);
    write_file(fx.sweep, sweep_text);
    write_file(fx.budgets, budgets_text);
    CU_ASSERT_FATAL(ug_budgets_load(fx.budgets, &fx.b).code == UG_OK);
    run_and_report(&fx, 0, 0, "first");
    run_and_report(&fx, 0, 0, "second");
    json_t *a = load_report(&fx, "first"), *b = load_report(&fx, "second");
    CU_ASSERT_TRUE(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    ug_budgets_free(&fx.b);
    ug_test_remove_tree(fx.dir);
}

UG_TEST_SUITE(merge_suite, "merge", UG_TEST(test_merged_shards_equal_unsharded_run),
              UG_TEST(test_two_runs_give_identical_reports));
