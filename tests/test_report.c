/* SPDX-License-Identifier: MIT */
/* Report files (harness/report.c) of a synthetic run: one family with two
 * outputs, two accepted cases (one failed) and two rejected shapes (one
 * wrongly accepted by the kernel). */
#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness/report.h"
#include "tests.h"

enum { N_CASES = 4, W = 0, U = 1 };

static const char *const toy_params[] = {"B", "T"};
static const char *const toy_regimes[] = {"realistic", "adversarial"};
static const ug_buffer_desc toy_buffers[] = {
    {"x", UG_BF16, false, UG_DIMS(0, 1)},
    {"w", UG_BF16, true, UG_DIMS(0, 1)},
    {"u", UG_F32, true, UG_DIMS(0, 1)},
};
/* Never run: the reports read only names and results. */
static const ug_family toy = {
    .name = "toyfam", .spec_section = "SPEC 0", .n_params = 2, .param_names = toy_params,
    .n_buffers = 3, .buffers = toy_buffers, .n_regimes = 2, .regimes = toy_regimes,
};

static const char csv_header[] =
    "family,case,kind,regime,params,output,mode,elements,moderate,correctly_rounded,share_cr,"
    "max_ulp_dist,p99_ulp_dist,max_ulp_dist_all,max_ulp_err,max_ratio,max_cond,over_bound,"
    "class_failures,flagged,passed,failure\n";

typedef struct {
    char dir[64], reports[96];
    ug_sweep sweep;
    ug_case cases[N_CASES];
    ug_case_result results[N_CASES];
    ug_family_result fam;
    ug_run_result run;
    ug_budget_entry budget_entries[3];
    ug_budgets budgets;
    ug_finding findings[3];
    ug_verdict verdict;
} fixture;

static void init_case(fixture *fx, size_t i, const char *label, bool reject, bool passed,
                      const char *failure)
{
    ug_case *c = &fx->cases[i];
    c->family = &toy;
    strcpy(c->label, label);
    c->params.v[0] = 1;
    c->params.v[1] = 64.0 * (double)(i + 1);
    c->regime = i % 2;
    c->expect_reject = reject;
    c->override.buffer = -1;
    ug_case_result *cr = &fx->results[i];
    cr->c = c;
    cr->passed = passed;
    strcpy(cr->failure, failure);
    cr->isa_bits_agree = true;
    cr->bits_hash = 0x1111222233334444ULL * (i + 1);
    for (int o = 0; o < 2 && !reject; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++)
            cr->sum[o][m] = (ug_summary){.elements = 500, .moderate = 490,
                                         .correctly_rounded = 480, .max_ulp_dist = 1,
                                         .max_ratio = 0.25 * (double)(i + 1),
                                         .worst_index = 10 + i};
}

static void init_cases(fixture *fx)
{
    init_case(fx, 0, "B=1 T=64", false, true, "");
    init_case(fx, 1, "B=1 T=128", false, false, "w[3]: \"bad\", ratio 7 > 1");
    init_case(fx, 2, "K=256", true, true, "");
    fx->results[2].kernel_status = ug_fail(UG_EINVAL, "K (256) exceeds MAX_K = 192 | 32 KB");
    fx->cases[2].n_expect = 2;
    strcpy(fx->cases[2].expect[0], "256");
    strcpy(fx->cases[2].expect[1], "MAX_K = 192");
    init_case(fx, 3, "V=512", true, false, "the kernel accepted the shape");
}

/* The aggregates as the runner would merge the two accepted cases: case 1
 * holds the worst ratio. */
static void init_family(fixture *fx)
{
    ug_family_result *fr = &fx->fam;
    fr->family = &toy;
    fr->n_outputs = 2;
    fr->output_buffer[W] = 1;
    fr->output_buffer[U] = 2;
    for (int o = 0; o < 2; o++) {
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_status s = ug_stats_init(&fr->agg[o][m]);
            CU_ASSERT_FATAL(ug_is_ok(&s));
            fr->agg[o][m].sum = fx->results[1].sum[o][m];
            fr->agg[o][m].sum.elements = 1000;
            fr->agg[o][m].sum.moderate = 980;
            fr->agg[o][m].sum.correctly_rounded = 480;
            gsl_histogram_accumulate(fr->agg[o][m].dist, 1.5, 980);
        }
    }
    fr->isa_ran[UG_ISA_PORTABLE] = true;
    fr->bits_hash[UG_ISA_PORTABLE] = 0xabcdef0123456789ULL;
    fr->cases_accepted = fr->cases_rejected = fr->cases_failed = 2;
}

