/* SPDX-License-Identifier: MIT */
/* export and score (harness/interop.c), with candidate files written the
 * way an outside client writes them: read the fixture's inputs, compute (here
 * with the built-in kernel), save each output under its name. Such a
 * candidate passes every case of every family with the built-in bits; on
 * gdn_chunk_cumsum, one element moved or every element NaN fails its case; a
 * missing file or tensor, a wrong dtype or shape, a bad manifest, and
 * fixtures whose inputs this tool no longer draws stop score before anything
 * runs. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/safetensors.h"
#include "../harness/gate.h"
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

typedef struct {
    char dir[64], fixtures[128], candidate[128];
    ug_sweep sweep;  /* the sweep as loaded, accepted and rejected cases */
    ug_sweep scored; /* the manifest's cases, as score runs them */
} fixture;

typedef enum { CAND_KERNEL, CAND_MOVED, CAND_NAN, CAND_NO_TENSOR, CAND_F64, CAND_RESHAPED } candidate_kind;

static size_t accepted_cases(const ug_sweep *sw)
{
    size_t n = 0;
    for (size_t i = 0; i < sw->n_cases; i++) n += !sw->cases[i].expect_reject;
    return n;
}

/* Keeps the accepted cases that start a family, or a new value of its first
 * label parameter (head_norm_rope's variant): every family and layout in
 * a few cases. */
static void keep_first_of_each_kind(ug_sweep *sw)
{
    size_t n = 0;
    for (size_t i = 0; i < sw->n_cases; i++) {
        const ug_case *c = &sw->cases[i], *prev = n ? &sw->cases[n - 1] : NULL;
        size_t head = strcspn(c->label, " ");
        if (c->expect_reject) continue;
        if (!prev || prev->family != c->family || strncmp(prev->label, c->label, head + 1) != 0) sw->cases[n++] = *c;
    }
    sw->n_cases = n;
}

/* Loads the sweep (the text above when path is NULL), keeps a few of its
 * cases if asked, and exports it. */
