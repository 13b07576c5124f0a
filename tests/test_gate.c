/* SPDX-License-Identifier: MIT */
/* The gate (harness/gate.c): budgets and baseline files, and the verdict on a
 * synthetic run of one family with two outputs. Every run figure starts within
 * the budgets below; each test changes one thing. */
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/gate.h"
#include "../harness/report.h"
#include "tests.h"

enum { N_CASES = 60, W = 0, U = 1 };

/* A real family with two outputs (w, u): budgets and baselines name only
 * registered families and their outputs. */
#define FAMILY "gdn_recompute_wu"
static const ug_family *toy(void)
{
    return ug_family_find(FAMILY);
}

#define BUDGET "{\"max_ratio\": 1, \"max_ulp_dist\": 4, \"p99_ulp_dist\": 1, \"min_share_cr\": 0.9}"
#define U_BUDGETS "\"u\": {\"exact\": " BUDGET ", \"staged\": " BUDGET "}"
static const char budgets_text[] =
    "{\"schema\": \"ulpgate-budgets/1\", \"moderate_condition\": 64,\n"
    " \"regression_tolerance\": {\"max_ulp_dist\": 0, \"p99_ulp_dist\": 0, \"share_cr\": 0.002,\n"
    "                          \"max_ratio\": 0.05},\n"
    " \"families\": {\n"
    "  \"gdn_recompute_wu\": {\"w\": {\"exact\": " BUDGET ", \"staged\": " BUDGET "},\n"
    "             " U_BUDGETS "},\n"
    "  \"gdn_chunk_cumsum\": {\"g\": {\"exact\": " BUDGET "}}}}\n";

typedef struct {
    char dir[64], budgets_path[96], baseline_path[96];
    ug_sweep sweep;
    ug_case cases[N_CASES];
    ug_case_result results[N_CASES];
    ug_family_result fam;
    ug_run_result run;
    ug_budgets budgets;
    ug_baseline baseline;
    ug_verdict verdict;
} fixture;

/* The gate's view of one (output, mode): 1000 moderate elements, all of the
 * ulp_dist histogram at p99. */
static void set_figures(ug_stats *s, uint32_t max, uint32_t p99, uint64_t correctly_rounded,
                        double ratio)
{
    s->sum = (ug_summary){.elements = 1000, .moderate = 1000,
                          .correctly_rounded = correctly_rounded, .max_ulp_dist = max,
                          .max_ulp_dist_all = max, .max_ulp_err = max + 0.5,
                          .max_ratio = ratio, .max_cond = 3};
    gsl_histogram_reset(s->dist);
    gsl_histogram_accumulate(s->dist, p99 + 0.5, 1000);
}

static void stats_init(ug_stats *s)
{
    ug_status st = ug_stats_init(s);
    CU_ASSERT_FATAL(ug_is_ok(&st));
}

static ug_stats *agg(fixture *fx, int output, ug_ref_mode mode)
{
    return &fx->fam.agg[output][mode];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* The budgets above with the first occurrence of from replaced by to. */
static void write_budgets_edited(fixture *fx, const char *from, const char *to)
{
    char text[sizeof budgets_text + 256];
    const char *at = strstr(budgets_text, from);
    CU_ASSERT_FATAL(at != NULL);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - budgets_text), budgets_text, to,
             at + strlen(from));
    write_text(fx->budgets_path, text);
}

static void init_case(fixture *fx, size_t i)
{
    ug_case *c = &fx->cases[i];
    c->family = toy();
    snprintf(c->label, sizeof c->label, "B=1 T=%zu", 64 * (i + 1));
    c->params.v[0] = 1;
    c->params.v[1] = 64.0 * (double)(i + 1);
    c->override.buffer = -1;
    fx->results[i].c = c;
    fx->results[i].passed = true;
    fx->results[i].isa_bits_agree = true;
}

static void init_family(fixture *fx)
{
    ug_family_result *fr = &fx->fam;
    fr->family = toy();
    fr->n_outputs = 2;
    fr->output_buffer[W] = ug_family_buffer_index(toy(), "w");
    fr->output_buffer[U] = ug_family_buffer_index(toy(), "u");
    for (int o = 0; o < 2; o++) {
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            stats_init(&fr->agg[o][m]);
            set_figures(&fr->agg[o][m], 2, 1, 950, 0.5);
        }
    }
    fr->isa_ran[UG_ISA_PORTABLE] = fr->isa_ran[UG_ISA_AVX2] = true;
    fr->bits_hash[UG_ISA_PORTABLE] = fr->bits_hash[UG_ISA_AVX2] = 0x0123456789abcdefULL;
    fr->cases_accepted = 2;
}

