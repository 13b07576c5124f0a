/* SPDX-License-Identifier: MIT */
#include "safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "input_file.h"

static const char *const st_dtype_names[UG_DTYPE_COUNT] = {
    [UG_BF16] = "BF16", [UG_F32] = "F32", [UG_F64] = "F64", [UG_U32] = "U32"};

const char *ug_st_dtype_name(ug_dtype t) { return t < UG_DTYPE_COUNT ? st_dtype_names[t] : "?"; }

static ug_dtype st_dtype_parse(const char *name)
{
    for (int t = 0; t < UG_DTYPE_COUNT; t++)
        if (strcmp(name, st_dtype_names[t]) == 0) return (ug_dtype)t;
    return UG_DTYPE_COUNT;
}

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A JSON integer in [0, 2^63); jansson refuses larger ones while parsing. */
static ug_status header_uint(const char *what, const char *tensor, const char *field, const json_t *v,
                             uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ug_fail(UG_EPARSE, "%s: tensor '%s': %s must hold non-negative integers", what, tensor, field);
    *out = (uint64_t)json_integer_value(v);
    return ug_ok();
}

/* One header entry: dtype, shape and offsets, checked against the data's
 * size; the tensor's bytes are located but not yet checked against the
 * other tensors. */
static ug_status parse_entry(const char *what, const char *name, const json_t *e, size_t data_size,
                             ug_st_tensor *t, uint64_t *begin, uint64_t *end)
{
    if (!json_is_object(e)) return ug_fail(UG_EPARSE, "%s: tensor '%s' is not a JSON object", what, name);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)e, key, v) if (strcmp(key, "dtype") && strcmp(key, "shape") &&
                                                   strcmp(key, "data_offsets"))
        return ug_fail(UG_EPARSE, "%s: tensor '%s' has unknown field '%s' (expected dtype, shape, data_offsets)",
                       what, name, key);
    const json_t *dtype = json_object_get(e, "dtype"), *shape = json_object_get(e, "shape"),
                 *offsets = json_object_get(e, "data_offsets");
    if (!json_is_string(dtype)) return ug_fail(UG_EPARSE, "%s: tensor '%s' has no dtype string", what, name);
    t->name = name;
    t->dtype = st_dtype_parse(json_string_value(dtype));
    if (t->dtype == UG_DTYPE_COUNT)
        return ug_fail(UG_EPARSE, "%s: tensor '%s' has dtype '%s'; ulpgate reads BF16, F32, F64 and U32 only", what,
                       name, json_string_value(dtype));
    if (!json_is_array(shape))
        return ug_fail(UG_EPARSE, "%s: tensor '%s' has no shape array", what, name);
    t->rank = json_array_size(shape);
    if (t->rank > UG_ST_MAX_RANK)
        return ug_fail(UG_EPARSE, "%s: tensor '%s' has rank %zu, more than %d", what, name, t->rank, UG_ST_MAX_RANK);
    size_t bytes = ug_dtype_size(t->dtype);
    t->count = 1;
    for (size_t d = 0; d < t->rank; d++) {
        UG_TRY(header_uint(what, name, "shape", json_array_get(shape, d), &t->shape[d]));
        if (__builtin_mul_overflow(t->count, t->shape[d], &t->count) || __builtin_mul_overflow(t->count, ug_dtype_size(t->dtype), &bytes))
            return ug_fail(UG_EPARSE, "%s: tensor '%s': shape dimension %zu (%llu) makes the size overflow 64 bits",
                           what, name, d, (unsigned long long)t->shape[d]);
    }
    if (!json_is_array(offsets) || json_array_size(offsets) != 2)
        return ug_fail(UG_EPARSE, "%s: tensor '%s' has no data_offsets [begin, end]", what, name);
    UG_TRY(header_uint(what, name, "data_offsets", json_array_get(offsets, 0), begin));
    UG_TRY(header_uint(what, name, "data_offsets", json_array_get(offsets, 1), end));
    if (*begin > *end || *end > data_size)
        return ug_fail(UG_EPARSE, "%s: tensor '%s': data_offsets [%llu, %llu] out of range: the data holds %zu bytes",
                       what, name, (unsigned long long)*begin, (unsigned long long)*end, data_size);
    if (*end - *begin != bytes)
        return ug_fail(UG_EPARSE, "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes, but %s of %zu elements needs %zu",
                       what, name, (unsigned long long)*begin, (unsigned long long)*end,
                       (unsigned long long)(*end - *begin), st_dtype_names[t->dtype], t->count, bytes);
    return ug_ok();
}

typedef struct {
    uint64_t begin, end;
    size_t index;
} extent;

