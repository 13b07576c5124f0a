/* SPDX-License-Identifier: MIT */
#include "chain.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The pipeline's name of a stage's buffer or parameter. */
static const char *pipeline_name(const ug_stage_desc *sd, const char *name)
{
    for (size_t r = 0; r < sizeof sd->renames / sizeof sd->renames[0]; r++)
        if (sd->renames[r][0] && strcmp(sd->renames[r][0], name) == 0) return sd->renames[r][1];
    return name;
}

static ug_status stage_family(const ug_family *f, size_t s, const ug_family **out)
{
    *out = ug_family_find(f->stages[s].family);
    if (!*out) return ug_fail(UG_EINVAL, "%s: stage %zu names family %s, which is not registered", f->name, s,
                              f->stages[s].family);
    return ug_ok();
}

/* The pipeline buffer behind each of the stage's buffers. */
static ug_status stage_buffers(const ug_family *f, const ug_family *sf, const ug_stage_desc *sd,
                               int map[UG_MAX_BUFFERS])
{
    for (size_t k = 0; k < sf->n_buffers; k++) {
        const char *name = pipeline_name(sd, sf->buffers[k].name);
        map[k] = ug_family_buffer_index(f, name);
        if (map[k] < 0)
            return ug_fail(UG_EINVAL, "%s: stage %s's buffer %s has no buffer %s in the pipeline", f->name, sf->name,
                           sf->buffers[k].name, name);
    }
    return ug_ok();
}

enum { MAX_STAGES = 16 };

/* Which stages run and what they check. */
typedef struct {
    bool stage_runs[MAX_STAGES];
    int checked_by[UG_MAX_BUFFERS];  /* per buffer: the stage checking it, -1 none */
    int produced_by[UG_MAX_BUFFERS]; /* per buffer: the stage computing it, -1 none */
} chain_plan;

static ug_status plan_make(const ug_family *f, const bool present[UG_MAX_BUFFERS], chain_plan *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < UG_MAX_BUFFERS; i++) out->checked_by[i] = out->produced_by[i] = -1;
    if (f->n_stages > MAX_STAGES)
        return ug_fail(UG_EINVAL, "%s: %zu stages, over the limit %d", f->name, f->n_stages, MAX_STAGES);
    for (size_t s = 0; s < f->n_stages; s++) {
        const ug_family *sf;
        int map[UG_MAX_BUFFERS];
        UG_TRY(stage_family(f, s, &sf));
        UG_TRY(stage_buffers(f, sf, &f->stages[s], map));
        out->stage_runs[s] = true;
        for (size_t k = 0; k < sf->n_buffers; k++)
            out->stage_runs[s] &= sf->buffers[k].is_output || present[map[k]];
        for (size_t k = 0; k < sf->n_buffers; k++) {
            if (!sf->buffers[k].is_output) continue;
            out->produced_by[map[k]] = (int)s;
            if (out->stage_runs[s] && present[map[k]]) out->checked_by[map[k]] = (int)s;
        }
    }
    return ug_ok();
}

static bool output_measured(const ug_family *f, const chain_plan *cp, size_t i, ug_ref_mode mode)
{
    if (cp->produced_by[i] < 0 || cp->checked_by[i] >= 0) return true;
    return !f->buffers[i].optional && mode == UG_REF_EXACT;
}

ug_status ug_case_measured(const ug_family *f, const bool present[UG_MAX_BUFFERS], ug_ref_mode mode,
                           bool measured[UG_MAX_BUFFERS])
{
    chain_plan cp;
    UG_TRY(plan_make(f, present, &cp));
    for (size_t i = 0; i < f->n_buffers; i++)
        measured[i] = f->buffers[i].is_output && present[i] && output_measured(f, &cp, i, mode);
    return ug_ok();
}

