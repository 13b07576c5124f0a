/* SPDX-License-Identifier: MIT */
#include "interop.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/input_file.h"
#include "../core/json.h"
#include "../core/json_dir.h"
#include "../core/safetensors.h"
#include "chain.h"
#include "profile.h"

/* ------------------------------------------------------------------------
 * Shapes: a buffer's declared dimensions evaluated with the case's parameters
 * (ug_family_buffer_shape); [count] for a buffer absent in the case or
 * declared in words (htmp's two parts). */

static void shape_text(const uint64_t *shape, size_t rank, char *out, size_t size)
{
    size_t at = (size_t)snprintf(out, size, "[");
    for (size_t d = 0; d < rank && at < size; d++)
        at += (size_t)snprintf(out + at, size - at, "%s%" PRIu64, d ? "," : "", shape[d]);
    if (at < size) snprintf(out + at, size - at, "]");
}

/* ------------------------------------------------------------------------
 * A case's buffers, plain allocations (the runner guards its own). */

typedef struct {
    size_t n;
    ug_buf buf[UG_MAX_BUFFERS];
} plain_buffers;

static void plain_free(plain_buffers *pb)
{
    for (size_t i = 0; i < pb->n; i++) free(pb->buf[i].data);
    pb->n = 0;
}

static ug_status plain_alloc(const ug_case *c, size_t max_bytes, plain_buffers *pb)
{
    const ug_family *f = c->family;
    memset(pb, 0, sizeof *pb);
    size_t total = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        ug_buf *b = &pb->buf[i];
        UG_TRY(ug_family_buffer_count(f, &c->params, i, &b->count));
        b->dtype = f->buffers[i].dtype;
        size_t bytes = b->count * ug_dtype_size(b->dtype);
        if (b->count > SIZE_MAX / 8 || bytes > max_bytes - total)
            return ug_fail(UG_ENOMEM, "%s/%s: buffers need more than the %zu-byte cap (at buffer %s, %zu elements)",
                           f->name, c->label, max_bytes, f->buffers[i].name, b->count);
        total += bytes;
    }
    for (size_t i = 0; i < f->n_buffers; i++, pb->n = i) {
        pb->buf[i].data = calloc(pb->buf[i].count ? pb->buf[i].count : 1, ug_dtype_size(pb->buf[i].dtype));
        if (!pb->buf[i].data) {
            plain_free(pb);
            return ug_fail(UG_ENOMEM, "%s/%s: cannot allocate buffer %s (%zu elements)", f->name, c->label,
                           f->buffers[i].name, pb->buf[i].count);
        }
    }
    return ug_ok();
}

static void case_file_name(const ug_case *c, char *out, size_t size)
{
    snprintf(out, size, "%04zu-%s.safetensors", c->index, c->family->name);
}