static fixture *fixture_new(void)
{
    fixture *fx = calloc(1, sizeof *fx);
    CU_ASSERT_FATAL(fx != NULL);
    strcpy(fx->dir, "/tmp/ug_gate_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
    snprintf(fx->budgets_path, sizeof fx->budgets_path, "%s/budgets.json", fx->dir);
    snprintf(fx->baseline_path, sizeof fx->baseline_path, "%s/baseline.json", fx->dir);
    strcpy(fx->sweep.path, "fixtures/sweeps/toy.json");
    fx->sweep.content_hash = 0xfedcba9876543210ULL;
    for (size_t i = 0; i < N_CASES; i++) init_case(fx, i);
    init_family(fx);
    fx->run = (ug_run_result){.sweep = &fx->sweep, .moderate_cond = 64, .n_cases = 2,
                              .cases = fx->results, .n_families = 1, .families = &fx->fam};
    snprintf(fx->run.profile.name, sizeof fx->run.profile.name, "cpu");
    snprintf(fx->run.profile.hash, sizeof fx->run.profile.hash, "0123456789abcdef");
    snprintf(fx->run.profile.origin, sizeof fx->run.profile.origin, "fixtures/profiles/cpu.json");
    write_text(fx->budgets_path, budgets_text);
    return fx;
}

static void fixture_free(fixture *fx)
{
    for (int o = 0; o < 2; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) ug_stats_free(&fx->fam.agg[o][m]);
    ug_budgets_free(&fx->budgets);
    ug_baseline_free(&fx->baseline);
    ug_verdict_free(&fx->verdict);
    ug_test_remove_tree(fx->dir);
    free(fx);
}

static ug_status load_budgets(fixture *fx)
{
    return ug_budgets_load(fx->budgets_path, &fx->budgets);
}

/* Records the current figures as the baseline. */
static void record_baseline(fixture *fx)
{
    ug_status s = ug_baseline_write(fx->baseline_path, &fx->run);
    CU_ASSERT_FATAL(ug_is_ok(&s));
    s = ug_baseline_load(fx->baseline_path, &fx->baseline);
    CU_ASSERT_FATAL(ug_is_ok(&s));
}

static void evaluate(fixture *fx, bool with_baseline)
{
    ug_status s = load_budgets(fx);
    CU_ASSERT_FATAL(ug_is_ok(&s));
    s = ug_gate_evaluate(&fx->run, &fx->budgets, with_baseline ? &fx->baseline : NULL,
                         &fx->verdict);
    CU_ASSERT_FATAL(ug_is_ok(&s));
}

/* Index of the first finding of that kind whose text contains text, or -1. */
static int find(const ug_verdict *v, ug_finding_kind kind, const char *text)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i].kind == kind && strstr(v->items[i].text, text)) return (int)i;
    return -1;
}

static size_t count(const ug_verdict *v, ug_finding_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++) n += v->items[i].kind == kind;
    return n;
}

/* Loads an edited budgets file; expects UG_EPARSE with every needle in the message. */
static void expect_budgets_error(const char *from, const char *to, const char *needle1,
                                 const char *needle2)
{
    fixture *fx = fixture_new();
    write_budgets_edited(fx, from, to);
    ug_status s = load_budgets(fx);
    CU_ASSERT_EQUAL(s.code, UG_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "budgets.json"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, needle1));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, needle2));
    CU_ASSERT_EQUAL(fx->budgets.n, 0);
    fixture_free(fx);
}

/* ---- budgets ---- */

static void test_budgets_load_every_field(void)
{
    fixture *fx = fixture_new();
    ug_status s = load_budgets(fx);
    CU_ASSERT_FATAL(ug_is_ok(&s));
    CU_ASSERT_EQUAL(fx->budgets.n, 5);
    CU_ASSERT_EQUAL(fx->budgets.moderate_cond, 64);
    CU_ASSERT_EQUAL(fx->budgets.tolerance.share_cr, 0.002);
    CU_ASSERT_EQUAL(fx->budgets.tolerance.max_ratio, 0.05);
    const ug_budget *b = ug_budgets_find(&fx->budgets, "gdn_recompute_wu", "u", UG_REF_STAGED);
    CU_ASSERT_FATAL(b != NULL);
    CU_ASSERT(b->max_ratio == 1 && b->max_ulp_dist == 4 && b->p99_ulp_dist == 1);
    CU_ASSERT_EQUAL(b->min_share_cr, 0.9);
    CU_ASSERT_PTR_NULL(ug_budgets_find(&fx->budgets, "gdn_chunk_cumsum", "g", UG_REF_STAGED));
    fixture_free(fx);
}

static void test_budgets_bad_json(void)
{
    expect_budgets_error("\"moderate_condition\": 64,", "\"moderate_condition\": 64,,", ":1:",
                         "budgets.json");
}

static void test_budgets_wrong_schema(void)
{
    expect_budgets_error("ulpgate-budgets/1", "ulpgate-budgets/2", "schema: expected \"ulpgate-budgets/1\"",
                         "found \"ulpgate-budgets/2\"");
}

static void test_budgets_missing_field(void)
{
    expect_budgets_error("\"p99_ulp_dist\": 1, ", "", "families.gdn_recompute_wu.w.exact.p99_ulp_dist",
                         "missing");
}

static void test_budgets_missing_moderate_condition(void)
{
    expect_budgets_error("\"moderate_condition\": 64,", "", "moderate_condition", "missing");
}

