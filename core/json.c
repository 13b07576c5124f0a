/* SPDX-License-Identifier: MIT */
#include "json.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input_file.h"

enum { FOUND_LEN = 64 };

ug_status ug_json_parse(const char *path, const unsigned char *bytes, size_t size, json_t **root)
{
    json_error_t err;
    *root = json_loadb((const char *)bytes, size, JSON_REJECT_DUPLICATES, &err);
    if (*root) return ug_ok();
    return ug_fail(UG_EPARSE, "%s:%d:%d: %s", path, err.line, err.column, err.text);
}

ug_status ug_json_load(const char *what, const char *path, json_t **root)
{
    unsigned char *bytes;
    size_t size;
    *root = NULL;
    UG_TRY(ug_input_read(what, path, UG_INPUT_MAX_JSON, &bytes, &size));
    ug_status st = ug_json_parse(path, bytes, size, root);
    free(bytes);
    return st;
}

ug_status ug_json_read(const char *what, const char *path, ug_status (*parse)(const char *file, const json_t *root, void *out),
                       void *out)
{
    json_t *root;
    UG_TRY(ug_json_load(what, path, &root));
    ug_status st = parse(path, root, out);
    json_decref(root);
    return st;
}

void ug_json_join(char out[UG_JSON_WHERE], const char *where, const char *key)
{
    const char *dot = *where && *key && *key != '[' ? "." : "";
    if (snprintf(out, UG_JSON_WHERE, "%s%s%s", where, dot, key) >= UG_JSON_WHERE)
        strcpy(out + UG_JSON_WHERE - 4, "...");
}

void ug_json_join_index(char out[UG_JSON_WHERE], const char *where, size_t index)
{
    char key[32];
    snprintf(key, sizeof key, "[%zu]", index);
    ug_json_join(out, where, key);
}

ug_status ug_json_fail(const char *file, const char *where, const char *key, const char *fmt, ...)
{
    char item[UG_JSON_WHERE], what[UG_MSG_MAX];
    ug_json_join(item, where, key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ug_fail(UG_EPARSE, "%s: %s: %s", file, *item ? item : "(top level)", what);
}

void ug_fmt_num(char out[UG_NUM_LEN], double x)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, UG_NUM_LEN, "%.*g", prec, x);
        if (strtod(out, NULL) == x) return;
    }
}