ug_status ug_case_unchecked(const ug_family *f, const bool present[UG_MAX_BUFFERS], int missing[UG_MAX_BUFFERS])
{
    chain_plan cp;
    UG_TRY(plan_make(f, present, &cp));
    for (size_t i = 0; i < UG_MAX_BUFFERS; i++) missing[i] = -1;
    for (size_t i = 0; i < f->n_buffers; i++) {
        const int s = cp.produced_by[i];
        if (!f->buffers[i].optional || !present[i] || s < 0 || cp.stage_runs[s]) continue;
        const ug_family *sf;
        int map[UG_MAX_BUFFERS];
        UG_TRY(stage_family(f, (size_t)s, &sf));
        UG_TRY(stage_buffers(f, sf, &f->stages[s], map));
        for (size_t k = 0; k < sf->n_buffers && missing[i] < 0; k++)
            if (!sf->buffers[k].is_output && !present[map[k]]) missing[i] = map[k];
    }
    return ug_ok();
}

ug_status ug_chain_stage_name(const ug_family *f, size_t buffer, const char **name)
{
    bool present[UG_MAX_BUFFERS] = {0};
    chain_plan cp;
    UG_TRY(plan_make(f, present, &cp));
    if (buffer >= f->n_buffers || cp.produced_by[buffer] < 0)
        return ug_fail(UG_EINVAL, "%s: buffer %zu is produced by none of its %zu stages", f->name, buffer,
                       f->n_stages);
    *name = f->stages[cp.produced_by[buffer]].family;
    return ug_ok();
}

/* Whether the stage's reference replaces output buffer i's in this mode. */
static bool stage_checks(const ug_family *f, const chain_plan *cp, size_t s, size_t i, ug_ref_mode mode)
{
    return cp->checked_by[i] == (int)s && (f->buffers[i].optional || mode == UG_REF_STAGED);
}

/* The case's reference in parts: part 0 the family's own reference, part
 * 1 + s stage s's. */
enum { MAX_PARTS = 1 + MAX_STAGES };
typedef struct {
    size_t n;
    const ug_family *family[MAX_PARTS];              /* whose reference function computes it */
    bool reads[MAX_PARTS][UG_MAX_BUFFERS];           /* the buffers that function reads */
    bool computes[MAX_PARTS][UG_MAX_BUFFERS];        /* the outputs that function writes */
    bool checks[MAX_PARTS][UG_MAX_BUFFERS][UG_REF_MODE_COUNT]; /* those measured from it, per mode */
} parts_plan;

static ug_status parts_make(const ug_family *f, const bool present[UG_MAX_BUFFERS], parts_plan *out)
{
    chain_plan cp;
    UG_TRY(plan_make(f, present, &cp));
    memset(out, 0, sizeof *out);
    out->n = 1 + f->n_stages;
    out->family[0] = f;
    for (size_t i = 0; i < f->n_buffers; i++) {
        out->reads[0][i] = !f->buffers[i].is_output;
        /* a stage's intermediate is no output of the family's own reference */
        out->computes[0][i] = f->buffers[i].is_output && !(f->buffers[i].optional && cp.produced_by[i] >= 0);
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            const int s = cp.checked_by[i];
            const bool by_stage = s >= 0 && stage_checks(f, &cp, (size_t)s, i, (ug_ref_mode)m);
            out->checks[0][i][m] = out->computes[0][i] && present[i] && output_measured(f, &cp, i, (ug_ref_mode)m) &&
                                   !by_stage;
            if (by_stage) out->checks[1 + s][i][m] = true;
        }
    }
    for (size_t s = 0; s < f->n_stages; s++) {
        const ug_family *sf;
        int map[UG_MAX_BUFFERS];
        UG_TRY(stage_family(f, s, &sf));
        UG_TRY(stage_buffers(f, sf, &f->stages[s], map));
        out->family[1 + s] = sf;
        for (size_t k = 0; k < sf->n_buffers; k++) {
            out->computes[1 + s][map[k]] |= sf->buffers[k].is_output;
            out->reads[1 + s][map[k]] |= !sf->buffers[k].is_output;
        }
    }
    return ug_ok();
}

static bool part_checks(const parts_plan *pp, size_t part, ug_ref_mode mode)
{
    for (size_t i = 0; i < UG_MAX_BUFFERS; i++)
        if (pp->checks[part][i][mode]) return true;
    return false;
}