static void test_budgets_ratio_above_one(void)
{
    expect_budgets_error("\"max_ratio\": 1,", "\"max_ratio\": 1.5,",
                         "families.gdn_recompute_wu.w.exact.max_ratio", "1.5 is above the maximum 1");
}

static void test_budgets_unknown_mode(void)
{
    expect_budgets_error("\"staged\"", "\"fast\"", "families.gdn_recompute_wu.w.fast",
                         "unknown mode \"fast\"");
}

static void test_budgets_negative(void)
{
    expect_budgets_error("\"max_ulp_dist\": 4", "\"max_ulp_dist\": -1",
                         "families.gdn_recompute_wu.w.exact.max_ulp_dist", "found -1");
}

static void test_budgets_not_a_number(void)
{
    expect_budgets_error("\"max_ratio\": 1,", "\"max_ratio\": \"1\",",
                         "families.gdn_recompute_wu.w.exact.max_ratio", "expected a number");
}

static void test_budgets_unknown_key(void)
{
    expect_budgets_error("\"min_share_cr\"", "\"min_share\"", "families.gdn_recompute_wu.w.exact.min_share",
                         "unknown key");
}

static void test_budgets_missing_file_is_einput(void)
{
    fixture *fx = fixture_new();
    unlink(fx->budgets_path);
    ug_status s = load_budgets(fx);
    CU_ASSERT_EQUAL(s.code, UG_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, fx->budgets_path));
    fixture_free(fx);
}

/* ---- verdict against budgets ---- */

static void test_pass_within_budget(void)
{
    fixture *fx = fixture_new();
    evaluate(fx, false);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT_EQUAL(fx->verdict.n, 0);
    fixture_free(fx);
}

static void test_fail_max_ratio(void)
{
    fixture *fx = fixture_new();
    agg(fx, W, UG_REF_EXACT)->sum.max_ratio = 1.25;
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu w exact: max_ratio 1.25 exceeds budget 1") >= 0);
    fixture_free(fx);
}

static void test_fail_nan_ratio(void)
{
    fixture *fx = fixture_new();
    agg(fx, W, UG_REF_EXACT)->sum.max_ratio = NAN;
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "max_ratio nan exceeds budget 1") >= 0);
    fixture_free(fx);
}

static void test_fail_max_ulp_dist(void)
{
    fixture *fx = fixture_new();
    set_figures(agg(fx, U, UG_REF_STAGED), 5, 1, 950, 0.5);
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu u staged: max_ulp_dist 5 exceeds budget 4") >= 0);
    fixture_free(fx);
}

static void test_fail_p99_ulp_dist(void)
{
    fixture *fx = fixture_new();
    set_figures(agg(fx, U, UG_REF_EXACT), 2, 2, 950, 0.5);
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu u exact: p99_ulp_dist 2 exceeds budget 1") >= 0);
    fixture_free(fx);
}

static void test_fail_share_cr(void)
{
    fixture *fx = fixture_new();
    set_figures(agg(fx, W, UG_REF_STAGED), 2, 1, 850, 0.5);
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu w staged: share_cr 0.85 is below budget 0.9") >= 0);
    fixture_free(fx);
}

static void test_fail_missing_budget(void)
{
    fixture *fx = fixture_new();
    write_budgets_edited(fx, U_BUDGETS, "\"u\": {\"exact\": " BUDGET "}");
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT_EQUAL(count(&fx->verdict, UG_FINDING_FAIL), 1);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "gdn_recompute_wu u staged: no budget") >= 0);
    fixture_free(fx);
}

static void test_budget_of_unmeasured_output_ignored(void)
{
    fixture *fx = fixture_new();
    evaluate(fx, false);
    for (size_t i = 0; i < fx->verdict.n; i++)
        CU_ASSERT_PTR_NULL(strstr(fx->verdict.items[i].text, "gdn_chunk_cumsum"));
    fixture_free(fx);
}

static void test_findings_in_family_output_mode_order(void)
{
    fixture *fx = fixture_new();
    agg(fx, U, UG_REF_EXACT)->sum.max_ratio = 2;
    agg(fx, W, UG_REF_STAGED)->sum.max_ratio = 2;
    agg(fx, W, UG_REF_EXACT)->sum.max_ratio = 2;
    evaluate(fx, false);
    CU_ASSERT_EQUAL_FATAL(fx->verdict.n, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(fx->verdict.items[0].text, "gdn_recompute_wu w exact:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fx->verdict.items[1].text, "gdn_recompute_wu w staged:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fx->verdict.items[2].text, "gdn_recompute_wu u exact:"));
    fixture_free(fx);
}

static void test_failed_case_is_a_finding(void)
{
    fixture *fx = fixture_new();
    fx->results[1].passed = false;
    strcpy(fx->results[1].failure, "w[3]: ratio 7 > 1");
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "gdn_recompute_wu/B=1 T=128: w[3]: ratio 7 > 1") >= 0);
    fixture_free(fx);
}

