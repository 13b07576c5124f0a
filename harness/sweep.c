/* SPDX-License-Identifier: MIT */
#include "sweep.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/input_file.h"
#include "../core/json.h"
#include "../core/hash.h"
#include "../core/json_dir.h"
#include "gen.h"

typedef struct {
    const char *path;
    ug_sweep *out;
    size_t cap;
} loader;

static ug_status bad(const loader *ld, const char *where, const char *what)
{
    return ug_fail(UG_EPARSE, "%s: %s: %s", ld->path, where, what);
}

static ug_status push_case(loader *ld, const ug_case *c)
{
    ug_sweep *s = ld->out;
    for (size_t i = 0; i < s->n_cases; i++)
        if (s->cases[i].family == c->family && strcmp(s->cases[i].label, c->label) == 0)
            return ug_fail(UG_EPARSE, "%s: %s: case '%s' is listed twice", ld->path, c->family->name, c->label);
    if (s->n_cases == ld->cap) {
        size_t cap = ld->cap ? 2 * ld->cap : 64;
        ug_case *grown = realloc(s->cases, cap * sizeof *grown);
        if (!grown) return ug_fail(UG_ENOMEM, "%s: out of memory at %zu cases", ld->path, s->n_cases);
        s->cases = grown;
        ld->cap = cap;
    }
    s->cases[s->n_cases] = *c;
    s->cases[s->n_cases].index = s->n_cases;
    s->n_cases++;
    return ug_ok();
}

/* Shapes are JSON integers in [0, 2^32) (the kernels' u32 params): 1.5,
 * 2.0 and -0.0 are refused, a label never reads "-0". */
static ug_status param_value(const loader *ld, const char *where, json_t *j, double *out)
{
    json_int_t v;
    UG_TRY(ug_json_int_value(ld->path, where, j, 0, 4294967295LL, &v));
    *out = (double)v;
    return ug_ok();
}

static void make_label(const ug_family *f, const ug_params *p, const char *regime, char *label)
{
    size_t used = 0;
    label[0] = '\0';
    for (size_t i = 0; i < f->n_params && used < UG_LABEL_LEN; i++)
        used += (size_t)snprintf(label + used, UG_LABEL_LEN - used, "%s%s=%.17g", i ? " " : "",
                                 f->param_names[i], p->v[i]);
    if (regime && used < UG_LABEL_LEN) snprintf(label + used, UG_LABEL_LEN - used, " %s", regime);
}

/* A misspelt key would silently drop cases: every key must be known. */
static ug_status check_keys(const loader *ld, const char *where, json_t *obj, const char *const *known)
{
    UG_TRY(ug_json_check_object(ld->path, where, "", obj));
    return ug_json_keys(ld->path, where, obj, known);
}

/* One axis of a grid: a parameter, a "p1/p2" tuple, or "regime". */
typedef struct {
    char where[256]; /* JSON path of the axis, for messages */
    int params[UG_MAX_PARAMS];
    size_t width; /* parameters per value (1, or the tuple's length) */
    bool regime;
    json_t *values;
} axis;