static void init_gate(fixture *fx)
{
    static const ug_budget b = {.max_ratio = 1, .max_ulp_dist = 4, .p99_ulp_dist = 1,
                                .min_share_cr = 0.9};
    fx->budget_entries[0] = (ug_budget_entry){"toyfam", "w", UG_REF_EXACT, b};
    fx->budget_entries[1] = (ug_budget_entry){"toyfam", "w", UG_REF_STAGED, b};
    fx->budget_entries[2] = (ug_budget_entry){"toyfam", "u", UG_REF_EXACT, b};
    fx->budgets = (ug_budgets){.moderate_cond = 64, .n = 3, .entries = fx->budget_entries};
    fx->findings[0] = (ug_finding){UG_FINDING_FAIL, "toyfam/B=1 T=128: w[3]: \"bad\", ratio 7 > 1"};
    fx->findings[1] = (ug_finding){UG_FINDING_WORSE_OK, "toyfam w exact: share_cr worsened"};
    fx->findings[2] = (ug_finding){UG_FINDING_BETTER, "toyfam w exact: max_ulp_dist improved 2 -> 1"};
    fx->verdict = (ug_verdict){.pass = false, .n = 3, .items = fx->findings};
}

static fixture *fixture_new(void)
{
    fixture *fx = calloc(1, sizeof *fx);
    CU_ASSERT_FATAL(fx != NULL);
    strcpy(fx->dir, "/tmp/ug_report_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
    snprintf(fx->reports, sizeof fx->reports, "%s/reports", fx->dir);
    strcpy(fx->sweep.path, "fixtures/sweeps/toy.json");
    fx->sweep.content_hash = 0xfedcba9876543210ULL;
    fx->sweep.seed = 20261122;
    init_cases(fx);
    init_family(fx);
    init_gate(fx);
    fx->run = (ug_run_result){.sweep = &fx->sweep, .moderate_cond = 64, .n_cases = N_CASES,
                              .cases = fx->results, .n_families = 1, .families = &fx->fam,
                              .elements_checked = 4000, .wall_seconds = 0.5,
                              .started_utc = "2026-01-02T03:04:05Z"};
    return fx;
}

/* The fixture's memory; its files stay (a forked child frees only this, so
 * that valgrind's leak check at the child's exit finds nothing). */
static void fixture_release(fixture *fx)
{
    for (size_t i = 0; i < N_CASES; i++) ug_samples_free(&fx->results[i].samples);
    for (int o = 0; o < 2; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) ug_stats_free(&fx->fam.agg[o][m]);
    free(fx);
}

static void fixture_free(fixture *fx)
{
    ug_test_remove_tree(fx->dir);
    fixture_release(fx);
}

static void write_reports(fixture *fx)
{
    ug_status s = ug_report_write_all(fx->reports, &fx->run, &fx->budgets, &fx->verdict);
    CU_ASSERT_FATAL(ug_is_ok(&s));
}

/* The whole file as a string (caller frees). */
static char *slurp(const fixture *fx, const char *name)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", fx->reports, name);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_FATAL(f != NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF) fputc(ch, mem);
    fclose(mem);
    fclose(f);
    return text;
}

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++) n += *s == c;
    return n;
}

/* The line of text that contains needle, as a new string (caller frees). */
static char *line_with(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    CU_ASSERT_FATAL(at != NULL);
    while (at > text && at[-1] != '\n') at--;
    return strndup(at, strcspn(at, "\n"));
}

static json_t *load_report_json(const fixture *fx)
{
    char path[160];
    snprintf(path, sizeof path, "%s/report.json", fx->reports);
    json_t *root = json_load_file(path, 0, NULL);
    CU_ASSERT_FATAL(root != NULL);
    return root;
}

