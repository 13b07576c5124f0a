#include "gate.h"

#include "../core/json_dir.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/atomic_file.h"

#define BUDGETS_SCHEMA "ulpgate-budgets/1"
#define BASELINE_SCHEMA "ulpgate-baseline/1"

enum { MAX_FAILED_CASES = 50, WHERE_LEN = 256, NUM_LEN = 32 };

/* Shortest "%.*g" text that reads back as x, for messages. */
static void fmt_num(char out[NUM_LEN], double x)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, NUM_LEN, "%.*g", prec, x);
        if (strtod(out, NULL) == x) return;
    }
}

static const char *output_name(const ug_family_result *fr, size_t o)
{
    return fr->family->buffers[fr->output_buffer[o]].name;
}

/* ------------------------------------------------------------------------
 * Reading JSON: every error names the file and the JSON path of the item. */

/* "where.key" (or "key" at the top level); an over-long path ends in "...". */
static void join(char out[WHERE_LEN], const char *where, const char *key)
{
    if (snprintf(out, WHERE_LEN, "%s%s%s", where, *where ? "." : "", key) >= WHERE_LEN)
        strcpy(out + WHERE_LEN - 4, "...");
}

static ug_status bad_item(const char *file, const char *where, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static ug_status bad_item(const char *file, const char *where, const char *key, const char *fmt, ...)
{
    char item[WHERE_LEN], what[UG_MSG_MAX];
    join(item, where, key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ug_fail(UG_EPARSE, "%s: %s: %s", file, *item ? item : "(top level)", what);
}

static ug_status load_json(const char *path, json_t **root)
{
    json_error_t err;
    *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (*root) return ug_ok();
    if (json_error_code(&err) == json_error_cannot_open_file)
        return ug_fail(UG_EIO, "%s: %s", path, err.text);
    return ug_fail(UG_EPARSE, "%s:%d:%d: %s", path, err.line, err.column, err.text);
}

static ug_status get_item(const char *file, const char *where, const json_t *obj, const char *key,
                          json_t **out)
{
    *out = json_object_get(obj, key);
    return *out ? ug_ok() : bad_item(file, where, key, "missing");
}

static ug_status get_object(const char *file, const char *where, const json_t *obj,
                            const char *key, json_t **out)
{
    UG_TRY(get_item(file, where, obj, key, out));
    return json_is_object(*out) ? ug_ok() : bad_item(file, where, key, "expected an object");
}

static ug_status get_string(const char *file, const char *where, const json_t *obj,
                            const char *key, const char **out)
{
    json_t *v;
    UG_TRY(get_item(file, where, obj, key, &v));
    if (!json_is_string(v)) return bad_item(file, where, key, "expected a string");
    *out = json_string_value(v);
    return ug_ok();
}

/* A JSON number within [lo, hi]. */
static ug_status get_number(const char *file, const char *where, const json_t *obj,
                            const char *key, double lo, double hi, double *out)
{
    json_t *v;
    UG_TRY(get_item(file, where, obj, key, &v));
    if (!json_is_number(v)) return bad_item(file, where, key, "expected a number");
    double x = json_number_value(v);
    char xs[NUM_LEN], ls[NUM_LEN];
    if (x < lo) {
        fmt_num(xs, x);
        fmt_num(ls, lo);
        return bad_item(file, where, key, "%s is below the minimum %s", xs, ls);
    }
    if (x > hi) {
        fmt_num(xs, x);
        fmt_num(ls, hi);
        return bad_item(file, where, key, "%s exceeds the maximum %s", xs, ls);
    }
    *out = x;
    return ug_ok();
}

/* A JSON number, or one of the strings "inf", "-inf", "nan" (how non-finite
 * figures are written, JSON having no literal for them). */
static ug_status get_real(const char *file, const char *where, const json_t *obj, const char *key,
                          double *out)
{
    json_t *v;
    UG_TRY(get_item(file, where, obj, key, &v));
    const char *s = json_string_value(v);
    if (json_is_number(v)) *out = json_number_value(v);
    else if (s && strcmp(s, "inf") == 0) *out = INFINITY;
    else if (s && strcmp(s, "-inf") == 0) *out = -INFINITY;
    else if (s && strcmp(s, "nan") == 0) *out = NAN;
    else return bad_item(file, where, key, "expected a number (or \"inf\", \"-inf\", \"nan\")");
    return ug_ok();
}

static ug_status get_uint(const char *file, const char *where, const json_t *obj, const char *key,
                          uint64_t max, uint64_t *out)
{
    json_t *v;
    UG_TRY(get_item(file, where, obj, key, &v));
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return bad_item(file, where, key, "expected a non-negative integer");
    if ((uint64_t)json_integer_value(v) > max)
        return bad_item(file, where, key, "%" JSON_INTEGER_FORMAT " exceeds the maximum %" PRIu64,
                        json_integer_value(v), max);
    *out = (uint64_t)json_integer_value(v);
    return ug_ok();
}

static ug_status get_u32(const char *file, const char *where, const json_t *obj, const char *key,
                         uint32_t *out)
{
    uint64_t v;
    UG_TRY(get_uint(file, where, obj, key, UINT32_MAX, &v));
    *out = (uint32_t)v;
    return ug_ok();
}

/* Exactly 16 hex digits. */
static ug_status get_hex64(const char *file, const char *where, const json_t *obj,
                           const char *key, uint64_t *out)
{
    const char *s;
    UG_TRY(get_string(file, where, obj, key, &s));
    if (strlen(s) != 16 || strspn(s, "0123456789abcdefABCDEF") != 16)
        return bad_item(file, where, key, "'%s' is not 16 hex digits", s);
    *out = strtoull(s, NULL, 16);
    return ug_ok();
}

static ug_status check_object(const char *file, const char *where, const char *key,
                              const json_t *v)
{
    return json_is_object(v) ? ug_ok() : bad_item(file, where, key, "expected an object");
}

/* Rejects keys outside allowed (NULL-terminated): a misspelt key is an error. */
static ug_status check_keys(const char *file, const char *where, const json_t *obj,
                            const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0) a++;
        if (!*a) return bad_item(file, where, key, "unknown key");
    }
    return ug_ok();
}