static void test_failed_cases_capped_at_50(void)
{
    fixture *fx = fixture_new();
    fx->run.n_cases = N_CASES;
    for (size_t i = 0; i < N_CASES; i++) fx->results[i].passed = false;
    evaluate(fx, false);
    CU_ASSERT_EQUAL(count(&fx->verdict, UG_FINDING_FAIL), 51);
    CU_ASSERT_EQUAL(find(&fx->verdict, UG_FINDING_FAIL, "and 10 more failed cases"), 50);
    fixture_free(fx);
}

/* ---- verdict against a baseline ---- */

static void test_unchanged_baseline_passes_silently(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    evaluate(fx, true);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT_EQUAL(fx->verdict.n, 0);
    fixture_free(fx);
}

static void test_regression_beyond_tolerance_fails(void)
{
    fixture *fx = fixture_new();
    set_figures(agg(fx, W, UG_REF_EXACT), 2, 0, 950, 0.5);
    record_baseline(fx);
    set_figures(agg(fx, W, UG_REF_EXACT), 2, 1, 950, 0.5);
    evaluate(fx, true);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu w exact: p99_ulp_dist worsened 0 -> 1 (tolerance 0)") >= 0);
    fixture_free(fx);
}

static void test_ratio_regression_is_relative(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    agg(fx, U, UG_REF_STAGED)->sum.max_ratio = 0.53; /* > 0.5 * 1.05 */
    evaluate(fx, true);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu u staged: max_ratio worsened 0.5 -> 0.53 (tolerance 0.05 relative)") >= 0);
    fixture_free(fx);
}

static void test_regression_within_tolerance_passes(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    agg(fx, U, UG_REF_STAGED)->sum.max_ratio = 0.52;
    set_figures(agg(fx, W, UG_REF_STAGED), 2, 1, 949, 0.5); /* share_cr -0.001 */
    evaluate(fx, true);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT_EQUAL(count(&fx->verdict, UG_FINDING_WORSE_OK), 2);
    fixture_free(fx);
}

static void test_improvement_reported_better(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    set_figures(agg(fx, W, UG_REF_EXACT), 1, 1, 950, 0.5);
    evaluate(fx, true);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_BETTER,
                   "gdn_recompute_wu w exact: max_ulp_dist improved 2 -> 1") >= 0);
    fixture_free(fx);
}

static void test_bits_change_is_info_not_failure(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    fx->fam.bits_hash[UG_ISA_AVX2] = 0x4567456745674567ULL;
    evaluate(fx, true);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_INFO,
                   "gdn_recompute_wu: bits changed on avx2 (baseline 0123456789abcdef, now "
                   "4567456745674567)") >= 0);
    fixture_free(fx);
}

static void test_new_output_mode_is_info(void)
{
    fixture *fx = fixture_new();
    ug_stats_free(agg(fx, U, UG_REF_STAGED));
    stats_init(agg(fx, U, UG_REF_STAGED));
    record_baseline(fx); /* u staged measured nothing: not in the baseline */
    set_figures(agg(fx, U, UG_REF_STAGED), 2, 1, 950, 0.5);
    evaluate(fx, true);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_INFO, "gdn_recompute_wu u staged: not in the baseline") >= 0);
    fixture_free(fx);
}

static void test_other_sweep_baseline_fails(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    fx->sweep.content_hash ^= 1;
    evaluate(fx, true);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "re-baseline") >= 0);
    fixture_free(fx);
}

static void test_baseline_of_other_cases_fails(void)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    agg(fx, W, UG_REF_EXACT)->sum.elements = 500;
    evaluate(fx, true);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL,
                   "gdn_recompute_wu w exact: 500 elements measured, the baseline has 1000") >= 0);
    fixture_free(fx);
}

static void test_baseline_round_trips_every_figure(void)
{
    fixture *fx = fixture_new();
    set_figures(agg(fx, W, UG_REF_STAGED), 7, 3, 333, 0.1 + 1.0 / 3.0);
    agg(fx, W, UG_REF_STAGED)->sum.max_ulp_err = nextafter(2.5, 3);
    agg(fx, U, UG_REF_EXACT)->sum.max_ratio = INFINITY;
    record_baseline(fx);
    CU_ASSERT_STRING_EQUAL(fx->baseline.sweep_path, fx->sweep.path);
    CU_ASSERT_EQUAL(fx->baseline.sweep_hash, fx->sweep.content_hash);
    CU_ASSERT_EQUAL_FATAL(fx->baseline.n, 4);
    for (size_t i = 0; i < fx->baseline.n; i++) {
        const ug_baseline_entry *e = &fx->baseline.entries[i];
        CU_ASSERT_STRING_EQUAL(e->family, "gdn_recompute_wu");
        ug_summary s = ug_stats_summary(agg(fx, strcmp(e->output, "w") ? U : W, e->mode));
        CU_ASSERT(e->elements == s.elements && e->max_ulp_dist == s.max_ulp_dist &&
                  e->p99_ulp_dist == s.p99_ulp_dist);
        CU_ASSERT(e->share_cr == ug_summary_share_cr(&s) && e->max_ratio == s.max_ratio &&
                  e->max_ulp_err == s.max_ulp_err);
    }
    CU_ASSERT_EQUAL_FATAL(fx->baseline.n_bits, 1);
    CU_ASSERT(fx->baseline.bits[0].has[UG_ISA_PORTABLE] && fx->baseline.bits[0].has[UG_ISA_AVX2]);
    CU_ASSERT_FALSE(fx->baseline.bits[0].has[UG_ISA_AVX512]);
    CU_ASSERT_EQUAL(fx->baseline.bits[0].hash[UG_ISA_AVX2], fx->fam.bits_hash[UG_ISA_AVX2]);
    fixture_free(fx);
}

