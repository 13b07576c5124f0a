/* SPDX-License-Identifier: MIT */
/* Kernel libraries (harness/plugin.c, include/ulpgate/kernel_abi.h) through
 * the runner's kernel-source path.
 *
 * The repository's own kernels built as a library ($(BUILD)/libulpgate_kernels.so)
 * must give, on a small sweep with every rejected shape, PASS and the same
 * bits and messages as the built-in kernels on the best ISA path. The
 * fixtures/plugin/cumsum.c builds ($(BUILD)/plugin-fixtures/cumsum-DEFECT.so)
 * each plant one defect that must be refused at load time naming the value
 * (ABI version, entry symbol, family name, duplicates, NULL run) or caught by
 * the runner and the gate (wrong values, a write past the end, a status out of
 * range); the defect-free build must pass. The libraries are found next to
 * this test binary, so every build tree (sanitize, memcheck) tests its own.
 *
 * Suite "isolate": the hostile builds (exit, _exit, a signal, an overrun, a
 * hang on the third call; exit in a constructor) run in worker processes
 * (harness/isolate.h): exactly that call's case fails, naming the library,
 * the case and what happened, the cases after it pass, the gate fails, and
 * this process lives on; the harness never maps the library; the built-in
 * kernels give the same results in workers (--isolate) as in-process. */
#include <dlfcn.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "../harness/gate.h"
#include "../harness/plugin.h"
#include "../harness/report.h"
#include "tests.h"

static const char small_sweep[] = "fixtures/sweeps/memcheck";
static const char budgets_path[] = "fixtures/budgets";

#define ASSERT_CONTAINS(msg, needle) assert_contains((msg), (needle), __LINE__)
static void assert_contains(const char *msg, const char *needle, unsigned line)
{
    char what[UG_MSG_MAX + 160];
    snprintf(what, sizeof what, "message lacks \"%s\": %s", needle, msg);
    CU_assertImplementation(strstr(msg, needle) != NULL, line, what, __FILE__, "", CU_FALSE);
}

/* $(BUILD)/NAME, where this binary is $(BUILD)/tests/run_tests. */
static void build_path(const char *name, char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CU_ASSERT_FATAL(n > 0);
    exe[n] = '\0';
    snprintf(out, size, "%s/%s", dirname(dirname(exe)), name);
}

static ug_status open_library_with_timeout(const char *name, double case_timeout, ug_plugin **out)
{
    char path[PATH_MAX + 64];
    build_path(name, path, sizeof path);
    return ug_plugin_open(path, case_timeout, out);
}

static ug_status open_library(const char *name, ug_plugin **out) { return open_library_with_timeout(name, 0, out); }

static ug_run_options options(const ug_plugin *p)
{
    ug_run_options opt = {0};
    opt.moderate_cond = 16;
    opt.model = ug_test_cpu_model();
    opt.isa_enabled[ug_isa_best()] = true;
    opt.max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT;
    opt.jobs = 1;
    opt.source = p ? ug_plugin_source(p) : NULL;
    return opt;
}

/* The first accepted case of every family, and every rejected case: each
 * family's kernel on real data, and each validation rule, in little time. */
static bool first_accepted_or_rejected(const ug_case *c, const void *ctx)
{
    bool *seen = (bool *)ctx; /* per family index */
    if (c->expect_reject) return true;
    size_t f = 0;
    while (ug_family_at(f) != c->family) f++;
    if (seen[f]) return false;
    return seen[f] = true;
}

static void load_small_sweep(ug_sweep *sw)
{
    CU_ASSERT_FATAL(ug_sweep_load(small_sweep, sw).code == UG_OK);
    bool seen[64] = {false};
    CU_ASSERT_FATAL(ug_family_count() <= 64);
    ug_sweep_keep(sw, first_accepted_or_rejected, seen);
}

static void assert_status_ok(ug_status st, unsigned line)
{
    CU_assertImplementation(st.code == UG_OK, line, st.msg, __FILE__, "", CU_TRUE);
}
#define ASSERT_OK(expr) assert_status_ok((expr), __LINE__)

