/* SPDX-License-Identifier: MIT */
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

/* A fresh directory (template for mkdtemp) holding the sweep and budgets above, the budgets loaded. */
static void fixture_open(fixture *fx, const char *dir_template)
{
    memset(fx, 0, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "%s", dir_template);
    CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
    snprintf(fx->sweep, sizeof fx->sweep, "%s/sweep.json", fx->dir);
    snprintf(fx->budgets, sizeof fx->budgets, "%s/budgets.json", fx->dir);
    write_file(fx->sweep, sweep_text);
    write_file(fx->budgets, budgets_text);
    CU_ASSERT_FATAL(ug_budgets_load(fx->budgets, &fx->b).code == UG_OK);
}

/* Runs the sweep (optionally one shard) and writes its reports to DIR/name. */
static void run_and_report(fixture *fx, size_t shard, size_t shards, const char *name)
{
    ug_sweep sw;
    ug_run_result run;
    ug_verdict v;
    CU_ASSERT_FATAL(ug_sweep_load(fx->sweep, &sw).code == UG_OK);
    if (shards) CU_ASSERT_FATAL(ug_sweep_shard(&sw, shard, shards).code == UG_OK);
    ug_run_options opt = {.model = ug_test_cpu_model(), .moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT};
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
    fixture fx;
    fixture_open(&fx, "/tmp/ug_test_merge_XXXXXX");
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
    fixture fx;
    fixture_open(&fx, "/tmp/ug_test_repeat_XXXXXX");
    run_and_report(&fx, 0, 0, "first");
    run_and_report(&fx, 0, 0, "second");
    json_t *a = load_report(&fx, "first"), *b = load_report(&fx, "second");
    CU_ASSERT_TRUE(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    ug_budgets_free(&fx.b);
    ug_test_remove_tree(fx.dir);
}

/* Writes root (compact) to DIR/name and returns the path in out. */
static void write_json(const fixture *fx, const char *name, const json_t *root, char out[200])
{
    snprintf(out, 200, "%s/%s", fx->dir, name);
    CU_ASSERT_FATAL(json_dump_file(root, out, JSON_COMPACT) == 0);
}

/* A fresh fixture's unsharded run: its report.json, loaded, and its path in src. */
static json_t *full_report(fixture *fx, const char *dir_template, char src[200])
{
    fixture_open(fx, dir_template);
    run_and_report(fx, 0, 0, "full");
    snprintf(src, 200, "%s/full/report.json", fx->dir);
    json_t *report = json_load_file(src, 0, NULL);
    CU_ASSERT_FATAL(report != NULL);
    return report;
}

/* `report` (merge of one report) and `compare` (the figures) read a report.json
 * through one strict check: they accept and refuse the same files. With
 * max_ratio deleted from one aggregate the lenient reader of merge.c read 0
 * (report said PASS, exit 0) while compare refused the file (exit 2). */
static void expect_both_refuse(const char *path, const char *needle)
{
    ug_sweep sw;
    ug_run_result run;
    ug_baseline figures;
    ug_status st = ug_merge_shards(&path, 1, &sw, &run);
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    CU_assertImplementation(strstr(st.msg, needle) != NULL, __LINE__, st.msg, __FILE__, "", CU_FALSE);
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
    st = ug_figures_load(path, &figures);
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    CU_assertImplementation(strstr(st.msg, needle) != NULL, __LINE__, st.msg, __FILE__, "", CU_FALSE);
    ug_baseline_free(&figures);
}

static void test_report_and_compare_accept_the_same_files(void)
{
    fixture fx;
    char src[200], path[200];
    json_t *report = full_report(&fx, "/tmp/ug_test_strict_XXXXXX", src);
    /* the file as written: both read it */
    ug_sweep sw;
    ug_run_result run;
    ug_baseline figures;
    const char *paths[] = {src};
    CU_ASSERT_EQUAL(ug_merge_shards(paths, 1, &sw, &run).code, UG_OK);
    CU_ASSERT_EQUAL(ug_figures_load(src, &figures).code, UG_OK);
    ug_baseline_free(&figures);
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
    /* max_ratio deleted from one aggregate */
    json_t *exact = json_object_get(
        json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(report, "families"), 0), "outputs"), 0),
                        "modes"), "exact");
    json_t *ratio = json_incref(json_object_get(exact, "max_ratio"));
    CU_ASSERT_FATAL(json_object_del(exact, "max_ratio") == 0);
    write_json(&fx, "no_ratio.json", report, path);
    expect_both_refuse(path, "no_ratio.json: families[0].outputs[0].modes.exact.max_ratio: missing (expected a number");
    /* a figure of the wrong type names what was found */
    json_object_set_new(exact, "max_ratio", json_string("small"));
    write_json(&fx, "ratio_string.json", report, path);
    expect_both_refuse(path, "families[0].outputs[0].modes.exact.max_ratio: expected a number (or \"inf\", \"-inf\", "
                             "\"nan\"), found \"small\"");
    json_object_set_new(exact, "max_ratio", ratio);
    /* a case's field, which only report reads, is checked for compare too */
    json_object_del(json_array_get(json_object_get(report, "cases"), 1), "passed");
    write_json(&fx, "no_passed.json", report, path);
    expect_both_refuse(path, "cases[1].passed: missing (expected true or false)");
    /* duplicate keys (merge.c read the last one) */
    char *text = json_dumps(report, JSON_COMPACT);
    CU_ASSERT_FATAL(text != NULL);
    snprintf(path, sizeof path, "%s/duplicate.json", fx.dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "{\"schema\": \"ulpgate-report/1\", %s", text + 1);
    fclose(f);
    free(text);
    expect_both_refuse(path, "duplicate object key");
    json_decref(report);
    ug_budgets_free(&fx.b);
    ug_test_remove_tree(fx.dir);
}

