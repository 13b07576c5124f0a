/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A profile is a few hundred bytes; anything far larger is not one. */
enum { PROFILE_MAX_BYTES = 1 << 20 };

typedef struct {
    const char *path;
    ug_f32_model *out;
} loader;

static ug_status read_bytes(const char *path, char **bytes, size_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0) return ug_fail(UG_EINPUT, "profile '%s' does not exist", path);
    if (!S_ISREG(st.st_mode)) return ug_fail(UG_EINPUT, "profile '%s' is not a regular file", path);
    if (st.st_size > PROFILE_MAX_BYTES)
        return ug_fail(UG_EINPUT, "profile '%s' has %lld bytes, more than the %d a profile may have", path,
                       (long long)st.st_size, PROFILE_MAX_BYTES);
    FILE *fp = fopen(path, "rb");
    if (!fp) return ug_fail(UG_EINPUT, "cannot open profile '%s'", path);
    *bytes = malloc((size_t)st.st_size + 1);
    if (!*bytes) {
        fclose(fp);
        return ug_fail(UG_ENOMEM, "profile '%s': cannot allocate %lld bytes", path, (long long)st.st_size);
    }
    *size = fread(*bytes, 1, (size_t)st.st_size, fp);
    const bool failed = ferror(fp) || *size != (size_t)st.st_size;
    fclose(fp);
    if (failed) {
        free(*bytes);
        return ug_fail(UG_EINPUT, "cannot read profile '%s'", path);
    }
    return ug_ok();
}

static ug_status bad(const loader *ld, const char *key, const json_t *value, const char *what)
{
    char *text = value ? json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    ug_status st = ug_fail(UG_EPARSE, "%s: %s = %s: %s", ld->path, key, text ? text : "(missing)", what);
    free(text);
    return st;
}

static ug_status check_keys(const loader *ld, const char *where, const json_t *obj, const char *const *known)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++) ok = strcmp(*k, key) == 0;
        if (!ok) {
            char path[256];
            snprintf(path, sizeof path, "%s%s%s", where, where[0] ? "." : "", key);
            return bad(ld, path, value, "unknown key");
        }
    }
    return ug_ok();
}

static ug_status get_string(const loader *ld, const json_t *obj, const char *key, bool required, char *out,
                            size_t size)
{
    const json_t *v = json_object_get(obj, key);
    if (!v && !required) return ug_ok();
    if (!json_is_string(v)) return bad(ld, key, v, "expected a string");
    if (json_string_length(v) >= size) return bad(ld, key, v, "too long");
    snprintf(out, size, "%s", json_string_value(v));
    return ug_ok();
}

/* An enumerated string value: its index in names (NULL-terminated). */
static ug_status get_choice(const loader *ld, const json_t *obj, const char *key, const char *const *names,
                            const char *expected, int *out)
{
    const json_t *v = json_object_get(obj, key);
    for (int i = 0; json_is_string(v) && names[i]; i++)
        if (strcmp(json_string_value(v), names[i]) == 0) return *out = i, ug_ok();
    return bad(ld, key, v, expected);
}

static ug_status get_error_term(const loader *ld, const char *where, const json_t *op, const char *key,
                                double *out)
{
    const json_t *v = json_object_get(op, key);
    *out = 0;
    if (!v) return ug_ok();
    char path[128];
    snprintf(path, sizeof path, "%s.%s", where, key);
    if (!json_is_number(v)) return bad(ld, path, v, "expected a number");
    *out = json_number_value(v);
    if (!(*out >= 0) || !isfinite(*out)) return bad(ld, path, v, "expected a finite number >= 0");
    return ug_ok();
}