/* ---- the built-in kernels as a library ---------------------------------- */

static void test_builtin_library_provides_every_family(void)
{
    ug_plugin *p;
    ASSERT_OK(open_library("libulpgate_kernels.so", &p));
    for (size_t i = 0; i < ug_family_count(); i++) CU_ASSERT_TRUE(ug_plugin_provides(p, ug_family_at(i)));
    CU_ASSERT_STRING_EQUAL(ug_plugin_basename(p), "libulpgate_kernels.so");
    CU_ASSERT_STRING_EQUAL(ug_plugin_source(p)->name, "plugin");
    ug_plugin_close(p);
}

/* Only the entry point is dynamic: the library's own copies of ulpgate's
 * functions and of the family registry's bounds can neither shadow the
 * host's nor be bound to them. */
static void test_builtin_library_exports_only_its_entry(void)
{
    char path[PATH_MAX + 64];
    build_path("libulpgate_kernels.so", path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_PTR_NOT_NULL(dlsym(h, "ulpgate_kernels"));
    static const char *const internal[] = {"ug_family_count", "ug_fail", "ug_isa_select", "gdn_chunk_cumsum",
                                           "__start_ug_families", "__stop_ug_families"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s is exported", internal[i]);
        CU_assertImplementation(dlsym(h, internal[i]) == NULL, __LINE__, what, __FILE__, "", CU_FALSE);
    }
    dlclose(h);
}

static void test_builtin_library_same_bits_and_messages_as_builtin_kernels(void)
{
    ug_sweep sw;
    load_small_sweep(&sw);
    ug_plugin *p;
    ASSERT_OK(open_library("libulpgate_kernels.so", &p));
    ug_run_result builtin, plugin;
    ug_run_options opt_builtin = options(NULL), opt_plugin = options(p);
    ASSERT_OK(ug_run_sweep(&sw, &opt_builtin, &builtin));
    ASSERT_OK(ug_run_sweep(&sw, &opt_plugin, &plugin));
    CU_ASSERT_PTR_NULL(builtin.source_name);
    CU_ASSERT_STRING_EQUAL(plugin.source_name, "plugin");
    size_t accepted = 0, rejected = 0;
    for (size_t i = 0; i < sw.n_cases; i++) {
        const ug_case_result *b = &builtin.cases[i], *q = &plugin.cases[i];
        CU_assertImplementation(q->passed, __LINE__, q->failure, __FILE__, "", CU_FALSE);
        CU_ASSERT_EQUAL(q->kernel_status.code, b->kernel_status.code);
        CU_ASSERT_STRING_EQUAL(q->kernel_status.msg, b->kernel_status.msg);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) CU_ASSERT_FALSE(q->isa_ran[isa]);
        if (sw.cases[i].expect_reject) {
            rejected++;
            continue;
        }
        accepted++;
        CU_ASSERT_TRUE(q->source_ran);
        CU_ASSERT_EQUAL(q->bits_hash, b->isa_bits[ug_isa_best()]);
        CU_ASSERT_EQUAL(q->elements, b->elements);
    }
    CU_ASSERT_EQUAL(accepted, ug_family_count());
    CU_ASSERT(rejected > 100);
    for (size_t f = 0; f < plugin.n_families; f++) {
        CU_ASSERT_TRUE(plugin.families[f].source_ran);
        CU_ASSERT_EQUAL(plugin.families[f].cases_failed, 0);
    }
    ug_budgets budgets = {0};
    ug_verdict verdict = {0};
    ASSERT_OK(ug_budgets_load(budgets_path, &budgets));
    ASSERT_OK(ug_gate_evaluate(&plugin, &budgets, NULL, &verdict));
    CU_ASSERT_TRUE(verdict.pass);
    ug_verdict_free(&verdict);
    ug_budgets_free(&budgets);
    ug_run_result_free(&plugin);
    ug_run_result_free(&builtin);
    ug_plugin_close(p);
    ug_sweep_free(&sw);
}

/* ---- the defect-planted libraries ---------------------------------------- */

