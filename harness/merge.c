/* SPDX-License-Identifier: MIT */
#include "merge.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "budgets.h"
#include "runner.h"

typedef struct {
    const char *path;
    json_t *root;
    size_t index;
} shard;

static ug_status bad(const char *path, const char *what)
{
    return ug_fail(UG_EPARSE, "%s: %s", path, what);
}

/* Reals are written as JSON numbers, or "inf"/"-inf"/"nan" strings. */
static double real_of(const json_t *j)
{
    if (json_is_number(j)) return json_number_value(j);
    const char *s = json_string_value(j);
    if (s && strcmp(s, "inf") == 0) return INFINITY;
    if (s && strcmp(s, "-inf") == 0) return -INFINITY;
    return NAN;
}

static uint64_t uint_of(const json_t *obj, const char *key)
{
    return (uint64_t)json_integer_value(json_object_get(obj, key));
}

static bool hex_of(const json_t *j, uint64_t *out)
{
    const char *s = json_string_value(j);
    char *end;
    if (!s || strlen(s) != 16) return false;
    *out = strtoull(s, &end, 16);
    return *end == '\0';
}

static ug_summary summary_of(const json_t *j)
{
    ug_summary s = {0};
    s.elements = uint_of(j, "elements");
    s.moderate = uint_of(j, "moderate");
    s.correctly_rounded = uint_of(j, "correctly_rounded");
    s.class_failures = uint_of(j, "class_failures");
    s.over_bound = uint_of(j, "over_bound");
    s.flagged = uint_of(j, "flagged");
    s.max_ulp_dist = (uint32_t)uint_of(j, "max_ulp_dist");
    s.p99_ulp_dist = (uint32_t)uint_of(j, "p99_ulp_dist");
    s.max_ulp_dist_all = (uint32_t)uint_of(j, "max_ulp_dist_all");
    s.max_ulp_err = real_of(json_object_get(j, "max_ulp_err"));
    s.max_ratio = real_of(json_object_get(j, "max_ratio"));
    s.max_cond = real_of(json_object_get(j, "max_cond"));
    s.worst_index = (size_t)uint_of(j, "worst_index");
    s.sum_sq_err = real_of(json_object_get(j, "sum_sq_err"));
    s.sum_sq_ref = real_of(json_object_get(j, "sum_sq_ref"));
    return s;
}

/* ------------------------------------------------------------------------
 * The strict check of a report.json: a table per object; a lower-case type
 * letter also accepts null (or absence). S string, U unsigned, I u32, R real
 * (number or "inf"/"-inf"/"nan"), B boolean, H 16 hex digits, O object,
 * A array. */

typedef struct {
    const char *key;
    char type;
} field;