static ug_status check_root(const char *file, const json_t *root, const char *const *keys,
                            const char *schema)
{
    const char *s;
    UG_TRY(check_object(file, "", "", root));
    UG_TRY(get_string(file, "", root, "schema", &s));
    if (strcmp(s, schema) != 0)
        return bad_item(file, "", "schema", "'%s' is not the expected '%s'", s, schema);
    return check_keys(file, "", root, keys);
}

static ug_status copy_name(const char *file, const char *where, const char *name, char *dst,
                           size_t cap)
{
    if (strlen(name) >= cap)
        return bad_item(file, where, name, "name is longer than %zu characters", cap - 1);
    strcpy(dst, name);
    return ug_ok();
}

static ug_status parse_mode(const char *file, const char *where, const char *name,
                            ug_ref_mode *out)
{
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        if (strcmp(name, ug_ref_mode_name((ug_ref_mode)m)) == 0) {
            *out = (ug_ref_mode)m;
            return ug_ok();
        }
    }
    return bad_item(file, where, name, "unknown mode '%s' (expected %s or %s)", name,
                    ug_ref_mode_name(UG_REF_EXACT), ug_ref_mode_name(UG_REF_STAGED));
}

static ug_status parse_isa(const char *file, const char *where, const char *name, ug_isa *out)
{
    if (ug_isa_parse(name, out)) return ug_ok();
    return bad_item(file, where, name, "unknown ISA path '%s' (expected %s, %s or %s)", name,
                    ug_isa_name(UG_ISA_PORTABLE), ug_isa_name(UG_ISA_AVX2),
                    ug_isa_name(UG_ISA_AVX512));
}

/* Grows *items by one zeroed element of the given size; NULL when out of memory. */
static void *append(void **items, size_t *n, size_t size)
{
    char *grown = realloc(*items, (*n + 1) * size);
    if (!grown) return NULL;
    *items = grown;
    memset(grown + *n * size, 0, size);
    return grown + (*n)++ * size;
}

static ug_status out_of_memory(const char *file)
{
    return ug_fail(UG_ENOMEM, "%s: out of memory while loading", file);
}

/* ------------------------------------------------------------------------
 * budgets.json */

static ug_status parse_budget(const char *file, const char *where, const json_t *obj,
                              ug_budget *b)
{
    static const char *const keys[] = {"max_ratio", "max_ulp_dist", "p99_ulp_dist",
                                       "min_share_cr", "max_rel_rms", NULL};
    UG_TRY(check_keys(file, where, obj, keys));
    /* SPEC §3: a correct kernel has ratio <= 1 everywhere, so no budget above 1. */
    UG_TRY(get_number(file, where, obj, "max_ratio", 0, 1, &b->max_ratio));
    UG_TRY(get_u32(file, where, obj, "max_ulp_dist", &b->max_ulp_dist));
    UG_TRY(get_u32(file, where, obj, "p99_ulp_dist", &b->p99_ulp_dist));
    b->max_rel_rms = INFINITY;
    if (json_object_get(obj, "max_rel_rms"))
        UG_TRY(get_number(file, where, obj, "max_rel_rms", 0, INFINITY, &b->max_rel_rms));
    return get_number(file, where, obj, "min_share_cr", 0, 1, &b->min_share_cr);
}

static ug_status parse_output_budgets(const char *file, const char *where, const char *family,
                                      const char *output, const json_t *modes, ug_budgets *out)
{
    char name[sizeof out->entries->output], item[WHERE_LEN];
    UG_TRY(copy_name(file, where, output, name, sizeof name));
    join(item, where, output);
    UG_TRY(check_object(file, where, output, modes));
    const char *mode;
    json_t *obj;
    json_object_foreach((json_t *)modes, mode, obj) {
        char mode_item[WHERE_LEN];
        join(mode_item, item, mode);
        UG_TRY(check_object(file, item, mode, obj));
        ug_budget_entry *e = append((void **)&out->entries, &out->n, sizeof *e);
        if (!e) return out_of_memory(file);
        strcpy(e->family, family);
        strcpy(e->output, name);
        UG_TRY(parse_mode(file, item, mode, &e->mode));
        UG_TRY(parse_budget(file, mode_item, obj, &e->budget));
    }
    return ug_ok();
}

static ug_status parse_family_budgets(const char *file, const char *family, const json_t *outputs,
                                      ug_budgets *out)
{
    char where[WHERE_LEN], fam[sizeof out->entries->family];
    join(where, "families", family);
    UG_TRY(copy_name(file, "families", family, fam, sizeof fam));
    UG_TRY(check_object(file, "families", family, outputs));
    const char *output;
    json_t *modes;
    json_object_foreach((json_t *)outputs, output, modes)
        UG_TRY(parse_output_budgets(file, where, fam, output, modes, out));
    return ug_ok();
}

