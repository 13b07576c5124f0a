/* export and score (harness/interop.c) on gdn_chunk_cumsum, with candidate
 * files written the way an outside client writes them: read the fixture's
 * inputs, compute, save each output under its name. A candidate computed by
 * the built-in kernel passes; one element moved or every element NaN fails
 * its case; a missing file or tensor, a wrong dtype or shape, and fixtures
 * whose inputs this tool no longer draws stop score before anything runs. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/safetensors.h"
#include "../harness/interop.h"
#include "tests.h"

#define ASSERT_CONTAINS(msg, needle) assert_contains((msg), (needle), __LINE__)
static void assert_contains(const char *msg, const char *needle, unsigned line)
{
    char what[UG_MSG_MAX + 160];
    snprintf(what, sizeof what, "message lacks \"%s\": %s", needle, msg);
    CU_assertImplementation(strstr(msg, needle) != NULL, line, what, __FILE__, "", CU_FALSE);
}

static const char sweep_text[] =
    "{\"schema\": \"ulpgate-sweep/1\", \"seed\": 5, \"families\": {\"gdn_chunk_cumsum\": {\n"
    " \"accepted\": [{\"B\": [1], \"T\": [128], \"H\": [2], \"BT\": [64], \"regime\": [\"realistic\", \"strong_decay\"]}],\n"
    " \"rejected\": [{\"name\": \"BT=32\", \"params\": {\"B\": 1, \"T\": 128, \"H\": 2, \"BT\": 32},\n"
    "               \"expect\": [\"bt must be 64\"]}]}}}\n";

enum { N_ACCEPTED = 2 };

typedef struct {
    char dir[64], fixtures[128], candidate[128];
    ug_sweep sweep;  /* the sweep as loaded, accepted and rejected cases */
    ug_sweep scored; /* the manifest's cases, as score runs them */
} fixture;

typedef enum { CAND_KERNEL, CAND_MOVED, CAND_NAN, CAND_NO_TENSOR, CAND_F64, CAND_RESHAPED } candidate_kind;

static void export_fixtures(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/ulpgate-interop-XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/sweep.json", fx->dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(sweep_text, f);
    fclose(f);
    CU_ASSERT_FATAL(ug_sweep_load(path, &fx->sweep).code == UG_OK);
    snprintf(fx->fixtures, sizeof fx->fixtures, "%s/fixtures", fx->dir);
    snprintf(fx->candidate, sizeof fx->candidate, "%s/candidate", fx->dir);
    size_t exported, skipped;
    ug_status st = ug_export(&fx->sweep, fx->fixtures, (size_t)1 << 30, &exported, &skipped);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL(exported, N_ACCEPTED);
    CU_ASSERT_EQUAL(skipped, 1);
    CU_ASSERT_FATAL(mkdir(fx->candidate, 0777) == 0);
}

static void teardown(fixture *fx)
{
    ug_sweep_free(&fx->sweep);
    ug_sweep_free(&fx->scored);
    ug_test_remove_tree(fx->dir);
}

/* Case i's candidate file, from the fixture file's input as a client reads
 * it; `kind` spoils it. */
static void write_candidate(const fixture *fx, const ug_case *c, candidate_kind kind)
{
    char name[128], in_path[256], out_path[256];
    snprintf(name, sizeof name, "%04zu-%s.safetensors", c->index, c->family->name);
    snprintf(in_path, sizeof in_path, "%s/%s", fx->fixtures, name);
    snprintf(out_path, sizeof out_path, "%s/%s", fx->candidate, name);
    ug_st_file in;
    CU_ASSERT_EQUAL_FATAL(ug_st_read(in_path, SIZE_MAX, &in).code, UG_OK);
    const ug_st_tensor *g_raw = ug_st_find(&in, "g_raw");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g_raw);
    CU_ASSERT_PTR_NOT_NULL(ug_st_find(&in, "g.exact.ref"));
    CU_ASSERT_PTR_NOT_NULL(ug_st_find(&in, "g.staged.bound"));
    CU_ASSERT_PTR_NULL(ug_st_find(&in, "g"));
    float *x = malloc(g_raw->count * sizeof *x), *g = malloc(g_raw->count * sizeof *g);
    double *g64 = malloc(g_raw->count * sizeof *g64);
    CU_ASSERT_FATAL(x && g && g64);
    ug_st_copy(g_raw, x);
    ug_buf bufs[2] = {{x, g_raw->count, UG_F32}, {g, g_raw->count, UG_F32}};
    CU_ASSERT_EQUAL_FATAL(c->family->run(&c->params, bufs).code, UG_OK);
    if (kind == CAND_MOVED) g[5] = nextafterf(nextafterf(g[5] * 1.01f, INFINITY), INFINITY);
    for (size_t i = 0; i < g_raw->count; i++) {
        if (kind == CAND_NAN) g[i] = NAN;
        g64[i] = g[i];
    }
    ug_st_entry out = {"g", kind == CAND_F64 ? UG_F64 : UG_F32, g_raw->rank, {0}, kind == CAND_F64 ? (void *)g64 : g};
    memcpy(out.shape, g_raw->shape, sizeof out.shape);
    if (kind == CAND_NO_TENSOR) out.name = "G";
    if (kind == CAND_RESHAPED) out.shape[1] = 64, out.shape[2] = 4;
    CU_ASSERT_EQUAL(ug_st_write(out_path, &out, 1, NULL, 0).code, UG_OK);
    free(x);
    free(g);
    free(g64);
    ug_st_free(&in);
}