/* cases[].unchecked (an intermediate handed over, not checked) survives a merge; a bad entry is refused. */
static void test_merge_reads_unchecked_intermediates(void)
{
    fixture fx;
    char src[200], path[200];
    json_t *report = full_report(&fx, "/tmp/ug_test_unchecked_XXXXXX", src);
    json_t *unchecked = json_object_get(json_array_get(json_object_get(report, "cases"), 0), "unchecked");
    CU_ASSERT_FATAL(json_is_object(unchecked) && json_object_size(unchecked) == 0);
    json_object_set_new(unchecked, "u", json_string("A"));
    write_json(&fx, "unchecked.json", report, path);
    const char *paths[] = {path};
    ug_sweep sw;
    ug_run_result run;
    CU_ASSERT_EQUAL_FATAL(ug_merge_shards(paths, 1, &sw, &run).code, UG_OK);
    const ug_family *f = run.cases[0].c->family;
    CU_ASSERT(!run.cases[0].unchecked[0]); /* w */
    CU_ASSERT(run.cases[0].unchecked[1]);  /* u */
    CU_ASSERT_EQUAL(run.cases[0].unchecked_missing[1], ug_family_buffer_index(f, "A"));
    ug_run_result_free(&run);
    ug_sweep_free(&sw);
    static const char *const bad[][2] = {{"o", "A"}, {"u", "Z"}, {"u", NULL}};
    for (size_t k = 0; k < 3; k++) {
        json_object_clear(unchecked);
        json_object_set_new(unchecked, bad[k][0], bad[k][1] ? json_string(bad[k][1]) : json_integer(3));
        write_json(&fx, "bad_unchecked.json", report, path);
        const ug_status st = ug_merge_shards(paths, 1, &sw, &run);
        CU_ASSERT_EQUAL(st.code, UG_EPARSE);
        CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "unchecked: '"));
        ug_run_result_free(&run);
        ug_sweep_free(&sw);
    }
    json_decref(report);
    ug_budgets_free(&fx.b);
    ug_test_remove_tree(fx.dir);
}

UG_TEST_SUITE(merge_suite, "merge", UG_TEST(test_merged_shards_equal_unsharded_run),
              UG_TEST(test_two_runs_give_identical_reports), UG_TEST(test_report_and_compare_accept_the_same_files),
              UG_TEST(test_merge_reads_unchecked_intermediates));
