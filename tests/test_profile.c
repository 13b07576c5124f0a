/* SPDX-License-Identifier: MIT */
/* Arithmetic profiles (harness/profile.c) and the f32 model they drive
 * (ref/f32_model.c): the cpu profile as shipped, one test per way a profile
 * file can be wrong (each names file, key and value), --profile resolution,
 * and the model's functions, including that under cpu they return exactly
 * the constants the bounds used before profiles. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/profile.h"
#include "../ref/ref.h"
#include "tests.h"

#define OPS_REST                                                                                          \
    "\"exp2\": {\"ulps\": 1}, \"log2\": {\"ulps\": 1}, \"pow\": {\"ulps\": 1}, \"rsqrt\": {\"ulps\": 1}, " \
    "\"sqrt\": {\"ulps\": 0.5}, \"div\": {\"ulps\": 0.5}, \"sin\": {\"ulps\": 1}, \"cos\": {\"ulps\": 1}"
#define PROFILE(top, exp) "{\"profile\": \"t\", \"subnormals\": \"gradual\", " top "\"ops\": {\"exp\": " exp ", " OPS_REST "}}"
#define VALID PROFILE("", "{\"ulps\": 2, \"ulps_per_abs_x\": 1.5, \"range\": [-100, 10]}")

/* Writes text to a fresh file and loads it. */
static ug_status load_text(const char *text, ug_f32_model *m, char *path, size_t size)
{
    char dir[] = "/tmp/ug_profile_XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    snprintf(path, size, "%s/p.json", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
    ug_status st = ug_profile_load(path, m);
    ug_test_remove_tree(dir);
    return st;
}

static void cpu_profile_as_shipped(void)
{
    const ug_f32_model *m = ug_test_cpu_model();
    CU_ASSERT_STRING_EQUAL(m->id.name, "cpu");
    CU_ASSERT_STRING_EQUAL(m->id.origin, "fixtures/profiles/cpu.json");
    CU_ASSERT_EQUAL(strlen(m->id.hash), 16);
    CU_ASSERT_EQUAL(m->subnormals, UG_SUBNORMALS_GRADUAL);
    CU_ASSERT_EQUAL(m->products, UG_PRODUCTS_F32);
    /* the bounds' constants before profiles: expf within 1 ulp, exact at 0 */
    CU_ASSERT_EQUAL(m->ops[UG_F32_EXP].ulps, 1);
    CU_ASSERT(m->ops[UG_F32_EXP].exact_at_zero);
    /* what it declares exact at zero, this machine's libm is */
    const float at_zero[UG_F32_OP_COUNT] = {expf(0), exp2f(0), log2f(0), powf(2, 0), 1 / sqrtf(0), sqrtf(0), 1 / 0.0f,
                                            sinf(0), cosf(0)};
    const float exact[UG_F32_OP_COUNT] = {1, 1, -INFINITY, 1, INFINITY, 0, INFINITY, 0, 1};
    for (int op = 0; op < UG_F32_OP_COUNT; op++)
        if (m->ops[op].exact_at_zero) CU_ASSERT_EQUAL(at_zero[op], exact[op]);
    for (int op = 0; op < UG_F32_OP_COUNT; op++) {
        CU_ASSERT(isinf(m->ops[op].range_lo) && m->ops[op].range_lo < 0);
        CU_ASSERT(isinf(m->ops[op].range_hi) && m->ops[op].range_hi > 0);
    }
}