static void write_candidates(const fixture *fx, candidate_kind first_kind)
{
    bool first = true;
    for (size_t i = 0; i < fx->sweep.n_cases; i++) {
        if (fx->sweep.cases[i].expect_reject) continue;
        write_candidate(fx, &fx->sweep.cases[i], first ? first_kind : CAND_KERNEL);
        first = false;
    }
}

/* Exports the sweep and writes a candidate: the first case's spoiled by kind. */
static void setup(fixture *fx, candidate_kind first_kind)
{
    export_fixtures(fx);
    write_candidates(fx, first_kind);
}

/* Opens the candidate as score does; on success runs it into run (its
 * cases live in fx->scored). */
static ug_status score(fixture *fx, ug_run_result *run)
{
    ug_candidate *cand;
    ug_kernel_source source;
    ug_status st = ug_candidate_open(fx->fixtures, fx->candidate, (size_t)1 << 30, &fx->scored, &cand, &source);
    if (!ug_is_ok(&st)) return st;
    CU_ASSERT_EQUAL(fx->scored.n_cases, N_ACCEPTED);
    ug_run_options opt = {.moderate_cond = 16, .max_case_bytes = (size_t)1 << 30, .jobs = 2, .source = &source};
    st = ug_run_sweep(&fx->scored, &opt, run);
    CU_ASSERT_EQUAL(st.code, UG_OK);
    CU_ASSERT_STRING_EQUAL(run->source_name, "candidate");
    ug_candidate_free(cand);
    return st;
}

static void test_kernel_candidate_passes(void)
{
    fixture fx;
    setup(&fx, CAND_KERNEL);
    ug_run_result run;
    CU_ASSERT_EQUAL_FATAL(score(&fx, &run).code, UG_OK);
    for (size_t i = 0; i < run.n_cases; i++) {
        CU_ASSERT(run.cases[i].passed);
        CU_ASSERT(run.cases[i].elements == 256);
        if (!run.cases[i].passed) printf("\n    %s", run.cases[i].failure);
    }
    ug_run_result_free(&run);
    teardown(&fx);
}

/* A wrong value fails its case (score runs, code UG_OK); a wrong file stops
 * score before it runs (UG_EPARSE). */
static void test_spoiled_candidates(void)
{
    static const struct {
        candidate_kind kind;
        ug_code code;
        const char *expect[2];
    } spoils[] = {
        {CAND_MOVED, UG_OK, {"[candidate] g[5]", "ratio="}},
        {CAND_NAN, UG_OK, {"[candidate] g[0]", "(non-finite rule)"}},
        {CAND_NO_TENSOR, UG_EPARSE, {"0000-gdn_chunk_cumsum.safetensors: no tensor 'g'", "output F32 [1,128,2]"}},
        {CAND_F64, UG_EPARSE, {"tensor 'g' is F64", "the output is F32"}},
        {CAND_RESHAPED, UG_EPARSE, {"tensor 'g' has shape [1,64,4]", "the output's is [1,128,2]"}},
    };
    for (size_t k = 0; k < sizeof spoils / sizeof spoils[0]; k++) {
        fixture fx;
        setup(&fx, spoils[k].kind);
        ug_run_result run;
        ug_status st = score(&fx, &run);
        CU_ASSERT_EQUAL(st.code, spoils[k].code);
        const char *msg = st.msg;
        if (ug_is_ok(&st)) {
            CU_ASSERT_FALSE(run.cases[0].passed);
            CU_ASSERT(run.cases[1].passed);
            msg = run.cases[0].failure;
        }
        for (int e = 0; e < 2; e++) ASSERT_CONTAINS(msg, spoils[k].expect[e]);
        if (ug_is_ok(&st)) ug_run_result_free(&run);
        teardown(&fx);
    }
}

