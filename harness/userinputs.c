/* SPDX-License-Identifier: MIT */
#include "userinputs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/hash.h"
#include "interop.h"

/* ------------------------------------------------------------------------
 * Parameters: --param NAME=VALUE over the file's __metadata__. */

static ug_status parse_param_value(const char *where, const char *name, const char *text, double *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-' || v > 4294967295ull)
        return ug_fail(UG_EINVAL, "%s: parameter %s = \"%s\" is not an integer in [0, 4294967295]", where, name, text);
    *out = (double)v;
    return ug_ok();
}

static void param_list(const ug_family *f, char *out, size_t size)
{
    size_t at = 0;
    out[0] = 0;
    for (size_t k = 0; k < f->n_params && at < size; k++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", k ? " " : "", f->param_names[k]);
}

static ug_status resolve_params(const ug_user_request *rq, const ug_family *f, const ug_st_file *sf, ug_params *p)
{
    char names[256];
    param_list(f, names, sizeof names);
    bool given[UG_MAX_PARAMS] = {0};
    for (size_t a = 0; a < rq->n_params; a++) {
        const char *arg = rq->params[a], *eq = strchr(arg, '=');
        int k = -1;
        if (eq) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
            k = ug_family_param_index(f, name);
        }
        if (!eq || k < 0)
            return ug_fail(UG_EINVAL, "--param %s: not NAME=VALUE with a parameter of %s (%s)", arg, f->name, names);
        if (given[k]) return ug_fail(UG_EINVAL, "--param %s: %s is given twice", arg, f->param_names[k]);
        given[k] = true;
        UG_TRY(parse_param_value("--param", f->param_names[k], eq + 1, &p->v[k]));
    }
    for (size_t k = 0; k < f->n_params; k++) {
        if (given[k]) continue;
        const char *text = ug_st_metadata(sf, f->param_names[k]);
        if (!text)
            return ug_fail(UG_EINVAL, "parameter %s of %s is missing: put it in %s's __metadata__ or pass --param %s=VALUE "
                           "(%s's parameters: %s)", f->param_names[k], f->name, rq->inputs, f->param_names[k], f->name,
                           names);
        UG_TRY(parse_param_value(rq->inputs, f->param_names[k], text, &p->v[k]));
    }
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * The data contract the reference relies on. */

/* A tensor of the case in messages: the input file and the buffer. */
typedef struct {
    const char *file;
    const ug_case *c;
    size_t buffer, count;
} tensor_at;

/* "g[7] = nan (element [0,1,3])": the flat index, and the
 * element's coordinates where the layout has dimensions. */
static ug_status contract_fail(const tensor_at *t, size_t index, double value, const char *rule)
{
    const ug_family *f = t->c->family;
    uint64_t shape[UG_LAYOUT_MAX_DIMS];
    size_t rank;
    char where[160] = "";
    ug_family_buffer_shape(f, &t->c->params, t->buffer, t->count, shape, &rank);
    if (rank > 1) {
        size_t at = (size_t)snprintf(where, sizeof where, " (element ["), rest = index;
        uint64_t coord[UG_LAYOUT_MAX_DIMS];
        for (size_t d = rank; d-- > 0;) {
            coord[d] = rest % shape[d];
            rest /= shape[d];
        }
        for (size_t d = 0; d < rank && at < sizeof where; d++)
            at += (size_t)snprintf(where + at, sizeof where - at, "%s%" PRIu64, d ? "," : "", coord[d]);
        if (at < sizeof where) snprintf(where + at, sizeof where - at, "])");
    }
    return ug_fail(UG_EINVAL, "%s: %s[%zu] = %.9g%s is outside the data contract (%s)", t->file,
                   f->buffers[t->buffer].name, index, value, where, rule);
}

/* Gates and betas are finite (the reference and every kernel take exp(g)). */
static ug_status check_finite(const tensor_at *t, const ug_buf *b)
{
    const float *x = b->data;
    for (size_t e = 0; e < b->count; e++)
        if (!isfinite(x[e])) return contract_fail(t, e, x[e], "finite");
    return ug_ok();
}

/* [B,T,H,BT] chunk matrices: row t % BT of its chunk; the entries at or
 * above the diagonal (strict) or above it must be zero. */
static ug_status check_triangular(const tensor_at *t, const ug_buf *b, size_t T, size_t H, size_t BT, bool strict)
{
    const float *x = b->data;
    for (size_t e = 0; e < b->count; e++) {
        size_t col = e % BT, row = (e / BT / H) % T % BT;
        if (!isfinite(x[e])) return contract_fail(t, e, x[e], "finite");
        if (x[e] != 0 && (col > row || (strict && col == row)))
            return contract_fail(t, e, x[e],
                                 strict ? "strictly lower-triangular per chunk: zero where column >= row"
                                        : "lower-triangular per chunk: zero where column > row");
    }
    return ug_ok();
}

/* htmp's (S, M) pairs after the partials: S finite and >= 0, M finite or
 * -inf, and at least one finite M per row (a masked row carries
 * M = -FLT_MAX/2). */
static ug_status check_softmax_stats(const tensor_at *t, const ug_buf *b, size_t nrows, size_t head_dim,
                                     size_t nwg)
{
    const float *x = b->data;
    const size_t base = nrows * head_dim * nwg;
    char rule[128];
    for (size_t r = 0; r < nrows; r++) {
        bool live = false;
        for (size_t w = 0; w < nwg; w++) {
            size_t at = base + 2 * (r * nwg + w);
            snprintf(rule, sizeof rule, "row %zu, workgroup %zu: S finite and >= 0, M finite or -inf", r, w);
            if (!isfinite(x[at]) || x[at] < 0) return contract_fail(t, at, x[at], rule);
            if (isnan(x[at + 1]) || x[at + 1] == INFINITY) return contract_fail(t, at + 1, x[at + 1], rule);
            live |= x[at + 1] != -INFINITY;
        }
        snprintf(rule, sizeof rule, "row %zu has a finite M; a fully masked row carries M = -FLT_MAX/2", r);
        if (!live) return contract_fail(t, base + 2 * r * nwg + 1, -INFINITY, rule);
    }
    return ug_ok();
}

static size_t param(const ug_case *c, const char *name)
{
    int k = ug_family_param_index(c->family, name);
    return k < 0 ? 0 : (size_t)c->params.v[k];
}

static ug_status check_contract(const char *file, const ug_case *c, const ug_buf *bufs)
{
    const ug_family *f = c->family;
    for (size_t i = 0; i < f->n_buffers; i++) {
        const char *name = f->buffers[i].name;
        const tensor_at t = {file, c, i, bufs[i].count};
        if (f->buffers[i].is_output) continue;
        if (!strcmp(name, "g") || !strcmp(name, "g_raw") || !strcmp(name, "beta"))
            UG_TRY(check_finite(&t, &bufs[i]));
        else if ((!strcmp(f->name, "gdn_recompute_wu") && !strcmp(name, "A")) ||
                 (!strcmp(f->name, "gdn_solve_tril") && !strcmp(name, "L")))
            UG_TRY(check_triangular(&t, &bufs[i], param(c, "T"), param(c, "H"), param(c, "BT"), !strcmp(name, "L")));
        else if (!strcmp(f->name, "attn_reduce_fwht") && !strcmp(name, "htmp"))
            UG_TRY(check_softmax_stats(&t, &bufs[i], param(c, "nrows"), param(c, "head_dim"), param(c, "nwg")));
    }
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * reference */

static ug_status unknown_tensors(const char *file, const ug_st_file *sf, const ug_family *f)
{
    for (size_t t = 0; t < sf->n; t++) {
        int i = ug_family_buffer_index(f, sf->tensors[t].name);
        if (i < 0 || f->buffers[i].is_output)
            return ug_fail(UG_EPARSE, "%s: tensor '%s' is no input of %s (`ulpgate list` prints its inputs)", file,
                           sf->tensors[t].name, f->name);
    }
    return ug_ok();
}

static ug_status alloc_buffers(const ug_case *c, size_t max_bytes, ug_buf *bufs)
{
    const ug_family *f = c->family;
    size_t total = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        UG_TRY(ug_family_buffer_count(f, &c->params, i, &bufs[i].count));
        bufs[i].dtype = f->buffers[i].dtype;
        size_t bytes = bufs[i].count * ug_dtype_size(bufs[i].dtype);
        if (bufs[i].count > SIZE_MAX / 8 || bytes > max_bytes - total)
            return ug_fail(UG_EINVAL, "%s: the buffers need more than the %zu-byte cap (--max-case-mib; at %s, %zu "
                           "elements)", f->name, max_bytes, f->buffers[i].name, bufs[i].count);
        total += bytes;
    }
    for (size_t i = 0; i < f->n_buffers; i++) {
        bufs[i].data = calloc(bufs[i].count ? bufs[i].count : 1, ug_dtype_size(bufs[i].dtype));
        if (!bufs[i].data)
            return ug_fail(UG_ENOMEM, "cannot allocate %s (%zu elements)", f->buffers[i].name, bufs[i].count);
    }
    return ug_ok();
}

/* The built-in kernel on the inputs, for its validation: a shape it rejects
 * is one no kernel of the family is asked to take. */
static ug_status kernel_accepts(const ug_case *c, ug_buf *bufs)
{
    ug_status st = c->family->run(&c->params, bufs);
    if (st.code == UG_EINVAL) return ug_fail(UG_EINVAL, "the kernel's validation rejects this shape: %s", st.msg);
    return st;
}

ug_status ug_user_reference(const ug_user_request *rq, const ug_f32_model *model)
{
    ug_case c = {.family = ug_family_find(rq->family), .override = {.buffer = -1, .dtype = UG_DTYPE_COUNT}};
    if (!c.family) return ug_fail(UG_EINVAL, "--family %s: no such family (`ulpgate list`)", rq->family);
    c.regime = c.family->n_regimes;
    const char *base = strrchr(rq->inputs, '/');
    snprintf(c.label, sizeof c.label, "%s %s", UG_USER_REGIME, base ? base + 1 : rq->inputs);
    ug_st_file sf;
    UG_TRY(ug_st_read(rq->inputs, rq->max_case_bytes + 8 + (size_t)UG_ST_MAX_HEADER, &sf));
    ug_buf bufs[UG_MAX_BUFFERS] = {0};
    ug_status st = unknown_tensors(rq->inputs, &sf, c.family);
    if (ug_is_ok(&st)) st = resolve_params(rq, c.family, &sf, &c.params);
    if (ug_is_ok(&st) && c.family->check_params) st = c.family->check_params(&c.params);
    if (ug_is_ok(&st)) st = alloc_buffers(&c, rq->max_case_bytes, bufs);
    if (ug_is_ok(&st)) st = ug_fixture_tensors_copy(rq->inputs, &sf, &c, bufs, false);
    if (ug_is_ok(&st)) st = kernel_accepts(&c, bufs);
    if (ug_is_ok(&st)) st = check_contract(rq->inputs, &c, bufs);
    const ug_user_origin origin = {rq->inputs, ug_fnv1a(UG_FNV1A_OFFSET, sf.bytes, sf.size)};
    if (ug_is_ok(&st)) st = ug_export_user(&c, bufs, model, &origin, rq->out);
    if (st.code == UG_EREF) st = ug_fail(UG_EINVAL, "the reference refuses these inputs: %s", st.msg);
    for (size_t i = 0; i < c.family->n_buffers; i++) free(bufs[i].data);
    ug_st_free(&sf);
    return st;
}