/* A thread's references, one mapping reused from part to part and from
 * slice to slice of a case: arrays are carved from it in order and given
 * back to a mark (held_bytes.now). A mapping of its own per part cost a
 * page fault per 4 KiB touched the first time, 4.5 % of the CPU of the
 * production gdn_e2e case (B=1 T=4096 H=32); malloc would keep freed
 * arrays below its growing mmap threshold resident in its arena. Sized to
 * the largest part of each call's plan (at most ug_case_reference_bytes,
 * what memory admission counts for the case); given back by
 * ug_case_reference_release. */
typedef struct {
    unsigned char *base;
    size_t bytes;
} reference_arena;

static _Thread_local reference_arena arena;

void ug_case_reference_release(void)
{
    if (arena.base) munmap(arena.base, arena.bytes);
    arena = (reference_arena){NULL, 0};
}

/* The bytes of the largest part of plan pp for parameters p. */
static ug_status plan_bytes(const ug_family *f, const parts_plan *pp, const ug_params *p, size_t *bytes)
{
    *bytes = 0;
    for (size_t part = 0; part < pp->n; part++) {
        size_t part_bytes = 0;
        for (size_t i = 0; i < f->n_buffers; i++) {
            size_t count;
            if (!pp->computes[part][i]) continue;
            UG_TRY(ug_family_buffer_count(f, p, i, &count));
            part_bytes += (count ? count : 1) * sizeof(ug_ref_value);
        }
        if (part_bytes > *bytes) *bytes = part_bytes;
    }
    return ug_ok();
}

static ug_status arena_fit(const ug_family *f, const parts_plan *pp, const ug_params *p)
{
    size_t bytes;
    UG_TRY(plan_bytes(f, pp, p, &bytes));
    if (arena.base && arena.bytes == bytes) return ug_ok();
    ug_case_reference_release();
    void *m = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return ug_fail(UG_ENOMEM, "%s: cannot map %zu bytes for one part's references", f->name, bytes);
    arena = (reference_arena){m, bytes ? bytes : 1};
    return ug_ok();
}

/* The bytes of the arena in use now (the next array's offset) and at most. */
typedef struct {
    size_t now, peak;
} held_bytes;

/* An array of references from the arena, zeroed; NULL past its end. */
static ug_ref_value *held_alloc(held_bytes *h, size_t count)
{
    const size_t bytes = (count ? count : 1) * sizeof(ug_ref_value);
    if (bytes > arena.bytes - h->now) return NULL;
    ug_ref_value *v = (ug_ref_value *)(arena.base + h->now);
    memset(v, 0, bytes);
    h->now += bytes;
    if (h->now > h->peak) h->peak = h->now;
    return v;
}

/* Runs the reference function of a part: the family's own on the case's
 * buffers, or a stage family's on the stage's (parameters and buffers
 * mapped by name). */
static ug_status part_call(const ug_family *f, size_t part, const ug_family *pf, const ug_params *p, const ug_buf *bufs,
                           const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *const *outs)
{
    if (part == 0) return f->reference(p, bufs, model, mode, outs);
    const ug_stage_desc *sd = &f->stages[part - 1];
    int map[UG_MAX_BUFFERS], ordinal[UG_MAX_BUFFERS];
    UG_TRY(stage_buffers(f, pf, sd, map));
    for (size_t i = 0, o = 0; i < f->n_buffers; i++) ordinal[i] = f->buffers[i].is_output ? (int)o++ : -1;
    ug_params sp = {{0}};
    for (size_t k = 0; k < pf->n_params; k++) {
        const int at = ug_family_param_index(f, pipeline_name(sd, pf->param_names[k]));
        if (at >= 0) sp.v[k] = p->v[at];
        else if (sd->param) sp.v[k] = sd->param(p, pf->param_names[k]);
        else return ug_fail(UG_EINVAL, "%s: stage %s's parameter %s has no value", f->name, pf->name,
                            pf->param_names[k]);
    }
    ug_buf sb[UG_MAX_BUFFERS];
    ug_ref_value *souts[UG_MAX_BUFFERS];
    size_t n_outs = 0;
    for (size_t k = 0; k < pf->n_buffers; k++) {
        sb[k] = bufs[map[k]];
        if (pf->buffers[k].is_output) souts[n_outs++] = outs[ordinal[map[k]]];
    }
    const ug_status st = pf->reference(&sp, sb, model, mode, souts);
    if (!ug_is_ok(&st)) return ug_fail(st.code, "%s: stage %s: %s", f->name, pf->name, st.msg);
    return st;
}