static const field summary_fields[] = {
    {"elements", 'U'}, {"moderate", 'U'}, {"correctly_rounded", 'U'}, {"class_failures", 'U'},
    {"over_bound", 'U'}, {"flagged", 'U'}, {"max_ulp_dist", 'I'}, {"p99_ulp_dist", 'I'},
    {"max_ulp_dist_all", 'I'}, {"max_ulp_err", 'R'}, {"max_ratio", 'R'}, {"max_cond", 'R'},
    {"share_cr", 'R'}, {"worst_index", 'U'}, {"sum_sq_err", 'R'}, {"sum_sq_ref", 'R'}, {NULL, 0},
};
static const field aggregate_fields[] = {{"dist_histogram", 'A'}, {"worst_case", 'o'}, {NULL, 0}};
static const field worst_case_fields[] = {{"label", 'S'}, {"index", 'U'}, {NULL, 0}};
static const field run_fields[] = {
    {"kernels", 'S'}, {"sweep", 'O'}, {"moderate_condition", 'R'}, {"wall_seconds", 'R'}, {"memory", 'O'},
    {NULL, 0},
};
static const field profile_fields[] = {{"name", 'S'}, {"hash", 'H'}, {"origin", 'S'}, {"products", 'S'}, {NULL, 0}};
static const field root_fields[] = {{"profile", 'O'}, {NULL, 0}};
static const field sweep_fields[] = {{"path", 'S'}, {"content_hash", 'H'}, {"filter", 'S'}, {"shard", 'o'}, {NULL, 0}};
static const field shard_fields[] = {{"index", 'U'}, {"count", 'U'}, {NULL, 0}};
static const field memory_fields[] = {{"peak_rss_kib", 'U'}, {NULL, 0}};
static const field family_fields[] = {{"name", 'S'}, {"bits", 'O'}, {"outputs", 'A'}, {NULL, 0}};
static const field output_fields[] = {{"name", 'S'}, {"modes", 'O'}, {NULL, 0}};
static const field case_fields[] = {
    {"index", 'U'}, {"label", 'S'}, {"family", 'S'}, {"passed", 'B'}, {"failure", 's'}, {"kernel_status", 'O'},
    {"elements", 'U'}, {"isa_bits_agree", 'B'}, {"kernel_seconds", 'R'}, {"reference_seconds", 'R'},
    {"bits_hash", 'h'}, {"isa_bits", 'O'}, {"plan", 'o'}, {"samples", 'A'}, {"outputs", 'O'}, {"unchecked", 'o'},
    {NULL, 0},
};
static const field status_fields[] = {{"code", 'S'}, {"message", 'S'}, {NULL, 0}};
static const field plan_fields[] = {
    {"threads_planned", 'U'}, {"threads_needed", 'U'}, {"tg_bytes_planned", 'U'}, {"tg_bytes_needed", 'U'},
    {"finding", 's'}, {NULL, 0},
};

static ug_status check_field(const char *file, const char *where, const json_t *obj, const field *f)
{
    json_t *v = json_object_get(obj, f->key);
    if (f->type >= 'a' && (!v || json_is_null(v))) return ug_ok();
    const char *s;
    uint64_t u;
    uint32_t u32;
    double d;
    bool b;
    switch (f->type) {
    case 'S': case 's': return ug_json_string(file, where, obj, f->key, &s);
    case 'U': return ug_json_uint(file, where, obj, f->key, UINT64_MAX, &u);
    case 'I': return ug_json_u32(file, where, obj, f->key, &u32);
    case 'R': return ug_json_real(file, where, obj, f->key, -INFINITY, INFINITY, true, &d);
    case 'B': return ug_json_bool(file, where, obj, f->key, &b);
    case 'H': case 'h': return ug_json_hex64(file, where, obj, f->key, &u);
    case 'O': case 'o': return ug_json_object(file, where, obj, f->key, &v);
    default: return ug_json_array(file, where, obj, f->key, &v);
    }
}

static ug_status check_fields(const char *file, const char *where, const json_t *obj, const field *fields)
{
    for (const field *f = fields; f->key; f++) UG_TRY(check_field(file, where, obj, f));
    return ug_ok();
}

/* obj[key] (an object, checked) against fields; absent or null passes when nullable. */
static ug_status check_member(const char *file, const char *where, const json_t *obj, const char *key,
                              const field *fields)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return ug_ok();
    char item[UG_JSON_WHERE];
    ug_json_join(item, where, key);
    return check_fields(file, item, v, fields);
}

/* One element of a tuple: 'U' an integer in [0, max], 'R' a real. */
typedef struct {
    char type;
    json_int_t max;
} tuple_item;

/* Every element of array (at JSON path where) is an array of the items given. */
static ug_status check_tuples(const char *file, const char *where, const json_t *array, const tuple_item *items)
{
    size_t i;
    json_t *x;
    json_array_foreach(array, i, x) {
        char key[32], item[UG_JSON_WHERE];
        snprintf(key, sizeof key, "[%zu]", i);
        ug_json_join(item, where, key);
        UG_TRY(ug_json_array(file, where, array, key, &x));
        for (size_t k = 0; items[k].type; k++) {
            char index[32];
            json_int_t n;
            double d;
            snprintf(index, sizeof index, "[%zu]", k);
            UG_TRY(items[k].type == 'U' ? ug_json_int(file, item, x, index, 0, items[k].max, &n)
                                        : ug_json_real(file, item, x, index, -INFINITY, INFINITY, true, &d));
        }
    }
    return ug_ok();
}

