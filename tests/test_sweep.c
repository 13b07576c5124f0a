/* SPDX-License-Identifier: MIT */
/* Sweep files (harness/sweep.c): grid expansion in file order, tuple axes,
 * seeds that depend only on (sweep seed, family, label), rejected entries,
 * filtering, and one test per way a file can be wrong. Each test writes its
 * sweep into a fresh mkdtemp directory. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/input_file.h"
#include "../harness/gen.h"
#include "../harness/sweep.h"
#include "tests.h"

#define FAMILY "gdn_recompute_wu"
#define HEAD_SEED(seed) "{\"schema\": \"ulpgate-sweep/1\", \"seed\": " #seed ", \"families\": {\"" FAMILY "\": "
#define HEAD HEAD_SEED(7)
#define TAIL "}}\n"
/* One valid grid entry with a single case; AXES_BUT_X leave one axis out. */
#define AXES_TAIL "\"K\": [64], \"V\": [64], \"BT\": [64], \"regime\": [\"realistic\"]"
#define GRID1 "{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}"
#define PARAMS_OK "{\"B\": 1, \"T\": 64, \"Hg\": 1, \"H\": 2, \"K\": 256, \"V\": 64, \"BT\": 64}"
#define ACCEPTED(grids) "{\"accepted\": [" grids "]}"

typedef struct {
    char dir[64];
    char path[160];
    ug_sweep sweep;
} fixture;

static void fixture_open(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/ug_test_sweep_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
}

static void fixture_close(fixture *fx)
{
    ug_sweep_free(&fx->sweep);
    ug_test_remove_tree(fx->dir);
}

/* Writes text to DIR/name and returns the path (in fx->path). */
static const char *write_sweep(fixture *fx, const char *name, const char *text)
{
    snprintf(fx->path, sizeof fx->path, "%s/%s", fx->dir, name);
    FILE *fp = fopen(fx->path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs(text, fp);
    fclose(fp);
    return fx->path;
}

static ug_status load_text(fixture *fx, const char *text)
{
    return ug_sweep_load(write_sweep(fx, "sweep.json", text), &fx->sweep);
}

static const ug_case *find_label(const ug_sweep *s, const char *label)
{
    for (size_t i = 0; i < s->n_cases; i++)
        if (strcmp(s->cases[i].label, label) == 0) return &s->cases[i];
    return NULL;
}

static double param(const ug_case *c, const char *name)
{
    int i = ug_family_param_index(c->family, name);
    CU_ASSERT_FATAL(i >= 0);
    return c->params.v[i];
}

/* Asserts msg contains needle, quoting both in the failure report. */
#define ASSERT_CONTAINS(msg, needle) assert_contains((msg), (needle), __LINE__)
static void assert_contains(const char *msg, const char *needle, unsigned line)
{
    char what[UG_MSG_MAX + 160];
    snprintf(what, sizeof what, "message lacks \"%s\": %s", needle, msg);
    CU_assertImplementation(strstr(msg, needle) != NULL, line, what, __FILE__, "", CU_FALSE);
}

/* The file must fail to load with UG_EPARSE, a message naming the file and
 * containing each of the (up to two) given substrings, and no cases. */
#define expect_parse_error(text, needle1, needle2) expect_parse_error_at((text), (needle1), (needle2), __LINE__)
static void expect_parse_error_at(const char *text, const char *needle1, const char *needle2, unsigned line)
{
    fixture fx;
    fixture_open(&fx);
    ug_status st = load_text(&fx, text);
    CU_assertImplementation(st.code == UG_EPARSE, line, "st.code == UG_EPARSE", __FILE__, "", CU_FALSE);
    assert_contains(st.msg, fx.path, line);
    if (needle1) assert_contains(st.msg, needle1, line);
    if (needle2) assert_contains(st.msg, needle2, line);
    CU_ASSERT_EQUAL(fx.sweep.n_cases, 0);
    CU_ASSERT_PTR_NULL(fx.sweep.cases);
    fixture_close(&fx);
}

/* ---- expansion --------------------------------------------------------- */

static const char grid_text[] =
    HEAD ACCEPTED("{\"B\": [1, 2], \"T\": [64], \"Hg/H\": [[1, 2]], \"K\": [64, 128, 192],"
                  " \"V\": [64, 128], \"BT\": [64], \"regime\": [\"realistic\", \"logsigmoid\"]}") TAIL;

static void test_grid_is_cartesian_product(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, grid_text).code == UG_OK);
    CU_ASSERT_EQUAL(fx.sweep.n_cases, 2 * 3 * 2 * 2);
    CU_ASSERT_EQUAL(fx.sweep.seed, 7);
    for (size_t i = 0; i < fx.sweep.n_cases; i++) {
        CU_ASSERT_FALSE(fx.sweep.cases[i].expect_reject);
        CU_ASSERT_EQUAL(fx.sweep.cases[i].override.buffer, -1);
        CU_ASSERT_PTR_EQUAL(fx.sweep.cases[i].family, ug_family_find(FAMILY));
    }
    fixture_close(&fx);
}