static ug_status parse_tolerance(const char *file, const json_t *root, ug_budgets *out)
{
    static const char *const keys[] = {"max_ulp_dist", "p99_ulp_dist", "share_cr", "max_ratio",
                                       NULL};
    static const char where[] = "regression_tolerance";
    json_t *tol;
    UG_TRY(get_object(file, "", root, where, &tol));
    UG_TRY(check_keys(file, where, tol, keys));
    UG_TRY(get_u32(file, where, tol, "max_ulp_dist", &out->tolerance.max_ulp_dist));
    UG_TRY(get_u32(file, where, tol, "p99_ulp_dist", &out->tolerance.p99_ulp_dist));
    UG_TRY(get_number(file, where, tol, "share_cr", 0, 1, &out->tolerance.share_cr));
    return get_number(file, where, tol, "max_ratio", 0, INFINITY, &out->tolerance.max_ratio);
}

static ug_status parse_budgets(const char *file, const json_t *root, ug_budgets *out)
{
    static const char *const keys[] = {"schema", "moderate_condition", "regression_tolerance",
                                       "families", NULL};
    UG_TRY(check_root(file, root, keys, BUDGETS_SCHEMA));
    /* A condition number abs_sum/|r| is at least 1. */
    UG_TRY(get_number(file, "", root, "moderate_condition", 1, INFINITY, &out->moderate_cond));
    UG_TRY(parse_tolerance(file, root, out));
    json_t *families, *outputs;
    const char *family;
    UG_TRY(get_object(file, "", root, "families", &families));
    json_object_foreach(families, family, outputs)
        UG_TRY(parse_family_budgets(file, family, outputs, out));
    return ug_ok();
}

static ug_status load_budgets_file(const char *path, ug_budgets *out)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    UG_TRY(load_json(path, &root));
    ug_status s = parse_budgets(path, root, out);
    json_decref(root);
    if (!ug_is_ok(&s)) ug_budgets_free(out);
    return s;
}

/* Appends one file's entries; its policy (moderate condition, tolerances)
 * must equal the first file's, and no entry may be budgeted twice. */
static ug_status merge_budgets(const char *path, ug_budgets *into, const ug_budgets *from)
{
    if (from->moderate_cond != into->moderate_cond ||
        memcmp(&from->tolerance, &into->tolerance, sizeof from->tolerance) != 0)
        return ug_fail(UG_EPARSE, "%s: moderate_condition and regression_tolerance must equal the "
                       "other budget files' (moderate_condition %g here, %g there)",
                       path, from->moderate_cond, into->moderate_cond);
    for (size_t i = 0; i < from->n; i++) {
        const ug_budget_entry *e = &from->entries[i];
        if (ug_budgets_find(into, e->family, e->output, e->mode))
            return ug_fail(UG_EPARSE, "%s: %s %s %s is budgeted in another file too", path, e->family,
                           e->output, ug_ref_mode_name(e->mode));
    }
    ug_budget_entry *grown = realloc(into->entries, (into->n + from->n) * sizeof *grown);
    if (!grown && into->n + from->n) return ug_fail(UG_ENOMEM, "%s: out of memory", path);
    into->entries = grown;
    memcpy(into->entries + into->n, from->entries, from->n * sizeof *grown);
    into->n += from->n;
    return ug_ok();
}

static ug_status add_budgets_file(const char *path, int index, void *ctx)
{
    ug_budgets *out = ctx, one;
    if (index == 0) return load_budgets_file(path, out);
    UG_TRY(load_budgets_file(path, &one));
    ug_status st = merge_budgets(path, out, &one);
    ug_budgets_free(&one);
    return st;
}

ug_status ug_budgets_load(const char *path, ug_budgets *out)
{
    if (!ug_is_directory(path)) return load_budgets_file(path, out);
    /* A directory holds one budgets file per family, read in name order. */
    memset(out, 0, sizeof *out);
    ug_status st = ug_for_each_json_file(path, add_budgets_file, out);
    if (!ug_is_ok(&st)) ug_budgets_free(out);
    return st;
}

void ug_budgets_free(ug_budgets *b)
{
    free(b->entries);
    memset(b, 0, sizeof *b);
}