static ug_status parse_range(const loader *ld, const char *where, const json_t *range, ug_f32_op_allowance *a)
{
    a->range_lo = -INFINITY;
    a->range_hi = INFINITY;
    if (!range) return ug_ok();
    char path[128];
    snprintf(path, sizeof path, "%s.range", where);
    if (!json_is_array(range) || json_array_size(range) != 2 || !json_is_number(json_array_get(range, 0)) ||
        !json_is_number(json_array_get(range, 1)))
        return bad(ld, path, range, "expected [lo, hi], two numbers");
    a->range_lo = json_number_value(json_array_get(range, 0));
    a->range_hi = json_number_value(json_array_get(range, 1));
    if (!(a->range_lo <= a->range_hi)) return bad(ld, path, range, "lo > hi");
    return ug_ok();
}

static ug_status parse_op(const loader *ld, const char *name, const json_t *op, ug_f32_op_allowance *a)
{
    char where[64];
    snprintf(where, sizeof where, "ops.%s", name);
    if (!json_is_object(op)) return bad(ld, where, op, "expected an object");
    static const char *const keys[] = {"ulps", "ulps_per_abs_x", "rel", "abs", "range", NULL};
    UG_TRY(check_keys(ld, where, op, keys));
    UG_TRY(get_error_term(ld, where, op, "ulps", &a->ulps));
    UG_TRY(get_error_term(ld, where, op, "ulps_per_abs_x", &a->ulps_per_abs_x));
    UG_TRY(get_error_term(ld, where, op, "rel", &a->rel));
    UG_TRY(get_error_term(ld, where, op, "abs", &a->abs));
    return parse_range(ld, where, json_object_get(op, "range"), a);
}

static ug_status parse_ops(const loader *ld, const json_t *ops)
{
    if (!json_is_object(ops)) return bad(ld, "ops", ops, "expected an object");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)ops, key, value) {
        int op = 0;
        while (op < UG_F32_OP_COUNT && strcmp(ug_f32_op_name((ug_f32_op)op), key) != 0) op++;
        if (op == UG_F32_OP_COUNT) {
            char path[128];
            snprintf(path, sizeof path, "ops.%s", key);
            return bad(ld, path, value, "unknown op (exp, exp2, log2, pow, rsqrt, sqrt, div, sin, cos)");
        }
        UG_TRY(parse_op(ld, key, value, &ld->out->ops[op]));
    }
    for (int op = 0; op < UG_F32_OP_COUNT; op++)
        if (!json_object_get(ops, ug_f32_op_name((ug_f32_op)op))) {
            char path[64];
            snprintf(path, sizeof path, "ops.%s", ug_f32_op_name((ug_f32_op)op));
            return bad(ld, path, NULL, "every op must be declared");
        }
    return ug_ok();
}

static ug_status parse_exact_at_zero(const loader *ld, const json_t *list)
{
    if (!list) return ug_ok();
    if (!json_is_array(list)) return bad(ld, "exact_at_zero", list, "expected an array of op names");
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)list, i, v) {
        int op = 0;
        while (op < UG_F32_OP_COUNT && !(json_is_string(v) && strcmp(ug_f32_op_name((ug_f32_op)op), json_string_value(v)) == 0))
            op++;
        char path[64];
        snprintf(path, sizeof path, "exact_at_zero[%zu]", i);
        if (op == UG_F32_OP_COUNT) return bad(ld, path, v, "expected an op name");
        if (ld->out->ops[op].exact_at_zero) return bad(ld, path, v, "listed twice");
        ld->out->ops[op].exact_at_zero = true;
    }
    return ug_ok();
}

/* A profile's name: 1 or more characters of [A-Za-z0-9_-]. */
static bool is_profile_name(const char *s)
{
    return s[0] && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == strlen(s);
}