static char *summary_text(fixture *fx)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ug_report_print_summary(mem, &fx->run, &fx->budgets, &fx->verdict);
    fclose(mem);
    return text;
}

/* ---- files ---- */

static void test_write_all_creates_the_three_files(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    static const char *const names[] = {"report.md", "report.json", "cases.csv"};
    for (size_t i = 0; i < 3; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s/%s", fx->reports, names[i]);
        struct stat st;
        CU_ASSERT(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0);
    }
    fixture_free(fx);
}

static void test_write_all_leaves_no_temporaries(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    DIR *d = opendir(fx->reports);
    CU_ASSERT_FATAL(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        CU_ASSERT_PTR_NULL(strstr(e->d_name, ".tmp"));
        n++;
    }
    closedir(d);
    CU_ASSERT_EQUAL(n, 5); /* report.md, report.json, junit.xml, report.html, cases.csv */
    fixture_free(fx);
}

static void test_parent_is_a_file_fails_and_leaves_nothing(void)
{
    fixture *fx = fixture_new();
    char file[96];
    snprintf(file, sizeof file, "%s/plain", fx->dir);
    FILE *f = fopen(file, "w");
    CU_ASSERT_FATAL(f != NULL);
    fclose(f);
    snprintf(fx->reports, sizeof fx->reports, "%s/plain/reports", fx->dir);
    ug_status s = ug_report_write_all(fx->reports, &fx->run, &fx->budgets, &fx->verdict);
    CU_ASSERT_EQUAL(s.code, UG_EINVAL); /* found before a run: a usage error */
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "plain/reports"));
    DIR *d = opendir(fx->dir);
    CU_ASSERT_FATAL(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    CU_ASSERT_EQUAL(n, 1);
    struct stat st;
    CU_ASSERT(stat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
    fixture_free(fx);
}

static void test_missing_directories_are_created(void)
{
    fixture *fx = fixture_new();
    snprintf(fx->reports, sizeof fx->reports, "%s/a/b/c", fx->dir);
    write_reports(fx);
    struct stat st;
    char path[160];
    snprintf(path, sizeof path, "%s/cases.csv", fx->reports);
    CU_ASSERT(stat(path, &st) == 0 && S_ISREG(st.st_mode));
    fixture_free(fx);
}

/* Entries of a directory (hidden ones too), "." and ".." left out. */
static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    CU_ASSERT_FATAL(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* A second run replaces the whole set: an old version's stray temporary goes
 * with the old set, and nothing but the target is left beside it. */
static void test_second_write_replaces_the_set(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    put_file(fx->reports, "report.json.tmpAbC123", "{");
    fx->verdict = (ug_verdict){.pass = true};
    write_reports(fx);
    CU_ASSERT_EQUAL(entries(fx->reports), 5);
    CU_ASSERT_EQUAL(entries(fx->dir), 1);
    char *md = slurp(fx, "report.md");
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- verdict: **PASS**"));
    free(md);
    fixture_free(fx);
}

/* A directory holding anything else is not replaced (--reports . would
 * otherwise swap the working directory away). */
static void test_foreign_file_refuses_the_directory(void)
{
    fixture *fx = fixture_new();
    CU_ASSERT_FATAL(mkdir(fx->reports, 0777) == 0);
    put_file(fx->reports, "notes.txt", "mine");
    ug_status s = ug_report_write_all(fx->reports, &fx->run, &fx->budgets, &fx->verdict);
    CU_ASSERT_EQUAL(s.code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "'notes.txt'"));
    CU_ASSERT_EQUAL(entries(fx->reports), 1);
    CU_ASSERT_EQUAL(entries(fx->dir), 1);
    fixture_free(fx);
}

/* A second run into the same directory fails at once, naming the holder. */
static void test_locked_directory_fails_at_once(void)
{
    fixture *fx = fixture_new();
    ug_report_dir first;
    ug_status s = ug_report_open(fx->reports, &first);
    CU_ASSERT_FATAL(ug_is_ok(&s));
    s = ug_report_write_all(fx->reports, &fx->run, &fx->budgets, &fx->verdict);
    CU_ASSERT_EQUAL(s.code, UG_EINVAL);
    char pid[32];
    snprintf(pid, sizeof pid, "(pid %ld)", (long)getpid());
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "another ulpgate run"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, pid));
    ug_report_dir_close(&first);
    write_reports(fx); /* released */
    fixture_free(fx);
}