static void test_grid_expands_in_file_order(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, grid_text).code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 24);
    const ug_case *c = fx.sweep.cases;
    CU_ASSERT_STRING_EQUAL(c[0].label, "B=1 T=64 Hg=1 H=2 K=64 V=64 BT=64 realistic");
    CU_ASSERT_STRING_EQUAL(c[1].label, "B=1 T=64 Hg=1 H=2 K=64 V=64 BT=64 logsigmoid");
    CU_ASSERT_STRING_EQUAL(c[2].label, "B=1 T=64 Hg=1 H=2 K=64 V=128 BT=64 realistic");
    CU_ASSERT_STRING_EQUAL(c[23].label, "B=2 T=64 Hg=1 H=2 K=192 V=128 BT=64 logsigmoid");
    CU_ASSERT_EQUAL(c[1].regime, 1);
    CU_ASSERT_DOUBLE_EQUAL(param(&c[23], "B"), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(param(&c[23], "K"), 192, 0);
    fixture_close(&fx);
}

/* The first axis in the file varies slowest, whatever the parameter order. */
static void test_grid_axis_order_is_file_order(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, HEAD ACCEPTED("{\"regime\": [\"realistic\", \"logsigmoid\"], \"K\": [64, 128],"
                                                 " \"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], \"V\": [64],"
                                                 " \"BT\": [64]}") TAIL)
                        .code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 4);
    CU_ASSERT_STRING_EQUAL(fx.sweep.cases[0].label, "B=1 T=64 Hg=1 H=2 K=64 V=64 BT=64 realistic");
    CU_ASSERT_STRING_EQUAL(fx.sweep.cases[1].label, "B=1 T=64 Hg=1 H=2 K=128 V=64 BT=64 realistic");
    CU_ASSERT_STRING_EQUAL(fx.sweep.cases[3].label, "B=1 T=64 Hg=1 H=2 K=128 V=64 BT=64 logsigmoid");
    fixture_close(&fx);
}

static void test_tuple_axis_pairs_values(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 1], [2, 4], [1, 2]],"
                                                 " \"K\": [64, 128], \"V\": [64], \"BT\": [64],"
                                                 " \"regime\": [\"realistic\"]}") TAIL)
                        .code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 3 * 2);
    static const double hg[] = {1, 1, 2, 2, 1, 1}, h[] = {1, 1, 4, 4, 2, 2};
    for (size_t i = 0; i < 6; i++) {
        CU_ASSERT_DOUBLE_EQUAL(param(&fx.sweep.cases[i], "Hg"), hg[i], 0);
        CU_ASSERT_DOUBLE_EQUAL(param(&fx.sweep.cases[i], "H"), h[i], 0);
    }
    CU_ASSERT_PTR_NULL(find_label(&fx.sweep, "B=1 T=64 Hg=1 H=4 K=64 V=64 BT=64 realistic"));
    fixture_close(&fx);
}

static void test_largest_u32_value_accepted(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, HEAD ACCEPTED("{\"B\": [4294967295], \"T\": [64], \"Hg/H\": [[1, 2]], "
                                                 AXES_TAIL "}") TAIL)
                        .code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 1);
    CU_ASSERT_DOUBLE_EQUAL(param(&fx.sweep.cases[0], "B"), 4294967295.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(param(&fx.sweep.cases[0], "T"), 64, 0);
    fixture_close(&fx);
}

/* ---- seeds ------------------------------------------------------------- */