static void assert_refused(const char *defect, const char *const *needles, size_t n)
{
    char name[96];
    snprintf(name, sizeof name, "plugin-fixtures/cumsum-%s.so", defect);
    ug_plugin *p = (ug_plugin *)1;
    ug_status st = open_library(name, &p);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NULL(p);
    ASSERT_CONTAINS(st.msg, name); /* the library */
    for (size_t i = 0; i < n; i++) ASSERT_CONTAINS(st.msg, needles[i]);
}

static void test_missing_library_refused(void)
{
    const char *const needles[] = {"cannot load", "No such file"};
    assert_refused("not_built", needles, 2);
}

static void test_wrong_abi_version_refused(void)
{
    const char *const needles[] = {"kernel ABI version 2", "supports version 1"};
    assert_refused("wrong_version", needles, 2);
}

static void test_missing_entry_symbol_refused(void)
{
    const char *const needles[] = {"no symbol ulpgate_kernels", "kernel_abi.h"};
    assert_refused("no_entry", needles, 2);
}

static void test_unknown_family_refused(void)
{
    const char *const needles[] = {"kernel 0", "unknown family 'gdn_chunk_cumsun'"};
    assert_refused("unknown_family", needles, 2);
}

static void test_duplicate_family_refused(void)
{
    const char *const needles[] = {"family gdn_chunk_cumsum is listed twice (kernels 0 and 1)"};
    assert_refused("duplicate_family", needles, 1);
}

static void test_null_run_refused(void)
{
    const char *const needles[] = {"kernel 0 (gdn_chunk_cumsum): the run function is NULL"};
    assert_refused("null_run", needles, 1);
}

/* Runs the defect's library on the gdn_chunk_cumsum cases of the small
 * sweep (the accepted ones only, or every one) and gates the result. */
typedef struct {
    ug_sweep sweep;
    ug_run_result run;
    ug_verdict verdict;
    char skipped[1024];
} library_run;

static bool accepted_only(const ug_case *c, __attribute__((unused)) const void *ctx) { return !c->expect_reject; }

/* The first five cases of the sweep: two accepted, then B=0, T=0 and H=0. */
static bool first_five(const ug_case *c, __attribute__((unused)) const void *ctx) { return c->index < 5; }

static void run_library_cases(const char *defect, int jobs, bool (*keep)(const ug_case *, const void *),
                              double case_timeout, library_run *out)
{
    char name[96];
    snprintf(name, sizeof name, "plugin-fixtures/cumsum-%s.so", defect);
    memset(out, 0, sizeof *out);
    CU_ASSERT_FATAL(ug_sweep_load(small_sweep, &out->sweep).code == UG_OK);
    ug_plugin *p;
    ASSERT_OK(open_library_with_timeout(name, case_timeout, &p));
    CU_ASSERT_FATAL(p != NULL);
    ASSERT_OK(ug_plugin_restrict_sweep(p, &out->sweep, out->skipped, sizeof out->skipped));
    if (keep) ug_sweep_keep(&out->sweep, keep, NULL);
    CU_ASSERT_FATAL(out->sweep.n_cases > 0);
    ug_run_options opt = options(p);
    opt.jobs = jobs;
    ASSERT_OK(ug_run_sweep(&out->sweep, &opt, &out->run));
    ug_budgets budgets = {0};
    ASSERT_OK(ug_budgets_load(budgets_path, &budgets));
    ASSERT_OK(ug_gate_evaluate(&out->run, &budgets, NULL, &out->verdict));
    ug_budgets_free(&budgets);
    ug_plugin_close(p);
}

static void run_library(const char *defect, int jobs, bool rejected_too, library_run *out)
{
    run_library_cases(defect, jobs, rejected_too ? NULL : accepted_only, 0, out);
}

static void library_run_free(library_run *r)
{
    ug_verdict_free(&r->verdict);
    ug_run_result_free(&r->run);
    ug_sweep_free(&r->sweep);
}

/* Every case failed, each first with the expected reason; the gate fails. */
static void assert_every_case_fails(const char *defect, const char *reason)
{
    library_run r;
    run_library(defect, 1, false, &r);
    for (size_t i = 0; i < r.run.n_cases; i++) {
        CU_ASSERT_FALSE(r.run.cases[i].passed);
        ASSERT_CONTAINS(r.run.cases[i].failure, reason);
    }
    CU_ASSERT_FALSE(r.verdict.pass);
    library_run_free(&r);
}