static int extent_cmp(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static ug_status parse_metadata(const char *what, const json_t *m)
{
    if (!json_is_object(m)) return ug_fail(UG_EPARSE, "%s: __metadata__ is not a JSON object", what);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)m, key, v) if (!json_is_string(v))
        return ug_fail(UG_EPARSE, "%s: __metadata__ '%s' is not a string", what, key);
    return ug_ok();
}

/* Tensors in data order; the ranges must tile the data exactly. */
static ug_status parse_tensors(const char *what, const json_t *root, const unsigned char *data, size_t data_size,
                               ug_st_file *out)
{
    size_t n = json_object_size(root) - (json_object_get(root, "__metadata__") != NULL);
    extent *ext = calloc(n ? n : 1, sizeof *ext);
    ug_st_tensor *t = calloc(n ? n : 1, sizeof *t);
    ug_status st = ext && t ? ug_ok() : ug_fail(UG_ENOMEM, "%s: cannot allocate %zu tensor entries", what, n);
    const char *key;
    json_t *v;
    size_t i = 0;
    json_object_foreach((json_t *)root, key, v)
    {
        if (!ug_is_ok(&st)) break;
        if (strcmp(key, "__metadata__") == 0) {
            st = parse_metadata(what, v);
            continue;
        }
        ext[i].index = i;
        st = parse_entry(what, key, v, data_size, &t[i], &ext[i].begin, &ext[i].end);
        i++;
    }
    if (ug_is_ok(&st)) qsort(ext, n, sizeof *ext, extent_cmp);
    uint64_t covered = 0;
    for (size_t k = 0; k < n && ug_is_ok(&st); k++) {
        const ug_st_tensor *x = &t[ext[k].index];
        if (ext[k].begin < covered)
            st = ug_fail(UG_EPARSE, "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' (which ends at %llu)",
                         what, x->name, (unsigned long long)ext[k].begin, (unsigned long long)ext[k].end,
                         t[ext[k - 1].index].name, (unsigned long long)covered);
        else if (ext[k].begin > covered)
            st = ug_fail(UG_EPARSE, "%s: tensor '%s' starts at %llu, leaving a hole of %llu unindexed bytes at %llu", what,
                         x->name, (unsigned long long)ext[k].begin, (unsigned long long)(ext[k].begin - covered),
                         (unsigned long long)covered);
        covered = ext[k].end;
    }
    if (ug_is_ok(&st) && covered != data_size)
        st = ug_fail(UG_EPARSE, "%s: the tensors cover %llu of the %zu data bytes (the rest is not indexed)", what,
                     (unsigned long long)covered, data_size);
    if (ug_is_ok(&st)) {
        out->tensors = calloc(n ? n : 1, sizeof *out->tensors);
        if (!out->tensors) st = ug_fail(UG_ENOMEM, "%s: cannot allocate %zu tensor entries", what, n);
    }
    for (size_t k = 0; k < n && ug_is_ok(&st); k++) {
        out->tensors[k] = t[ext[k].index];
        out->tensors[k].data = data + ext[k].begin;
    }
    out->n = ug_is_ok(&st) ? n : 0;
    free(ext);
    free(t);
    return st;
}

ug_status ug_st_parse(const char *what, const unsigned char *bytes, size_t size, ug_st_file *out)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        return ug_fail(UG_EPARSE, "%s: truncated: %zu bytes, shorter than the 8-byte header length", what, size);
    uint64_t hlen = read_le64(bytes);
    if (hlen > UG_ST_MAX_HEADER)
        return ug_fail(UG_EPARSE, "%s: header length %llu bytes exceeds the cap of %llu bytes", what,
                       (unsigned long long)hlen, (unsigned long long)UG_ST_MAX_HEADER);
    if (hlen > size - 8)
        return ug_fail(UG_EPARSE, "%s: header length %llu bytes runs past the end of the file (%zu bytes after the length)",
                       what, (unsigned long long)hlen, size - 8);
    if (hlen == 0 || bytes[8] != '{')
        return ug_fail(UG_EPARSE, "%s: the header does not start with '{' (not a safetensors file)", what);
    json_error_t err;
    json_t *root = json_loadb((const char *)bytes + 8, hlen, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ug_fail(UG_EPARSE, "%s: header is not valid JSON: %s (header byte %d)", what, err.text, err.position);
    out->header = root;
    ug_status st = json_is_object(root) ? parse_tensors(what, root, bytes + 8 + hlen, size - 8 - hlen, out)
                                        : ug_fail(UG_EPARSE, "%s: the header is not a JSON object", what);
    if (!ug_is_ok(&st)) {
        ug_st_free(out);
        return st;
    }
    out->size = size;
    return ug_ok();
}