/* Part `part`'s reference in this mode into outs (per output ordinal); an
 * output it computes that outs has no array for (NULL) is computed into
 * scratch and dropped. */
static ug_status part_reference(const ug_family *f, const parts_plan *pp, size_t part, const ug_params *p,
                                const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                                ug_ref_value *const *outs, held_bytes *held)
{
    ug_ref_value *all[UG_MAX_BUFFERS] = {0};
    const size_t mark = held->now;
    ug_status st = ug_ok();
    size_t n_outputs = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!f->buffers[i].is_output) continue;
        const size_t o = n_outputs++;
        all[o] = outs[o];
        if (!pp->computes[part][i] || outs[o] || !ug_is_ok(&st)) continue;
        all[o] = held_alloc(held, bufs[i].count);
        if (!all[o])
            st = ug_fail(UG_ENOMEM, "%s: reference of %s: %zu elements", f->name, f->buffers[i].name, bufs[i].count);
    }
    if (ug_is_ok(&st)) st = part_call(f, part, pp->family[part], p, bufs, model, mode, all);
    held->now = mark;
    return st;
}

ug_status ug_case_reference(const ug_family *f, const ug_params *p, const ug_buf *bufs, const ug_f32_model *model,
                            ug_ref_mode mode, ug_ref_value *const *outs)
{
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) present[i] = !f->buffers[i].optional || bufs[i].data;
    parts_plan pp;
    UG_TRY(parts_make(f, present, &pp));
    UG_TRY(arena_fit(f, &pp, p));
    held_bytes held = {0, 0};
    ug_status st = ug_ok();
    for (size_t part = 0; part < pp.n && ug_is_ok(&st); part++) {
        if (!part_checks(&pp, part, mode)) continue;
        ug_ref_value *mine[UG_MAX_BUFFERS] = {0};
        for (size_t i = 0, o = 0; i < f->n_buffers; i++)
            if (f->buffers[i].is_output) {
                mine[o] = pp.checks[part][i][mode] ? outs[o] : NULL;
                o++;
            }
        st = part_reference(f, &pp, part, p, bufs, model, mode, mine, &held);
    }
    ug_case_reference_release(); /* a whole case's scratch: not kept */
    return st;
}

/* One part streamed: its buffers gathered, its arrays, its exact reference
 * and then its staged one (the exact values again where its family's are
 * the same), each handed to the stream's sink. */