static ug_status join_path(const char *dir, const char *name, char *out, size_t size)
{
    if ((size_t)snprintf(out, size, "%s/%s", dir, name) >= size)
        return ug_fail(UG_EIO, "path '%s/%s' is longer than %zu bytes", dir, name, size - 1);
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * export */

enum { REF_TENSORS = 3 }; /* per output and mode: ref, ref_f64, bound */
static const char *const ref_tensor_kind[REF_TENSORS] = {"ref", "ref_f64", "bound"};

typedef struct {
    ug_ref_value *ref[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    void *data[UG_MAX_BUFFERS][UG_REF_MODE_COUNT][REF_TENSORS];
} case_reference;

static void reference_free(case_reference *cr)
{
    for (size_t o = 0; o < UG_MAX_BUFFERS; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            free(cr->ref[o][m]);
            for (int k = 0; k < REF_TENSORS; k++) free(cr->data[o][m][k]);
        }
}

/* The reference of every output in both modes, as the three exported
 * arrays: RN in the output dtype, r_hi as f64, the bound as f64. A
 * pipeline's optional outputs (intermediates) are the candidate's to hand
 * over, and the references that depend on them (harness/chain.h) are
 * computed by `score` from the candidate's own: those (output, mode) pairs
 * have no arrays (data NULL). */
static ug_status reference_arrays(const ug_case *c, const ug_f32_model *model, const plain_buffers *pb,
                                  case_reference *cr)
{
    const ug_family *f = c->family;
    memset(cr, 0, sizeof *cr);
    ug_buf bufs[UG_MAX_BUFFERS];
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) {
        bufs[i] = pb->buf[i];
        present[i] = !f->buffers[i].optional;
        if (!present[i]) bufs[i].data = NULL;
    }
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        ug_ref_value *outs[UG_MAX_BUFFERS];
        bool measured[UG_MAX_BUFFERS];
        UG_TRY(ug_case_measured(f, present, (ug_ref_mode)m, measured));
        size_t o = 0, counts[UG_MAX_BUFFERS];
        for (size_t i = 0; i < f->n_buffers; i++) {
            if (!f->buffers[i].is_output) continue;
            const size_t n = bufs[i].count ? bufs[i].count : 1;
            cr->ref[o][m] = calloc(n, sizeof(ug_ref_value));
            if (!cr->ref[o][m]) return ug_fail(UG_ENOMEM, "reference of %s/%s: %zu elements", f->name, c->label, n);
            if (measured[i]) {
                cr->data[o][m][0] = calloc(n, ug_dtype_size(bufs[i].dtype));
                cr->data[o][m][1] = calloc(n, sizeof(double));
                cr->data[o][m][2] = calloc(n, sizeof(double));
                if (!cr->data[o][m][0] || !cr->data[o][m][1] || !cr->data[o][m][2])
                    return ug_fail(UG_ENOMEM, "reference of %s/%s: %zu elements", f->name, c->label, n);
            }
            outs[o] = cr->ref[o][m];
            counts[o++] = bufs[i].count;
        }
        UG_TRY(ug_case_reference(f, &c->params, bufs, model, (ug_ref_mode)m, outs));
        for (size_t k = 0; k < o; k++) ug_ref_allow_flushed_output(model, outs[k], counts[k]);
    }
    size_t o = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!f->buffers[i].is_output) continue;
        const ug_buf *b = &pb->buf[i];
        for (int m = 0; m < UG_REF_MODE_COUNT; m++)
            for (size_t e = 0; e < b->count && cr->data[o][m][0]; e++) {
                const ug_ref_value *r = &cr->ref[o][m][e];
                if (b->dtype == UG_BF16) ((uint16_t *)cr->data[o][m][0])[e] = (uint16_t)r->rn_bits;
                else ((uint32_t *)cr->data[o][m][0])[e] = r->rn_bits;
                ((double *)cr->data[o][m][1])[e] = r->r_hi;
                ((double *)cr->data[o][m][2])[e] = r->bound;
            }
        o++;
    }
    return ug_ok();
}

static json_t *shape_json(const uint64_t *shape, size_t rank)
{
    json_t *a = json_array();
    for (size_t d = 0; d < rank; d++) json_array_append_new(a, json_integer((json_int_t)shape[d]));
    return a;
}

static json_t *tensor_json(const char *name, ug_dtype dtype, const uint64_t *shape, size_t rank)
{
    return json_pack("{s:s, s:s, s:o}", "name", name, "dtype", ug_st_dtype_name(dtype), "shape",
                     shape_json(shape, rank));
}

static json_t *params_json(const ug_case *c)
{
    json_t *p = json_object();
    for (size_t k = 0; k < c->family->n_params; k++) {
        double v = c->params.v[k];
        json_object_set_new(p, c->family->param_names[k],
                            v == (double)(json_int_t)v ? json_integer((json_int_t)v) : json_real(v));
    }
    return p;
}

enum { NAME_LEN = 96 };

/* One case whose inputs are in pb: its safetensors file, and its entry in
 * the manifest (user: the input file's name and hash, NULL for a generated
 * case, which records its seed instead). */