/* {mode: summary} for every mode present; aggregates carry histogram and worst case too. */
static ug_status check_modes(const char *file, const char *where, const json_t *modes, bool aggregate)
{
    const char *mode;
    json_t *s;
    json_object_foreach((json_t *)modes, mode, s) {
        char item[UG_JSON_WHERE];
        ug_json_join(item, where, mode);
        ug_ref_mode m;
        UG_TRY(ug_json_mode(file, where, mode, s, &m));
        UG_TRY(check_fields(file, item, s, summary_fields));
        if (!aggregate) continue;
        UG_TRY(check_fields(file, item, s, aggregate_fields));
        UG_TRY(check_member(file, item, s, "worst_case", worst_case_fields));
        /* [[bin, count], ...] */
        static const tuple_item bin[] = {{'U', UG_DIST_BINS - 1}, {'U', LLONG_MAX}, {0, 0}};
        char at[UG_JSON_WHERE];
        ug_json_join(at, item, "dist_histogram");
        UG_TRY(check_tuples(file, at, json_object_get(s, "dist_histogram"), bin));
    }
    return ug_ok();
}

static ug_status check_hashes(const char *file, const char *where, const json_t *obj)
{
    const char *key;
    json_t *v;
    uint64_t h;
    json_object_foreach((json_t *)obj, key, v) UG_TRY(ug_json_hex64(file, where, obj, key, &h));
    return ug_ok();
}

static ug_status check_family(const char *file, const char *where, const json_t *fam)
{
    UG_TRY(check_fields(file, where, fam, family_fields));
    const char *name = json_string_value(json_object_get(fam, "name"));
    if (!ug_family_find(name)) return ug_json_fail(file, where, "name", "no kernel family \"%s\"", name);
    char at[UG_JSON_WHERE];
    ug_json_join(at, where, "bits");
    UG_TRY(check_hashes(file, at, json_object_get(fam, "bits")));
    json_t *outputs = json_object_get(fam, "outputs"), *output;
    size_t i;
    ug_json_join(at, where, "outputs");
    json_array_foreach(outputs, i, output) {
        char item[UG_JSON_WHERE], modes_at[UG_JSON_WHERE];
        ug_json_join_index(item, at, i);
        UG_TRY(ug_json_check_object(file, at, item + strlen(at), output));
        UG_TRY(check_fields(file, item, output, output_fields));
        ug_json_join(modes_at, item, "modes");
        UG_TRY(check_modes(file, modes_at, json_object_get(output, "modes"), true));
    }
    return ug_ok();
}

static ug_status check_case(const char *file, const char *where, const json_t *c)
{
    UG_TRY(check_fields(file, where, c, case_fields));
    UG_TRY(check_member(file, where, c, "kernel_status", status_fields));
    UG_TRY(check_member(file, where, c, "plan", plan_fields));
    char at[UG_JSON_WHERE];
    ug_json_join(at, where, "isa_bits");
    UG_TRY(check_hashes(file, at, json_object_get(c, "isa_bits")));
    /* [[output ordinal, mode, cond, ulp_err, bound_ulps], ...] */
    static const tuple_item sample[] = {
        {'U', UG_MAX_BUFFERS - 1}, {'U', UG_REF_MODE_COUNT - 1}, {'R', 0}, {'R', 0}, {'R', 0}, {0, 0},
    };
    ug_json_join(at, where, "samples");
    UG_TRY(check_tuples(file, at, json_object_get(c, "samples"), sample));
    const char *output;
    json_t *modes, *outputs = json_object_get(c, "outputs");
    ug_json_join(at, where, "outputs");
    json_object_foreach(outputs, output, modes) {
        char item[UG_JSON_WHERE];
        ug_json_join(item, at, output);
        UG_TRY(ug_json_check_object(file, at, output, modes));
        UG_TRY(check_modes(file, item, modes, false));
    }
    return ug_ok();
}