static void test_missing_candidate_file(void)
{
    fixture fx;
    setup(&fx, CAND_KERNEL);
    char path[256];
    snprintf(path, sizeof path, "%s/0001-gdn_chunk_cumsum.safetensors", fx.candidate);
    CU_ASSERT_FATAL(unlink(path) == 0);
    ug_run_result run;
    ug_status st = score(&fx, &run);
    CU_ASSERT_EQUAL(st.code, UG_EIO);
    ASSERT_CONTAINS(st.msg, "cannot open");
    ASSERT_CONTAINS(st.msg, "0001-gdn_chunk_cumsum.safetensors");
    teardown(&fx);
}

/* Sets key of case `index` in the manifest to value (stolen). */
static void edit_manifest(const fixture *fx, size_t index, const char *key, json_t *value)
{
    char path[256];
    snprintf(path, sizeof path, "%s/manifest.json", fx->fixtures);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_object_set_new(json_array_get(json_object_get(root, "cases"), index), key, value);
    CU_ASSERT_FATAL(json_dump_file(root, path, 0) == 0);
    json_decref(root);
}

/* A manifest that does not describe cases this tool can rebuild is refused,
 * naming the case and the value. */
static void test_bad_manifest(void)
{
    static const struct {
        const char *key, *value, *expect;
    } edits[] = {
        {"family", "\"gdn_nonesuch\"", "case 1: unknown family 'gdn_nonesuch'"},
        {"regime", "\"sunny\"", "case 1: gdn_chunk_cumsum has no regime 'sunny'"},
        {"seed", "\"12\"", "case 1: seed '12' is not a 0x-prefixed 64-bit hex number"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 2}", "case 1: 3 params, gdn_chunk_cumsum has 4"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 2, \"BT\": \"64\"}", "case 1: param BT missing or not a number"},
        {"file", "\"../x.safetensors\"", "case 1: label or file name too long, or the file name has a '/'"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 3, \"BT\": 64}", "fixture/tool version mismatch: the manifest lists"},
    };
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        fixture fx;
        setup(&fx, CAND_KERNEL);
        json_error_t err;
        edit_manifest(&fx, 1, edits[k].key, json_loads(edits[k].value, JSON_DECODE_ANY, &err));
        ug_run_result run;
        ug_status st = score(&fx, &run);
        CU_ASSERT_EQUAL(st.code, UG_EPARSE);
        ASSERT_CONTAINS(st.msg, edits[k].expect);
        teardown(&fx);
    }
}

/* Fixtures whose inputs no longer hash as this tool draws them (another
 * generator, another version) are refused, naming the input. */
static void test_input_hash_mismatch(void)
{
    fixture fx;
    setup(&fx, CAND_KERNEL);
    json_error_t err;
    edit_manifest(&fx, 1, "inputs",
                  json_loads("[{\"name\": \"g_raw\", \"dtype\": \"F32\", \"shape\": [1, 128, 2], "
                             "\"fnv1a\": \"0123456789abcdef\"}]", 0, &err));
    ug_run_result run;
    ug_status st = score(&fx, &run);
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    ASSERT_CONTAINS(st.msg, "case 1 (gdn_chunk_cumsum/");
    ASSERT_CONTAINS(st.msg, "fixture/tool version mismatch: input g_raw hashes to");
    ASSERT_CONTAINS(st.msg, "the manifest says 0123456789abcdef");
    teardown(&fx);
}

UG_TEST_SUITE(interop_suite, "interop", UG_TEST(test_kernel_candidate_passes), UG_TEST(test_spoiled_candidates),
              UG_TEST(test_missing_candidate_file), UG_TEST(test_bad_manifest),
              UG_TEST(test_input_hash_mismatch));