static ug_status write_case(const ug_case *c, const ug_f32_model *model, const char *dir, const plain_buffers *pb,
                            const ug_user_origin *user, json_t *cases)
{
    const ug_family *f = c->family;
    case_reference cr;
    ug_status st = reference_arrays(c, model, pb, &cr);
    ug_st_entry entries[UG_MAX_BUFFERS * (1 + UG_REF_MODE_COUNT * REF_TENSORS)];
    char names[UG_MAX_BUFFERS * UG_REF_MODE_COUNT * REF_TENSORS][NAME_LEN];
    char file[128], path[1024], hash[32], index[32];
    case_file_name(c, file, sizeof file);
    snprintf(index, sizeof index, "%zu", c->index);
    json_t *inputs = json_array(), *outputs = json_array();
    size_t n = 0, o = 0;
    for (size_t i = 0; i < f->n_buffers && ug_is_ok(&st); i++) {
        const ug_buf *b = &pb->buf[i];
        ug_st_entry *e = &entries[n++];
        *e = (ug_st_entry){f->buffers[i].name, b->dtype, 0, {0}, b->data};
        ug_family_buffer_shape(f, &c->params, i, b->count, e->shape, &e->rank);
        json_t *t = tensor_json(e->name, e->dtype, e->shape, e->rank);
        if (!f->buffers[i].is_output) {
            snprintf(hash, sizeof hash, "%016" PRIx64, ug_buf_hash(b));
            json_object_set_new(t, "fnv1a", json_string(hash));
            json_array_append_new(inputs, t);
            continue;
        }
        const ug_st_entry output = *e;
        n--; /* the output itself is the candidate's to write; its references take the slot */
        json_t *refs = json_object();
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            if (!cr.data[o][m][0]) continue; /* computed by score from the candidate's intermediates */
            json_t *mode = json_object();
            for (int k = 0; k < REF_TENSORS; k++) {
                char *name = names[(o * UG_REF_MODE_COUNT + (size_t)m) * REF_TENSORS + (size_t)k];
                snprintf(name, NAME_LEN, "%s.%s.%s", f->buffers[i].name, ug_ref_mode_name((ug_ref_mode)m),
                         ref_tensor_kind[k]);
                ug_st_entry *r = &entries[n++];
                *r = output;
                r->name = name;
                r->dtype = k == 0 ? b->dtype : UG_F64;
                r->data = cr.data[o][m][k];
                json_object_set_new(mode, ref_tensor_kind[k], json_string(name));
            }
            json_object_set_new(refs, ug_ref_mode_name((ug_ref_mode)m), mode);
        }
        json_object_set_new(t, "reference", refs);
        if (f->buffers[i].optional) json_object_set_new(t, "optional", json_true());
        json_array_append_new(outputs, t);
        o++;
    }
    const char *meta[] = {"schema", UG_FIXTURES_SCHEMA, "family", f->name, "label", c->label, "case", index};
    if (ug_is_ok(&st)) st = join_path(dir, file, path, sizeof path);
    if (ug_is_ok(&st)) st = ug_st_write(path, entries, n, meta, sizeof meta / sizeof meta[0] / 2);
    if (ug_is_ok(&st)) {
        json_t *e = json_pack("{s:I, s:s, s:s, s:o, s:s, s:s, s:O, s:O}", "id", (json_int_t)c->index, "family",
                              f->name, "label", c->label, "params", params_json(c), "regime",
                              user ? UG_USER_REGIME : f->regimes[c->regime], "file", file, "inputs", inputs,
                              "outputs", outputs);
        if (user) {
            snprintf(hash, sizeof hash, "%016" PRIx64, user->fnv1a);
            json_object_set_new(e, "origin", json_string(UG_USER_REGIME));
            json_object_set_new(e, "input_file", json_string(user->name));
            json_object_set_new(e, "input_fnv1a", json_string(hash));
        } else {
            snprintf(hash, sizeof hash, "0x%016" PRIx64, c->seed);
            json_object_set_new(e, "seed", json_string(hash));
        }
        json_array_append_new(cases, e);
    }
    json_decref(inputs);
    json_decref(outputs);
    reference_free(&cr);
    return st;
}

static ug_status export_case(const ug_case *c, const ug_f32_model *model, const char *dir, size_t max_bytes,
                             json_t *cases)
{
    plain_buffers pb;
    UG_TRY(plain_alloc(c, max_bytes, &pb));
    ug_status st = ug_case_generate(c, pb.buf);
    if (ug_is_ok(&st)) st = write_case(c, model, dir, &pb, NULL, cases);
    plain_free(&pb);
    return st;
}