static ug_status parse_profile(const loader *ld, const json_t *root)
{
    ug_f32_model *m = ld->out;
    if (!json_is_object(root)) return bad(ld, "(top level)", root, "expected an object");
    static const char *const keys[] = {"profile", "description", "doc", "subnormals", "products", "ops",
                                       "exact_at_zero", NULL};
    UG_TRY(check_keys(ld, "", root, keys));
    UG_TRY(get_string(ld, root, "profile", true, m->id.name, sizeof m->id.name));
    if (!is_profile_name(m->id.name))
        return bad(ld, "profile", json_object_get(root, "profile"), "expected a name of [A-Za-z0-9_-]");
    UG_TRY(get_string(ld, root, "description", false, m->description, sizeof m->description));
    UG_TRY(get_string(ld, root, "doc", false, m->doc, sizeof m->doc));
    static const char *const subnormals[] = {"gradual", "flush-inputs", "flush-outputs", "flush", NULL};
    static const char *const products[] = {"f32", "tf32", NULL};
    int choice;
    UG_TRY(get_choice(ld, root, "subnormals", subnormals,
                      "expected \"gradual\", \"flush-inputs\", \"flush-outputs\" or \"flush\"", &choice));
    m->subnormals = (ug_subnormals)choice;
    choice = UG_PRODUCTS_F32;
    if (json_object_get(root, "products"))
        UG_TRY(get_choice(ld, root, "products", products, "expected \"f32\" or \"tf32\"", &choice));
    m->products = m->id.products = (ug_products)choice;
    UG_TRY(parse_ops(ld, json_object_get(root, "ops")));
    return parse_exact_at_zero(ld, json_object_get(root, "exact_at_zero"));
}

ug_status ug_profile_load(const char *path, ug_f32_model *out)
{
    memset(out, 0, sizeof *out);
    if (strlen(path) >= sizeof out->id.origin)
        return ug_fail(UG_EINPUT, "profile path has %zu characters, at most %zu allowed", strlen(path),
                       sizeof out->id.origin - 1);
    char *bytes = NULL;
    size_t size = 0;
    UG_TRY(read_bytes(path, &bytes, &size));
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ (unsigned char)bytes[i]) * 0x100000001b3ull;
    json_error_t err;
    json_t *root = json_loadb(bytes, size, JSON_REJECT_DUPLICATES, &err);
    free(bytes);
    if (!root) return ug_fail(UG_EPARSE, "%s:%d:%d: %s", path, err.line, err.column, err.text);
    const loader ld = {path, out};
    ug_status st = parse_profile(&ld, root);
    json_decref(root);
    if (!ug_is_ok(&st)) return st;
    snprintf(out->id.origin, sizeof out->id.origin, "%s", path);
    snprintf(out->id.hash, sizeof out->id.hash, "%016llx", (unsigned long long)h);
    return ug_ok();
}

json_t *ug_profile_id_json(const ug_profile_id *id)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "name", id->name, "hash", id->hash, "origin", id->origin, "products",
                     ug_products_name(id->products));
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

ug_status ug_profile_resolve(const char *name_or_path, const char *exe_path, ug_f32_model *out)
{
    const size_t len = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (len >= 5 && strcmp(name_or_path + len - 5, ".json") == 0))
        return ug_profile_load(name_or_path, out);
    if (len >= UG_PROFILE_NAME_MAX || !is_profile_name(name_or_path))
        return ug_fail(UG_EINVAL, "--profile '%s': a name is 1 to %d characters of [A-Za-z0-9_-] (or give a path)",
                       name_or_path, UG_PROFILE_NAME_MAX - 1);
    char here[UG_PROFILE_ORIGIN_MAX], beside[UG_PROFILE_ORIGIN_MAX] = "";
    snprintf(here, sizeof here, "fixtures/profiles/%s.json", name_or_path);
    if (is_file(here)) return ug_profile_load(here, out);
    const char *slash = exe_path ? strrchr(exe_path, '/') : NULL;
    if (slash) {
        const int dir = (int)(slash - exe_path);
        snprintf(beside, sizeof beside, "%.*s/../fixtures/profiles/%s.json", dir, exe_path, name_or_path);
        if (is_file(beside)) return ug_profile_load(beside, out);
    }
    return ug_fail(UG_EINVAL, "--profile '%s': no %s%s%s", name_or_path, here, beside[0] ? " nor " : "", beside);
}