#define LABEL1 "B=1 T=64 Hg=1 H=2 K=64 V=64 BT=64 realistic"

static void test_seed_is_derived_from_sweep_family_label(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, HEAD ACCEPTED(GRID1) TAIL).code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 1);
    CU_ASSERT_STRING_EQUAL(fx.sweep.cases[0].label, LABEL1);
    CU_ASSERT_EQUAL(fx.sweep.cases[0].seed, ug_gen_case_seed(7, FAMILY, LABEL1));
    fixture_close(&fx);
}

static void test_seed_unchanged_by_other_cases(void)
{
    fixture alone, crowd;
    fixture_open(&alone);
    fixture_open(&crowd);
    CU_ASSERT_FATAL(load_text(&alone, HEAD ACCEPTED(GRID1) TAIL).code == UG_OK);
    CU_ASSERT_FATAL(load_text(&crowd, HEAD "{\"accepted\": ["
                                           "{\"B\": [2, 3], \"T\": [128], \"Hg/H\": [[1, 1]], " AXES_TAIL "}, "
                                           GRID1 "], \"rejected\": [{\"name\": \"K=256\", \"params\": " PARAMS_OK
                                           ", \"expect\": [\"MAX_K\"]}]}" TAIL)
                        .code == UG_OK);
    CU_ASSERT_EQUAL(crowd.sweep.n_cases, 4);
    const ug_case *a = find_label(&alone.sweep, LABEL1), *b = find_label(&crowd.sweep, LABEL1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_EQUAL(b, crowd.sweep.cases); /* not first any more */
    CU_ASSERT_EQUAL(a->seed, b->seed);
    fixture_close(&alone);
    fixture_close(&crowd);
}

static void test_seed_changes_with_sweep_seed(void)
{
    fixture a, b;
    fixture_open(&a);
    fixture_open(&b);
    CU_ASSERT_FATAL(load_text(&a, HEAD_SEED(7) ACCEPTED(GRID1) TAIL).code == UG_OK);
    CU_ASSERT_FATAL(load_text(&b, HEAD_SEED(8) ACCEPTED(GRID1) TAIL).code == UG_OK);
    CU_ASSERT_EQUAL(b.sweep.seed, 8);
    CU_ASSERT_NOT_EQUAL(a.sweep.cases[0].seed, b.sweep.cases[0].seed);
    fixture_close(&a);
    fixture_close(&b);
}

static void test_seeds_differ_between_cases(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, grid_text).code == UG_OK);
    for (size_t i = 0; i < fx.sweep.n_cases; i++)
        for (size_t j = i + 1; j < fx.sweep.n_cases; j++)
            CU_ASSERT_NOT_EQUAL(fx.sweep.cases[i].seed, fx.sweep.cases[j].seed);
    fixture_close(&fx);
}

/* ---- rejected entries -------------------------------------------------- */

static const char rejected_text[] =
    HEAD "{\"rejected\": ["
    "{\"name\": \"K=256\", \"params\": " PARAMS_OK ", \"expect\": [\"256\", \"MAX_K = 192\"]},"
    "{\"name\": \"k short\", \"params\": " PARAMS_OK ", \"buffer\": {\"name\": \"k\", \"count_delta\": -1},"
    " \"expect\": [\"k must be\"]},"
    "{\"name\": \"beta bf16\", \"params\": " PARAMS_OK ", \"buffer\": {\"name\": \"beta\", \"dtype\": \"bf16\"},"
    " \"expect\": [\"beta\"]}"
    "]}" TAIL;

static void test_rejected_name_params_expect(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, rejected_text).code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 3);
    const ug_case *c = &fx.sweep.cases[0];
    CU_ASSERT_STRING_EQUAL(c->label, "K=256");
    CU_ASSERT_TRUE(c->expect_reject);
    CU_ASSERT_DOUBLE_EQUAL(param(c, "K"), 256, 0);
    CU_ASSERT_DOUBLE_EQUAL(param(c, "H"), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(param(c, "BT"), 64, 0);
    CU_ASSERT_EQUAL(c->n_expect, 2);
    CU_ASSERT_STRING_EQUAL(c->expect[0], "256");
    CU_ASSERT_STRING_EQUAL(c->expect[1], "MAX_K = 192");
    CU_ASSERT_EQUAL(c->override.buffer, -1);
    CU_ASSERT_EQUAL(c->seed, ug_gen_case_seed(7, FAMILY, "K=256"));
    fixture_close(&fx);
}