/* What a killed run left beside the target is removed by the next run;
 * a name that only looks alike is not. */
static void test_leftovers_of_a_killed_run_are_removed(void)
{
    fixture *fx = fixture_new();
    char stale[128], other[128];
    snprintf(stale, sizeof stale, "%s/.reports.ulpgate-new-Zz9Yy8", fx->dir);
    snprintf(other, sizeof other, "%s/.reports.ulpgate-new-Zz9Yy8.keep", fx->dir);
    CU_ASSERT_FATAL(mkdir(stale, 0777) == 0 && mkdir(other, 0777) == 0);
    put_file(stale, "report.md", "half");
    write_reports(fx);
    struct stat st;
    CU_ASSERT_NOT_EQUAL(stat(stale, &st), 0);
    CU_ASSERT_EQUAL(stat(other, &st), 0);
    fixture_free(fx);
}

/* A write that fails (here: a file-size limit, as `ulimit -f` sets) names the
 * file and the reason, and leaves the previous set whole. */
static void test_failed_write_keeps_the_previous_set(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *before = slurp(fx, "report.json");
    fx->verdict = (ug_verdict){.pass = true};
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit small = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &small);
        ug_status st = ug_report_write_all(fx->reports, &fx->run, &fx->budgets, &fx->verdict);
        const bool refused = st.code == UG_EIO && strstr(st.msg, "reports/report.json") && strstr(st.msg, "File too large");
        free(before);
        fixture_release(fx);
        _exit(refused ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *after = slurp(fx, "report.json");
    CU_ASSERT_STRING_EQUAL(before, after);
    CU_ASSERT_EQUAL(entries(fx->reports), 5);
    CU_ASSERT_EQUAL(entries(fx->dir), 1);
    free(before);
    free(after);
    fixture_free(fx);
}

/* ---- report.md ---- */

static void test_markdown_has_table_header_and_verdict(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *md = slurp(fx, "report.md");
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "# ulpgate report: fixtures/sweeps/toy.json"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| kernel | output | mode | elements | max ulp_dist | p99 | "
                                      "share CR | max ratio | rel RMS | budget (max/p99/CR/ratio) | verdict |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- verdict: **FAIL** (1 findings)"));
    free(md);
    fixture_free(fx);
}

static void test_markdown_rows_show_budget_and_verdict(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *md = slurp(fx, "report.md");
    CU_ASSERT_PTR_NOT_NULL(
        strstr(md, "| toyfam | w | exact | 1000 | 1 | 1 | 0.4800 | 0.5 | 0 | 4/1/0.9/1 | FAIL |"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(md, "| toyfam | u | staged | 1000 | 1 | 1 | 0.4800 | 0.5 | 0 | - | no budget |"));
    free(md);
    fixture_free(fx);
}

static void test_markdown_lists_rejected_shapes(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *md = slurp(fx, "report.md");
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| toyfam | K=256 | \"256\", \"MAX_K = 192\" | K (256) exceeds "
                                      "MAX_K = 192 \\| 32 KB | rejected as expected |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| toyfam | V=512 |  | (accepted the shape) | FAIL |"));
    free(md);
    fixture_free(fx);
}

static void test_markdown_lists_failures_and_findings(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *md = slurp(fx, "report.md");
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- `toyfam/V=512`: the kernel accepted the shape"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- **BETTER** toyfam w exact: max_ulp_dist improved 2 -> 1"));
    free(md);
    fixture_free(fx);
}