const ug_budget *ug_budgets_find(const ug_budgets *b, const char *family, const char *output,
                                 ug_ref_mode mode)
{
    for (size_t i = 0; i < b->n; i++) {
        const ug_budget_entry *e = &b->entries[i];
        if (e->mode == mode && strcmp(e->family, family) == 0 && strcmp(e->output, output) == 0)
            return &e->budget;
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 * baseline.json */

static ug_status parse_baseline_entry(const char *file, const char *where, const json_t *obj,
                                      ug_baseline_entry *e)
{
    static const char *const keys[] = {"elements", "max_ulp_dist", "p99_ulp_dist", "share_cr",
                                       "max_ratio", "max_ulp_err", NULL};
    UG_TRY(check_keys(file, where, obj, keys));
    UG_TRY(get_uint(file, where, obj, "elements", UINT64_MAX, &e->elements));
    UG_TRY(get_u32(file, where, obj, "max_ulp_dist", &e->max_ulp_dist));
    UG_TRY(get_u32(file, where, obj, "p99_ulp_dist", &e->p99_ulp_dist));
    UG_TRY(get_real(file, where, obj, "share_cr", &e->share_cr));
    UG_TRY(get_real(file, where, obj, "max_ratio", &e->max_ratio));
    return get_real(file, where, obj, "max_ulp_err", &e->max_ulp_err);
}

static ug_status parse_baseline_output(const char *file, const char *where, const char *family,
                                       const char *output, const json_t *modes, ug_baseline *out)
{
    char name[sizeof out->entries->output];
    UG_TRY(copy_name(file, where, output, name, sizeof name));
    char item[WHERE_LEN];
    join(item, where, output);
    UG_TRY(check_object(file, where, output, modes));
    const char *mode;
    json_t *obj;
    json_object_foreach((json_t *)modes, mode, obj) {
        char mode_item[WHERE_LEN];
        join(mode_item, item, mode);
        UG_TRY(check_object(file, item, mode, obj));
        ug_baseline_entry *e = append((void **)&out->entries, &out->n, sizeof *e);
        if (!e) return out_of_memory(file);
        strcpy(e->family, family);
        strcpy(e->output, name);
        UG_TRY(parse_mode(file, item, mode, &e->mode));
        UG_TRY(parse_baseline_entry(file, mode_item, obj, e));
    }
    return ug_ok();
}

static ug_status parse_baseline_bits(const char *file, const char *where, const char *family,
                                     const json_t *bits, ug_baseline *out)
{
    ug_baseline_bits *b = append((void **)&out->bits, &out->n_bits, sizeof *b);
    if (!b) return out_of_memory(file);
    strcpy(b->family, family);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)bits, name, v) {
        ug_isa isa;
        UG_TRY(parse_isa(file, where, name, &isa));
        UG_TRY(get_hex64(file, where, bits, name, &b->hash[isa]));
        b->has[isa] = true;
    }
    return ug_ok();
}

static ug_status parse_baseline_family(const char *file, const char *family, const json_t *obj,
                                       ug_baseline *out)
{
    static const char *const keys[] = {"outputs", "bits", NULL};
    char where[WHERE_LEN], fam[sizeof out->entries->family], item[WHERE_LEN];
    join(where, "families", family);
    UG_TRY(copy_name(file, "families", family, fam, sizeof fam));
    UG_TRY(check_object(file, "families", family, obj));
    UG_TRY(check_keys(file, where, obj, keys));
    json_t *bits, *outputs, *modes;
    UG_TRY(get_object(file, where, obj, "bits", &bits));
    join(item, where, "bits");
    UG_TRY(parse_baseline_bits(file, item, fam, bits, out));
    UG_TRY(get_object(file, where, obj, "outputs", &outputs));
    join(item, where, "outputs");
    const char *output;
    json_object_foreach(outputs, output, modes)
        UG_TRY(parse_baseline_output(file, item, fam, output, modes, out));
    return ug_ok();
}

static ug_status parse_baseline(const char *file, const json_t *root, ug_baseline *out)
{
    static const char *const keys[] = {"schema", "sweep", "families", NULL};
    static const char *const sweep_keys[] = {"path", "content_hash", NULL};
    UG_TRY(check_root(file, root, keys, BASELINE_SCHEMA));
    json_t *sweep, *families, *obj;
    const char *path, *family;
    UG_TRY(get_object(file, "", root, "sweep", &sweep));
    UG_TRY(check_keys(file, "sweep", sweep, sweep_keys));
    UG_TRY(get_string(file, "sweep", sweep, "path", &path));
    UG_TRY(copy_name(file, "sweep", path, out->sweep_path, sizeof out->sweep_path));
    UG_TRY(get_hex64(file, "sweep", sweep, "content_hash", &out->sweep_hash));
    UG_TRY(get_object(file, "", root, "families", &families));
    json_object_foreach(families, family, obj)
        UG_TRY(parse_baseline_family(file, family, obj, out));
    return ug_ok();
}

ug_status ug_baseline_load(const char *path, ug_baseline *out)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    UG_TRY(load_json(path, &root));
    ug_status s = parse_baseline(path, root, out);
    json_decref(root);
    if (!ug_is_ok(&s)) ug_baseline_free(out);
    return s;
}

/* The figures of a report.json, rewritten in the baseline's schema (the
 * report holds a superset), so that one parser validates both. */
static json_t *report_as_baseline(const json_t *report)
{
    static const char *const figures[] = {"elements", "max_ulp_dist", "p99_ulp_dist", "share_cr",
                                          "max_ratio", "max_ulp_err", NULL};
    json_t *sweep = json_object_get(json_object_get(report, "run"), "sweep");
    json_t *families = json_object(), *family;
    size_t i, j;
    json_array_foreach(json_object_get(report, "families"), i, family) {
        json_t *outputs = json_object(), *output;
        json_array_foreach(json_object_get(family, "outputs"), j, output) {
            json_t *modes = json_object(), *figs;
            const char *mode;
            json_object_foreach(json_object_get(output, "modes"), mode, figs) {
                json_t *kept = json_object();
                for (const char *const *f = figures; *f; f++)
                    if (json_object_get(figs, *f)) json_object_set(kept, *f, json_object_get(figs, *f));
                json_object_set_new(modes, mode, kept);
            }
            json_object_set_new(outputs, json_string_value(json_object_get(output, "name")), modes);
        }
        json_t *fam = json_pack("{s:O, s:o}", "bits", json_object_get(family, "bits"), "outputs", outputs);
        const char *name = json_string_value(json_object_get(family, "name"));
        if (fam && name) json_object_set_new(families, name, fam);
    }
    return json_pack("{s:s, s:{s:O, s:O}, s:o}", "schema", BASELINE_SCHEMA, "sweep", "path",
                     json_object_get(sweep, "path"), "content_hash", json_object_get(sweep, "content_hash"),
                     "families", families);
}

