/* SPDX-License-Identifier: MIT */
/* The strict JSON reader every ulpgate input goes through (sweeps, budgets,
 * baselines, report.json read back by report/compare/merge, manifests).
 *
 * Contract: files are read through core/input_file (checked, capped at
 * UG_INPUT_MAX_JSON) and parsed with duplicate keys refused. Every getter
 * either stores a value of the expected type and range or fails with
 * UG_EPARSE and one message naming the file, the JSON path of the item
 * (e.g. "families.gdn_chunk_o.outputs.o.exact.max_ratio", "cases[3].label"),
 * what was expected and what was found:
 *   "b.json: families.x.o.exact.max_ratio: expected a number, found \"high\""
 *   "b.json: families.x.o.exact.max_ratio: missing (expected a number)"
 * A `where` is the JSON path of the object holding `key` ("" at the top
 * level); a key starting with '[' is an array index and joins without a dot.
 * Reals may be JSON numbers or the strings "inf", "-inf", "nan" (how
 * ulpgate writes non-finite figures). ug_json_keys refuses keys outside an
 * allowed list, for formats that are closed. */
#ifndef UG_JSON_H
#define UG_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "status.h"

enum { UG_JSON_WHERE = 256 };

/* Reads and parses a file (what: its role, for messages). */
ug_status ug_json_load(const char *what, const char *path, json_t **root);
/* Loads a file and hands its root to parse(file, root, out); the root is
 * released after. */
ug_status ug_json_read(const char *what, const char *path, ug_status (*parse)(const char *file, const json_t *root, void *out),
                       void *out);
/* Parses size bytes already read from path. */
ug_status ug_json_parse(const char *path, const unsigned char *bytes, size_t size, json_t **root);

/* "where.key", "where[i]" or "key"; an over-long path ends in "...". */
void ug_json_join(char out[UG_JSON_WHERE], const char *where, const char *key);
void ug_json_join_index(char out[UG_JSON_WHERE], const char *where, size_t index);

/* UG_EPARSE "file: where.key: <what>" (what formatted). */
ug_status ug_json_fail(const char *file, const char *where, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Typed getters: obj[key] must exist and have the type. */
ug_status ug_json_get(const char *file, const char *where, const json_t *obj, const char *key, json_t **out);
ug_status ug_json_object(const char *file, const char *where, const json_t *obj, const char *key, json_t **out);
ug_status ug_json_array(const char *file, const char *where, const json_t *obj, const char *key, json_t **out);
ug_status ug_json_string(const char *file, const char *where, const json_t *obj, const char *key, const char **out);
ug_status ug_json_bool(const char *file, const char *where, const json_t *obj, const char *key, bool *out);
/* A JSON number within [lo, hi]. */
ug_status ug_json_number(const char *file, const char *where, const json_t *obj, const char *key, double lo,
                         double hi, double *out);
/* A number or "inf"/"-inf"/"nan", within [lo, hi] (NaN refused unless allow_nan). */
ug_status ug_json_real(const char *file, const char *where, const json_t *obj, const char *key, double lo, double hi,
                       bool allow_nan, double *out);
/* A JSON integer (not 1.0, not -0.0) within [lo, hi]. */
ug_status ug_json_int(const char *file, const char *where, const json_t *obj, const char *key, json_int_t lo,
                      json_int_t hi, json_int_t *out);
/* The same check of a value v already at JSON path item. */
ug_status ug_json_int_value(const char *file, const char *item, const json_t *v, json_int_t lo, json_int_t hi,
                            json_int_t *out);
ug_status ug_json_uint(const char *file, const char *where, const json_t *obj, const char *key, uint64_t max,
                       uint64_t *out);
ug_status ug_json_u32(const char *file, const char *where, const json_t *obj, const char *key, uint32_t *out);
/* Exactly 16 hex digits (how hashes are written). */
ug_status ug_json_hex64(const char *file, const char *where, const json_t *obj, const char *key, uint64_t *out);

/* The value v (found at where.key) must be an object / array. */
ug_status ug_json_check_object(const char *file, const char *where, const char *key, const json_t *v);
ug_status ug_json_check_array(const char *file, const char *where, const char *key, const json_t *v);
/* Refuses keys of obj outside allowed (NULL-terminated): a closed format. */
ug_status ug_json_keys(const char *file, const char *where, const json_t *obj, const char *const *allowed);
/* root is an object whose "schema" is schema; with keys, the only keys allowed. */
ug_status ug_json_schema(const char *file, const json_t *root, const char *schema, const char *const *keys);

/* Grows *items by one zeroed element of the given size (readers collect
 * what they parse with it); NULL when out of memory. */
void *ug_append(void **items, size_t *n, size_t size);
/* Shortest "%.*g" text that reads back as x, for messages. */
enum { UG_NUM_LEN = 32 };
void ug_fmt_num(char out[UG_NUM_LEN], double x);

/* The writers' side of the conventions above: a real as a JSON number, or
 * "inf"/"-inf"/"nan"; a hash as 16 lower-case hex digits. */
json_t *ug_json_from_real(double x);
json_t *ug_json_from_hex64(uint64_t h);

/* A short description of a value for messages: "\"text\"", "1.5", "null", "an object". */
void ug_json_describe(const json_t *v, char *out, size_t size);

#endif