/* ---- junit.xml ---- */

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void test_junit_one_testcase_per_case_and_failures_escaped(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *xml = slurp(fx, "junit.xml");
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<testsuites name=\"ulpgate\">"));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<testsuite name=\"toyfam\""));
    /* the family's cases plus one gate test case */
    CU_ASSERT_EQUAL(count_of(xml, "<testcase "), fx->run.n_cases + 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<failure message=\"the kernel accepted the shape"));
    CU_ASSERT_PTR_NULL(strstr(xml, "<failure message=\"\""));
    free(xml);
    fixture_free(fx);
}

/* Gate findings are test cases named after kernel, output, mode and check,
 * without the measured values (a name that stays the same run after run). */
static void test_junit_names_findings_by_kernel_output_mode_and_check(void)
{
    fixture *fx = fixture_new();
    strcpy(fx->findings[1].text, "toyfam w exact: max_ratio 1.5 exceeds budget 1");
    fx->findings[1].kind = UG_FINDING_FAIL;
    strcpy(fx->findings[2].text, "toyfam u staged: p99_ulp_dist worsened 1 -> 3 (tolerance 0)");
    fx->findings[2].kind = UG_FINDING_FAIL;
    write_reports(fx);
    char *xml = slurp(fx, "junit.xml");
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "name=\"toyfam w exact: max_ratio exceeds budget\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "name=\"toyfam u staged: p99_ulp_dist worsened\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "name=\"toyfam/B=1 T=128: case failed\""));
    CU_ASSERT_PTR_NULL(strstr(xml, "name=\"finding\""));
    free(xml);
    fixture_free(fx);
}

/* ---- report.html ---- */

/* One self-contained page: two figures (histogram, scatter) per output. */
static void test_html_has_two_figures_per_output_and_no_external_resource(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *html = slurp(fx, "report.html");
    CU_ASSERT_EQUAL(count_of(html, "<svg "), 2 * 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<h2>toyfam</h2>"));
    CU_ASSERT_PTR_NULL(strstr(html, "<script"));
    CU_ASSERT_PTR_NULL(strstr(html, "src="));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "</html>"));
    free(html);
    fixture_free(fx);
}

static void add_sample(fixture *fx, size_t c, double cond, double err, double bound)
{
    ug_sample x = {.output = W, .mode = UG_REF_EXACT, .cond = cond, .ulp_err = err, .bound_ulps = bound};
    ug_status st = ug_samples_push(&fx->results[c].samples, &x);
    CU_ASSERT_FATAL(ug_is_ok(&st));
}

/* An infinite bound is not drawn (it used to be a "+" on the bottom axis):
 * a note counts it. */
static void test_html_says_no_bound_instead_of_drawing_infinity(void)
{
    fixture *fx = fixture_new();
    add_sample(fx, 0, 10, 0.25, INFINITY);
    add_sample(fx, 0, 1000, 0.5, 4);
    write_reports(fx);
    char *html = slurp(fx, "report.html");
    CU_ASSERT_EQUAL(count_of(html, ">+</text>"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "no bound (infinite): 1 elements"));
    free(html);
    fixture_free(fx);
}

/* Samples whose condition numbers would all sit on one vertical line are
 * drawn by rank of error. */
static void test_html_equal_conditions_are_drawn_by_rank(void)
{
    fixture *fx = fixture_new();
    for (int k = 0; k < 5; k++) add_sample(fx, 0, k % 2, 0.1 * (5 - k), 2); /* conditions 0 and 1, as cumsum's */
    write_reports(fx);
    char *html = slurp(fx, "report.html");
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "sorted by error"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "condition 0 to 1;"));
    free(html);
    fixture_free(fx);
}

/* ---- cases.csv ---- */

static void test_csv_header(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *csv = slurp(fx, "cases.csv");
    CU_ASSERT_EQUAL(strncmp(csv, csv_header, strlen(csv_header)), 0);
    free(csv);
    fixture_free(fx);
}

static void test_csv_has_a_row_per_case_output_mode(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *csv = slurp(fx, "cases.csv");
    CU_ASSERT_EQUAL(count_char(csv, '\n'), 1 + 2 * 2 * UG_REF_MODE_COUNT + 2);
    free(csv);
    fixture_free(fx);
}