ug_status ug_export(const ug_sweep *sw, const ug_f32_model *model, const char *dir, size_t max_case_bytes,
                    bool progress, size_t *n_exported, size_t *n_rejected_skipped)
{
    *n_exported = *n_rejected_skipped = 0;
    char manifest[1024];
    UG_TRY(ug_make_dirs(dir));
    UG_TRY(join_path(dir, UG_FIXTURES_MANIFEST, manifest, sizeof manifest));
    if (unlink(manifest) != 0 && errno != ENOENT)
        return ug_fail(UG_EIO, "cannot remove the old manifest '%s': %s", manifest, strerror(errno));
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, sw->content_hash);
    json_t *cases = json_array();
    json_t *root = json_pack("{s:s, s:{s:s, s:I, s:s, s:s}, s:o}", "schema", UG_FIXTURES_SCHEMA, "sweep", "path",
                             sw->path, "seed", (json_int_t)sw->seed, "content_hash", hash, "filter", sw->filter,
                             "cases", cases);
    if (!root) return ug_fail(UG_ENOMEM, "cannot build the manifest of %s", sw->path);
    json_object_set_new(root, "profile", ug_profile_id_json(&model->id));
    ug_status st = ug_ok();
    for (size_t i = 0; i < sw->n_cases && ug_is_ok(&st); i++) {
        const ug_case *c = &sw->cases[i];
        if (c->expect_reject) {
            ++*n_rejected_skipped;
            continue;
        }
        if (progress) fprintf(stderr, "\r[%zu/%zu] export %s/%s\033[K", i + 1, sw->n_cases, c->family->name, c->label);
        st = export_case(c, model, dir, max_case_bytes, cases);
        *n_exported += ug_is_ok(&st);
    }
    if (progress) fprintf(stderr, "\r\033[K");
    json_object_set_new(root, "rejected_cases_not_exported", json_integer((json_int_t)*n_rejected_skipped));
    if (ug_is_ok(&st) && *n_exported == 0)
        st = ug_fail(UG_EINVAL, "%s has no accepted case to export", sw->path);
    if (ug_is_ok(&st)) st = ug_write_json_file(manifest, root);
    json_decref(root);
    return st;
}

/* The fixture directory is built beside dir and renamed onto it last, so
 * that a failure leaves dir as it was: absent or empty. */
ug_status ug_export_user(const ug_case *c, const ug_buf *bufs, const ug_f32_model *model, const ug_user_origin *user,
                         const char *dir)
{
    char tmp[1024], file[128], path[1024], manifest[1024];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", dir) >= sizeof tmp)
        return ug_fail(UG_EINVAL, "--out %s: longer than %zu bytes", dir, sizeof tmp - 16);
    case_file_name(c, file, sizeof file);
    UG_TRY(join_path(tmp, file, path, sizeof path)); /* the lengths; mkdtemp keeps them */
    UG_TRY(join_path(tmp, UG_FIXTURES_MANIFEST, manifest, sizeof manifest));
    if (!mkdtemp(tmp)) return ug_fail(UG_EINVAL, "--out %s: cannot create %s: %s", dir, tmp, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", tmp, file);
    snprintf(manifest, sizeof manifest, "%s/%s", tmp, UG_FIXTURES_MANIFEST);
    plain_buffers pb = {.n = c->family->n_buffers};
    memcpy(pb.buf, bufs, pb.n * sizeof *bufs);
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, user->fnv1a);
    json_t *cases = json_array();
    json_t *root = json_pack("{s:s, s:s, s:{s:s, s:I, s:s, s:s}, s:o, s:I}", "schema", UG_FIXTURES_SCHEMA, "origin",
                             UG_USER_REGIME, "sweep", "path", user->name, "seed", (json_int_t)0, "content_hash", hash,
                             "filter", "", "cases", cases, "rejected_cases_not_exported", (json_int_t)0);
    if (!root) {
        rmdir(tmp);
        return ug_fail(UG_ENOMEM, "cannot build the manifest of %s", user->name);
    }
    json_object_set_new(root, "profile", ug_profile_id_json(&model->id));
    ug_status st = write_case(c, model, tmp, &pb, user, cases);
    if (ug_is_ok(&st)) st = ug_write_json_file(manifest, root);
    json_decref(root);
    if (ug_is_ok(&st) && rename(tmp, dir) != 0)
        st = ug_fail(UG_EINVAL, "--out %s: cannot put the fixtures there (%s; it must be absent or an empty "
                                "directory)", dir, strerror(errno));
    if (!ug_is_ok(&st)) {
        unlink(path);
        unlink(manifest);
        rmdir(tmp);
    }
    return st;
}

