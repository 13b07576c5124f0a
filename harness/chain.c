/* SPDX-License-Identifier: MIT */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

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

static ug_status stage_reference(const ug_family *f, const chain_plan *cp, size_t s, const ug_params *p,
                                 const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                                 ug_ref_value *const *outs)
{
    const ug_stage_desc *sd = &f->stages[s];
    const ug_family *sf;
    int map[UG_MAX_BUFFERS], ordinal[UG_MAX_BUFFERS];
    UG_TRY(stage_family(f, s, &sf));
    UG_TRY(stage_buffers(f, sf, sd, map));
    for (size_t i = 0, o = 0; i < f->n_buffers; i++) ordinal[i] = f->buffers[i].is_output ? (int)o++ : -1;
    ug_params sp = {{0}};
    for (size_t k = 0; k < sf->n_params; k++) {
        const int at = ug_family_param_index(f, pipeline_name(sd, sf->param_names[k]));
        if (at >= 0) sp.v[k] = p->v[at];
        else if (sd->param) sp.v[k] = sd->param(p, sf->param_names[k]);
        else return ug_fail(UG_EINVAL, "%s: stage %s's parameter %s has no value", f->name, sf->name,
                            sf->param_names[k]);
    }
    ug_buf sb[UG_MAX_BUFFERS];
    ug_ref_value *souts[UG_MAX_BUFFERS], *scratch[UG_MAX_BUFFERS] = {0};
    size_t n_outs = 0;
    ug_status st = ug_ok();
    for (size_t k = 0; k < sf->n_buffers && ug_is_ok(&st); k++) {
        sb[k] = bufs[map[k]];
        if (!sf->buffers[k].is_output) continue;
        if (stage_checks(f, cp, s, (size_t)map[k], mode)) {
            souts[n_outs++] = outs[ordinal[map[k]]];
            continue;
        }
        /* an output this mode does not check: computed and dropped */
        scratch[n_outs] = calloc(sb[k].count ? sb[k].count : 1, sizeof(ug_ref_value));
        if (!scratch[n_outs])
            st = ug_fail(UG_ENOMEM, "%s: stage %s: reference of %s: %zu elements", f->name, sf->name,
                         sf->buffers[k].name, sb[k].count);
        souts[n_outs] = scratch[n_outs];
        n_outs++;
    }
    if (ug_is_ok(&st)) st = sf->reference(&sp, sb, model, mode, souts);
    for (size_t o = 0; o < n_outs; o++) free(scratch[o]);
    if (!ug_is_ok(&st)) return ug_fail(st.code, "%s: stage %s: %s", f->name, sf->name, st.msg);
    return st;
}

/* Whether stage s may keep its exact-mode references in the staged mode:
 * its family's staged reference is the exact one, and every output it
 * checks in the staged mode it checked in the exact mode too. */
static ug_status stage_reused(const ug_family *f, const chain_plan *cp, size_t s, bool *out)
{
    const ug_family *sf;
    UG_TRY(stage_family(f, s, &sf));
    *out = sf->staged_is_exact;
    for (size_t i = 0; i < f->n_buffers && *out; i++)
        *out = !stage_checks(f, cp, s, i, UG_REF_STAGED) || stage_checks(f, cp, s, i, UG_REF_EXACT);
    return ug_ok();
}

/* ug_case_reference, or with from_exact (staged mode only) its staged
 * references from the exact ones outs hold. */
static ug_status case_reference(const ug_family *f, const ug_params *p, const ug_buf *bufs, const ug_f32_model *model,
                                ug_ref_mode mode, bool from_exact, ug_ref_value *const *outs)
{
    if (!(from_exact && f->staged_is_exact)) UG_TRY(f->reference(p, bufs, model, mode, outs));
    if (!f->n_stages) return ug_ok();
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) present[i] = !f->buffers[i].optional || bufs[i].data;
    chain_plan cp;
    UG_TRY(plan_make(f, present, &cp));
    for (size_t s = 0; s < f->n_stages; s++) {
        bool needed = false, reused = false;
        for (size_t i = 0; i < f->n_buffers; i++) needed |= stage_checks(f, &cp, s, i, mode);
        if (needed && from_exact) UG_TRY(stage_reused(f, &cp, s, &reused));
        if (needed && !reused) UG_TRY(stage_reference(f, &cp, s, p, bufs, model, mode, outs));
    }
    return ug_ok();
}

ug_status ug_case_reference(const ug_family *f, const ug_params *p, const ug_buf *bufs, const ug_f32_model *model,
                            ug_ref_mode mode, ug_ref_value *const *outs)
{
    return case_reference(f, p, bufs, model, mode, false, outs);
}

ug_status ug_case_reference_staged(const ug_family *f, const ug_params *p, const ug_buf *bufs,
                                   const ug_f32_model *model, ug_ref_value *const *outs)
{
    return case_reference(f, p, bufs, model, UG_REF_STAGED, true, outs);
}