static void test_csv_quotes_per_rfc4180(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *csv = slurp(fx, "cases.csv");
    char *line = line_with(csv, "B=1 T=128,accepted");
    const char *tail = ",false,\"w[3]: \"\"bad\"\", ratio 7 > 1\"";
    CU_ASSERT_STRING_EQUAL(line + strlen(line) - strlen(tail), tail);
    free(line);
    free(csv);
    fixture_free(fx);
}

static void test_csv_rejected_row_has_empty_stat_columns(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    char *csv = slurp(fx, "cases.csv");
    char *line = line_with(csv, "K=256");
    CU_ASSERT_STRING_EQUAL(line, "toyfam,K=256,rejected,,B=1 T=192,,,,,,,,,,,,,,,,true,");
    free(line);
    free(csv);
    fixture_free(fx);
}

static void test_csv_doubles_round_trip(void)
{
    fixture *fx = fixture_new();
    fx->results[0].sum[U][UG_REF_STAGED].max_ulp_err = 0.1 + 1.0 / 3.0;
    write_reports(fx);
    char *csv = slurp(fx, "cases.csv");
    char *line = line_with(csv, "accepted,realistic,B=1 T=64,u,staged");
    char *field = line;
    for (int i = 0; i < 14; i++) field = strchr(field, ',') + 1; /* max_ulp_err */
    CU_ASSERT_EQUAL(strtod(field, NULL), 0.1 + 1.0 / 3.0);
    free(line);
    free(csv);
    fixture_free(fx);
}

/* ---- report.json ---- */

static void test_json_parses_with_schema(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    json_t *root = load_report_json(fx);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "schema")), "ulpgate-report/1");
    json_decref(root);
    fixture_free(fx);
}

static void test_json_has_every_case_with_params(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    json_t *root = load_report_json(fx);
    json_t *cases = json_object_get(root, "cases");
    CU_ASSERT_EQUAL_FATAL(json_array_size(cases), N_CASES);
    json_t *c1 = json_array_get(cases, 1);
    CU_ASSERT_EQUAL(json_number_value(json_object_get(json_object_get(c1, "params"), "T")), 128);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c1, "regime")), "adversarial");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c1, "bits_hash")), "2222444466668888");
    json_t *w = json_object_get(json_object_get(c1, "outputs"), "w");
    json_t *staged = json_object_get(w, "staged");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(staged, "elements")), 500);
    json_decref(root);
    fixture_free(fx);
}

static void test_json_names_worst_case(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    json_t *root = load_report_json(fx);
    json_t *fam = json_array_get(json_object_get(root, "families"), 0);
    json_t *w = json_array_get(json_object_get(fam, "outputs"), 0);
    json_t *exact = json_object_get(json_object_get(w, "modes"), "exact");
    json_t *worst = json_object_get(exact, "worst_case");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(worst, "label")), "B=1 T=128");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(worst, "index")), 11);
    json_decref(root);
    fixture_free(fx);
}

static void test_json_writes_nonfinite_as_string(void)
{
    fixture *fx = fixture_new();
    fx->results[0].sum[W][UG_REF_EXACT].max_ratio = INFINITY;
    write_reports(fx);
    json_t *root = load_report_json(fx);
    json_t *c0 = json_array_get(json_object_get(root, "cases"), 0);
    json_t *w = json_object_get(json_object_get(c0, "outputs"), "w");
    json_t *ratio = json_object_get(json_object_get(w, "exact"), "max_ratio");
    CU_ASSERT_STRING_EQUAL(json_string_value(ratio), "inf");
    json_decref(root);
    fixture_free(fx);
}

static void test_json_findings_have_kind_names(void)
{
    fixture *fx = fixture_new();
    write_reports(fx);
    json_t *root = load_report_json(fx);
    json_t *verdict = json_object_get(root, "verdict");
    CU_ASSERT_TRUE(json_is_false(json_object_get(verdict, "pass")));
    json_t *findings = json_object_get(verdict, "findings");
    CU_ASSERT_EQUAL_FATAL(json_array_size(findings), 3);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(findings, 1), "kind")),
                           "WORSE_OK");
    json_decref(root);
    fixture_free(fx);
}

/* ---- terminal summary ---- */