/* ------------------------------------------------------------------------
 * score */

struct ug_candidate {
    char dir[512];
    char fixtures[512];
    size_t max_file;    /* a case's byte cap plus the largest header */
    size_t n;
    char (*file)[128];  /* per case, as the manifest names it */
};

void ug_candidate_free(ug_candidate *cand)
{
    if (!cand) return;
    free(cand->file);
    free(cand);
}

ug_status ug_fixture_tensors_copy(const char *what, const ug_st_file *sf, const ug_case *c, ug_buf *bufs, bool outputs)
{
    const ug_family *f = c->family;
    const char *kind = outputs ? "output" : "input";
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (f->buffers[i].is_output != outputs) continue;
        const ug_st_tensor *t = ug_st_find(sf, f->buffers[i].name);
        uint64_t shape[UG_ST_MAX_RANK];
        size_t rank;
        ug_family_buffer_shape(f, &c->params, i, bufs[i].count, shape, &rank);
        char want[160], got[160];
        shape_text(shape, rank, want, sizeof want);
        if (!t) {
            /* an empty tensor, or an intermediate the candidate does not hand over (left unwritten) */
            if (bufs[i].count == 0 || (outputs && f->buffers[i].optional)) continue;
            return ug_fail(UG_EPARSE, "%s: no tensor '%s' (%s %s %s of %s/%s)", what, f->buffers[i].name, kind,
                           ug_st_dtype_name(bufs[i].dtype), want, f->name, c->label);
        }
        shape_text(t->shape, t->rank, got, sizeof got);
        if (t->dtype != bufs[i].dtype)
            return ug_fail(UG_EPARSE, "%s: tensor '%s' is %s, the %s is %s", what, t->name,
                           ug_st_dtype_name(t->dtype), kind, ug_st_dtype_name(bufs[i].dtype));
        if (strcmp(want, got) != 0)
            return ug_fail(UG_EPARSE, "%s: tensor '%s' has shape %s, the %s's is %s", what, t->name, got, kind, want);
        ug_st_copy(t, bufs[i].data);
    }
    return ug_ok();
}

/* Reads a fixture directory's file of case c: the candidate's (outputs) or
 * the exported one (a user-supplied case's inputs). */
static ug_status case_file_tensors(const char *dir, const char *file, size_t max_file, const ug_case *c, ug_buf *bufs,
                                   bool outputs)
{
    char path[1024], what[1040];
    UG_TRY(join_path(dir, file, path, sizeof path));
    ug_st_file sf;
    UG_TRY(ug_st_read(path, max_file, &sf));
    snprintf(what, sizeof what, outputs ? "candidate %s" : "%s", path);
    ug_status st = ug_fixture_tensors_copy(what, &sf, c, bufs, outputs);
    ug_st_free(&sf);
    return st;
}

static ug_status candidate_outputs(const ug_candidate *cand, const ug_case *c, ug_buf *bufs)
{
    return case_file_tensors(cand->dir, cand->file[c->index], cand->max_file, c, bufs, true);
}

static ug_status user_inputs(const void *ctx, const ug_case *c, ug_buf *bufs)
{
    const ug_candidate *cand = ctx;
    return case_file_tensors(cand->fixtures, cand->file[c->index], cand->max_file, c, bufs, false);
}

static ug_status candidate_run(void *ctx, const ug_case *c, ug_buf *bufs)
{
    return candidate_outputs(ctx, c, bufs);
}

#define MANIFEST_FAIL(...) ug_fail(UG_EPARSE, __VA_ARGS__)

/* The tensors a manifest lists for a case must be the buffers this tool
 * has for it, with the same dtypes and shapes. */