static void export_fixtures(fixture *fx, const char *path, bool few)
{
    memset(fx, 0, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/ulpgate-interop-XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
    char own[160];
    if (!path) {
        snprintf(own, sizeof own, "%s/sweep.json", fx->dir);
        FILE *f = fopen(own, "w");
        CU_ASSERT_FATAL(f != NULL);
        fputs(sweep_text, f);
        fclose(f);
        path = own;
    }
    CU_ASSERT_FATAL(ug_sweep_load(path, &fx->sweep).code == UG_OK);
    if (few) keep_first_of_each_kind(&fx->sweep);
    snprintf(fx->fixtures, sizeof fx->fixtures, "%s/fixtures", fx->dir);
    snprintf(fx->candidate, sizeof fx->candidate, "%s/candidate", fx->dir);
    size_t exported, skipped;
    ug_status st =
        ug_export(&fx->sweep, ug_test_cpu_model(), fx->fixtures, UG_MAX_CASE_BYTES_DEFAULT, false, &exported, &skipped);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL(exported, accepted_cases(&fx->sweep));
    CU_ASSERT_EQUAL(skipped, fx->sweep.n_cases - exported);
    CU_ASSERT_FATAL(mkdir(fx->candidate, 0777) == 0);
}

static void teardown(fixture *fx)
{
    ug_sweep_free(&fx->sweep);
    ug_sweep_free(&fx->scored);
    ug_test_remove_tree(fx->dir);
}

/* Spoils the first output (f32, rank 3: gdn_chunk_cumsum's g) the way
 * `kind` says; y64 has room for its count elements. */
static void spoil(candidate_kind kind, ug_st_entry *out, float *y, size_t count, double *y64)
{
    if (kind == CAND_MOVED) y[5] = nextafterf(nextafterf(y[5] * 1.01f, INFINITY), INFINITY);
    for (size_t i = 0; i < count; i++) {
        if (kind == CAND_NAN) y[i] = NAN;
        y64[i] = y[i];
    }
    if (kind == CAND_F64) out->dtype = UG_F64, out->data = y64;
    if (kind == CAND_NO_TENSOR) out->name = "G";
    if (kind == CAND_RESHAPED) out->shape[1] /= 2, out->shape[2] *= 2;
}

/* Case c's candidate file as an outside client makes it: the inputs read
 * from the fixture file, the built-in kernel run on them, each output saved
 * under its name with its layout's shape (the manifest's); `kind` spoils the
 * first output. An exact reference is exported for every output but a
 * pipeline's optional ones (their references need the candidate's own). */
static void write_candidate(const fixture *fx, const ug_case *c, candidate_kind kind)
{
    const ug_family *f = c->family;
    char name[128], in_path[256], out_path[256], ref_name[128];
    snprintf(name, sizeof name, "%04zu-%s.safetensors", c->index, f->name);
    snprintf(in_path, sizeof in_path, "%s/%s", fx->fixtures, name);
    snprintf(out_path, sizeof out_path, "%s/%s", fx->candidate, name);
    ug_st_file in;
    CU_ASSERT_EQUAL_FATAL(ug_st_read(in_path, SIZE_MAX, &in).code, UG_OK);
    ug_buf bufs[UG_MAX_BUFFERS];
    ug_st_entry out[UG_MAX_BUFFERS];
    size_t n_out = 0, out0_count = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(f, &c->params, i, &bufs[i].count).code, UG_OK);
        bufs[i].dtype = f->buffers[i].dtype;
        bufs[i].data = calloc(bufs[i].count + 1, ug_dtype_size(bufs[i].dtype));
        CU_ASSERT_FATAL(bufs[i].data != NULL);
        if (f->buffers[i].is_output) {
            CU_ASSERT_PTR_NULL(ug_st_find(&in, f->buffers[i].name));
            snprintf(ref_name, sizeof ref_name, "%s.exact.ref", f->buffers[i].name);
            CU_ASSERT_EQUAL(ug_st_find(&in, ref_name) == NULL, f->buffers[i].optional);
            if (n_out == 0) out0_count = bufs[i].count;
            out[n_out] = (ug_st_entry){f->buffers[i].name, bufs[i].dtype, 0, {0}, bufs[i].data};
            ug_family_buffer_shape(f, &c->params, i, bufs[i].count, out[n_out].shape, &out[n_out].rank);
            n_out++;
            continue;
        }
        const ug_st_tensor *t = ug_st_find(&in, f->buffers[i].name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_EQUAL_FATAL(t->count, bufs[i].count);
        ug_st_copy(t, bufs[i].data);
    }
    CU_ASSERT_EQUAL_FATAL(f->run(&c->params, bufs).code, UG_OK);
    double *y64 = kind == CAND_KERNEL ? NULL : calloc(out0_count, sizeof *y64);
    if (y64) spoil(kind, &out[0], (float *)out[0].data, out0_count, y64);
    CU_ASSERT_EQUAL(ug_st_write(out_path, out, n_out, NULL, 0).code, UG_OK);
    free(y64);
    for (size_t i = 0; i < f->n_buffers; i++) free(bufs[i].data);
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

/* Exports the sweep text and writes a candidate: the first case's spoiled by kind. */
static void setup(fixture *fx, candidate_kind first_kind)
{
    export_fixtures(fx, NULL, false);
    write_candidates(fx, first_kind);
}

/* Opens the candidate as score does; on success runs it into run (its
 * cases live in fx->scored). */
static ug_status score(fixture *fx, ug_run_result *run)
{
    ug_candidate *cand;
    ug_kernel_source source;
    ug_status st =
        ug_candidate_open(fx->fixtures, fx->candidate, NULL, UG_MAX_CASE_BYTES_DEFAULT, &fx->scored, &cand, &source);
    if (!ug_is_ok(&st)) return st;
    CU_ASSERT_EQUAL(fx->scored.n_cases, accepted_cases(&fx->sweep));
    ug_run_options opt = {.model = ug_test_cpu_model(), .moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT,
                          .jobs = 2, .source = &source};
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

/* Every family and layout (NT a derived dim, htmp flat, buffers
 * absent in a variant as [0]): fixtures of memcheck-sweep cases, a candidate
 * from the built-in kernel, and score passes every case with the bits the
 * built-in path gives in the same runner. */
static void test_every_family_round_trips(void)
{
    fixture fx;
    export_fixtures(&fx, "fixtures/sweeps/memcheck", true);
    write_candidates(&fx, CAND_KERNEL);
    ug_run_result run, builtin;
    CU_ASSERT_EQUAL_FATAL(score(&fx, &run).code, UG_OK);
    ug_run_options opt = {.model = ug_test_cpu_model(), .moderate_cond = 16, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT, .jobs = 2};
    for (int i = 0; i < UG_ISA_COUNT; i++) opt.isa_enabled[i] = i == UG_ISA_PORTABLE;
    CU_ASSERT_EQUAL_FATAL(ug_run_sweep(&fx.scored, &opt, &builtin).code, UG_OK);
    size_t families = 0;
    for (size_t i = 0; i < run.n_cases; i++) {
        CU_ASSERT(run.cases[i].passed);
        if (!run.cases[i].passed) printf("\n    %s", run.cases[i].failure);
        CU_ASSERT_EQUAL(run.cases[i].bits_hash, builtin.cases[i].bits_hash);
        families += i == 0 || run.cases[i].c->family != run.cases[i - 1].c->family;
    }
    CU_ASSERT_EQUAL(families, ug_family_count());
    printf("\n    %zu cases of %zu families: passed with the built-in bits", run.n_cases, families);
    ug_run_result_free(&run);
    ug_run_result_free(&builtin);
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
    CU_ASSERT_EQUAL(st.code, UG_EINPUT);
    ASSERT_CONTAINS(st.msg, "does not exist");
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
        {"family", "\"gdn_nonesuch\"", "cases[1].family: unknown family \"gdn_nonesuch\""},
        {"regime", "\"sunny\"", "cases[1].regime: gdn_chunk_cumsum has no regime \"sunny\""},
        {"seed", "\"12\"", "cases[1].seed: \"12\" is not a 0x-prefixed 64-bit hex number"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 2}", "cases[1].params: 3 params, gdn_chunk_cumsum has 4"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 2, \"BT\": \"64\"}", "cases[1].params.BT: expected an integer"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 2, \"BT\": 64.5}", "cases[1].params.BT: expected an integer"},
        {"file", "\"../x.safetensors\"", "cases[1].file: \"../x.safetensors\" is empty"},
        {"file", "\"0000-gdn_chunk_cumsum.safetensors\"", "repeats cases[0]"},
        {"params", "{\"B\": 1, \"T\": 128, \"H\": 3, \"BT\": 64}", "fixture/tool version mismatch: the manifest lists"},
        {"origin", "\"model\"", "cases[1].origin: \"model\" is not \"user\""},
        {"origin", "\"user\"", "cases[1].regime: \"strong_decay\": a user-supplied case's is \"user\""},
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

/* score --write-baseline, then score --baseline: a candidate gated against
 * its own earlier run; the baseline names the candidate and the exported
 * sweep (path and content hash, as the manifest records them). */
static void test_candidate_baseline(void)
{
    fixture fx;
    setup(&fx, CAND_KERNEL);
    ug_run_result run;
    ug_budgets budgets;
    ug_baseline baseline;
    ug_verdict v;
    CU_ASSERT_EQUAL_FATAL(score(&fx, &run).code, UG_OK);
    snprintf(run.source_detail, sizeof run.source_detail, "cand");
    char path[200];
    snprintf(path, sizeof path, "%s/baseline.json", fx.dir);
    CU_ASSERT_EQUAL_FATAL(ug_baseline_write(path, &run).code, UG_OK);
    CU_ASSERT_EQUAL_FATAL(ug_baseline_load(path, &baseline).code, UG_OK);
    CU_ASSERT_STRING_EQUAL(baseline.source.kind, "candidate");
    CU_ASSERT_STRING_EQUAL(baseline.source.name, "cand");
    CU_ASSERT_EQUAL(baseline.sweep_hash, fx.sweep.content_hash);
    CU_ASSERT_STRING_EQUAL(baseline.sweep_path, fx.sweep.path);
    CU_ASSERT_TRUE(baseline.n_bits > 0 && baseline.bits[0].has_source);
    CU_ASSERT_EQUAL_FATAL(ug_budgets_load("fixtures/budgets", &budgets).code, UG_OK);
    CU_ASSERT_EQUAL_FATAL(ug_gate_evaluate(&run, &budgets, &baseline, &v).code, UG_OK);
    CU_ASSERT_TRUE(v.pass);
    for (size_t i = 0; i < v.n; i++) CU_ASSERT_NOT_EQUAL(v.items[i].kind, UG_FINDING_FAIL);
    ug_verdict_free(&v);
    ug_budgets_free(&budgets);
    ug_baseline_free(&baseline);
    ug_run_result_free(&run);
    teardown(&fx);
}

/* A candidate "file" that is a FIFO is refused before it is opened for
 * reading (open would block until a writer came). */
static void test_candidate_fifo_refused(void)
{
    fixture fx;
    setup(&fx, CAND_KERNEL);
    char path[256];
    snprintf(path, sizeof path, "%s/0001-gdn_chunk_cumsum.safetensors", fx.candidate);
    CU_ASSERT_FATAL(unlink(path) == 0 && mkfifo(path, 0600) == 0);
    ug_run_result run;
    ug_status st = score(&fx, &run);
    CU_ASSERT_EQUAL(st.code, UG_EINPUT);
    ASSERT_CONTAINS(st.msg, "is a FIFO (named pipe), not a regular file");
    teardown(&fx);
}

UG_TEST_SUITE(interop_suite, "interop", UG_TEST(test_candidate_baseline), UG_TEST(test_candidate_fifo_refused), UG_TEST(test_kernel_candidate_passes), UG_TEST(test_every_family_round_trips), UG_TEST(test_spoiled_candidates),
              UG_TEST(test_missing_candidate_file), UG_TEST(test_bad_manifest),
              UG_TEST(test_input_hash_mismatch));