static void test_summary_counts_and_verdict_line(void)
{
    fixture *fx = fixture_new();
    char *text = summary_text(fx);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "2 cases, 2 rejected shapes checked, 2 failed\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nulpgate: FAIL (1 findings)\n"));
    CU_ASSERT_EQUAL(count_char(text, '\n'), 1 + 4 + 1 + 1 + 2 + 1);
    free(text);
    fixture_free(fx);
}

static void test_summary_omits_worse_within_tolerance(void)
{
    fixture *fx = fixture_new();
    char *text = summary_text(fx);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "BETTER: toyfam w exact: max_ulp_dist improved 2 -> 1\n"));
    CU_ASSERT_PTR_NULL(strstr(text, "share_cr worsened"));
    free(text);
    fixture_free(fx);
}

static void test_summary_pass_line(void)
{
    fixture *fx = fixture_new();
    fx->verdict = (ug_verdict){.pass = true};
    char *text = summary_text(fx);
    size_t len = strlen(text);
    CU_ASSERT(len > 14 && strcmp(text + len - 14, "ulpgate: PASS\n") == 0);
    free(text);
    fixture_free(fx);
}

/* PLAN findings: one line per family and distinct finding, with a count. */
static void test_summary_folds_plan_findings(void)
{
    fixture *fx = fixture_new();
    strcpy(fx->results[0].plan_finding, "plan reserves 1024 threadgroup bytes, the algorithm needs 2048");
    strcpy(fx->results[1].plan_finding, "plan reserves 1024 threadgroup bytes, the algorithm needs 2048");
    strcpy(fx->results[2].plan_finding, "plan reserves 1024 threadgroup bytes, the algorithm needs 1028");
    char *text = summary_text(fx);
    CU_ASSERT_EQUAL(count_of(text, "PLAN: "), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "PLAN: toyfam: plan reserves 1024 threadgroup bytes, the algorithm needs 2048 "
                                        "(2 shapes;"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "the algorithm needs 1028 (1 shape;"));
    free(text);
    fixture_free(fx);
}

UG_TEST_SUITE(report_suite, "report",
              UG_TEST(test_write_all_creates_the_three_files),
              UG_TEST(test_write_all_leaves_no_temporaries),
              UG_TEST(test_parent_is_a_file_fails_and_leaves_nothing),
              UG_TEST(test_missing_directories_are_created),
              UG_TEST(test_second_write_replaces_the_set), UG_TEST(test_foreign_file_refuses_the_directory),
              UG_TEST(test_locked_directory_fails_at_once), UG_TEST(test_leftovers_of_a_killed_run_are_removed),
              UG_TEST(test_failed_write_keeps_the_previous_set),
              UG_TEST(test_markdown_has_table_header_and_verdict),
              UG_TEST(test_markdown_rows_show_budget_and_verdict),
              UG_TEST(test_markdown_lists_rejected_shapes),
              UG_TEST(test_markdown_lists_failures_and_findings),
              UG_TEST(test_junit_one_testcase_per_case_and_failures_escaped),
              UG_TEST(test_junit_names_findings_by_kernel_output_mode_and_check),
              UG_TEST(test_html_says_no_bound_instead_of_drawing_infinity),
              UG_TEST(test_html_equal_conditions_are_drawn_by_rank),
              UG_TEST(test_html_has_two_figures_per_output_and_no_external_resource), UG_TEST(test_csv_header),
              UG_TEST(test_csv_has_a_row_per_case_output_mode),
              UG_TEST(test_csv_quotes_per_rfc4180),
              UG_TEST(test_csv_rejected_row_has_empty_stat_columns),
              UG_TEST(test_csv_doubles_round_trip), UG_TEST(test_json_parses_with_schema),
              UG_TEST(test_json_has_every_case_with_params), UG_TEST(test_json_names_worst_case),
              UG_TEST(test_json_writes_nonfinite_as_string),
              UG_TEST(test_json_findings_have_kind_names),
              UG_TEST(test_summary_counts_and_verdict_line),
              UG_TEST(test_summary_omits_worse_within_tolerance), UG_TEST(test_summary_pass_line),
              UG_TEST(test_summary_folds_plan_findings));