static ug_status check_manifest_tensors(const char *path, const ug_case *c, const json_t *list, bool outputs,
                                        const plain_buffers *pb)
{
    const ug_family *f = c->family;
    size_t k = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (f->buffers[i].is_output != outputs) continue;
        const json_t *t = json_array_get(list, k++);
        uint64_t shape[UG_ST_MAX_RANK];
        size_t rank;
        ug_family_buffer_shape(f, &c->params, i, pb->buf[i].count, shape, &rank);
        json_t *mine_obj = tensor_json(f->buffers[i].name, pb->buf[i].dtype, shape, rank);
        char *mine = json_dumps(mine_obj, JSON_COMPACT);
        json_decref(mine_obj);
        json_t *theirs_obj = json_pack("{s:O?, s:O?, s:O?}", "name", json_object_get(t, "name"), "dtype",
                                       json_object_get(t, "dtype"), "shape", json_object_get(t, "shape"));
        char *theirs = theirs_obj ? json_dumps(theirs_obj, JSON_COMPACT) : NULL;
        json_decref(theirs_obj);
        bool same = mine && theirs && strcmp(mine, theirs) == 0;
        ug_status st = same ? ug_ok()
                            : MANIFEST_FAIL("%s: case %zu (%s/%s): fixture/tool version mismatch: the manifest lists "
                                            "%s, this tool has %s",
                                            path, c->index, f->name, c->label, theirs ? theirs : "nothing", mine);
        free(mine);
        free(theirs);
        UG_TRY(st);
        if (outputs) continue;
        char hash[32];
        snprintf(hash, sizeof hash, "%016" PRIx64, ug_buf_hash(&pb->buf[i]));
        const char *want = json_string_value(json_object_get(t, "fnv1a"));
        if (!want || strcmp(want, hash) != 0)
            return MANIFEST_FAIL("%s: case %zu (%s/%s): fixture/tool version mismatch: input %s hashes to %s here, "
                                 "the manifest says %s (export the fixtures again with this ulpgate)",
                                 path, c->index, f->name, c->label, f->buffers[i].name, hash, want ? want : "nothing");
    }
    if (k != json_array_size(list))
        return MANIFEST_FAIL("%s: case %zu (%s/%s): the manifest lists %zu %s, this tool has %zu", path, c->index,
                             f->name, c->label, json_array_size(list), outputs ? "outputs" : "inputs", k);
    return ug_ok();
}

/* One manifest entry (cases[index], checked strictly) into a case of the
 * sweep; a user-supplied one ("origin": "user", no seed) loads its inputs
 * through cand. */