static void test_rejected_count_delta_override(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, rejected_text).code == UG_OK);
    const ug_case *c = find_label(&fx.sweep, "k short");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->override.buffer, ug_family_buffer_index(c->family, "k"));
    CU_ASSERT_EQUAL(c->override.count_delta, -1);
    CU_ASSERT_EQUAL(c->override.dtype, UG_DTYPE_COUNT);
    fixture_close(&fx);
}

static void test_rejected_dtype_override(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, rejected_text).code == UG_OK);
    const ug_case *c = find_label(&fx.sweep, "beta bf16");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->override.buffer, ug_family_buffer_index(c->family, "beta"));
    CU_ASSERT_EQUAL(c->override.count_delta, 0);
    CU_ASSERT_EQUAL(c->override.dtype, UG_BF16);
    fixture_close(&fx);
}

/* ---- filter ------------------------------------------------------------ */

static const char filter_text[] =
    HEAD "{\"accepted\": [{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], \"K\": [64, 128], \"V\": [64, 128],"
    " \"BT\": [64], \"regime\": [\"realistic\"]}],"
    " \"rejected\": [{\"name\": \"K=256\", \"params\": " PARAMS_OK ", \"expect\": [\"MAX_K\"]}]}" TAIL;

static void test_filter_keeps_matching_cases(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, filter_text).code == UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 5);
    CU_ASSERT_EQUAL_FATAL(ug_sweep_filter(&fx.sweep, "K=128").code, UG_OK);
    CU_ASSERT_EQUAL(fx.sweep.n_cases, 2);
    for (size_t i = 0; i < fx.sweep.n_cases; i++) {
        CU_ASSERT_PTR_NOT_NULL(strstr(fx.sweep.cases[i].label, "K=128"));
        CU_ASSERT_DOUBLE_EQUAL(param(&fx.sweep.cases[i], "K"), 128, 0);
    }
    fixture_close(&fx);
}

static void test_filter_matches_family_prefix(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, filter_text).code == UG_OK);
    CU_ASSERT_EQUAL_FATAL(ug_sweep_filter(&fx.sweep, FAMILY "/K=256").code, UG_OK);
    CU_ASSERT_FATAL(fx.sweep.n_cases == 1);
    CU_ASSERT_STRING_EQUAL(fx.sweep.cases[0].label, "K=256");
    CU_ASSERT_TRUE(fx.sweep.cases[0].expect_reject);
    fixture_close(&fx);
}

static void test_filter_without_match_keeps_nothing(void)
{
    fixture fx;
    fixture_open(&fx);
    CU_ASSERT_FATAL(load_text(&fx, filter_text).code == UG_OK);
    CU_ASSERT_EQUAL_FATAL(ug_sweep_filter(&fx.sweep, "no such case").code, UG_OK);
    CU_ASSERT_EQUAL(fx.sweep.n_cases, 0);
    fixture_close(&fx);
}

/* ---- errors ------------------------------------------------------------ */

static void test_error_invalid_json(void)
{
    fixture fx;
    fixture_open(&fx);
    ug_status st = load_text(&fx, "{\n \"schema\": \"ulpgate-sweep/1\",\n \"seed\": 7,,\n}\n");
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    char where[200];
    snprintf(where, sizeof where, "%s:3:", fx.path); /* path:line:column */
    ASSERT_CONTAINS(st.msg, where);
    fixture_close(&fx);
}

static void test_error_wrong_schema(void)
{
    expect_parse_error("{\"schema\": \"ulpgate-sweep/2\", \"seed\": 7, \"families\": {\"" FAMILY "\": "
                       ACCEPTED(GRID1) "}}",
                       "schema", NULL);
}

static void test_error_missing_seed(void)
{
    expect_parse_error("{\"schema\": \"ulpgate-sweep/1\", \"families\": {\"" FAMILY "\": " ACCEPTED(GRID1) "}}",
                       "seed", NULL);
}

static void test_error_negative_seed(void)
{
    expect_parse_error(HEAD_SEED(-1) ACCEPTED(GRID1) TAIL, "seed", NULL);
}