static void test_baseline_bad_hash_is_parse_error(void)
{
    fixture *fx = fixture_new();
    write_text(fx->baseline_path, "{\"schema\": \"ulpgate-baseline/1\", \"families\": {},\n"
                                  " \"sweep\": {\"path\": \"s.json\", \"content_hash\": \"12g4\"}}");
    ug_status s = ug_baseline_load(fx->baseline_path, &fx->baseline);
    CU_ASSERT_EQUAL(s.code, UG_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "sweep.content_hash: expected 16 hex digits, found \"12g4\""));
    fixture_free(fx);
}

#define POLICY(cond) "{\"schema\": \"ulpgate-budgets/1\", \"moderate_condition\": " #cond ",\n" \
    " \"regression_tolerance\": {\"max_ulp_dist\": 0, \"p99_ulp_dist\": 0, \"share_cr\": 0.002,\n" \
    "                          \"max_ratio\": 0.05},\n \"families\": {"

/* An optional max_rel_rms budget gates the relative RMS error. */
static void test_fail_rel_rms(void)
{
    fixture *fx = fixture_new();
    write_budgets_edited(fx, "\"min_share_cr\": 0.9}", "\"min_share_cr\": 0.9, \"max_rel_rms\": 0.005}");
    agg(fx, W, UG_REF_EXACT)->sum.sum_sq_err = 1e-4;
    agg(fx, W, UG_REF_EXACT)->sum.sum_sq_ref = 1;
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "gdn_recompute_wu w exact: rel_rms 0.01 exceeds budget 0.005") >= 0);
    fixture_free(fx);
}

/* ---- semantic checks of budgets and baselines ---- */

static void test_budgets_unknown_family_or_output(void)
{
    expect_budgets_error("\"gdn_chunk_cumsum\": {\"g\"", "\"gdn_chunk_cumsun\": {\"g\"",
                         "families.gdn_chunk_cumsun", "no kernel family \"gdn_chunk_cumsun\"");
    expect_budgets_error("\"gdn_chunk_cumsum\": {\"g\"", "\"gdn_chunk_cumsum\": {\"G\"", "families.gdn_chunk_cumsum.G",
                         "gdn_chunk_cumsum has no output \"G\"");
    /* an input buffer is not an output */
    expect_budgets_error("\"gdn_chunk_cumsum\": {\"g\"", "\"gdn_chunk_cumsum\": {\"g_raw\"",
                         "families.gdn_chunk_cumsum.g_raw", "has no output");
    expect_budgets_error("\"families\"", "\"stat_budgets\": \"builtin\", \"families\"", "stat_budgets",
                         "expected \"built-in\" or \"all\", found \"builtin\"");
    expect_budgets_error("\"min_share_cr\": 0.9}", "\"min_share_cr\": 0.9, \"always_enforced\": [\"p95\"]}",
                         "families.gdn_recompute_wu.w.exact.always_enforced[0]", "unknown statistic \"p95\"");
}

/* The recorded baseline with the first occurrence of from replaced by to; expects UG_EPARSE naming needle. */
static void expect_baseline_error(const char *from, const char *to, const char *needle)
{
    fixture *fx = fixture_new();
    record_baseline(fx);
    ug_baseline_free(&fx->baseline);
    json_t *root = json_load_file(fx->baseline_path, 0, NULL);
    CU_ASSERT_FATAL(root != NULL);
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    CU_ASSERT_FATAL(text != NULL);
    const char *at = strstr(text, from);
    CU_ASSERT_FATAL(at != NULL);
    char edited[8192];
    snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    write_text(fx->baseline_path, edited);
    ug_status s = ug_baseline_load(fx->baseline_path, &fx->baseline);
    CU_ASSERT_EQUAL(s.code, UG_EPARSE);
    CU_assertImplementation(strstr(s.msg, needle) != NULL, __LINE__, s.msg, __FILE__, "", CU_FALSE);
    fixture_free(fx);
}