static void test_working_library_passes_and_names_skipped_families(void)
{
    library_run r;
    run_library("none", 1, true, &r);
    size_t rejected = 0;
    for (size_t i = 0; i < r.run.n_cases; i++) rejected += r.run.cases[i].c->expect_reject;
    CU_ASSERT(rejected >= 10);
    for (size_t i = 0; i < r.run.n_cases; i++) {
        CU_assertImplementation(r.run.cases[i].passed, __LINE__, r.run.cases[i].failure, __FILE__, "", CU_FALSE);
        CU_ASSERT_EQUAL(r.run.cases[i].c->family, ug_family_find("gdn_chunk_cumsum"));
    }
    CU_ASSERT_TRUE(r.verdict.pass);
    for (size_t i = 0; i < ug_family_count(); i++)
        if (strcmp(ug_family_at(i)->name, "gdn_chunk_cumsum") != 0) ASSERT_CONTAINS(r.skipped, ug_family_at(i)->name);
    CU_ASSERT_PTR_NULL(strstr(r.skipped, "gdn_chunk_cumsum"));
    library_run_free(&r);
}

static void test_jobs_do_not_change_a_library_run(void)
{
    library_run one, two;
    run_library("none", 1, false, &one);
    run_library("none", 2, false, &two);
    CU_ASSERT_EQUAL(one.run.n_cases, two.run.n_cases);
    for (size_t i = 0; i < one.run.n_cases && i < two.run.n_cases; i++)
        CU_ASSERT_EQUAL(one.run.cases[i].bits_hash, two.run.cases[i].bits_hash);
    CU_ASSERT_EQUAL(one.run.families[0].source_bits_hash, two.run.families[0].source_bits_hash);
    library_run_free(&one);
    library_run_free(&two);
}

static void test_wrong_values_fail_the_gate(void)
{
    assert_every_case_fails("wrong_values", "[plugin] g[");
}

static void test_write_past_the_end_is_caught_by_the_guard(void)
{
    assert_every_case_fails("out_of_bounds", "[plugin] guard zone of buffer g overwritten");
}

static void test_status_out_of_range_fails_naming_it(void)
{
    assert_every_case_fails("bad_status", "kernel-error: cumsum-bad_status.so returned 7, not an ulpgate_status");
}

/* ---- the report labels the path ------------------------------------------ */

static void test_report_labels_the_plugin_path(void)
{
    library_run r;
    run_library("none", 1, false, &r);
    snprintf(r.run.source_detail, sizeof r.run.source_detail, "cumsum-none.so");
    char dir[] = "/tmp/ulpgate-test-plugin-XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    ug_budgets budgets = {0};
    ASSERT_OK(ug_budgets_load(budgets_path, &budgets));
    ASSERT_OK(ug_report_write_all(dir, &r.run, &budgets, &r.verdict));
    char path[96];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_t *root = json_load_file(path, 0, NULL);
    CU_ASSERT_FATAL(root != NULL);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(root, "run"), "kernels")),
                           "plugin: cumsum-none.so");
    json_t *bits = json_object_get(json_array_get(json_object_get(root, "cases"), 0), "isa_bits");
    CU_ASSERT_EQUAL(json_object_size(bits), 1);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(bits, "plugin"));
    json_decref(root);
    ug_budgets_free(&budgets);
    ug_test_remove_tree(dir);
    library_run_free(&r);
}


/* ---- hostile libraries in worker processes (suite "isolate") ------------- */

/* The hostile build misbehaves on its third call, B=0 of the first five
 * cases: that case fails naming the library, the case and each of whats
 * (any one of alternatives separated by '|'), the other four pass, the gate
 * fails. */