static ug_status part_streamed(const ug_family *f, const parts_plan *pp, size_t part, const ug_params *p, ug_buf *bufs,
                               const ug_f32_model *model, const ug_reference_stream *stream, held_bytes *held)
{
    const bool exact = part_checks(pp, part, UG_REF_EXACT);
    if (!exact && !part_checks(pp, part, UG_REF_STAGED)) return ug_ok();
    ug_ref_value *outs[UG_MAX_BUFFERS] = {0};
    const size_t mark = held->now;
    bool measured[UG_REF_MODE_COUNT][UG_MAX_BUFFERS] = {{0}}, needed[UG_MAX_BUFFERS] = {0};
    for (size_t i = 0; i < f->n_buffers; i++) {
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) measured[m][i] = pp->checks[part][i][m];
        needed[i] = pp->reads[part][i] || measured[UG_REF_EXACT][i] || measured[UG_REF_STAGED][i];
    }
    ug_status st = stream->gather ? stream->gather(stream->ctx, needed, bufs) : ug_ok();
    size_t n_outputs = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!f->buffers[i].is_output) continue;
        const size_t o = n_outputs++;
        if (!(measured[UG_REF_EXACT][i] || measured[UG_REF_STAGED][i]) || !ug_is_ok(&st)) continue;
        outs[o] = held_alloc(held, bufs[i].count);
        if (!outs[o])
            st = ug_fail(UG_ENOMEM, "%s: reference of %s: %zu elements", f->name, f->buffers[i].name, bufs[i].count);
    }
    for (int m = 0; m < UG_REF_MODE_COUNT && ug_is_ok(&st); m++) {
        if (!part_checks(pp, part, (ug_ref_mode)m)) continue;
        const bool reused = m == UG_REF_STAGED && exact && pp->family[part]->staged_is_exact;
        if (!reused) st = part_reference(f, pp, part, p, bufs, model, (ug_ref_mode)m, outs, held);
        if (ug_is_ok(&st)) st = stream->measure(stream->ctx, (ug_ref_mode)m, measured[m], outs);
    }
    held->now = mark;
    return st;
}

ug_status ug_case_reference_parts(const ug_family *f, const bool present[UG_MAX_BUFFERS], size_t *n_parts)
{
    parts_plan pp;
    UG_TRY(parts_make(f, present, &pp));
    *n_parts = pp.n;
    return ug_ok();
}

ug_status ug_case_reference_part_order(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                       size_t n_parts, size_t order[])
{
    parts_plan pp;
    UG_TRY(parts_make(f, present, &pp));
    if (n_parts != pp.n) return ug_fail(UG_EINVAL, "%s: an order of %zu parts asked for %zu", f->name, n_parts, pp.n);
    size_t weight[MAX_PARTS] = {0}, count;
    for (size_t part = 0; part < pp.n; part++)
        for (size_t i = 0; i < f->n_buffers; i++)
            if (pp.checks[part][i][UG_REF_EXACT] || pp.checks[part][i][UG_REF_STAGED]) {
                UG_TRY(ug_family_buffer_count(f, p, i, &count));
                weight[part] += count;
            }
    for (size_t k = 0; k < pp.n; k++) { /* insertion: stable, so ties stay in part order */
        size_t at = k;
        for (; at > 0 && weight[order[at - 1]] < weight[k]; at--) order[at] = order[at - 1];
        order[at] = k;
    }
    return ug_ok();
}

ug_status ug_case_reference_part(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                 size_t part, ug_buf *bufs, const ug_f32_model *model,
                                 const ug_reference_stream *stream, size_t *peak_bytes)
{
    parts_plan pp;
    UG_TRY(parts_make(f, present, &pp));
    if (part >= pp.n) return ug_fail(UG_EINVAL, "%s: reference part %zu of %zu parts", f->name, part, pp.n);
    UG_TRY(arena_fit(f, &pp, p));
    held_bytes held = {0, 0};
    const ug_status st = part_streamed(f, &pp, part, p, bufs, model, stream, &held);
    if (peak_bytes) *peak_bytes = held.peak;
    return st;
}

ug_status ug_case_reference_streamed(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                     ug_buf *bufs, const ug_f32_model *model, const ug_reference_stream *stream,
                                     size_t *peak_bytes)
{
    size_t n_parts, part_peak;
    UG_TRY(ug_case_reference_parts(f, present, &n_parts));
    if (peak_bytes) *peak_bytes = 0;
    for (size_t part = 0; part < n_parts; part++) {
        UG_TRY(ug_case_reference_part(f, p, present, part, bufs, model, stream, &part_peak));
        if (peak_bytes && part_peak > *peak_bytes) *peak_bytes = part_peak;
    }
    return ug_ok();
}

ug_status ug_case_reference_bytes(const ug_family *f, const ug_params *p, size_t *bytes)
{
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) present[i] = true;
    parts_plan pp;
    UG_TRY(parts_make(f, present, &pp));
    return plan_bytes(f, &pp, p, bytes);
}