static ug_status manifest_case(const char *path, const json_t *cases, size_t index, const ug_candidate *cand,
                               ug_case *c, char *file, size_t file_size)
{
    char where[UG_JSON_WHERE], key[32], at[UG_JSON_WHERE];
    snprintf(key, sizeof key, "[%zu]", index);
    ug_json_join(where, "cases", key);
    json_t *e, *params;
    const char *family, *label, *regime, *seed = NULL, *name;
    UG_TRY(ug_json_object(path, "cases", cases, key, &e));
    const bool user = json_object_get(e, "origin") != NULL;
    if (user) {
        const char *origin;
        UG_TRY(ug_json_string(path, where, e, "origin", &origin));
        if (strcmp(origin, UG_USER_REGIME) != 0)
            return ug_json_fail(path, where, "origin", "\"%s\" is not \"%s\"", origin, UG_USER_REGIME);
    }
    UG_TRY(ug_json_string(path, where, e, "family", &family));
    UG_TRY(ug_json_string(path, where, e, "label", &label));
    UG_TRY(ug_json_string(path, where, e, "regime", &regime));
    if (!user) UG_TRY(ug_json_string(path, where, e, "seed", &seed));
    UG_TRY(ug_json_string(path, where, e, "file", &name));
    UG_TRY(ug_json_object(path, where, e, "params", &params));
    memset(c, 0, sizeof *c);
    c->family = ug_family_find(family);
    if (!c->family) return ug_json_fail(path, where, "family", "unknown family \"%s\"", family);
    if (strlen(label) >= sizeof c->label) return ug_json_fail(path, where, "label", "longer than %zu bytes", sizeof c->label - 1);
    if (!*name || strlen(name) >= file_size || strchr(name, '/'))
        return ug_json_fail(path, where, "file", "\"%s\" is empty, longer than %zu bytes or holds a '/'", name,
                            file_size - 1);
    strcpy(c->label, label);
    strcpy(file, name);
    ug_json_join(at, where, "params");
    if (json_object_size(params) != c->family->n_params)
        return ug_json_fail(path, where, "params", "%zu params, %s has %zu", json_object_size(params), family,
                            c->family->n_params);
    for (size_t k = 0; k < c->family->n_params; k++) {
        json_int_t v;
        UG_TRY(ug_json_int(path, at, params, c->family->param_names[k], 0, 4294967295LL, &v));
        c->params.v[k] = (double)v;
    }
    c->regime = c->family->n_regimes;
    c->override.buffer = -1;
    c->override.dtype = UG_DTYPE_COUNT;
    c->index = index;
    if (user) {
        if (strcmp(regime, UG_USER_REGIME) != 0)
            return ug_json_fail(path, where, "regime", "\"%s\": a user-supplied case's is \"%s\"", regime,
                                UG_USER_REGIME);
        c->load_inputs = user_inputs;
        c->inputs_ctx = cand;
        return ug_ok();
    }
    for (size_t r = 0; r < c->family->n_regimes; r++)
        if (strcmp(c->family->regimes[r], regime) == 0) c->regime = r;
    if (c->regime == c->family->n_regimes)
        return ug_json_fail(path, where, "regime", "%s has no regime \"%s\"", family, regime);
    char *end;
    errno = 0;
    c->seed = strtoull(seed, &end, 16);
    if (*end || errno || strncmp(seed, "0x", 2) != 0)
        return ug_json_fail(path, where, "seed", "\"%s\" is not a 0x-prefixed 64-bit hex number", seed);
    return ug_ok();
}

/* A case listed twice would be scored twice and weigh double in every figure. */
static ug_status unique_cases(const char *path, const ug_sweep *sw, const ug_candidate *cand)
{
    for (size_t i = 0; i < sw->n_cases; i++)
        for (size_t j = 0; j < i; j++) {
            const ug_case *a = &sw->cases[i], *b = &sw->cases[j];
            if ((a->family == b->family && strcmp(a->label, b->label) == 0) || strcmp(cand->file[i], cand->file[j]) == 0)
                return ug_fail(UG_EPARSE, "%s: cases[%zu] (%s/%s, file %s) repeats cases[%zu] (%s/%s, file %s)", path,
                               i, a->family->name, a->label, cand->file[i], j, b->family->name, b->label, cand->file[j]);
        }
    return ug_ok();
}

/* Every case: the manifest's tensors and input hashes against this tool's,
 * then the candidate's outputs (read once here, so that a bad file stops
 * the run before anything is measured or written). */
static ug_status preflight(const char *path, const json_t *cases, const ug_sweep *sw, const ug_candidate *cand,
                           const char *filter, size_t max_bytes)
{
    for (size_t i = 0; i < sw->n_cases; i++) {
        const ug_case *c = &sw->cases[i];
        if (filter && !ug_case_matches(c, filter)) continue;
        const json_t *e = json_array_get(cases, i);
        plain_buffers pb;
        UG_TRY(plain_alloc(c, max_bytes, &pb));
        ug_status st = ug_case_generate(c, pb.buf);
        if (ug_is_ok(&st)) st = check_manifest_tensors(path, c, json_object_get(e, "inputs"), false, &pb);
        if (ug_is_ok(&st)) st = check_manifest_tensors(path, c, json_object_get(e, "outputs"), true, &pb);
        if (ug_is_ok(&st)) st = candidate_outputs(cand, c, pb.buf);
        plain_free(&pb);
        UG_TRY(st);
    }
    return ug_ok();
}