/* A misspelt key would silently drop cases. */
static void test_error_unknown_keys(void)
{
    expect_parse_error("{\"schema\": \"ulpgate-sweep/1\", \"sede\": 1, \"seed\": 7, \"families\": "
                       "{\"gdn_recompute_wu\": " ACCEPTED(GRID1) "}}",
                       "sede: unknown key", NULL);
    expect_parse_error("{\"schema\": \"ulpgate-sweep/1\", \"seed\": 7, \"families\": "
                       "{\"gdn_recompute_wu\": {\"rejectd\": []}}}",
                       "families.gdn_recompute_wu.rejectd", "unknown key");
}

static void test_error_unknown_family(void)
{
    expect_parse_error("{\"schema\": \"ulpgate-sweep/1\", \"seed\": 7, \"families\": {\"no_such_kernel\": "
                       ACCEPTED(GRID1) "}}",
                       "no_such_kernel", NULL);
}

static void test_error_unknown_parameter_in_grid(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], \"Q\": [3], " AXES_TAIL "}") TAIL,
                       "'Q'", "accepted[0]");
}

static void test_error_unknown_parameter_in_tuple(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/Q\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "'Q'", "accepted[0]");
}

static void test_error_unknown_parameter_in_rejected(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"x\", \"params\": {\"B\": 1, \"T\": 64, \"Hg\": 1,"
                       " \"H\": 2, \"K\": 256, \"V\": 64, \"BT\": 64, \"Q\": 3}, \"expect\": [\"K\"]}]}" TAIL,
                       "Q", "rejected[0]");
}

static void test_error_parameter_missing_from_grid(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], \"K\": [64], \"BT\": [64],"
                                     " \"regime\": [\"realistic\"]}") TAIL,
                       "'V'", "accepted[0]");
}

static void test_error_parameter_missing_from_rejected(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"x\", \"params\": {\"B\": 1, \"T\": 64, \"Hg\": 1,"
                       " \"H\": 2, \"K\": 256, \"BT\": 64}, \"expect\": [\"K\"]}]}" TAIL,
                       "rejected[0].params.V", "missing");
}

static void test_error_parameter_given_twice(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"H\": [2], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "'H'", "twice");
}

static void test_error_non_integer_value(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1.5], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].B", "1.5");
}

static void test_error_negative_value(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [-64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].T", "-64");
}

static void test_error_value_of_2_pow_32(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [4294967296], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].B", "expected an integer in [0, 4294967295], found 4294967296");
}

static void test_error_string_value(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [\"1\"], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].B", "found \"1\"");
}

static void test_error_non_integer_in_rejected(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"x\", \"params\": {\"B\": 1, \"T\": 64, \"Hg\": 1,"
                       " \"H\": 2, \"K\": 2.5, \"V\": 64, \"BT\": 64}, \"expect\": [\"K\"]}]}" TAIL,
                       "rejected[0].params.K", "2.5");
}

static void test_error_unknown_regime(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], \"K\": [64], \"V\": [64],"
                                     " \"BT\": [64], \"regime\": [\"realistic\", \"sunny\"]}") TAIL,
                       "'sunny'", "accepted[0]");
}

static void test_error_missing_regime_axis(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2]], \"K\": [64], \"V\": [64],"
                                     " \"BT\": [64]}") TAIL,
                       "regime", "accepted[0]");
}

static void test_error_empty_axis(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].B", "non-empty");
}

static void test_error_tuple_of_wrong_length(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[1, 2], [1, 2, 4]], " AXES_TAIL "}") TAIL,
                       "accepted[0].Hg/H", "tuples of 2");
}

static void test_error_duplicate_accepted_label(void)
{
    expect_parse_error(HEAD ACCEPTED(GRID1 ", " GRID1) TAIL, LABEL1, "twice");
}

static void test_error_duplicate_rejected_name(void)
{
    expect_parse_error(HEAD "{\"rejected\": ["
                       "{\"name\": \"K=256\", \"params\": " PARAMS_OK ", \"expect\": [\"MAX_K\"]},"
                       "{\"name\": \"K=256\", \"params\": " PARAMS_OK ", \"expect\": [\"256\"]}]}" TAIL,
                       "'K=256'", "twice");
}

static void test_error_rejected_without_expect(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"K=256\", \"params\": " PARAMS_OK "}]}" TAIL,
                       "rejected[0].expect", NULL);
}