static void valid_profile_fields(void)
{
    ug_f32_model m;
    char path[128];
    ug_status st = load_text(VALID, &m, path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL(m.ops[UG_F32_EXP].ulps, 2);
    CU_ASSERT_EQUAL(m.ops[UG_F32_EXP].ulps_per_abs_x, 1.5);
    CU_ASSERT_EQUAL(m.ops[UG_F32_EXP].range_lo, -100);
    CU_ASSERT_EQUAL(m.ops[UG_F32_EXP].range_hi, 10);
    CU_ASSERT(!m.ops[UG_F32_EXP].exact_at_zero);
    CU_ASSERT_EQUAL(m.products, UG_PRODUCTS_F32); /* the default */
}

/* Each malformed profile: UG_EPARSE, and the message names the file, the key
 * and the value. */
static void malformed_profiles_refused(void)
{
    static const struct {
        const char *text, *key, *value;
    } cases[] = {
        {PROFILE("\"colour\": \"red\", ", "{\"ulps\": 1}"), "colour", "\"red\""},
        {PROFILE("", "{\"ulps\": 1, \"ulp\": 2}"), "ops.exp.ulp", "2"},
        {PROFILE("", "{\"ulps\": \"1\"}"), "ops.exp.ulps", "\"1\""},
        {PROFILE("", "{\"ulps\": -1}"), "ops.exp.ulps", "-1"},
        {PROFILE("", "{\"abs\": -0.5}"), "ops.exp.abs", "-0.5"},
        {PROFILE("", "{\"ulps\": 1, \"ulps\": 2}"), "duplicate", "ulps"},
        {PROFILE("", "{\"ulps\": 1}, \"tanh\": {\"ulps\": 1}"), "ops.tanh", "{\"ulps\":1}"},
        {PROFILE("", "{\"ulps\": 1, \"range\": [2, 1]}"), "ops.exp.range", "[2,1]"},
        {PROFILE("", "{\"ulps\": 1, \"range\": [1]}"), "ops.exp.range", "[1]"},
        {PROFILE("\"products\": \"bf16\", ", "{\"ulps\": 1}"), "products", "\"bf16\""},
        {PROFILE("\"exact_at_zero\": [\"tan\"], ", "{\"ulps\": 1}"), "exact_at_zero[0]", "\"tan\""},
        {PROFILE("\"exact_at_zero\": [\"exp\", \"exp\"], ", "{\"ulps\": 1}"), "exact_at_zero[1]", "\"exp\""},
        {PROFILE("\"description\": 7, ", "{\"ulps\": 1}"), "description", "7"},
        {"{\"profile\": \"t\", \"subnormals\": \"ftz\", \"ops\": {}}", "subnormals", "\"ftz\""},
        {"{\"profile\": \"t\", \"subnormals\": \"gradual\", \"ops\": {\"exp\": {}}}", "ops.exp2", "(missing)"},
        {"{\"profile\": \"a b\", \"subnormals\": \"gradual\", \"ops\": {}}", "profile", "\"a b\""},
        {"[1, 2]", "(top level)", "[1,2]"},
    };
    size_t bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ug_f32_model m;
        char path[128];
        ug_status st = load_text(cases[i].text, &m, path, sizeof path);
        if (st.code != UG_EPARSE || !strstr(st.msg, path) || !strstr(st.msg, cases[i].key) ||
            !strstr(st.msg, cases[i].value))
            UG_TEST_MISMATCH(bad, "case %zu: code %d, message '%s'", i, st.code, st.msg);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void missing_or_special_file_refused(void)
{
    ug_f32_model m;
    ug_status st = ug_profile_load("/nonexistent/p.json", &m);
    CU_ASSERT_EQUAL(st.code, UG_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "/nonexistent/p.json"));
    st = ug_profile_load("/tmp", &m);
    CU_ASSERT_EQUAL(st.code, UG_EINPUT);
}

static void resolution_of_names_and_paths(void)
{
    ug_f32_model m;
    ug_status st = ug_profile_resolve("cpu", NULL, &m);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_STRING_EQUAL(m.id.origin, "fixtures/profiles/cpu.json");
    st = ug_profile_resolve("./fixtures/profiles/cpu.json", NULL, &m);
    CU_ASSERT_EQUAL(st.code, UG_OK);
    CU_ASSERT_STRING_EQUAL(m.id.hash, ug_test_cpu_model()->id.hash);
    /* a NAME found beside the executable when not under the current directory */
    char cwd[4096];
    CU_ASSERT_FATAL(getcwd(cwd, sizeof cwd) != NULL);
    char exe[4200];
    snprintf(exe, sizeof exe, "%s/build/ulpgate", cwd);
    CU_ASSERT_EQUAL_FATAL(chdir("/tmp"), 0);
    st = ug_profile_resolve("cpu", exe, &m);
    CU_ASSERT_EQUAL_FATAL(chdir(cwd), 0);
    CU_ASSERT_EQUAL(st.code, UG_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(m.id.origin, "/build/../fixtures/profiles/cpu.json"));
    st = ug_profile_resolve("no-such-profile", NULL, &m);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "fixtures/profiles/no-such-profile.json"));
    st = ug_profile_resolve("bad name", NULL, &m);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
}