static void assert_only_third_call_fails(const char *defect, double case_timeout, const char *what)
{
    library_run r;
    run_library_cases(defect, 1, first_five, case_timeout, &r);
    CU_ASSERT_EQUAL_FATAL(r.run.n_cases, 5);
    char library[96];
    snprintf(library, sizeof library, "cumsum-%s.so", defect);
    for (size_t i = 0; i < r.run.n_cases; i++) {
        const ug_case_result *cr = &r.run.cases[i];
        if (strcmp(cr->c->label, "B=0") != 0) {
            CU_assertImplementation(cr->passed, __LINE__, cr->failure, __FILE__, "", CU_FALSE);
            continue;
        }
        CU_ASSERT_FALSE(cr->passed);
        ASSERT_CONTAINS(cr->failure, library);
        bool any = false;
        char alternatives[256];
        snprintf(alternatives, sizeof alternatives, "%s", what);
        for (char *save = NULL, *alt = strtok_r(alternatives, "|", &save); alt; alt = strtok_r(NULL, "|", &save))
            any |= strstr(cr->failure, alt) != NULL;
        char why[UG_MSG_MAX + 300];
        snprintf(why, sizeof why, "failure lacks %s: %s", what, cr->failure);
        CU_assertImplementation(any, __LINE__, why, __FILE__, "", CU_FALSE);
    }
    CU_ASSERT_FALSE(r.verdict.pass);
    library_run_free(&r);
}

/* An exit handler of this process that leaves a file when a worker runs it. */
static pid_t test_pid;
static char worker_ran_handler[64];
static void mark_if_in_a_worker(void)
{
    if (getpid() != test_pid) fclose(fopen(worker_ran_handler, "w"));
}

static void test_exit_in_a_call_fails_its_case(void)
{
    if (!test_pid) {
        test_pid = getpid();
        snprintf(worker_ran_handler, sizeof worker_ran_handler, "/tmp/ulpgate-test-atexit-%d", (int)test_pid);
        CU_ASSERT_FATAL(atexit(mark_if_in_a_worker) == 0);
    }
    assert_only_third_call_fails("exit3", 0, "running gdn_chunk_cumsum/B=0 exited with status");
    CU_ASSERT_EQUAL(access(worker_ran_handler, F_OK), -1); /* the harness's handlers did not run in the worker */
    remove(worker_ran_handler);
    assert_only_third_call_fails("underscore_exit3", 0, "running gdn_chunk_cumsum/B=0 exited with status");
}

static void test_signals_fail_their_case_naming_the_signal(void)
{
    assert_only_third_call_fails("segv", 0, "running gdn_chunk_cumsum/B=0 was killed by signal SIGSEGV");
    assert_only_third_call_fails("abort", 0, "running gdn_chunk_cumsum/B=0 was killed by signal SIGABRT");
    assert_only_third_call_fails("sigkill", 0, "running gdn_chunk_cumsum/B=0 was killed by signal SIGKILL");
}

/* A write 4 KiB past the output runs through its guard zone into the page
 * the worker keeps inaccessible (or ends in the guard up to it). */
static void test_writes_past_a_tensor_fail_their_case(void)
{
    static const char either[] = "B=0 was killed by signal SIGSEGV|guard zone of buffer g overwritten";
    assert_only_third_call_fails("overrun_4k", 0, either);
    assert_only_third_call_fails("past_guard", 0, either);
}

static void test_hangs_time_out_and_fail_their_case(void)
{
    assert_only_third_call_fails("pause", 1, "gdn_chunk_cumsum/B=0 timed out after 1 s (--case-timeout)");
    assert_only_third_call_fails("spin", 1, "gdn_chunk_cumsum/B=0 timed out after 1 s (--case-timeout)");
}

static void test_exit_in_a_constructor_is_refused_and_the_harness_lives(void)
{
    ug_plugin *p = (ug_plugin *)1;
    ug_status st = open_library("plugin-fixtures/cumsum-constructor_exit.so", &p);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NULL(p);
    ASSERT_CONTAINS(st.msg, "cumsum-constructor_exit.so: the worker process loading it exited with status");
}