static void test_error_rejected_with_empty_expect(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"K=256\", \"params\": " PARAMS_OK ", \"expect\": []}]}" TAIL,
                       "rejected[0].expect", NULL);
}

static void test_error_rejected_without_name(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"params\": " PARAMS_OK ", \"expect\": [\"K\"]}]}" TAIL,
                       "rejected[0]", "name");
}

static void test_error_unknown_buffer_in_override(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"x\", \"params\": " PARAMS_OK
                       ", \"buffer\": {\"name\": \"zz\", \"count_delta\": 1}, \"expect\": [\"K\"]}]}" TAIL,
                       "rejected[0].buffer.name: \"zz\" is not a buffer of gdn_recompute_wu", NULL);
}

static void test_error_bad_dtype_in_override(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"x\", \"params\": " PARAMS_OK
                       ", \"buffer\": {\"name\": \"k\", \"dtype\": \"f16\"}, \"expect\": [\"K\"]}]}" TAIL,
                       "rejected[0].buffer", "dtype");
}

static void test_error_override_without_change(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"x\", \"params\": " PARAMS_OK
                       ", \"buffer\": {\"name\": \"k\"}, \"expect\": [\"K\"]}]}" TAIL,
                       "rejected[0].buffer", "count_delta");
}

static void test_error_empty_sweep(void)
{
    expect_parse_error(HEAD "{\"accepted\": [], \"rejected\": []}" TAIL, "no case", NULL);
}

static void test_error_no_families(void)
{
    expect_parse_error("{\"schema\": \"ulpgate-sweep/1\", \"seed\": 7, \"families\": {}}", "families", NULL);
}

static void test_error_missing_file(void)
{
    fixture fx;
    fixture_open(&fx);
    char path[160];
    snprintf(path, sizeof path, "%s/absent.json", fx.dir);
    ug_status st = ug_sweep_load(path, &fx.sweep);
    CU_ASSERT_EQUAL(st.code, UG_EINPUT);
    ASSERT_CONTAINS(st.msg, path);
    CU_ASSERT_EQUAL(fx.sweep.n_cases, 0);
    fixture_close(&fx);
}

/* ---- the repository's sweeps -------------------------------------------- */

static void check_repo_sweep(const char *path)
{
    ug_sweep s;
    ug_status st = ug_sweep_load(path, &s);
    CU_assertImplementation(st.code == UG_OK, __LINE__, st.msg, __FILE__, "", CU_TRUE);
    size_t accepted = 0, rejected = 0;
    for (size_t i = 0; i < s.n_cases; i++) {
        if (strcmp(s.cases[i].family->name, FAMILY) != 0) continue;
        if (s.cases[i].expect_reject) rejected++;
        else accepted++;
    }
    CU_ASSERT(accepted > 0);
    CU_ASSERT(rejected > 0);
    ug_sweep_free(&s);
}

/* A directory is every *.json in it, in name order; other files are ignored. */
static void test_directory_concatenates_files_in_name_order(void)
{
    fixture fx;
    fixture_open(&fx);
    write_sweep(&fx, "b.json", HEAD ACCEPTED("{\"B\": [1], \"T\": [128], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") "}}");
    write_sweep(&fx, "a.json", HEAD ACCEPTED(GRID1) "}}");
    write_sweep(&fx, "notes.txt", "not a sweep");
    ug_status st = ug_sweep_load(fx.dir, &fx.sweep);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL_FATAL(fx.sweep.n_cases, 2);
    CU_ASSERT_EQUAL(param(&fx.sweep.cases[0], "T"), 64);
    CU_ASSERT_EQUAL(param(&fx.sweep.cases[1], "T"), 128);
    fixture_close(&fx);
}

static void test_error_empty_directory(void)
{
    fixture fx;
    fixture_open(&fx);
    ug_status st = ug_sweep_load(fx.dir, &fx.sweep);
    CU_ASSERT_EQUAL(st.code, UG_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no *.json"));
    fixture_close(&fx);
}

/* ---- semantic checks and special input files ---------------------------- */

/* Dimensions of accepted cases are positive JSON integers. */
static void test_error_dimension_not_a_positive_integer(void)
{
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [-0.0], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].T[0]", "found -0.0");
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1.5], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].B[0]", "expected an integer in [0, 4294967295], found 1.5");
    expect_parse_error(HEAD ACCEPTED("{\"B\": [2.0], \"T\": [64], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0].B[0]", "found 2.0");
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [0], \"Hg/H\": [[1, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0]", "dimension T is 0");
    expect_parse_error(HEAD ACCEPTED("{\"B\": [1], \"T\": [64], \"Hg/H\": [[0, 2]], " AXES_TAIL "}") TAIL,
                       "accepted[0]", "dimension Hg is 0");
}