ug_status ug_st_read(const char *path, size_t max_size, ug_st_file *out)
{
    memset(out, 0, sizeof *out);
    unsigned char *bytes;
    size_t size;
    UG_TRY(ug_input_read("safetensors file", path, max_size, &bytes, &size));
    ug_status st = ug_st_parse(path, bytes, size, out);
    if (!ug_is_ok(&st)) {
        free(bytes);
        return st;
    }
    out->bytes = bytes;
    return st;
}

void ug_st_free(ug_st_file *f)
{
    json_decref(f->header);
    free(f->tensors);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

const ug_st_tensor *ug_st_find(const ug_st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *ug_st_metadata(const ug_st_file *f, const char *key)
{
    return json_string_value(json_object_get(json_object_get(f->header, "__metadata__"), key));
}

void ug_st_copy(const ug_st_tensor *t, void *dst) { memcpy(dst, t->data, t->count * ug_dtype_size(t->dtype)); }

static size_t entry_bytes(const ug_st_entry *e)
{
    size_t n = ug_dtype_size(e->dtype);
    for (size_t d = 0; d < e->rank; d++) n *= e->shape[d];
    return n;
}

/* Data order: decreasing element size, then the order given. */
static void data_order(const ug_st_entry *t, size_t n, size_t *order)
{
    size_t k = 0;
    for (size_t size = 8; size >= 1; size /= 2)
        for (size_t i = 0; i < n; i++)
            if (ug_dtype_size(t[i].dtype) == size) order[k++] = i;
}

/* The header in the order given; offsets follow the data order. */
static ug_status build_header(const ug_st_entry *t, size_t n, const size_t *order, uint64_t *begin,
                              const char *const *meta, size_t n_meta, json_t *root)
{
    if (n_meta) {
        json_t *m = json_object();
        for (size_t i = 0; i < n_meta; i++) json_object_set_new(m, meta[2 * i], json_string(meta[2 * i + 1]));
        json_object_set_new(root, "__metadata__", m);
    }
    for (size_t k = 0, offset = 0; k < n; offset += entry_bytes(&t[order[k]]), k++) begin[order[k]] = offset;
    for (size_t i = 0; i < n; i++) {
        json_t *shape = json_array();
        for (size_t d = 0; d < t[i].rank; d++) json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", st_dtype_names[t[i].dtype], "shape", shape,
                              "data_offsets", (json_int_t)begin[i], (json_int_t)(begin[i] + entry_bytes(&t[i])));
        if (!e) return ug_fail(UG_ENOMEM, "safetensors: cannot build the header entry of '%s'", t[i].name);
        if (json_object_get(root, t[i].name) || strcmp(t[i].name, "__metadata__") == 0) {
            json_decref(e);
            return ug_fail(UG_EINVAL, "safetensors: tensor name '%s' is repeated or reserved", t[i].name);
        }
        if (json_object_set_new(root, t[i].name, e) != 0)
            return ug_fail(UG_EINVAL, "safetensors: tensor name '%s' is not valid UTF-8", t[i].name);
    }
    return ug_ok();
}

ug_status ug_st_write(const char *path, const ug_st_entry *t, size_t n, const char *const *meta, size_t n_meta)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].dtype >= UG_DTYPE_COUNT || t[i].rank > UG_ST_MAX_RANK)
            return ug_fail(UG_EINVAL, "%s: tensor '%s' has an unknown dtype or rank %zu > %d", path, t[i].name,
                           t[i].rank, UG_ST_MAX_RANK);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint64_t *begin = malloc((n ? n : 1) * sizeof *begin);
    json_t *root = json_object();
    if (!order || !begin || !root) {
        free(order);
        free(begin);
        json_decref(root);
        return ug_fail(UG_ENOMEM, "%s: cannot allocate the header of %zu tensors", path, n);
    }
    data_order(t, n, order);
    ug_status st = build_header(t, n, order, begin, meta, n_meta, root);
    char *json = ug_is_ok(&st) ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (ug_is_ok(&st) && !json) st = ug_fail(UG_ENOMEM, "%s: cannot serialise the header", path);
    ug_atomic_file af;
    if (ug_is_ok(&st)) st = ug_atomic_open(&af, path);
    if (ug_is_ok(&st)) {
        size_t len = strlen(json), padded = (len + 7) / 8 * 8;
        unsigned char le[8];
        for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)padded >> (8 * i));
        fwrite(le, 1, 8, af.fp);
        fwrite(json, 1, len, af.fp);
        for (size_t i = len; i < padded; i++) fputc(' ', af.fp);
        for (size_t k = 0; k < n; k++) fwrite(t[order[k]].data, 1, entry_bytes(&t[order[k]]), af.fp);
        st = ug_atomic_commit(&af);
    }
    free(json);
    free(order);
    free(begin);
    return st;
}