/* The library is mapped in the workers only. */
static void test_the_harness_never_loads_the_library(void)
{
    char path[PATH_MAX + 64];
    build_path("plugin-fixtures/cumsum-none.so", path, sizeof path);
    ug_plugin *p;
    ASSERT_OK(ug_plugin_open(path, 0, &p));
    CU_ASSERT_TRUE(ug_plugin_provides(p, ug_family_find("gdn_chunk_cumsum")));
    CU_ASSERT_PTR_NULL(dlopen(path, RTLD_NOW | RTLD_NOLOAD));
    ug_plugin_close(p);
}

static void test_default_timeout_scales_with_the_buffers(void)
{
    double valgrind = RUNNING_ON_VALGRIND ? 20 : 1;
    CU_ASSERT_DOUBLE_EQUAL(ug_isolate_default_timeout(0), 10 * valgrind, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(ug_isolate_default_timeout((size_t)64 << 20), 74 * valgrind, 1e-9);
}

/* --isolate: the built-in kernels in workers give the in-process bits,
 * statuses and messages on every path. */
static void test_isolated_builtin_kernels_match_in_process(void)
{
    ug_sweep sw;
    load_small_sweep(&sw);
    ug_isolate *iso;
    ASSERT_OK(ug_isolate_open_builtin(0, &iso));
    ug_run_options in_process = options(NULL), isolated = options(NULL);
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) in_process.isa_enabled[isa] = isolated.isa_enabled[isa] = true;
    isolated.isolated = ug_isolate_source(iso);
    isolated.jobs = 2;
    ug_run_result a, b;
    ASSERT_OK(ug_run_sweep(&sw, &in_process, &a));
    ASSERT_OK(ug_run_sweep(&sw, &isolated, &b));
    for (size_t i = 0; i < sw.n_cases; i++) {
        CU_assertImplementation(b.cases[i].passed, __LINE__, b.cases[i].failure, __FILE__, "", CU_FALSE);
        CU_ASSERT_EQUAL(a.cases[i].kernel_status.code, b.cases[i].kernel_status.code);
        CU_ASSERT_STRING_EQUAL(a.cases[i].kernel_status.msg, b.cases[i].kernel_status.msg);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            CU_ASSERT_EQUAL(a.cases[i].isa_ran[isa], b.cases[i].isa_ran[isa]);
            CU_ASSERT_EQUAL(a.cases[i].isa_bits[isa], b.cases[i].isa_bits[isa]);
        }
    }
    ug_run_result_free(&a);
    ug_run_result_free(&b);
    ug_isolate_close(iso);
    ug_sweep_free(&sw);
}

UG_TEST_SUITE(plugin_suite, "plugin",
              UG_TEST(test_builtin_library_provides_every_family),
              UG_TEST(test_builtin_library_exports_only_its_entry),
              UG_TEST(test_builtin_library_same_bits_and_messages_as_builtin_kernels),
              UG_TEST(test_missing_library_refused),
              UG_TEST(test_wrong_abi_version_refused),
              UG_TEST(test_missing_entry_symbol_refused),
              UG_TEST(test_unknown_family_refused),
              UG_TEST(test_duplicate_family_refused),
              UG_TEST(test_null_run_refused),
              UG_TEST(test_working_library_passes_and_names_skipped_families),
              UG_TEST(test_jobs_do_not_change_a_library_run),
              UG_TEST(test_wrong_values_fail_the_gate),
              UG_TEST(test_write_past_the_end_is_caught_by_the_guard),
              UG_TEST(test_status_out_of_range_fails_naming_it),
              UG_TEST(test_report_labels_the_plugin_path));

UG_TEST_SUITE(isolate_suite, "isolate",
              UG_TEST(test_exit_in_a_call_fails_its_case),
              UG_TEST(test_signals_fail_their_case_naming_the_signal),
              UG_TEST(test_writes_past_a_tensor_fail_their_case),
              UG_TEST(test_hangs_time_out_and_fail_their_case),
              UG_TEST(test_exit_in_a_constructor_is_refused_and_the_harness_lives),
              UG_TEST(test_the_harness_never_loads_the_library),
              UG_TEST(test_default_timeout_scales_with_the_buffers),
              UG_TEST(test_isolated_builtin_kernels_match_in_process));