/* "" is a substring of every message: it would accept any rejection. */
static void test_error_empty_expect(void)
{
    expect_parse_error(HEAD "{\"rejected\": [{\"name\": \"K=256\", \"params\": " PARAMS_OK
                       ", \"expect\": [\"MAX_K\", \"\"]}]}" TAIL,
                       "rejected[0].expect[1]", "expected 1 to 95 bytes, found \"\"");
}

/* Zero shapes stay allowed where a kernel must refuse them. */
static void test_zero_dimension_in_rejected_case(void)
{
    fixture fx;
    fixture_open(&fx);
    ug_status st = load_text(&fx, HEAD "{\"rejected\": [{\"name\": \"T=0\", \"params\": {\"B\": 1, \"T\": 0, \"Hg\": 1, "
                                        "\"H\": 2, \"K\": 64, \"V\": 64, \"BT\": 64}, \"expect\": [\"T\"]}]}" TAIL);
    CU_ASSERT_EQUAL(st.code, UG_OK);
    fixture_close(&fx);
}

static void expect_input_error(const char *path, const char *needle)
{
    ug_sweep s;
    ug_status st = ug_sweep_load(path, &s);
    CU_ASSERT_EQUAL(st.code, UG_EINPUT);
    assert_contains(st.msg, path, __LINE__);
    assert_contains(st.msg, needle, __LINE__);
    CU_ASSERT_EQUAL(s.n_cases, 0);
}

/* A device, a FIFO (nobody writing: open would block), a link to either in a
 * sweep folder, an unreadable or oversized file: refused before a byte is
 * read (this used to loop forever on /dev/zero and hang on a FIFO). */
static void test_special_files_refused(void)
{
    fixture fx;
    fixture_open(&fx);
    expect_input_error("/dev/zero", "is a character device, not a regular file");
    char fifo[200], link_dir[200], link[260], dir_as_file[200];
    snprintf(fifo, sizeof fifo, "%s/fifo.json", fx.dir);
    CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
    expect_input_error(fifo, "is a FIFO (named pipe), not a regular file");
    snprintf(link_dir, sizeof link_dir, "%s/folder", fx.dir);
    CU_ASSERT_FATAL(mkdir(link_dir, 0700) == 0);
    snprintf(link, sizeof link, "%s/a.json", link_dir);
    CU_ASSERT_FATAL(symlink("/dev/zero", link) == 0);
    expect_input_error(link_dir, "a.json' is a character device");
    snprintf(dir_as_file, sizeof dir_as_file, "%s/dir.json", link_dir);
    CU_ASSERT_FATAL(unlink(link) == 0 && mkdir(dir_as_file, 0700) == 0);
    expect_input_error(link_dir, "dir.json' is a directory, not a regular file");
    expect_input_error("/nonexistent/sweep.json", "does not exist");
    fixture_close(&fx);
}

static void test_oversized_and_unreadable_refused(void)
{
    fixture fx;
    fixture_open(&fx);
    const char *path = write_sweep(&fx, "big.json", HEAD ACCEPTED(GRID1) TAIL);
    CU_ASSERT_FATAL(truncate(path, (off_t)UG_INPUT_MAX_JSON + 1) == 0); /* sparse: no disk used */
    char expect[96];
    snprintf(expect, sizeof expect, "is %zu bytes, over the cap of %zu bytes", UG_INPUT_MAX_JSON + 1, UG_INPUT_MAX_JSON);
    expect_input_error(path, expect);
    if (geteuid() != 0) { /* root reads anything */
        CU_ASSERT_FATAL(truncate(path, 0) == 0 && chmod(path, 0) == 0);
        expect_input_error(path, "is not readable");
    }
    fixture_close(&fx);
}