ug_status ug_report_check(const char *path, const json_t *root)
{
    UG_TRY(ug_json_schema(path, root, UG_REPORT_SCHEMA, NULL));
    json_t *run, *families, *cases, *x;
    UG_TRY(check_fields(path, "", root, root_fields));
    UG_TRY(check_member(path, "", root, "profile", profile_fields));
    UG_TRY(ug_json_object(path, "", root, "run", &run));
    UG_TRY(check_fields(path, "run", run, run_fields));
    if (json_object_get(run, "sample"))
        return ug_fail(UG_EPARSE, "%s: run.sample: a sampled run (verify --sample-slices) measured part of each case: "
                                  "its figures cannot be merged, re-gated or compared; run without sampling", path);
    UG_TRY(check_member(path, "run", run, "sweep", sweep_fields));
    UG_TRY(check_member(path, "run", run, "memory", memory_fields));
    UG_TRY(check_member(path, "run.sweep", json_object_get(run, "sweep"), "shard", shard_fields));
    UG_TRY(ug_json_array(path, "", root, "families", &families));
    size_t i;
    json_array_foreach(families, i, x) {
        char item[UG_JSON_WHERE];
        ug_json_join_index(item, "families", i);
        UG_TRY(ug_json_check_object(path, "families", item + strlen("families"), x));
        UG_TRY(check_family(path, item, x));
    }
    UG_TRY(ug_json_array(path, "", root, "cases", &cases));
    json_array_foreach(cases, i, x) {
        char item[UG_JSON_WHERE];
        ug_json_join_index(item, "cases", i);
        UG_TRY(ug_json_check_object(path, "cases", item + strlen("cases"), x));
        UG_TRY(check_case(path, item, x));
    }
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * Rebuilding the run (every item read below passed ug_report_check). */

static ug_status load_shards(const char *const *paths, size_t n, shard *shards)
{
    bool *seen = calloc(n, sizeof *seen);
    if (!seen) return ug_fail(UG_ENOMEM, "merge: out of memory");
    ug_status st = ug_ok();
    for (size_t i = 0; i < n && ug_is_ok(&st); i++) {
        shards[i].path = paths[i];
        st = ug_json_load("report", paths[i], &shards[i].root);
        if (ug_is_ok(&st)) st = ug_report_check(paths[i], shards[i].root);
        if (!ug_is_ok(&st)) break;
        json_t *sh = json_object_get(json_object_get(json_object_get(shards[i].root, "run"), "sweep"), "shard");
        if (json_is_null(sh) && n == 1)
            shards[i].index = 0; /* a whole run: `ulpgate report` re-renders it */
        else if (!sh || json_is_null(sh)) st = bad(paths[i], "run.sweep.shard is missing: not a shard's report (verify --shard I/N)");
        else if (uint_of(sh, "count") != n)
            st = ug_fail(UG_EINVAL, "%s: a shard of %" PRIu64 ", but %zu reports were given", paths[i], uint_of(sh, "count"), n);
        else if ((shards[i].index = (size_t)uint_of(sh, "index")) >= n || seen[shards[i].index])
            st = ug_fail(UG_EINVAL, "%s: shard index %zu is out of range or given twice", paths[i], shards[i].index);
        else
            seen[shards[i].index] = true;
    }
    free(seen);
    return st;
}

#define PLUGIN_PREFIX "plugin: "

/* Every shard must describe the same kernels, sweep file, content and filter. */
static ug_status same_sweep(const shard *shards, size_t n, const char **path, const char **filter, uint64_t *hash,
                            double *moderate)
{
    json_t *run0 = json_object_get(shards[0].root, "run"), *sweep0 = json_object_get(run0, "sweep");
    *path = json_string_value(json_object_get(sweep0, "path"));
    *filter = json_string_value(json_object_get(sweep0, "filter"));
    *moderate = real_of(json_object_get(run0, "moderate_condition"));
    if (!*path || !*filter || !hex_of(json_object_get(sweep0, "content_hash"), hash))
        return bad(shards[0].path, "run.sweep lacks path, filter or content_hash");
    const char *kernels0 = json_string_value(json_object_get(run0, "kernels"));
    for (size_t i = 0; i < n; i++) {
        /* A candidate's cases are the manifest's, not the sweep's: its report is not rebuilt from the sweep. */
        const char *kernels = json_string_value(json_object_get(json_object_get(shards[i].root, "run"), "kernels"));
        if (strcmp(kernels, "built-in") != 0 && strncmp(kernels, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) != 0)
            return ug_fail(UG_EINVAL, "%s: a run of \"%s\": merge and report rebuild runs of the built-in kernels "
                           "or of a --kernel-lib library (re-run score for its report; compare reads it)",
                           shards[i].path, kernels);
        if (strcmp(kernels, kernels0) != 0)
            return ug_fail(UG_EINVAL, "%s and %s are shards of different runs (kernels \"%s\", \"%s\")",
                           shards[0].path, shards[i].path, kernels0, kernels);
    }
    for (size_t i = 1; i < n; i++) {
        json_t *run = json_object_get(shards[i].root, "run"), *sweep = json_object_get(run, "sweep");
        uint64_t h;
        const char *p = json_string_value(json_object_get(sweep, "path"));
        const char *f = json_string_value(json_object_get(sweep, "filter"));
        if (!p || !f || !hex_of(json_object_get(sweep, "content_hash"), &h) || strcmp(p, *path) || strcmp(f, *filter) ||
            h != *hash || real_of(json_object_get(run, "moderate_condition")) != *moderate)
            return ug_fail(UG_EINVAL, "%s and %s are shards of different runs (sweep path, content, filter or "
                           "moderate condition differ)", shards[0].path, shards[i].path);
    }
    return ug_ok();
}

/* Every shard's bounds must come from the same profile (name and hash); the
 * merged run names it. */
static ug_status same_profile(const shard *shards, size_t n, ug_profile_id *out)
{
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_object_get(shards[i].root, "profile");
        const char *name = json_string_value(json_object_get(p, "name")), *hash = json_string_value(json_object_get(p, "hash"));
        const char *origin = json_string_value(json_object_get(p, "origin"));
        const char *products = json_string_value(json_object_get(p, "products"));
        if (!name || !hash || !origin || !products || strlen(name) >= sizeof out->name ||
            strlen(hash) >= sizeof out->hash || strlen(origin) >= sizeof out->origin)
            return bad(shards[i].path, "profile lacks name, hash, origin or products");
        if (i == 0) {
            snprintf(out->name, sizeof out->name, "%s", name);
            snprintf(out->hash, sizeof out->hash, "%s", hash);
            snprintf(out->origin, sizeof out->origin, "%s", origin);
            out->products = strcmp(products, "tf32") == 0 ? UG_PRODUCTS_TF32 : UG_PRODUCTS_F32;
        } else if (strcmp(name, out->name) || strcmp(hash, out->hash)) {
            return ug_fail(UG_EINVAL, "%s (profile %s %s) and %s (profile %s %s) are shards of different runs",
                           shards[0].path, out->name, out->hash, shards[i].path, name, hash);
        }
    }
    return ug_ok();
}