/* Figures out of range, or an empty baseline (a regression check silently off), are refused. */
static void test_baseline_semantic_checks(void)
{
    expect_baseline_error("\"max_ratio\":0.5", "\"max_ratio\":-1",
                          "families.gdn_recompute_wu.outputs.u.exact.max_ratio: -1 is below the minimum 0");
    expect_baseline_error("\"share_cr\":0.94999999999999996", "\"share_cr\":1.5",
                          "families.gdn_recompute_wu.outputs.u.exact.share_cr: 1.5 is above the maximum 1");
    expect_baseline_error("\"share_cr\":0.94999999999999996", "\"share_cr\":\"nan\"", "share_cr: \"nan\" is not allowed here");
    expect_baseline_error("\"p99_ulp_dist\":1", "\"p99_ulp_dist\":7", "p99_ulp_dist: 7 is above max_ulp_dist 2");
    expect_baseline_error("\"elements\":1000", "\"elements\":0", "elements: 0 elements: not a measurement");
    expect_baseline_error("\"gdn_recompute_wu\":", "\"gdn_recompute_wx\":",
                          "families.gdn_recompute_wx: no kernel family \"gdn_recompute_wx\"");
    expect_baseline_error("\"avx2\":", "\"neon\":", "families.gdn_recompute_wu.bits.neon: unknown bits key \"neon\"");
    expect_baseline_error("\"kind\":\"built-in\"", "\"kind\":\"builtin\"", "source.kind: expected \"built-in\"");
    fixture *fx = fixture_new();
    write_text(fx->baseline_path, "{\"schema\": \"ulpgate-baseline/1\", \"families\": {},\n"
                                  " \"sweep\": {\"path\": \"s.json\", \"content_hash\": \"0123456789abcdef\"}}");
    ug_status s = ug_baseline_load(fx->baseline_path, &fx->baseline);
    CU_ASSERT_EQUAL(s.code, UG_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "families: empty: the baseline measures nothing"));
    fixture_free(fx);
}

/* ---- the budget policy: statistics budgets of the built-in kernels advise other sources ---- */

static void policy_budgets(fixture *fx, const char *scope_and_families)
{
    write_budgets_edited(fx, "\"families\": {", scope_and_families);
}

static void test_stat_budgets_advise_outside_kernels(void)
{
    fixture *fx = fixture_new();
    policy_budgets(fx, "\"stat_budgets\": \"built-in\", \"families\": {");
    set_figures(agg(fx, U, UG_REF_STAGED), 111, 1, 950, 0.104); /* the Triton kkt case: 111 ULP at ratio 0.104 */
    fx->run.source_name = "plugin";
    evaluate(fx, false);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_INFO, "u staged: max_ulp_dist 111 exceeds budget 4 (advisory") >= 0);
    /* the reports' budget column says so too, and FAIL for the built-in kernels */
    const ug_budget *b = ug_budgets_find(&fx->budgets, "gdn_recompute_wu", "u", UG_REF_STAGED);
    const ug_summary s = ug_stats_summary(agg(fx, U, UG_REF_STAGED));
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(ug_budget_verdict(&fx->budgets, b, &s, "plugin"), "advisory");
    CU_ASSERT_STRING_EQUAL(ug_budget_verdict(&fx->budgets, b, &s, NULL), "FAIL");
    /* the same figures from the built-in kernels fail */
    ug_verdict_free(&fx->verdict);
    ug_budgets_free(&fx->budgets);
    fx->run.source_name = NULL;
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "u staged: max_ulp_dist 111 exceeds budget 4") >= 0);
    /* --enforce-stat-budgets makes them gate an outside kernel */
    ug_verdict_free(&fx->verdict);
    ug_budgets_free(&fx->budgets);
    fx->run.source_name = "candidate";
    CU_ASSERT_FATAL(load_budgets(fx).code == UG_OK);
    fx->budgets.enforce_stats = true;
    CU_ASSERT_FATAL(ug_gate_evaluate(&fx->run, &fx->budgets, NULL, &fx->verdict).code == UG_OK);
    CU_ASSERT_FALSE(fx->verdict.pass);
    fixture_free(fx);
}

static void test_ratio_gates_every_source(void)
{
    fixture *fx = fixture_new();
    policy_budgets(fx, "\"stat_budgets\": \"built-in\", \"families\": {");
    set_figures(agg(fx, W, UG_REF_EXACT), 2, 1, 950, 1.25);
    fx->run.source_name = "plugin";
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "w exact: max_ratio 1.25 exceeds budget 1") >= 0);
    fixture_free(fx);
}

/* A file without "stat_budgets" is the user's own policy: it gates every source. */
static void test_own_budgets_gate_outside_kernels(void)
{
    fixture *fx = fixture_new();
    set_figures(agg(fx, U, UG_REF_STAGED), 5, 1, 950, 0.5);
    fx->run.source_name = "plugin";
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "u staged: max_ulp_dist 5 exceeds budget 4") >= 0);
    fixture_free(fx);
}

