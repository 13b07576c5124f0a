/* SPDX-License-Identifier: MIT */
#include "budgets.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "../core/json_dir.h"

#define BUDGETS_SCHEMA "ulpgate-budgets/1"

static const struct {
    const char *name;
    ug_stat_flag flag;
} stat_names[] = {
    {"max_ulp_dist", UG_STAT_MAX_ULP},
    {"p99_ulp_dist", UG_STAT_P99_ULP},
    {"min_share_cr", UG_STAT_SHARE_CR},
    {"max_rel_rms", UG_STAT_REL_RMS},
};

static ug_status parse_always_enforced(const char *file, const char *where, const json_t *obj, unsigned *out)
{
    json_t *list;
    *out = 0;
    if (!json_object_get(obj, "always_enforced")) return ug_ok();
    UG_TRY(ug_json_array(file, where, obj, "always_enforced", &list));
    char item[UG_JSON_WHERE];
    ug_json_join(item, where, "always_enforced");
    for (size_t i = 0; i < json_array_size(list); i++) {
        char key[32];
        const char *name;
        snprintf(key, sizeof key, "[%zu]", i);
        UG_TRY(ug_json_string(file, item, list, key, &name));
        size_t s = 0;
        while (s < sizeof stat_names / sizeof stat_names[0] && strcmp(stat_names[s].name, name) != 0) s++;
        if (s == sizeof stat_names / sizeof stat_names[0])
            return ug_json_fail(file, item, key, "unknown statistic \"%s\" (max_ulp_dist, p99_ulp_dist, "
                                "min_share_cr or max_rel_rms)", name);
        *out |= stat_names[s].flag;
    }
    return ug_ok();
}

static ug_status parse_budget(const char *file, const char *where, const json_t *obj, ug_budget *b)
{
    static const char *const keys[] = {"max_ratio", "max_ulp_dist", "p99_ulp_dist", "min_share_cr",
                                       "max_rel_rms", "always_enforced", NULL};
    UG_TRY(ug_json_keys(file, where, obj, keys));
    /* SPEC §3: a correct kernel has ratio <= 1 everywhere, so no budget above 1. */
    UG_TRY(ug_json_number(file, where, obj, "max_ratio", 0, 1, &b->max_ratio));
    UG_TRY(ug_json_u32(file, where, obj, "max_ulp_dist", &b->max_ulp_dist));
    UG_TRY(ug_json_u32(file, where, obj, "p99_ulp_dist", &b->p99_ulp_dist));
    b->max_rel_rms = INFINITY;
    if (json_object_get(obj, "max_rel_rms"))
        UG_TRY(ug_json_number(file, where, obj, "max_rel_rms", 0, INFINITY, &b->max_rel_rms));
    UG_TRY(parse_always_enforced(file, where, obj, &b->always_enforced));
    return ug_json_number(file, where, obj, "min_share_cr", 0, 1, &b->min_share_cr);
}

ug_status ug_json_mode(const char *file, const char *where, const char *name, const json_t *v, ug_ref_mode *out)
{
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        if (strcmp(name, ug_ref_mode_name((ug_ref_mode)m)) == 0) {
            *out = (ug_ref_mode)m;
            return ug_json_check_object(file, where, name, v);
        }
    return ug_json_fail(file, where, name, "unknown mode \"%s\" (expected exact or staged)", name);
}

static bool is_output_of(const ug_family *f, const char *output)
{
    int i = ug_family_buffer_index(f, output);
    return i >= 0 && f->buffers[i].is_output;
}

static ug_status parse_output_budgets(const char *file, const char *where, const ug_family *f, const char *output,
                                      const json_t *modes, bool builtin_only, ug_budgets *out)
{
    char item[UG_JSON_WHERE];
    ug_json_join(item, where, output);
    if (!is_output_of(f, output)) return ug_json_fail(file, where, output, "%s has no output \"%s\"", f->name, output);
    UG_TRY(ug_json_check_object(file, where, output, modes));
    const char *mode;
    json_t *obj;
    json_object_foreach((json_t *)modes, mode, obj) {
        char mode_item[UG_JSON_WHERE];
        ug_json_join(mode_item, item, mode);
        ug_ref_mode m;
        UG_TRY(ug_json_mode(file, item, mode, obj, &m));
        ug_budget_entry *e = ug_append((void **)&out->entries, &out->n, sizeof *e);
        if (!e) return ug_fail(UG_ENOMEM, "%s: out of memory while loading", file);
        snprintf(e->family, sizeof e->family, "%s", f->name);
        snprintf(e->output, sizeof e->output, "%s", output);
        e->mode = m;
        e->budget.stats_builtin_only = builtin_only;
        UG_TRY(parse_budget(file, mode_item, obj, &e->budget));
    }
    return ug_ok();
}