ug_status ug_figures_load(const char *path, ug_baseline *out)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    UG_TRY(load_json(path, &root));
    const char *schema = json_string_value(json_object_get(root, "schema"));
    ug_status s;
    if (schema && strcmp(schema, "ulpgate-report/1") == 0) {
        json_t *figures = report_as_baseline(root);
        s = figures ? parse_baseline(path, figures, out)
                    : ug_fail(UG_EPARSE, "%s: a report without run.sweep.path/content_hash or families", path);
        json_decref(figures);
    } else {
        s = parse_baseline(path, root, out);
    }
    json_decref(root);
    if (!ug_is_ok(&s)) ug_baseline_free(out);
    return s;
}

void ug_baseline_free(ug_baseline *b)
{
    free(b->entries);
    free(b->bits);
    memset(b, 0, sizeof *b);
}

static const ug_baseline_entry *baseline_find(const ug_baseline *b, const char *family,
                                              const char *output, ug_ref_mode mode)
{
    for (size_t i = 0; i < b->n; i++) {
        const ug_baseline_entry *e = &b->entries[i];
        if (e->mode == mode && strcmp(e->family, family) == 0 && strcmp(e->output, output) == 0)
            return e;
    }
    return NULL;
}

static const ug_baseline_bits *baseline_bits_find(const ug_baseline *b, const char *family)
{
    for (size_t i = 0; i < b->n_bits; i++)
        if (strcmp(b->bits[i].family, family) == 0) return &b->bits[i];
    return NULL;
}

/* ------------------------------------------------------------------------
 * Writing the baseline */

/* JSON has no literal for inf/NaN: those are written as strings (get_real). */
static json_t *real_json(double x)
{
    if (isfinite(x)) return json_real(x);
    return json_string(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
}

static void hex64(char out[17], uint64_t h)
{
    snprintf(out, 17, "%016" PRIx64, h);
}

static json_t *baseline_entry_json(const ug_summary *s)
{
    return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o}", "elements", (json_int_t)s->elements,
                     "max_ulp_dist", (json_int_t)s->max_ulp_dist, "p99_ulp_dist",
                     (json_int_t)s->p99_ulp_dist, "share_cr", real_json(ug_summary_share_cr(s)),
                     "max_ratio", real_json(s->max_ratio), "max_ulp_err",
                     real_json(s->max_ulp_err));
}

static json_t *baseline_outputs_json(const ug_family_result *fr)
{
    json_t *outputs = json_object();
    for (size_t o = 0; o < fr->n_outputs; o++) {
        json_t *modes = json_object();
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_summary s = ug_stats_summary(&fr->agg[o][m]);
            if (s.elements == 0) continue;
            if (json_object_set_new(modes, ug_ref_mode_name((ug_ref_mode)m),
                                    baseline_entry_json(&s)) != 0) {
                json_decref(modes);
                modes = NULL;
                break;
            }
        }
        if (json_object_set_new(outputs, output_name(fr, o), modes) != 0) {
            json_decref(outputs);
            return NULL;
        }
    }
    return outputs;
}

static json_t *baseline_bits_json(const ug_family_result *fr)
{
    json_t *bits = json_object();
    for (int i = 0; i < UG_ISA_COUNT; i++) {
        if (!fr->isa_ran[i]) continue;
        char hex[17];
        hex64(hex, fr->bits_hash[i]);
        if (json_object_set_new(bits, ug_isa_name((ug_isa)i), json_string(hex)) != 0) {
            json_decref(bits);
            return NULL;
        }
    }
    return bits;
}

static json_t *baseline_json(const ug_run_result *run)
{
    json_t *families = json_object();
    for (size_t i = 0; families && i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        json_t *fam = json_pack("{s:o, s:o}", "outputs", baseline_outputs_json(fr), "bits",
                                baseline_bits_json(fr));
        if (json_object_set_new(families, fr->family->name, fam) != 0) {
            json_decref(families);
            families = NULL;
        }
    }
    char hash[17];
    hex64(hash, run->sweep->content_hash);
    return json_pack("{s:s, s:{s:s, s:s}, s:o}", "schema", BASELINE_SCHEMA, "sweep", "path",
                     run->sweep->path, "content_hash", hash, "families", families);
}

ug_status ug_baseline_write(const char *path, const ug_run_result *run)
{
    if (run->source_name)
        return ug_fail(UG_EINVAL, "refusing to write baseline %s from a run of the %s path: the baseline "
                       "records the built-in kernels", path, run->source_name);
    json_t *root = baseline_json(run);
    if (!root) return ug_fail(UG_ENOMEM, "%s: out of memory while building the baseline", path);
    ug_status s = ug_write_json_file(path, root);
    json_decref(root);
    return s;
}

/* ------------------------------------------------------------------------
 * The verdict */