static void test_repo_default_sweep_loads(void) { check_repo_sweep("fixtures/sweeps/default"); }
static void test_repo_smoke_sweep_loads(void) { check_repo_sweep("fixtures/sweeps/smoke"); }
static void test_repo_mutants_sweep_loads(void) { check_repo_sweep("fixtures/sweeps/mutants"); }
/* The speed sweep (docs/performance.md): four families, two regimes each, nothing rejected. */
static void test_repo_speed_sweep_loads(void)
{
    ug_sweep s;
    ug_status st = ug_sweep_load("fixtures/sweeps/speed", &s);
    CU_assertImplementation(st.code == UG_OK, __LINE__, st.msg, __FILE__, "", CU_TRUE);
    CU_ASSERT_EQUAL(s.n_cases, 8);
    for (size_t i = 0; i < s.n_cases; i++) CU_ASSERT_FALSE(s.cases[i].expect_reject);
    ug_sweep_free(&s);
}

UG_TEST_SUITE(sweep_suite, "sweep",
              UG_TEST(test_grid_is_cartesian_product), UG_TEST(test_error_dimension_not_a_positive_integer),
              UG_TEST(test_error_empty_expect), UG_TEST(test_zero_dimension_in_rejected_case),
              UG_TEST(test_special_files_refused), UG_TEST(test_oversized_and_unreadable_refused),
              UG_TEST(test_directory_concatenates_files_in_name_order),
              UG_TEST(test_error_empty_directory),
              UG_TEST(test_grid_expands_in_file_order),
              UG_TEST(test_grid_axis_order_is_file_order),
              UG_TEST(test_tuple_axis_pairs_values),
              UG_TEST(test_largest_u32_value_accepted),
              UG_TEST(test_seed_is_derived_from_sweep_family_label),
              UG_TEST(test_seed_unchanged_by_other_cases),
              UG_TEST(test_seed_changes_with_sweep_seed),
              UG_TEST(test_seeds_differ_between_cases),
              UG_TEST(test_rejected_name_params_expect),
              UG_TEST(test_rejected_count_delta_override),
              UG_TEST(test_rejected_dtype_override),
              UG_TEST(test_filter_keeps_matching_cases),
              UG_TEST(test_filter_matches_family_prefix),
              UG_TEST(test_filter_without_match_keeps_nothing),
              UG_TEST(test_error_invalid_json),
              UG_TEST(test_error_wrong_schema),
              UG_TEST(test_error_missing_seed),
              UG_TEST(test_error_negative_seed),
              UG_TEST(test_error_unknown_family),
              UG_TEST(test_error_unknown_keys),
              UG_TEST(test_error_unknown_parameter_in_grid),
              UG_TEST(test_error_unknown_parameter_in_tuple),
              UG_TEST(test_error_unknown_parameter_in_rejected),
              UG_TEST(test_error_parameter_missing_from_grid),
              UG_TEST(test_error_parameter_missing_from_rejected),
              UG_TEST(test_error_parameter_given_twice),
              UG_TEST(test_error_non_integer_value),
              UG_TEST(test_error_negative_value),
              UG_TEST(test_error_value_of_2_pow_32),
              UG_TEST(test_error_string_value),
              UG_TEST(test_error_non_integer_in_rejected),
              UG_TEST(test_error_unknown_regime),
              UG_TEST(test_error_missing_regime_axis),
              UG_TEST(test_error_empty_axis),
              UG_TEST(test_error_tuple_of_wrong_length),
              UG_TEST(test_error_duplicate_accepted_label),
              UG_TEST(test_error_duplicate_rejected_name),
              UG_TEST(test_error_rejected_without_expect),
              UG_TEST(test_error_rejected_with_empty_expect),
              UG_TEST(test_error_rejected_without_name),
              UG_TEST(test_error_unknown_buffer_in_override),
              UG_TEST(test_error_bad_dtype_in_override),
              UG_TEST(test_error_override_without_change),
              UG_TEST(test_error_empty_sweep),
              UG_TEST(test_error_no_families),
              UG_TEST(test_error_missing_file),
              UG_TEST(test_repo_default_sweep_loads),
              UG_TEST(test_repo_smoke_sweep_loads),
              UG_TEST(test_repo_mutants_sweep_loads),
              UG_TEST(test_repo_speed_sweep_loads));