static ug_status parse_tolerance(const char *file, const json_t *root, ug_budgets *out)
{
    static const char *const keys[] = {"max_ulp_dist", "p99_ulp_dist", "share_cr", "max_ratio", NULL};
    static const char where[] = "regression_tolerance";
    json_t *tol;
    UG_TRY(ug_json_object(file, "", root, where, &tol));
    UG_TRY(ug_json_keys(file, where, tol, keys));
    UG_TRY(ug_json_u32(file, where, tol, "max_ulp_dist", &out->tolerance.max_ulp_dist));
    UG_TRY(ug_json_u32(file, where, tol, "p99_ulp_dist", &out->tolerance.p99_ulp_dist));
    UG_TRY(ug_json_number(file, where, tol, "share_cr", 0, 1, &out->tolerance.share_cr));
    return ug_json_number(file, where, tol, "max_ratio", 0, INFINITY, &out->tolerance.max_ratio);
}

/* "stat_budgets": "built-in" (statistics gate the built-in kernels only) or "all" (the default). */
static ug_status parse_scope(const char *file, const json_t *root, bool *builtin_only)
{
    const char *scope = "all";
    if (json_object_get(root, "stat_budgets")) UG_TRY(ug_json_string(file, "", root, "stat_budgets", &scope));
    *builtin_only = strcmp(scope, "built-in") == 0;
    if (!*builtin_only && strcmp(scope, "all") != 0)
        return ug_json_fail(file, "", "stat_budgets", "expected \"built-in\" or \"all\", found \"%s\"", scope);
    return ug_ok();
}

static ug_status parse_budgets(const char *file, const json_t *root, void *ctx)
{
    ug_budgets *out = ctx;
    static const char *const keys[] = {"schema", "moderate_condition", "regression_tolerance", "stat_budgets",
                                       "families", NULL};
    UG_TRY(ug_json_schema(file, root, BUDGETS_SCHEMA, keys));
    /* A condition number abs_sum/|r| is at least 1. */
    UG_TRY(ug_json_number(file, "", root, "moderate_condition", 1, INFINITY, &out->moderate_cond));
    UG_TRY(parse_tolerance(file, root, out));
    bool builtin_only;
    UG_TRY(parse_scope(file, root, &builtin_only));
    json_t *families, *outputs, *modes;
    const char *family, *output;
    UG_TRY(ug_json_object(file, "", root, "families", &families));
    json_object_foreach(families, family, outputs) {
        const ug_family *f = ug_family_find(family);
        if (!f) return ug_json_fail(file, "families", family, "no kernel family \"%s\" (ulpgate list)", family);
        char where[UG_JSON_WHERE];
        ug_json_join(where, "families", family);
        UG_TRY(ug_json_check_object(file, "families", family, outputs));
        json_object_foreach(outputs, output, modes)
            UG_TRY(parse_output_budgets(file, where, f, output, modes, builtin_only, out));
    }
    return ug_ok();
}

static ug_status load_budgets_file(const char *path, ug_budgets *out)
{
    memset(out, 0, sizeof *out);
    ug_status s = ug_json_read("budgets", path, parse_budgets, out);
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

const ug_budget *ug_budgets_find(const ug_budgets *b, const char *family, const char *output, ug_ref_mode mode)
{
    for (size_t i = 0; i < b->n; i++) {
        const ug_budget_entry *e = &b->entries[i];
        if (e->mode == mode && strcmp(e->family, family) == 0 && strcmp(e->output, output) == 0)
            return &e->budget;
    }
    return NULL;
}

size_t ug_budget_figures(const ug_budget *b, const ug_summary *s, ug_budget_figure out[UG_BUDGET_FIGURES])
{
    size_t n = 0;
    out[n++] = (ug_budget_figure){UG_STAT_MAX_RATIO, "max_ratio", s->max_ratio, b->max_ratio, false};
    out[n++] = (ug_budget_figure){UG_STAT_MAX_ULP, "max_ulp_dist", s->max_ulp_dist, b->max_ulp_dist, false};
    out[n++] = (ug_budget_figure){UG_STAT_P99_ULP, "p99_ulp_dist", s->p99_ulp_dist, b->p99_ulp_dist, false};
    out[n++] = (ug_budget_figure){UG_STAT_SHARE_CR, "share_cr", ug_summary_share_cr(s), b->min_share_cr, true};
    if (isfinite(b->max_rel_rms))
        out[n++] = (ug_budget_figure){UG_STAT_REL_RMS, "rel_rms", ug_summary_rel_rms(s), b->max_rel_rms, false};
    return n;
}

bool ug_budget_figure_met(const ug_budget_figure *f)
{
    return f->at_least ? f->value >= f->limit : f->value <= f->limit;
}

bool ug_budget_enforces(const ug_budgets *all, const ug_budget *b, ug_stat_flag stat, const char *source_name)
{
    return stat == UG_STAT_MAX_RATIO || !source_name || !b->stats_builtin_only || all->enforce_stats ||
           (b->always_enforced & stat);
}

const char *ug_budget_verdict(const ug_budgets *all, const ug_budget *b, const ug_summary *s, const char *source_name)
{
    if (!b) return "no budget";
    ug_budget_figure f[UG_BUDGET_FIGURES];
    const size_t n = ug_budget_figures(b, s, f);
    bool broken = false, fails = false;
    for (size_t i = 0; i < n; i++) {
        if (ug_budget_figure_met(&f[i])) continue;
        broken = true;
        fails = fails || ug_budget_enforces(all, b, f[i].stat, source_name);
    }
    return fails ? "FAIL" : broken ? "advisory" : "pass";
}