typedef struct {
    ug_verdict *v;
    bool out_of_memory;
} findings;

static void add(findings *fs, ug_finding_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(findings *fs, ug_finding_kind kind, const char *fmt, ...)
{
    ug_finding *f = append((void **)&fs->v->items, &fs->v->n, sizeof *f);
    if (!f) {
        fs->out_of_memory = true;
        return;
    }
    f->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
    if (kind == UG_FINDING_FAIL) fs->v->pass = false;
}

/* One FAIL per failed case, the first MAX_FAILED_CASES of them, then a count. */
static void check_cases(findings *fs, const ug_run_result *run)
{
    size_t failed = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        if (cr->passed || failed++ >= MAX_FAILED_CASES) continue;
        add(fs, UG_FINDING_FAIL, "%s/%s: %s", cr->c->family->name, cr->c->label, cr->failure);
    }
    if (failed > MAX_FAILED_CASES)
        add(fs, UG_FINDING_FAIL, "... and %zu more failed cases (see cases.csv)",
            failed - MAX_FAILED_CASES);
}

/* FAIL when value breaks limit (an upper limit, or a lower one when at_least).
 * NaN never meets a limit. */
static void check_limit(findings *fs, const char *what, const char *figure, double value,
                        double limit, bool at_least)
{
    if (at_least ? value >= limit : value <= limit) return;
    char v[NUM_LEN], l[NUM_LEN];
    fmt_num(v, value);
    fmt_num(l, limit);
    add(fs, UG_FINDING_FAIL, "%s: %s %s %s budget %s", what, figure, v,
        at_least ? "is below" : "exceeds", l);
}

bool ug_budget_met(const ug_budget *b, const ug_summary *s)
{
    return s->max_ratio <= b->max_ratio && s->max_ulp_dist <= b->max_ulp_dist &&
           s->p99_ulp_dist <= b->p99_ulp_dist && ug_summary_share_cr(s) >= b->min_share_cr &&
           ug_summary_rel_rms(s) <= b->max_rel_rms;
}

static void check_budget(findings *fs, const char *what, const ug_summary *s, const ug_budget *b)
{
    check_limit(fs, what, "max_ratio", s->max_ratio, b->max_ratio, false);
    check_limit(fs, what, "max_ulp_dist", s->max_ulp_dist, b->max_ulp_dist, false);
    check_limit(fs, what, "p99_ulp_dist", s->p99_ulp_dist, b->p99_ulp_dist, false);
    check_limit(fs, what, "share_cr", ug_summary_share_cr(s), b->min_share_cr, true);
    if (isfinite(b->max_rel_rms)) check_limit(fs, what, "rel_rms", ug_summary_rel_rms(s), b->max_rel_rms, false);
}

/* Compares one figure with its baseline value: worse by more than slack
 * fails, worse within slack is noted, better is reported. */
static void check_change(findings *fs, const char *what, const char *figure, double then,
                         double now, bool higher_is_better, double slack, const char *tolerance)
{
    if (now == then || (isnan(now) && isnan(then))) return;
    double worse_by = higher_is_better ? then - now : now - then;
    char a[NUM_LEN], b[NUM_LEN];
    fmt_num(a, then);
    fmt_num(b, now);
    if (!(worse_by <= slack))
        add(fs, UG_FINDING_FAIL, "%s: %s worsened %s -> %s (tolerance %s)", what, figure, a, b,
            tolerance);
    else if (worse_by > 0)
        add(fs, UG_FINDING_WORSE_OK, "%s: %s worsened %s -> %s (within tolerance %s)", what,
            figure, a, b, tolerance);
    else
        add(fs, UG_FINDING_BETTER, "%s: %s improved %s -> %s", what, figure, a, b);
}

/* distribution: false when s counts elements the baseline's figures do not (ISA paths that
 * disagree): then only the maxima are compared, the p99 and the share of a mixed population not. */
static void check_regression(findings *fs, const char *what, const ug_summary *s,
                             const ug_baseline_entry *e, const ug_budgets *budgets, bool distribution)
{
    char t[NUM_LEN + 16];
    fmt_num(t, budgets->tolerance.max_ulp_dist);
    check_change(fs, what, "max_ulp_dist", e->max_ulp_dist, s->max_ulp_dist, false,
                 budgets->tolerance.max_ulp_dist, t);
    if (distribution) {
        fmt_num(t, budgets->tolerance.p99_ulp_dist);
        check_change(fs, what, "p99_ulp_dist", e->p99_ulp_dist, s->p99_ulp_dist, false,
                     budgets->tolerance.p99_ulp_dist, t);
        fmt_num(t, budgets->tolerance.share_cr);
        check_change(fs, what, "share_cr", e->share_cr, ug_summary_share_cr(s), true,
                     budgets->tolerance.share_cr, t);
    }
    /* Relative: worse when now > then * (1 + tolerance) and now > then + 1e-12. */
    fmt_num(t, budgets->tolerance.max_ratio);
    strcat(t, " relative");
    check_change(fs, what, "max_ratio", e->max_ratio, s->max_ratio, false,
                 fmax(e->max_ratio * budgets->tolerance.max_ratio, 1e-12), t);
}

/* The first path that produced a case's bits (its bits_hash); UG_ISA_COUNT when none did. */
static int first_path(const ug_case_result *r)
{
    int isa = 0;
    while (isa < UG_ISA_COUNT && !(r->isa_ran[isa] && r->isa_bits[isa] == r->bits_hash)) isa++;
    return isa;
}