/* Under cpu, the model returns the constants of the bounds before profiles. */
static void cpu_model_matches_former_constants(void)
{
    const ug_f32_model *m = ug_test_cpu_model();
    CU_ASSERT_EQUAL(ug_f32_gamma(10), 10 * 0x1p-24 / (1 - 10 * 0x1p-24));
    CU_ASSERT_EQUAL(ug_f32_dot_gamma(m, 0x1p-20), 0x1p-20);
    CU_ASSERT_EQUAL(ug_f32_underflow(m), 0x1p-149);
    CU_ASSERT_EQUAL(ug_f32_underflow_half(m), 0x1p-150);
    ug_f32_error e = ug_f32_op_error(m, UG_F32_EXP, -3.25, -3.25);
    CU_ASSERT_EQUAL(e.rel, 0x1p-23);
    CU_ASSERT_EQUAL(e.abs, 0x1p-149);
    e = ug_f32_op_error(m, UG_F32_EXP, 0, 0);
    CU_ASSERT(e.rel == 0 && e.abs == 0);
    e = ug_f32_exp_of_difference(m, -2.0f, -0.5f); /* exact difference */
    CU_ASSERT_EQUAL(e.rel, 0x1p-23);
    e = ug_f32_exp_of_difference(m, -1.0f, -1.0f);
    CU_ASSERT(e.rel == 0 && e.abs == 0);
    CU_ASSERT_EQUAL(ug_f32_error_at((ug_f32_error){0x1p-23, 0x1p-149}, 2.0), (2 * 0x1p-23 + 0x1p-149) * UG_F32_SLACK);
    CU_ASSERT_EQUAL(ug_f32_error_at((ug_f32_error){0, 0}, 2.0), 0);
}

static void model_follows_the_profile(void)
{
    ug_f32_model m = *ug_test_cpu_model();
    ug_f32_op_allowance *exp = &m.ops[UG_F32_EXP];
    *exp = (ug_f32_op_allowance){.ulps = 2, .ulps_per_abs_x = 1.5, .rel = 0x1p-30, .abs = 0x1p-140,
                                 .range_lo = -100, .range_hi = 10, .exact_at_zero = false};
    ug_f32_error e = ug_f32_op_error(&m, UG_F32_EXP, -4, -2);
    CU_ASSERT(e.rel >= (2 + 1.5 * 4) * 0x1p-23 + 0x1p-30);
    CU_ASSERT(e.abs >= (2 + 1.5 * 4) * 0x1p-149 + 0x1p-140);
    e = ug_f32_op_error(&m, UG_F32_EXP, 0, 0); /* not exact at zero here */
    CU_ASSERT(e.rel >= 2 * 0x1p-23);
    e = ug_f32_op_error(&m, UG_F32_EXP, -101, -1); /* leaves the range: unbounded */
    CU_ASSERT(isinf(e.rel) && isinf(e.abs));
    CU_ASSERT(isinf(ug_f32_error_at(e, 1.0)));
    e = ug_f32_op_error(&m, UG_F32_EXP, NAN, NAN);
    CU_ASSERT(isinf(e.rel));
    /* the difference's rounding widens the allowance at its reach */
    const ug_f32_error inexact = ug_f32_exp_of_difference(&m, -100.0f, 0x1p-20f);
    CU_ASSERT(inexact.rel > (2 + 1.5 * 100) * 0x1p-23);
    /* flushing: 2^-126 per rounding, op results too */
    m.subnormals = UG_SUBNORMALS_FLUSH_OUTPUTS;
    CU_ASSERT_EQUAL(ug_f32_underflow(&m), 0x1p-126);
    CU_ASSERT_EQUAL(ug_f32_underflow_half(&m), 0x1p-126);
    CU_ASSERT(ug_f32_op_error(&m, UG_F32_SIN, 1, 1).abs >= 0x1p-126);
    /* tf32 products: the operands' 2^-11 roundings */
    m.products = UG_PRODUCTS_TF32;
    CU_ASSERT(ug_f32_dot_gamma(&m, 0) >= 2 * 0x1p-11);
}

/* A flushing profile lets an output below 2^-126 be +-0; gradual does not. */
static void flushed_outputs_allowed_only_when_flushing(void)
{
    ug_ref_value v[2] = {{.r_hi = 0x1p-130, .bound = 0x1p-140}, {.r_hi = 1.0, .bound = 0x1p-24}};
    ug_ref_allow_flushed_output(ug_test_cpu_model(), v, 2);
    CU_ASSERT_EQUAL(v[0].bound, 0x1p-140);
    ug_f32_model flush = *ug_test_cpu_model();
    flush.subnormals = UG_SUBNORMALS_FLUSH;
    ug_ref_allow_flushed_output(&flush, v, 2);
    CU_ASSERT(v[0].bound >= 0x1p-130);
    CU_ASSERT_EQUAL(v[1].bound, 0x1p-24);
}

UG_TEST_SUITE(profile_suite, "profile", UG_TEST(cpu_profile_as_shipped), UG_TEST(valid_profile_fields),
              UG_TEST(malformed_profiles_refused), UG_TEST(missing_or_special_file_refused),
              UG_TEST(resolution_of_names_and_paths), UG_TEST(cpu_model_matches_former_constants),
              UG_TEST(model_follows_the_profile), UG_TEST(flushed_outputs_allowed_only_when_flushing));