/* gdn_e2e's relative RMS is its accuracy criterion: "always_enforced" gates every source. */
static void test_always_enforced_statistic(void)
{
    fixture *fx = fixture_new();
    policy_budgets(fx, "\"stat_budgets\": \"built-in\", \"families\": {");
    write_budgets_edited(fx, "\"min_share_cr\": 0.9}",
                         "\"min_share_cr\": 0.9, \"max_rel_rms\": 0.005, \"always_enforced\": [\"max_rel_rms\"]}");
    agg(fx, W, UG_REF_EXACT)->sum.sum_sq_err = 1e-4;
    agg(fx, W, UG_REF_EXACT)->sum.sum_sq_ref = 1;
    fx->run.source_name = "plugin";
    evaluate(fx, false);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "w exact: rel_rms 0.01 exceeds budget 0.005") >= 0);
    fixture_free(fx);
}

/* ---- a baseline of an outside kernel ---- */

static void test_outside_kernel_baseline(void)
{
    fixture *fx = fixture_new();
    fx->run.source_name = "plugin";
    snprintf(fx->run.source_detail, sizeof fx->run.source_detail, "libmine.so");
    fx->run.has_source_hash = true;
    fx->run.source_hash = 0x1111;
    fx->fam.source_ran = true;
    fx->fam.source_bits_hash = 0xabcdef;
    record_baseline(fx);
    CU_ASSERT_STRING_EQUAL(fx->baseline.source.kind, "plugin");
    CU_ASSERT_STRING_EQUAL(fx->baseline.source.name, "libmine.so");
    CU_ASSERT_TRUE(fx->baseline.source.has_hash && fx->baseline.source.hash == 0x1111);
    CU_ASSERT_STRING_EQUAL(fx->baseline.profile.name, "cpu");
    CU_ASSERT_TRUE(fx->baseline.bits[0].has_source && fx->baseline.bits[0].source_hash == 0xabcdef);
    /* a new build of the same library: its figures and bits are compared */
    fx->run.source_hash = 0x2222;
    fx->fam.source_bits_hash = 0xabcdee;
    set_figures(agg(fx, U, UG_REF_EXACT), 3, 1, 950, 0.5);
    evaluate(fx, true);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "u exact: max_ulp_dist worsened 2 -> 3") >= 0);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_INFO, "bits of the plugin changed") >= 0);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_INFO, "content changed since the baseline") >= 0);
    /* another library, the built-in kernels or another profile: refused, uncompared */
    static const struct {
        const char *source, *detail, *profile, *needle;
    } others[] = {
        {"plugin", "libother.so", NULL, "the baseline measured the kernels of plugin libmine.so, this result those of plugin libother.so"},
        {NULL, "", NULL, "this result those of built-in"},
        {"plugin", "libmine.so", "triton", "the baseline was measured under profile cpu, this result under triton"},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        ug_verdict_free(&fx->verdict);
        ug_budgets_free(&fx->budgets);
        fx->run.source_name = others[i].source;
        snprintf(fx->run.source_detail, sizeof fx->run.source_detail, "%s", others[i].detail);
        snprintf(fx->run.profile.name, sizeof fx->run.profile.name, "%s", others[i].profile ? others[i].profile : "cpu");
        evaluate(fx, true);
        CU_ASSERT_FALSE(fx->verdict.pass);
        CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, others[i].needle) >= 0);
        CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "worsened") < 0);
    }
    fixture_free(fx);
}

/* ---- compare ---- */

static void write_figures(fixture *fx, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", fx->dir, name);
    ug_status s = ug_baseline_write(path, &fx->run);
    CU_ASSERT_FATAL(ug_is_ok(&s));
}

static void compare_files(fixture *fx, const char *old_path, const char *new_path)
{
    ug_baseline a, b;
    ug_budgets_free(&fx->budgets);
    CU_ASSERT_FATAL(load_budgets(fx).code == UG_OK);
    CU_ASSERT_FATAL(ug_figures_load(old_path, &a).code == UG_OK);
    CU_ASSERT_FATAL(ug_figures_load(new_path, &b).code == UG_OK);
    ug_status s = ug_compare(&a, &b, &fx->budgets, &fx->verdict);
    CU_ASSERT_FATAL(ug_is_ok(&s));
    ug_baseline_free(&a);
    ug_baseline_free(&b);
}

static void test_compare_worse_fails_better_reported(void)
{
    fixture *fx = fixture_new();
    char before[128], after[128];
    set_figures(agg(fx, W, UG_REF_EXACT), 2, 0, 950, 0.5);
    write_figures(fx, "before.json", before, sizeof before);
    set_figures(agg(fx, W, UG_REF_EXACT), 2, 1, 950, 0.4);
    write_figures(fx, "after.json", after, sizeof after);
    compare_files(fx, before, after);
    CU_ASSERT_FALSE(fx->verdict.pass);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_FAIL, "gdn_recompute_wu w exact: p99_ulp_dist worsened 0 -> 1") >= 0);
    CU_ASSERT(find(&fx->verdict, UG_FINDING_BETTER, "gdn_recompute_wu w exact: max_ratio improved 0.5 -> 0.4") >= 0);
    ug_verdict_free(&fx->verdict);
    compare_files(fx, after, after);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT_EQUAL(fx->verdict.n, 0);
    fixture_free(fx);
}