void ug_json_describe(const json_t *v, char *out, size_t size)
{
    char num[UG_NUM_LEN];
    switch (json_typeof(v)) {
    case JSON_OBJECT: snprintf(out, size, "an object"); break;
    case JSON_ARRAY: snprintf(out, size, "an array of %zu", json_array_size(v)); break;
    case JSON_STRING: snprintf(out, size, "\"%.40s%s\"", json_string_value(v), json_string_length(v) > 40 ? "..." : ""); break;
    case JSON_INTEGER: snprintf(out, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL:
        ug_fmt_num(num, json_real_value(v));
        /* 1.0 and -0.0 read as reals: say so, they are refused where an integer is expected. */
        snprintf(out, size, "%s%s", num, strpbrk(num, ".e") ? "" : ".0");
        break;
    case JSON_TRUE: snprintf(out, size, "true"); break;
    case JSON_FALSE: snprintf(out, size, "false"); break;
    case JSON_NULL: snprintf(out, size, "null"); break;
    }
}

static ug_status wrong_type(const char *file, const char *where, const char *key, const json_t *v, const char *expected)
{
    char found[FOUND_LEN];
    ug_json_describe(v, found, sizeof found);
    return ug_json_fail(file, where, key, "expected %s, found %s", expected, found);
}

/* obj[key], or obj[i] for a key "[i]"; NULL when absent. */
static json_t *lookup(const json_t *obj, const char *key)
{
    if (key[0] != '[') return json_object_get(obj, key);
    return json_array_get(obj, strtoul(key + 1, NULL, 10));
}

static ug_status get_typed(const char *file, const char *where, const json_t *obj, const char *key,
                           const char *expected, json_t **out)
{
    *out = lookup(obj, key);
    return *out ? ug_ok() : ug_json_fail(file, where, key, "missing (expected %s)", expected);
}

ug_status ug_json_get(const char *file, const char *where, const json_t *obj, const char *key, json_t **out)
{
    return get_typed(file, where, obj, key, "a value", out);
}

ug_status ug_json_check_object(const char *file, const char *where, const char *key, const json_t *v)
{
    return json_is_object(v) ? ug_ok() : wrong_type(file, where, key, v, "an object");
}

ug_status ug_json_check_array(const char *file, const char *where, const char *key, const json_t *v)
{
    return json_is_array(v) ? ug_ok() : wrong_type(file, where, key, v, "an array");
}

ug_status ug_json_object(const char *file, const char *where, const json_t *obj, const char *key, json_t **out)
{
    UG_TRY(get_typed(file, where, obj, key, "an object", out));
    return ug_json_check_object(file, where, key, *out);
}

ug_status ug_json_array(const char *file, const char *where, const json_t *obj, const char *key, json_t **out)
{
    UG_TRY(get_typed(file, where, obj, key, "an array", out));
    return ug_json_check_array(file, where, key, *out);
}

ug_status ug_json_string(const char *file, const char *where, const json_t *obj, const char *key, const char **out)
{
    json_t *v;
    UG_TRY(get_typed(file, where, obj, key, "a string", &v));
    if (!json_is_string(v)) return wrong_type(file, where, key, v, "a string");
    *out = json_string_value(v);
    return ug_ok();
}

ug_status ug_json_bool(const char *file, const char *where, const json_t *obj, const char *key, bool *out)
{
    json_t *v;
    UG_TRY(get_typed(file, where, obj, key, "true or false", &v));
    if (!json_is_boolean(v)) return wrong_type(file, where, key, v, "true or false");
    *out = json_is_true(v);
    return ug_ok();
}

static ug_status in_range(const char *file, const char *where, const char *key, double x, double lo, double hi)
{
    char xs[UG_NUM_LEN], ls[UG_NUM_LEN];
    if (x >= lo && x <= hi) return ug_ok();
    ug_fmt_num(xs, x);
    ug_fmt_num(ls, x < lo ? lo : hi);
    return ug_json_fail(file, where, key, "%s is %s %s", xs, x < lo ? "below the minimum" : "above the maximum", ls);
}

ug_status ug_json_number(const char *file, const char *where, const json_t *obj, const char *key, double lo,
                         double hi, double *out)
{
    json_t *v;
    UG_TRY(get_typed(file, where, obj, key, "a number", &v));
    if (!json_is_number(v)) return wrong_type(file, where, key, v, "a number");
    UG_TRY(in_range(file, where, key, json_number_value(v), lo, hi));
    *out = json_number_value(v);
    return ug_ok();
}

ug_status ug_json_real(const char *file, const char *where, const json_t *obj, const char *key, double lo, double hi,
                       bool allow_nan, double *out)
{
    static const char expected[] = "a number (or \"inf\", \"-inf\", \"nan\")";
    json_t *v;
    UG_TRY(get_typed(file, where, obj, key, expected, &v));
    const char *s = json_string_value(v);
    double x;
    if (json_is_number(v)) x = json_number_value(v);
    else if (s && strcmp(s, "inf") == 0) x = INFINITY;
    else if (s && strcmp(s, "-inf") == 0) x = -INFINITY;
    else if (s && strcmp(s, "nan") == 0) x = NAN;
    else return wrong_type(file, where, key, v, expected);
    if (isnan(x) && !allow_nan) return ug_json_fail(file, where, key, "\"nan\" is not allowed here");
    if (!isnan(x)) UG_TRY(in_range(file, where, key, x, lo, hi));
    *out = x;
    return ug_ok();
}

static ug_status check_int(const char *file, const char *where, const char *key, const json_t *v, json_int_t lo,
                           json_int_t hi, const char *expected, json_int_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return wrong_type(file, where, key, v, expected);
    *out = json_integer_value(v);
    return ug_ok();
}

static void int_expected(char *out, size_t size, json_int_t lo, json_int_t hi)
{
    snprintf(out, size, "an integer in [%" JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT "]", lo, hi);
}

ug_status ug_json_int(const char *file, const char *where, const json_t *obj, const char *key, json_int_t lo,
                      json_int_t hi, json_int_t *out)
{
    json_t *v;
    char expected[96];
    int_expected(expected, sizeof expected, lo, hi);
    UG_TRY(get_typed(file, where, obj, key, expected, &v));
    return check_int(file, where, key, v, lo, hi, expected, out);
}

ug_status ug_json_int_value(const char *file, const char *item, const json_t *v, json_int_t lo, json_int_t hi,
                            json_int_t *out)
{
    char expected[96];
    int_expected(expected, sizeof expected, lo, hi);
    return check_int(file, item, "", v, lo, hi, expected, out);
}

ug_status ug_json_uint(const char *file, const char *where, const json_t *obj, const char *key, uint64_t max,
                       uint64_t *out)
{
    json_int_t v;
    UG_TRY(ug_json_int(file, where, obj, key, 0, max > (uint64_t)LLONG_MAX ? LLONG_MAX : (json_int_t)max,
                       &v));
    *out = (uint64_t)v;
    return ug_ok();
}

ug_status ug_json_u32(const char *file, const char *where, const json_t *obj, const char *key, uint32_t *out)
{
    uint64_t v;
    UG_TRY(ug_json_uint(file, where, obj, key, UINT32_MAX, &v));
    *out = (uint32_t)v;
    return ug_ok();
}

ug_status ug_json_hex64(const char *file, const char *where, const json_t *obj, const char *key, uint64_t *out)
{
    json_t *v;
    static const char expected[] = "16 hex digits";
    UG_TRY(get_typed(file, where, obj, key, expected, &v));
    const char *s = json_string_value(v);
    if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdefABCDEF") != 16) return wrong_type(file, where, key, v, expected);
    *out = strtoull(s, NULL, 16);
    return ug_ok();
}

void *ug_append(void **items, size_t *n, size_t size)
{
    char *grown = realloc(*items, (*n + 1) * size);
    if (!grown) return NULL;
    *items = grown;
    memset(grown + *n * size, 0, size);
    return grown + (*n)++ * size;
}

ug_status ug_json_keys(const char *file, const char *where, const json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0) a++;
        if (!*a) return ug_json_fail(file, where, key, "unknown key");
    }
    return ug_ok();
}

ug_status ug_json_schema(const char *file, const json_t *root, const char *schema, const char *const *keys)
{
    const char *s;
    UG_TRY(ug_json_check_object(file, "", "", root));
    UG_TRY(ug_json_string(file, "", root, "schema", &s));
    if (strcmp(s, schema) != 0) return ug_json_fail(file, "", "schema", "expected \"%s\", found \"%s\"", schema, s);
    return keys ? ug_json_keys(file, "", root, keys) : ug_ok();
}

json_t *ug_json_from_real(double x)
{
    if (isfinite(x)) return json_real(x);
    return json_string(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
}

json_t *ug_json_from_hex64(uint64_t h)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, h);
    return json_string(hex);
}