static ug_status parse_axis(const loader *ld, const ug_family *f, const char *key, json_t *values,
                            char *where, axis *ax, bool *seen)
{
    ax->values = values;
    snprintf(ax->where, sizeof ax->where, "%s", where);
    ax->regime = strcmp(key, "regime") == 0;
    ax->width = 0;
    UG_TRY(ug_json_check_array(ld->path, where, "", values));
    if (json_array_size(values) == 0) return bad(ld, where, "expected a non-empty array of values, found []");
    if (ax->regime) return ug_ok();
    char names[256];
    snprintf(names, sizeof names, "%s", key);
    for (char *save = NULL, *tok = strtok_r(names, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        int idx = ug_family_param_index(f, tok);
        if (idx < 0)
            return ug_fail(UG_EPARSE, "%s: %s: '%s' is not a parameter of %s", ld->path, where, tok, f->name);
        if (seen[idx]) return ug_fail(UG_EPARSE, "%s: %s: parameter '%s' given twice", ld->path, where, tok);
        seen[idx] = true;
        if (ax->width == UG_MAX_PARAMS) return bad(ld, where, "too many parameters in one tuple");
        ax->params[ax->width++] = idx;
    }
    return ug_ok();
}

static ug_status regime_index(const loader *ld, const ug_family *f, const char *where, json_t *j,
                              size_t *out)
{
    const char *name = json_string_value(j);
    for (size_t r = 0; name && r < f->n_regimes; r++)
        if (strcmp(f->regimes[r], name) == 0) {
            *out = r;
            return ug_ok();
        }
    return ug_fail(UG_EPARSE, "%s: %s: unknown regime '%s' for %s", ld->path, where,
                   name ? name : "(not a string)", f->name);
}

/* Sets the parameters of value vi of an axis into c. */
static ug_status apply_axis_value(const loader *ld, const ug_family *f, const axis *ax, size_t vi,
                                  ug_case *c)
{
    char where[UG_JSON_WHERE], at[UG_JSON_WHERE];
    ug_json_join_index(where, ax->where, vi);
    json_t *val = json_array_get(ax->values, vi);
    if (ax->regime) return regime_index(ld, f, where, val, &c->regime);
    if (ax->width == 1) return param_value(ld, where, val, &c->params.v[ax->params[0]]);
    if (!json_is_array(val) || json_array_size(val) != ax->width)
        return ug_fail(UG_EPARSE, "%s: %s: expected tuples of %zu numbers", ld->path, where, ax->width);
    for (size_t k = 0; k < ax->width; k++) {
        ug_json_join_index(at, where, k);
        UG_TRY(param_value(ld, at, json_array_get(val, k), &c->params.v[ax->params[k]]));
    }
    return ug_ok();
}

/* Whether parameter p is a dimension of one of f's buffers ("K" of
 * [B,T,Hg,K]; not cache_extra, which only lengthens a table): an accepted
 * case must give it as a positive integer. */
static bool is_dimension(const ug_family *f, size_t p)
{
    for (size_t b = 0; b < f->n_buffers; b++)
        for (size_t d = 0; d < f->buffers[b].rank; d++)
            if (f->buffers[b].dims[d] == (int)p) return true;
    return false;
}

static ug_status positive_dimensions(const loader *ld, const ug_family *f, const ug_case *c, const char *where)
{
    for (size_t p = 0; p < f->n_params; p++)
        if (c->params.v[p] == 0 && is_dimension(f, p))
            return ug_fail(UG_EPARSE, "%s: %s: accepted case '%s': dimension %s is 0 (dimensions of accepted "
                           "cases are positive; a zero shape belongs under \"rejected\")", ld->path, where,
                           c->label, f->param_names[p]);
    return ug_ok();
}

static ug_status expand_grid(loader *ld, const ug_family *f, json_t *grid, const char *where)
{
    axis axes[UG_MAX_PARAMS + 1];
    size_t n_axes = 0;
    bool seen[UG_MAX_PARAMS] = {false}, has_regime = false;
    const char *key;
    json_t *values;
    char at[256];
    UG_TRY(ug_json_check_object(ld->path, where, "", grid));
    json_object_foreach(grid, key, values) {
        snprintf(at, sizeof at, "%s.%s", where, key);
        if (n_axes == UG_MAX_PARAMS + 1) return bad(ld, at, "too many axes");
        UG_TRY(parse_axis(ld, f, key, values, at, &axes[n_axes], seen));
        has_regime |= axes[n_axes].regime;
        n_axes++;
    }
    for (size_t i = 0; i < f->n_params; i++)
        if (!seen[i])
            return ug_fail(UG_EPARSE, "%s: %s: parameter '%s' is missing", ld->path, where, f->param_names[i]);
    if (!has_regime) return bad(ld, where, "axis 'regime' is missing");
    size_t odometer[UG_MAX_PARAMS + 1] = {0};
    for (;;) {
        ug_case c;
        memset(&c, 0, sizeof c);
        c.family = f;
        c.override.buffer = -1;
        for (size_t a = 0; a < n_axes; a++) UG_TRY(apply_axis_value(ld, f, &axes[a], odometer[a], &c));
        make_label(f, &c.params, f->regimes[c.regime], c.label);
        UG_TRY(positive_dimensions(ld, f, &c, where));
        c.seed = ug_gen_case_seed(ld->out->seed, f->name, c.label);
        UG_TRY(push_case(ld, &c));
        size_t a = n_axes;
        while (a > 0 && ++odometer[a - 1] == json_array_size(axes[a - 1].values)) odometer[--a] = 0;
        if (a == 0) return ug_ok();
    }
}

static ug_status parse_override(const loader *ld, const ug_family *f, json_t *j, const char *where,
                                ug_buffer_override *o)
{
    static const char *const keys[] = {"name", "count_delta", "dtype", NULL};
    const char *name, *dtype_name;
    UG_TRY(check_keys(ld, where, j, keys));
    UG_TRY(ug_json_string(ld->path, where, j, "name", &name));
    o->buffer = ug_family_buffer_index(f, name);
    if (o->buffer < 0)
        return ug_json_fail(ld->path, where, "name", "\"%s\" is not a buffer of %s", name, f->name);
    json_t *delta = json_object_get(j, "count_delta"), *dtype = json_object_get(j, "dtype");
    json_int_t count_delta = 0;
    if (delta) UG_TRY(ug_json_int(ld->path, where, j, "count_delta", -LLONG_MAX, LLONG_MAX, &count_delta));
    o->count_delta = count_delta;
    o->dtype = UG_DTYPE_COUNT;
    if (dtype) {
        UG_TRY(ug_json_string(ld->path, where, j, "dtype", &dtype_name));
        o->dtype = ug_dtype_parse(dtype_name);
        if (o->dtype == UG_DTYPE_COUNT)
            return ug_json_fail(ld->path, where, "dtype", "expected bf16, f32, f64 or u32, found \"%s\"", dtype_name);
    }
    if (!delta && !dtype) return bad(ld, where, "give count_delta or dtype");
    return ug_ok();
}

static ug_status parse_rejected(loader *ld, const ug_family *f, json_t *j, const char *where)
{
    static const char *const keys[] = {"name", "params", "buffer", "expect", NULL};
    UG_TRY(check_keys(ld, where, j, keys));
    ug_case c;
    memset(&c, 0, sizeof c);
    c.family = f;
    c.expect_reject = true;
    c.override.buffer = -1;
    const char *name;
    UG_TRY(ug_json_string(ld->path, where, j, "name", &name));
    if (!*name || strlen(name) >= UG_LABEL_LEN)
        return ug_json_fail(ld->path, where, "name", "expected 1 to %d bytes, found \"%s\"", UG_LABEL_LEN - 1, name);
    snprintf(c.label, sizeof c.label, "%s", name);
    c.seed = ug_gen_case_seed(ld->out->seed, f->name, c.label);
    json_t *params, *v;
    UG_TRY(ug_json_object(ld->path, where, j, "params", &params));
    char at[256], params_at[UG_JSON_WHERE];
    ug_json_join(params_at, where, "params");
    for (size_t i = 0; i < f->n_params; i++) {
        snprintf(at, sizeof at, "%s.params.%s", where, f->param_names[i]);
        UG_TRY(ug_json_get(ld->path, params_at, params, f->param_names[i], &v));
        UG_TRY(param_value(ld, at, v, &c.params.v[i]));
    }
    const char *key;
    json_t *value;
    json_object_foreach(params, key, value) {
        if (ug_family_param_index(f, key) < 0)
            return ug_fail(UG_EPARSE, "%s: %s.params: '%s' is not a parameter of %s", ld->path, where, key,
                           f->name);
    }
    json_t *buffer = json_object_get(j, "buffer");
    if (buffer) {
        snprintf(at, sizeof at, "%s.buffer", where);
        UG_TRY(parse_override(ld, f, buffer, at, &c.override));
    }
    json_t *expect;
    UG_TRY(ug_json_array(ld->path, where, j, "expect", &expect));
    if (json_array_size(expect) == 0 || json_array_size(expect) > UG_MAX_EXPECT)
        return ug_json_fail(ld->path, where, "expect", "expected 1 to %d message substrings, found %zu", UG_MAX_EXPECT,
                            json_array_size(expect));
    snprintf(at, sizeof at, "%s.expect", where);
    for (size_t i = 0; i < json_array_size(expect); i++) {
        char index[32];
        const char *s;
        snprintf(index, sizeof index, "[%zu]", i);
        UG_TRY(ug_json_string(ld->path, at, expect, index, &s));
        /* "" is a substring of every message: it would accept any rejection. */
        if (!*s || strlen(s) >= UG_EXPECT_LEN)
            return ug_json_fail(ld->path, at, index, "expected 1 to %d bytes, found \"%s\"", UG_EXPECT_LEN - 1, s);
        snprintf(c.expect[c.n_expect++], UG_EXPECT_LEN, "%s", s);
    }
    return push_case(ld, &c);
}

static ug_status parse_family(loader *ld, const char *name, json_t *j)
{
    const ug_family *f = ug_family_find(name);
    if (!f) return ug_fail(UG_EPARSE, "%s: families.%s: no such kernel family", ld->path, name);
    static const char *const keys[] = {"accepted", "rejected", NULL};
    char at[256];
    snprintf(at, sizeof at, "families.%s", name);
    UG_TRY(check_keys(ld, at, j, keys));
    json_t *accepted = NULL, *rejected = NULL;
    if (json_object_get(j, "accepted")) UG_TRY(ug_json_array(ld->path, at, j, "accepted", &accepted));
    if (json_object_get(j, "rejected")) UG_TRY(ug_json_array(ld->path, at, j, "rejected", &rejected));
    for (size_t i = 0; i < json_array_size(accepted); i++) {
        snprintf(at, sizeof at, "families.%s.accepted[%zu]", name, i);
        UG_TRY(expand_grid(ld, f, json_array_get(accepted, i), at));
    }
    for (size_t i = 0; i < json_array_size(rejected); i++) {
        snprintf(at, sizeof at, "families.%s.rejected[%zu]", name, i);
        UG_TRY(parse_rejected(ld, f, json_array_get(rejected, i), at));
    }
    return ug_ok();
}

/* Appends the cases of one sweep file to out; its bytes, read once (capped,
 * core/input_file), are folded into the content hash and parsed. */
static ug_status load_file(const char *path, ug_sweep *out)
{
    unsigned char *bytes;
    size_t size;
    UG_TRY(ug_input_read("sweep", path, UG_INPUT_MAX_JSON, &bytes, &size));
    out->content_hash = ug_fnv1a(out->content_hash, bytes, size);
    json_t *root;
    ug_status st = ug_json_parse(path, bytes, size, &root);
    free(bytes);
    UG_TRY(st);
    loader ld = {path, out, out->n_cases};
    static const char *const keys[] = {"schema", "seed", "families", "comment", NULL};
    json_t *families = NULL;
    uint64_t seed = 0;
    st = ug_json_schema(path, root, "ulpgate-sweep/1", keys);
    if (ug_is_ok(&st)) st = ug_json_uint(path, "", root, "seed", UINT64_MAX, &seed);
    if (ug_is_ok(&st)) st = ug_json_object(path, "", root, "families", &families);
    if (ug_is_ok(&st) && json_object_size(families) == 0) st = bad(&ld, "families", "expected a non-empty object");
    if (ug_is_ok(&st)) {
        if (out->n_cases == 0) out->seed = seed;
        const char *name;
        json_t *fam;
        json_object_foreach(families, name, fam) {
            st = parse_family(&ld, name, fam);
            if (!ug_is_ok(&st)) break;
        }
    }
    json_decref(root);
    return st;
}

static ug_status add_sweep_file(const char *path, __attribute__((unused)) int index, void *ctx)
{
    return load_file(path, ctx);
}

ug_status ug_sweep_load(const char *path, ug_sweep *out)
{
    memset(out, 0, sizeof *out);
    out->content_hash = UG_FNV1A_OFFSET;
    if (strlen(path) >= sizeof out->path) return ug_fail(UG_EIO, "sweep path is too long: %s", path);
    snprintf(out->path, sizeof out->path, "%s", path);
    /* A directory holds one sweep file per family, read in name order. */
    ug_status st = ug_is_directory(path) ? ug_for_each_json_file(path, add_sweep_file, out) : load_file(path, out);
    if (ug_is_ok(&st) && out->n_cases == 0) st = ug_fail(UG_EPARSE, "%s: families: the sweep has no case", path);
    if (!ug_is_ok(&st)) ug_sweep_free(out);
    return st;
}

void ug_sweep_free(ug_sweep *s)
{
    free(s->cases);
    s->cases = NULL;
    s->n_cases = 0;
}

void ug_sweep_keep(ug_sweep *s, bool (*keep)(const ug_case *c, const void *ctx), const void *ctx)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_cases; i++) {
        if (!keep(&s->cases[i], ctx)) continue;
        s->cases[kept] = s->cases[i];
        s->cases[kept].index = kept;
        kept++;
    }
    s->n_cases = kept;
}