/* Whether path isa ran on case r with bits other than its first path's (the runner measures those too). */
static bool path_differs(const ug_case_result *r, int isa)
{
    return r->isa_ran[isa] && r->isa_bits[isa] != r->bits_hash;
}

/* The elements of output o the differing paths added to the family's figures, beyond one path per case. */
static uint64_t differing_path_elements(const ug_run_result *run, const ug_family_result *fr, size_t o, ug_ref_mode m)
{
    uint64_t extra = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *r = &run->cases[i];
        for (int isa = 0; r->c->family == fr->family && isa < UG_ISA_COUNT; isa++)
            if (path_differs(r, isa)) extra += r->sum[o][m].elements;
    }
    return extra;
}

/* Paths that disagree are reported as such: which path, on how many cases, against which first path. */
static void check_paths_agree(findings *fs, const ug_run_result *run, const ug_family_result *fr)
{
    size_t cases = 0, disagree = 0, per_path[UG_ISA_COUNT] = {0};
    int first = UG_ISA_COUNT;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *r = &run->cases[i];
        if (r->c->family != fr->family || r->c->expect_reject) continue;
        cases++;
        bool differs = false;
        for (int isa = 0; isa < UG_ISA_COUNT; isa++)
            if (path_differs(r, isa)) per_path[isa]++, differs = true;
        disagree += differs;
        if (differs && first_path(r) < first) first = first_path(r);
    }
    if (!disagree) return;
    char paths[128] = "";
    for (int isa = 0, used = 0; isa < UG_ISA_COUNT; isa++)
        if (per_path[isa])
            used += snprintf(paths + used, sizeof paths - (size_t)used, "%s%s on %zu", used ? ", " : "",
                             ug_isa_name((ug_isa)isa), per_path[isa]);
    add(fs, UG_FINDING_INFO,
        "%s: ISA paths disagree on %zu of %zu accepted cases (bits other than %s's: %s); every path's outputs "
        "are measured and gated, the baseline's element count is matched with one path per case",
        fr->family->name, disagree, cases, first < UG_ISA_COUNT ? ug_isa_name((ug_isa)first) : "the first path",
        paths);
}

/* Why a run measured another element count than the baseline, as far as the run can tell. */
static void count_mismatch_reason(const ug_run_result *run, const ug_family_result *fr, char *out, size_t size)
{
    size_t unmeasured = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *r = &run->cases[i];
        if (r->c->family == fr->family && !r->c->expect_reject && first_path(r) == UG_ISA_COUNT && !r->source_ran)
            unmeasured++;
    }
    const ug_sweep *sw = run->sweep;
    if (sw->filter[0])
        snprintf(out, size, "this run is filtered with --filter '%s'", sw->filter);
    else if (sw->shard_count)
        snprintf(out, size, "this run is shard %zu/%zu of the sweep", sw->shard_index, sw->shard_count);
    else if (unmeasured)
        snprintf(out, size, "%zu accepted cases of %s were not measured: their kernel failed", unmeasured,
                 fr->family->name);
    else
        snprintf(out, size, "the baseline was recorded from other cases or shapes of this sweep");
}

static void check_output_mode(findings *fs, const ug_run_result *run, const ug_family_result *fr, size_t o,
                              ug_ref_mode m, const ug_budgets *budgets, const ug_baseline *baseline)
{
    ug_summary s = ug_stats_summary(&fr->agg[o][m]);
    if (s.elements == 0) return;
    const char *family = fr->family->name, *output = output_name(fr, o);
    const char *mode = ug_ref_mode_name(m);
    char what[160];
    snprintf(what, sizeof what, "%s %s %s", family, output, mode);
    const ug_budget *b = ug_budgets_find(budgets, family, output, m);
    if (b)
        check_budget(fs, what, &s, b);
    else
        add(fs, UG_FINDING_FAIL, "%s: no budget (add families.%s.%s.%s to the budgets)", what,
            family, output, mode);
    if (!baseline) return;
    const ug_baseline_entry *e = baseline_find(baseline, family, output, m);
    uint64_t differing = differing_path_elements(run, fr, o, m), per_case_path = s.elements - differing;
    char reason[160];
    if (!e) {
        add(fs, UG_FINDING_INFO, "%s: not in the baseline (new)", what);
    } else if (e->elements != per_case_path) {
        count_mismatch_reason(run, fr, reason, sizeof reason);
        add(fs, UG_FINDING_FAIL, "%s: %" PRIu64 " elements measured, the baseline has %" PRIu64 ": %s; figures not "
            "compared", what, per_case_path, e->elements, reason);
    } else {
        check_regression(fs, what, &s, e, budgets, differing == 0);
        if (differing)
            add(fs, UG_FINDING_INFO, "%s: max_ulp_dist and max_ratio compared with the baseline; p99_ulp_dist and "
                "share_cr not (%" PRIu64 " of the %" PRIu64 " elements measured come from ISA paths that disagree)",
                what, differing, s.elements);
    }
}