static const ug_family_result *family_of(const ug_run_result *run, const ug_family *f)
{
    for (size_t i = 0; i < run->n_families; i++)
        if (run->families[i].family == f) return &run->families[i];
    return NULL;
}

static int output_ordinal(const ug_family_result *fr, const char *name)
{
    for (size_t o = 0; name && o < fr->n_outputs; o++)
        if (strcmp(fr->family->buffers[fr->output_buffer[o]].name, name) == 0) return (int)o;
    return -1;
}

static void read_plan(const json_t *plan, ug_case_result *r)
{
    if (!json_is_object(plan)) return;
    r->has_plan = true;
    r->plan.threads_planned = uint_of(plan, "threads_planned");
    r->plan.threads_needed = uint_of(plan, "threads_needed");
    r->plan.tg_bytes_planned = uint_of(plan, "tg_bytes_planned");
    r->plan.tg_bytes_needed = uint_of(plan, "tg_bytes_needed");
    const char *finding = json_string_value(json_object_get(plan, "finding"));
    snprintf(r->plan_finding, sizeof r->plan_finding, "%s", finding ? finding : "");
}

static ug_status read_case(const char *path, const json_t *j, ug_run_result *out, bool *filled)
{
    size_t idx = (size_t)uint_of(j, "index");
    const char *label = json_string_value(json_object_get(j, "label"));
    const char *family = json_string_value(json_object_get(j, "family"));
    if (idx >= out->n_cases || filled[idx] || !label || !family || strcmp(out->cases[idx].c->label, label) ||
        strcmp(out->cases[idx].c->family->name, family))
        return ug_fail(UG_EPARSE, "%s: case %zu (%s/%s) does not match the sweep, or appears twice", path, idx,
                       family ? family : "?", label ? label : "?");
    filled[idx] = true;
    ug_case_result *r = &out->cases[idx];
    r->passed = json_is_true(json_object_get(j, "passed"));
    const char *failure = json_string_value(json_object_get(j, "failure"));
    snprintf(r->failure, sizeof r->failure, "%s", failure ? failure : "");
    json_t *ks = json_object_get(j, "kernel_status");
    const char *code = json_string_value(json_object_get(ks, "code"));
    for (int c = UG_OK; code && c <= UG_EINPUT; c++)
        if (strcmp(code, ug_code_name((ug_code)c)) == 0) r->kernel_status.code = (ug_code)c;
    const char *msg = json_string_value(json_object_get(ks, "message"));
    snprintf(r->kernel_status.msg, sizeof r->kernel_status.msg, "%s", msg ? msg : "");
    r->elements = uint_of(j, "elements");
    r->isa_bits_agree = json_is_true(json_object_get(j, "isa_bits_agree"));
    r->kernel_seconds = real_of(json_object_get(j, "kernel_seconds"));
    r->reference_seconds = real_of(json_object_get(j, "reference_seconds"));
    hex_of(json_object_get(j, "bits_hash"), &r->bits_hash);
    const char *isa_name;
    json_t *hash;
    json_object_foreach(json_object_get(j, "isa_bits"), isa_name, hash) {
        ug_isa isa;
        if (out->source_name && strcmp(isa_name, out->source_name) == 0) {
            r->source_ran = true; /* its bits are bits_hash */
            continue;
        }
        if (!ug_isa_parse(isa_name, &isa) || !hex_of(hash, &r->isa_bits[isa]))
            return ug_fail(UG_EPARSE, "%s: case %zu: bad isa_bits entry '%s'", path, idx, isa_name);
        r->isa_ran[isa] = true;
    }
    read_plan(json_object_get(j, "plan"), r);
    size_t k;
    json_t *x;
    json_array_foreach(json_object_get(j, "samples"), k, x) {
        ug_sample smp = {(uint8_t)json_integer_value(json_array_get(x, 0)), (uint8_t)json_integer_value(json_array_get(x, 1)),
                         real_of(json_array_get(x, 2)), real_of(json_array_get(x, 3)), real_of(json_array_get(x, 4))};
        UG_TRY(ug_samples_push(&r->samples, &smp));
    }
    const ug_family_result *fr = family_of(out, r->c->family);
    const char *output;
    json_t *modes, *input;
    json_object_foreach(json_object_get(j, "unchecked"), output, input) {
        const char *name = json_string_value(input);
        const int o = output_ordinal(fr, output), missing = name ? ug_family_buffer_index(r->c->family, name) : -1;
        if (o < 0 || missing < 0)
            return ug_fail(UG_EPARSE, "%s: case %zu: unchecked: '%s' is not an output, or its value not a buffer, "
                           "of %s", path, idx, output, r->c->family->name);
        r->unchecked[o] = true;
        r->unchecked_missing[o] = (uint8_t)missing;
    }
    json_object_foreach(json_object_get(j, "outputs"), output, modes) {
        int o = output_ordinal(fr, output);
        if (o < 0) return ug_fail(UG_EPARSE, "%s: case %zu: unknown output '%s'", path, idx, output);
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            json_t *s = json_object_get(modes, ug_ref_mode_name((ug_ref_mode)m));
            if (s) r->sum[o][m] = summary_of(s);
        }
    }
    return ug_ok();
}