/* A report.json carries the same figures as the baseline of the same run. */
static void test_compare_reads_report_json(void)
{
    fixture *fx = fixture_new();
    char base[128], dir[128], report[160];
    write_figures(fx, "base.json", base, sizeof base);
    snprintf(dir, sizeof dir, "%s/reports", fx->dir);
    evaluate(fx, false);
    ug_status s = ug_report_write_all(dir, &fx->run, &fx->budgets, &fx->verdict);
    CU_ASSERT_FATAL(ug_is_ok(&s));
    ug_verdict_free(&fx->verdict);
    ug_budgets_free(&fx->budgets);
    snprintf(report, sizeof report, "%s/report.json", dir);
    compare_files(fx, base, report);
    CU_ASSERT_TRUE(fx->verdict.pass);
    CU_ASSERT_EQUAL(fx->verdict.n, 0);
    fixture_free(fx);
}

/* A budgets directory merges one file per family. */
static void test_budgets_directory_merges_files(void)
{
    fixture *fx = fixture_new();
    char sub[160], a[200], b[200];
    snprintf(sub, sizeof sub, "%s/budgets", fx->dir);
    CU_ASSERT_FATAL(mkdir(sub, 0755) == 0);
    snprintf(a, sizeof a, "%s/a.json", sub);
    snprintf(b, sizeof b, "%s/b.json", sub);
    write_text(a, POLICY(64) "\"gdn_recompute_wu\": {" U_BUDGETS "}}}");
    write_text(b, POLICY(64) "\"gdn_chunk_cumsum\": {\"g\": {\"exact\": " BUDGET "}}}}");
    ug_budgets merged;
    ug_status st = ug_budgets_load(sub, &merged);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL(merged.n, 3);
    CU_ASSERT_PTR_NOT_NULL(ug_budgets_find(&merged, "gdn_chunk_cumsum", "g", UG_REF_EXACT));
    CU_ASSERT_PTR_NOT_NULL(ug_budgets_find(&merged, "gdn_recompute_wu", "u", UG_REF_STAGED));
    ug_budgets_free(&merged);
    write_text(b, POLICY(16) "\"gdn_chunk_cumsum\": {\"g\": {\"exact\": " BUDGET "}}}}");
    st = ug_budgets_load(sub, &merged);
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "moderate_condition"));
    write_text(b, POLICY(64) "\"gdn_recompute_wu\": {" U_BUDGETS "}}}");
    st = ug_budgets_load(sub, &merged);
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "budgeted in another file"));
    fixture_free(fx);
}

UG_TEST_SUITE(gate_suite, "gate",
              UG_TEST(test_fail_rel_rms), UG_TEST(test_compare_worse_fails_better_reported), UG_TEST(test_compare_reads_report_json),
              UG_TEST(test_budgets_directory_merges_files),
              UG_TEST(test_budgets_load_every_field), UG_TEST(test_budgets_bad_json),
              UG_TEST(test_budgets_wrong_schema), UG_TEST(test_budgets_missing_field),
              UG_TEST(test_budgets_missing_moderate_condition),
              UG_TEST(test_budgets_ratio_above_one), UG_TEST(test_budgets_unknown_mode),
              UG_TEST(test_budgets_negative), UG_TEST(test_budgets_not_a_number),
              UG_TEST(test_budgets_unknown_key), UG_TEST(test_budgets_missing_file_is_einput),
              UG_TEST(test_pass_within_budget), UG_TEST(test_fail_max_ratio),
              UG_TEST(test_fail_nan_ratio), UG_TEST(test_fail_max_ulp_dist),
              UG_TEST(test_fail_p99_ulp_dist), UG_TEST(test_fail_share_cr),
              UG_TEST(test_fail_missing_budget), UG_TEST(test_budget_of_unmeasured_output_ignored),
              UG_TEST(test_findings_in_family_output_mode_order),
              UG_TEST(test_failed_case_is_a_finding), UG_TEST(test_failed_cases_capped_at_50),
              UG_TEST(test_unchanged_baseline_passes_silently),
              UG_TEST(test_regression_beyond_tolerance_fails),
              UG_TEST(test_ratio_regression_is_relative),
              UG_TEST(test_regression_within_tolerance_passes),
              UG_TEST(test_improvement_reported_better),
              UG_TEST(test_bits_change_is_info_not_failure), UG_TEST(test_new_output_mode_is_info),
              UG_TEST(test_other_sweep_baseline_fails),
              UG_TEST(test_baseline_of_other_cases_fails),
              UG_TEST(test_baseline_round_trips_every_figure),
              UG_TEST(test_baseline_bad_hash_is_parse_error), UG_TEST(test_budgets_unknown_family_or_output),
              UG_TEST(test_baseline_semantic_checks), UG_TEST(test_stat_budgets_advise_outside_kernels),
              UG_TEST(test_ratio_gates_every_source), UG_TEST(test_own_budgets_gate_outside_kernels),
              UG_TEST(test_always_enforced_statistic), UG_TEST(test_outside_kernel_baseline));