static ug_status load_manifest(const char *path, const json_t *root, ug_sweep *sw, ug_candidate *cand)
{
    json_t *cases, *sweep;
    const char *path_of_sweep;
    uint64_t seed;
    UG_TRY(ug_json_schema(path, root, UG_FIXTURES_SCHEMA, NULL));
    UG_TRY(ug_json_array(path, "", root, "cases", &cases));
    if (json_array_size(cases) == 0) return ug_json_fail(path, "", "cases", "no case");
    UG_TRY(ug_json_object(path, "", root, "sweep", &sweep));
    UG_TRY(ug_json_string(path, "sweep", sweep, "path", &path_of_sweep));
    UG_TRY(ug_json_uint(path, "sweep", sweep, "seed", UINT64_MAX, &seed));
    UG_TRY(ug_json_hex64(path, "sweep", sweep, "content_hash", &sw->content_hash));
    size_t n = json_array_size(cases);
    sw->cases = calloc(n, sizeof *sw->cases);
    cand->file = calloc(n, sizeof *cand->file);
    if (!sw->cases || !cand->file) return ug_fail(UG_ENOMEM, "%s: cannot allocate %zu cases", path, n);
    snprintf(sw->path, sizeof sw->path, "%s", path_of_sweep);
    sw->seed = seed;
    for (size_t i = 0; i < n; i++, sw->n_cases = cand->n = i)
        UG_TRY(manifest_case(path, cases, i, cand, &sw->cases[i], cand->file[i], sizeof cand->file[i]));
    return unique_cases(path, sw, cand);
}

/* Keeps the cases that match filter, each with its candidate file. */
static ug_status keep_matching(const char *path, const char *filter, ug_sweep *sw, ug_candidate *cand)
{
    const size_t all = sw->n_cases;
    size_t kept = 0;
    for (size_t i = 0; i < all; i++)
        if (ug_case_matches(&sw->cases[i], filter)) memmove(cand->file[kept++], cand->file[i], sizeof cand->file[i]);
    cand->n = kept;
    UG_TRY(ug_sweep_filter(sw, filter));
    if (kept == 0) return ug_fail(UG_EINVAL, "--filter '%s' matches no case of %s (%zu cases)", filter, path, all);
    return ug_ok();
}

ug_status ug_candidate_open(const char *fixtures, const char *candidate_dir, const char *filter,
                            size_t max_case_bytes, ug_sweep *sw, ug_candidate **out, ug_kernel_source *source)
{
    memset(sw, 0, sizeof *sw);
    *out = NULL;
    char path[1024];
    UG_TRY(join_path(fixtures, UG_FIXTURES_MANIFEST, path, sizeof path));
    ug_candidate *cand = calloc(1, sizeof *cand);
    if (!cand) return ug_fail(UG_ENOMEM, "cannot allocate the candidate of %s", candidate_dir);
    ug_status st = ug_input_check_dir("candidate", candidate_dir);
    if (ug_is_ok(&st) && strlen(candidate_dir) >= sizeof cand->dir)
        st = ug_fail(UG_EINPUT, "candidate directory '%s' is longer than %zu bytes", candidate_dir, sizeof cand->dir - 1);
    if (ug_is_ok(&st) && strlen(fixtures) >= sizeof cand->fixtures)
        st = ug_fail(UG_EINPUT, "fixtures directory '%s' is longer than %zu bytes", fixtures, sizeof cand->fixtures - 1);
    if (!ug_is_ok(&st)) {
        free(cand);
        return st;
    }
    strcpy(cand->dir, candidate_dir);
    strcpy(cand->fixtures, fixtures);
    cand->max_file = max_case_bytes + 8 + (size_t)UG_ST_MAX_HEADER;
    json_t *root = NULL;
    st = ug_input_check_dir("fixtures", fixtures);
    if (ug_is_ok(&st)) st = ug_json_load("manifest", path, &root);
    if (ug_is_ok(&st)) st = load_manifest(path, root, sw, cand);
    if (ug_is_ok(&st)) st = preflight(path, json_object_get(root, "cases"), sw, cand, filter, max_case_bytes);
    if (ug_is_ok(&st) && filter) st = keep_matching(path, filter, sw, cand);
    json_decref(root);
    if (!ug_is_ok(&st)) {
        ug_candidate_free(cand);
        ug_sweep_free(sw);
        return st;
    }
    *out = cand;
    *source = (ug_kernel_source){"candidate", candidate_run, cand};
    return ug_ok();
}