static void check_bits(findings *fs, const ug_run_result *run, const ug_family_result *fr,
                       const ug_baseline *baseline)
{
    /* The baseline records the built-in kernels' bits per ISA path; another
     * implementation's bits are expected to differ, so only its figures are compared. */
    if (fr->source_ran)
        add(fs, UG_FINDING_INFO, "%s: bits of the %s path not compared with the baseline (it records the "
            "built-in kernels' ISA paths)", fr->family->name, run->source_name);
    const ug_baseline_bits *b = baseline_bits_find(baseline, fr->family->name);
    for (int i = 0; b && i < UG_ISA_COUNT; i++) {
        if (!fr->isa_ran[i] || !b->has[i] || b->hash[i] == fr->bits_hash[i]) continue;
        add(fs, UG_FINDING_INFO,
            "%s: bits changed on %s (baseline %016" PRIx64 ", now %016" PRIx64 ")", fr->family->name, ug_isa_name((ug_isa)i), b->hash[i], fr->bits_hash[i]);
    }
}

/* A baseline of another sweep cannot be compared with: FAIL, and no comparison. */
static bool same_sweep(findings *fs, const ug_run_result *run, const ug_baseline *baseline)
{
    if (baseline->sweep_hash == run->sweep->content_hash) return true;
    add(fs, UG_FINDING_FAIL,
        "the baseline was recorded on sweep %s (content hash %016" PRIx64 "), this run used %s "
        "(content hash %016" PRIx64 "): review the change and re-baseline (make baseline)",
        baseline->sweep_path, baseline->sweep_hash, run->sweep->path, run->sweep->content_hash);
    return false;
}

ug_status ug_gate_evaluate(const ug_run_result *run, const ug_budgets *budgets,
                           const ug_baseline *baseline, ug_verdict *out)
{
    *out = (ug_verdict){.pass = true};
    findings fs = {out, false};
    if (baseline && !same_sweep(&fs, run, baseline)) baseline = NULL;
    check_cases(&fs, run);
    for (size_t i = 0; i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        for (size_t o = 0; o < fr->n_outputs; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++)
                check_output_mode(&fs, run, fr, o, (ug_ref_mode)m, budgets, baseline);
        check_paths_agree(&fs, run, fr);
        if (baseline) check_bits(&fs, run, fr, baseline);
    }
    if (!fs.out_of_memory) return ug_ok();
    ug_verdict_free(out);
    return ug_fail(UG_ENOMEM, "out of memory while evaluating the gate");
}

/* The summary a baseline entry stands for (share_cr = cr / elements exactly). */
static ug_summary entry_summary(const ug_baseline_entry *e)
{
    ug_summary s = {0};
    s.elements = e->elements;
    s.correctly_rounded = (uint64_t)llround(e->share_cr * (double)e->elements);
    s.max_ulp_dist = e->max_ulp_dist;
    s.p99_ulp_dist = e->p99_ulp_dist;
    s.max_ratio = e->max_ratio;
    s.max_ulp_err = e->max_ulp_err;
    return s;
}

ug_status ug_compare(const ug_baseline *old, const ug_baseline *new, const ug_budgets *budgets,
                     ug_verdict *out)
{
    *out = (ug_verdict){.pass = true};
    findings fs = {out, false};
    if (old->sweep_hash != new->sweep_hash)
        add(&fs, UG_FINDING_FAIL,
            "the two results come from different sweeps (%s, content hash %016" PRIx64 "; %s, %016" PRIx64
            "): their figures are not comparable", old->sweep_path, old->sweep_hash, new->sweep_path,
            new->sweep_hash);
    for (size_t i = 0; i < new->n && old->sweep_hash == new->sweep_hash; i++) {
        const ug_baseline_entry *e = &new->entries[i];
        char what[160];
        snprintf(what, sizeof what, "%s %s %s", e->family, e->output, ug_ref_mode_name(e->mode));
        const ug_baseline_entry *then = baseline_find(old, e->family, e->output, e->mode);
        ug_summary now = entry_summary(e);
        if (!then)
            add(&fs, UG_FINDING_INFO, "%s: new (not in the old result)", what);
        else if (then->elements != e->elements)
            add(&fs, UG_FINDING_FAIL, "%s: %" PRIu64 " elements now, %" PRIu64 " before: not comparable",
                what, e->elements, then->elements);
        else
            check_regression(&fs, what, &now, then, budgets, true);
    }
    for (size_t i = 0; i < old->n && old->sweep_hash == new->sweep_hash; i++)
        if (!baseline_find(new, old->entries[i].family, old->entries[i].output, old->entries[i].mode))
            add(&fs, UG_FINDING_FAIL, "%s %s %s: measured before, missing now", old->entries[i].family,
                old->entries[i].output, ug_ref_mode_name(old->entries[i].mode));
    for (size_t i = 0; i < new->n_bits && old->sweep_hash == new->sweep_hash; i++) {
        const ug_baseline_bits *b = &new->bits[i], *a = baseline_bits_find(old, b->family);
        for (int isa = 0; a && isa < UG_ISA_COUNT; isa++)
            if (a->has[isa] && b->has[isa] && a->hash[isa] != b->hash[isa])
                add(&fs, UG_FINDING_INFO, "%s: bits changed on %s (%016" PRIx64 " -> %016" PRIx64 ")",
                    b->family, ug_isa_name((ug_isa)isa), a->hash[isa], b->hash[isa]);
    }
    if (!fs.out_of_memory) return ug_ok();
    ug_verdict_free(out);
    return ug_fail(UG_ENOMEM, "out of memory while comparing");
}

void ug_verdict_free(ug_verdict *v)
{
    free(v->items);
    memset(v, 0, sizeof *v);
}