bool ug_case_matches(const ug_case *c, const char *filter)
{
    char name[UG_LABEL_LEN + 80];
    snprintf(name, sizeof name, "%s/%s", c->family->name, c->label);
    return strstr(name, filter) != NULL;
}

static bool name_contains(const ug_case *c, const void *filter) { return ug_case_matches(c, filter); }

ug_status ug_sweep_filter(ug_sweep *s, const char *filter)
{
    if (strlen(filter) >= sizeof s->filter)
        return ug_fail(UG_EINVAL, "filter '%s' is longer than %zu bytes", filter, sizeof s->filter - 1);
    snprintf(s->filter, sizeof s->filter, "%s", filter);
    ug_sweep_keep(s, name_contains, filter);
    return ug_ok();
}

ug_status ug_sweep_shard(ug_sweep *s, size_t index, size_t count)
{
    if (count == 0 || index >= count)
        return ug_fail(UG_EINVAL, "shard %zu/%zu: the index must be below the count (> 0)", index, count);
    size_t kept = 0;
    for (size_t i = 0; i < s->n_cases; i++)
        if (s->cases[i].index % count == index) s->cases[kept++] = s->cases[i];
    s->n_cases = kept;
    s->shard_index = index;
    s->shard_count = count;
    return ug_ok();
}