static ug_status stats_of(const json_t *j, ug_stats *st)
{
    UG_TRY(ug_stats_init(st));
    st->sum = summary_of(j);
    size_t i;
    json_t *bin;
    json_array_foreach(json_object_get(j, "dist_histogram"), i, bin) {
        json_int_t at = json_integer_value(json_array_get(bin, 0)), count = json_integer_value(json_array_get(bin, 1));
        if (at >= 0 && at < UG_DIST_BINS) gsl_histogram_accumulate(st->dist, (double)at + 0.5, (double)count);
    }
    return ug_ok();
}

/* Index of the case that holds an aggregate's worst element. */
static size_t worst_case_index(const ug_run_result *out, const ug_family *f, const json_t *agg)
{
    const char *label = json_string_value(json_object_get(json_object_get(agg, "worst_case"), "label"));
    for (size_t i = 0; label && i < out->n_cases; i++)
        if (out->cases[i].c->family == f && strcmp(out->cases[i].c->label, label) == 0) return i;
    return SIZE_MAX;
}

/* The family aggregates are the shards' aggregates merged; on equal max
 * ratios the worst element is the one of the earlier case, as in one run. */
static ug_status merge_aggregates(const shard *sh, ug_run_result *out, size_t worst_case[][UG_MAX_BUFFERS][UG_REF_MODE_COUNT])
{
    size_t i, j;
    json_t *family, *output;
    json_array_foreach(json_object_get(sh->root, "families"), i, family) {
        const ug_family *f = ug_family_find(json_string_value(json_object_get(family, "name")));
        ug_family_result *fr = f ? (ug_family_result *)family_of(out, f) : NULL;
        if (!fr) return bad(sh->path, "a family of the report is not in the sweep");
        size_t fi = (size_t)(fr - out->families);
        json_array_foreach(json_object_get(family, "outputs"), j, output) {
            int o = output_ordinal(fr, json_string_value(json_object_get(output, "name")));
            if (o < 0) return bad(sh->path, "unknown output in families");
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
                json_t *agg = json_object_get(json_object_get(output, "modes"), ug_ref_mode_name((ug_ref_mode)m));
                ug_stats st;
                if (!agg) continue;
                UG_TRY(stats_of(agg, &st));
                ug_summary before = fr->agg[o][m].sum;
                size_t wc = worst_case_index(out, f, agg);
                ug_stats_merge(&fr->agg[o][m], &st);
                bool take = st.sum.elements &&
                            (before.elements == 0 || st.sum.max_ratio > before.max_ratio ||
                             (st.sum.max_ratio == before.max_ratio && wc < worst_case[fi][o][m]));
                fr->agg[o][m].sum.worst_index = take ? st.sum.worst_index : before.worst_index;
                if (take) worst_case[fi][o][m] = wc;
                ug_stats_free(&st);
            }
        }
    }
    return ug_ok();
}

/* Floating-point sums depend on their order: the family's sums of squares
 * are redone from the cases' sums in case order, as one run adds them. */
static void refold_square_sums(ug_run_result *out)
{
    for (size_t f = 0; f < out->n_families; f++) {
        ug_family_result *fr = &out->families[f];
        for (size_t o = 0; o < fr->n_outputs; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
                ug_summary *a = &fr->agg[o][m].sum;
                a->sum_sq_err = a->sum_sq_ref = 0;
                for (size_t i = 0; i < out->n_cases; i++) {
                    const ug_case_result *r = &out->cases[i];
                    if (r->c->family != fr->family || r->c->expect_reject) continue;
                    a->sum_sq_err += r->sum[o][m].sum_sq_err;
                    a->sum_sq_ref += r->sum[o][m].sum_sq_ref;
                }
            }
    }
}

static bool family_in_report(const ug_case *c, const void *root)
{
    size_t i;
    json_t *family;
    json_array_foreach(json_object_get(root, "families"), i, family)
        if (strcmp(json_string_value(json_object_get(family, "name")), c->family->name) == 0) return true;
    return false;
}

static ug_status rebuild(shard *shards, size_t n, ug_sweep *sweep, ug_run_result *out)
{
    const char *path, *filter;
    uint64_t hash;
    double moderate;
    UG_TRY(same_sweep(shards, n, &path, &filter, &hash, &moderate));
    UG_TRY(ug_sweep_load(path, sweep));
    if (sweep->content_hash != hash)
        return ug_fail(UG_EINVAL, "sweep %s changed since the shards ran (content hash %016" PRIx64 ", shards %016" PRIx64 ")",
                       path, sweep->content_hash, hash);
    /* A library's run holds the sweep's cases of its families, renumbered before the filter (verify's order). */
    const char *kernels = json_string_value(json_object_get(json_object_get(shards[0].root, "run"), "kernels"));
    bool plugin = strcmp(kernels, "built-in") != 0;
    if (plugin) ug_sweep_keep(sweep, family_in_report, shards[0].root);
    if (*filter) UG_TRY(ug_sweep_filter(sweep, filter));
    ug_profile_id profile;
    UG_TRY(same_profile(shards, n, &profile));
    UG_TRY(ug_run_result_init(sweep, moderate, out));
    if (plugin) {
        out->source_name = "plugin";
        snprintf(out->source_detail, sizeof out->source_detail, "%s", kernels + strlen(PLUGIN_PREFIX));
    }
    out->profile = profile;
    bool *filled = calloc(out->n_cases ? out->n_cases : 1, sizeof *filled);
    size_t (*worst_case)[UG_MAX_BUFFERS][UG_REF_MODE_COUNT] = malloc((out->n_families ? out->n_families : 1) * sizeof *worst_case);
    ug_status st = filled && worst_case ? ug_ok() : ug_fail(UG_ENOMEM, "merge: out of memory");
    for (size_t f = 0; worst_case && f < out->n_families; f++)
        for (size_t o = 0; o < UG_MAX_BUFFERS; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) worst_case[f][o][m] = SIZE_MAX;
    for (size_t s = 0; s < n && ug_is_ok(&st); s++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(shards[s].root, "cases"), i, c) {
            st = read_case(shards[s].path, c, out, filled);
            if (!ug_is_ok(&st)) break;
        }
        json_t *run = json_object_get(shards[s].root, "run");
        out->wall_seconds += real_of(json_object_get(run, "wall_seconds"));
        uint64_t rss = uint_of(json_object_get(run, "memory"), "peak_rss_kib");
        if (rss > out->peak_rss_kib) out->peak_rss_kib = rss;
    }
    for (size_t i = 0; ug_is_ok(&st) && i < out->n_cases; i++)
        if (!filled[i]) st = ug_fail(UG_EINVAL, "no shard holds case %zu (%s/%s)", i, out->cases[i].c->family->name, out->cases[i].c->label);
    if (ug_is_ok(&st)) ug_run_result_fold_cases(out);
    /* Aggregates in shard order: the order of merging does not change counts or maxima. */
    for (size_t k = 0; k < n && ug_is_ok(&st); k++)
        for (size_t s = 0; s < n && ug_is_ok(&st); s++)
            if (shards[s].index == k) st = merge_aggregates(&shards[s], out, worst_case);
    if (ug_is_ok(&st)) refold_square_sums(out);
    free(filled);
    free(worst_case);
    return st;
}

ug_status ug_merge_shards(const char *const *paths, size_t n, ug_sweep *sweep, ug_run_result *out)
{
    memset(sweep, 0, sizeof *sweep);
    memset(out, 0, sizeof *out);
    if (n == 0) return ug_fail(UG_EINVAL, "merge: no shard report given");
    shard *shards = calloc(n, sizeof *shards);
    if (!shards) return ug_fail(UG_ENOMEM, "merge: out of memory for %zu shards", n);
    ug_status st = load_shards(paths, n, shards);
    if (ug_is_ok(&st)) st = rebuild(shards, n, sweep, out);
    for (size_t i = 0; i < n; i++) json_decref(shards[i].root);
    free(shards);
    return st;
}
