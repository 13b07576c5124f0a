/* SPDX-License-Identifier: MIT */
#include "gate.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "chain.h"

enum { MAX_FAILED_CASES = 50 };

static const char *output_name(const ug_family_result *fr, size_t o)
{
    return fr->family->buffers[fr->output_buffer[o]].name;
}

/* ------------------------------------------------------------------------
 * The verdict */

typedef struct {
    ug_verdict *v;
    bool out_of_memory;
} findings;

static void add(findings *fs, ug_finding_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(findings *fs, ug_finding_kind kind, const char *fmt, ...)
{
    ug_finding *f = ug_append((void **)&fs->v->items, &fs->v->n, sizeof *f);
    if (!f) {
        fs->out_of_memory = true;
        return;
    }
    f->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
    if (kind == UG_FINDING_FAIL) fs->v->pass = false;
}

/* One FAIL per failed case, the first MAX_FAILED_CASES of them, then a count. */
static void check_cases(findings *fs, const ug_run_result *run)
{
    size_t failed = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        if (cr->passed || failed++ >= MAX_FAILED_CASES) continue;
        add(fs, UG_FINDING_FAIL, "%s/%s: %s", cr->c->family->name, cr->c->label, cr->failure);
    }
    if (failed > MAX_FAILED_CASES)
        add(fs, UG_FINDING_FAIL, "... and %zu more failed cases (see cases.csv)",
            failed - MAX_FAILED_CASES);
}

/* The finding of a figure beyond its limit (an upper one, or a floor). */
static void add_limit_finding(findings *fs, ug_finding_kind kind, const char *what, const ug_budget_figure *f)
{
    char v[UG_NUM_LEN], l[UG_NUM_LEN];
    ug_fmt_num(v, f->value);
    ug_fmt_num(l, f->limit);
    add(fs, kind, "%s: %s %s %s budget %s%s", what, f->figure, v, f->at_least ? "is below" : "exceeds", l,
        kind == UG_FINDING_FAIL ? ""
                                : " (advisory: this statistics budget measures the built-in kernels; every element "
                                  "is judged by its bound; --enforce-stat-budgets makes it gate)");
}

/* max_ratio gates every kernel; each statistic gates the sources it applies to (budgets.h). */
static void check_budget(findings *fs, const char *what, const ug_summary *s, const ug_budget *b,
                         const ug_budgets *budgets, const char *source_name)
{
    ug_budget_figure f[UG_BUDGET_FIGURES];
    const size_t n = ug_budget_figures(b, s, f);
    for (size_t i = 0; i < n; i++)
        if (!ug_budget_figure_met(&f[i]))
            add_limit_finding(fs, ug_budget_enforces(budgets, b, f[i].stat, source_name) ? UG_FINDING_FAIL
                                                                                          : UG_FINDING_INFO,
                              what, &f[i]);
}

/* Compares one figure with its baseline value: worse by more than slack
 * fails, worse within slack is noted, better is reported. */
static void check_change(findings *fs, const char *what, const char *figure, double then,
                         double now, bool higher_is_better, double slack, const char *tolerance)
{
    if (now == then || (isnan(now) && isnan(then))) return;
    double worse_by = higher_is_better ? then - now : now - then;
    char a[UG_NUM_LEN], b[UG_NUM_LEN];
    ug_fmt_num(a, then);
    ug_fmt_num(b, now);
    if (!(worse_by <= slack))
        add(fs, UG_FINDING_FAIL, "%s: %s worsened %s -> %s (tolerance %s)", what, figure, a, b,
            tolerance);
    else if (worse_by > 0)
        add(fs, UG_FINDING_WORSE_OK, "%s: %s worsened %s -> %s (within tolerance %s)", what,
            figure, a, b, tolerance);
    else
        add(fs, UG_FINDING_BETTER, "%s: %s improved %s -> %s", what, figure, a, b);
}

/* distribution: false when s counts elements the baseline's figures do not (ISA paths that
 * disagree): then only the maxima are compared, the p99 and the share of a mixed population not. */
static void check_regression(findings *fs, const char *what, const ug_summary *s,
                             const ug_baseline_entry *e, const ug_budgets *budgets, bool distribution)
{
    char t[UG_NUM_LEN + 16];
    ug_fmt_num(t, budgets->tolerance.max_ulp_dist);
    check_change(fs, what, "max_ulp_dist", e->max_ulp_dist, s->max_ulp_dist, false,
                 budgets->tolerance.max_ulp_dist, t);
    if (distribution) {
        ug_fmt_num(t, budgets->tolerance.p99_ulp_dist);
        check_change(fs, what, "p99_ulp_dist", e->p99_ulp_dist, s->p99_ulp_dist, false,
                     budgets->tolerance.p99_ulp_dist, t);
        ug_fmt_num(t, budgets->tolerance.share_cr);
        check_change(fs, what, "share_cr", e->share_cr, ug_summary_share_cr(s), true,
                     budgets->tolerance.share_cr, t);
    }
    /* Relative: worse when now > then * (1 + tolerance) and now > then + 1e-12. */
    ug_fmt_num(t, budgets->tolerance.max_ratio);
    strcat(t, " relative");
    check_change(fs, what, "max_ratio", e->max_ratio, s->max_ratio, false,
                 fmax(e->max_ratio * budgets->tolerance.max_ratio, 1e-12), t);
}

/* The first path that produced a case's bits (its bits_hash); UG_ISA_COUNT when none did. */
static int first_path(const ug_case_result *r)
{
    int isa = 0;
    while (isa < UG_ISA_COUNT && !(r->isa_ran[isa] && r->isa_bits[isa] == r->bits_hash)) isa++;
    return isa;
}

/* Whether path isa ran on case r with bits other than its first path's (the runner measures those too). */
static bool path_differs(const ug_case_result *r, int isa)
{
    return r->isa_ran[isa] && r->isa_bits[isa] != r->bits_hash;
}

/* The elements of output o the differing paths added to the family's figures, beyond one path per case. */
static uint64_t differing_path_elements(const ug_run_result *run, const ug_family_result *fr, size_t o, ug_ref_mode m)
{
    uint64_t extra = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *r = &run->cases[i];
        for (int isa = 0; r->c->family == fr->family && isa < UG_ISA_COUNT; isa++)
            if (path_differs(r, isa)) extra += r->sum[o][m].elements;
    }
    return extra;
}

/* Paths that disagree are reported as such: which path, on how many cases, against which first path. */
static void check_paths_agree(findings *fs, const ug_run_result *run, const ug_family_result *fr)
{
    size_t cases = 0, disagree = 0, per_path[UG_ISA_COUNT] = {0};
    int first = UG_ISA_COUNT;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *r = &run->cases[i];
        if (r->c->family != fr->family || r->c->expect_reject) continue;
        cases++;
        bool differs = false;
        for (int isa = 0; isa < UG_ISA_COUNT; isa++)
            if (path_differs(r, isa)) per_path[isa]++, differs = true;
        disagree += differs;
        if (differs && first_path(r) < first) first = first_path(r);
    }
    if (!disagree) return;
    char paths[128] = "";
    for (int isa = 0, used = 0; isa < UG_ISA_COUNT; isa++)
        if (per_path[isa])
            used += snprintf(paths + used, sizeof paths - (size_t)used, "%s%s on %zu", used ? ", " : "",
                             ug_isa_name((ug_isa)isa), per_path[isa]);
    add(fs, UG_FINDING_INFO,
        "%s: ISA paths disagree on %zu of %zu accepted cases (bits other than %s's: %s); every path's outputs "
        "are measured and gated, the baseline's element count is matched with one path per case",
        fr->family->name, disagree, cases, first < UG_ISA_COUNT ? ug_isa_name((ug_isa)first) : "the first path",
        paths);
}

/* An intermediate handed over but never checked passes silently otherwise: one INFO per output of a pipeline
 * family, with the cases and the stage inputs that were missing (harness/chain.h). */
static ug_status check_unchecked(findings *fs, const ug_run_result *run, const ug_family_result *fr)
{
    for (size_t o = 0; o < fr->n_outputs && fr->family->n_stages; o++) {
        size_t cases = 0;
        uint32_t missing = 0; /* buffer indices */
        for (size_t i = 0; i < run->n_cases; i++) {
            const ug_case_result *r = &run->cases[i];
            if (r->c->family != fr->family || !r->unchecked[o]) continue;
            cases++;
            missing |= 1u << r->unchecked_missing[o];
        }
        if (!cases) continue;
        const char *stage;
        UG_TRY(ug_chain_stage_name(fr->family, (size_t)fr->output_buffer[o], &stage));
        char names[160] = "";
        size_t n = 0;
        for (size_t b = 0, used = 0; b < fr->family->n_buffers && used < sizeof names; b++)
            if (missing >> b & 1u)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", n++ ? " or " : "",
                                         fr->family->buffers[b].name);
        add(fs, UG_FINDING_INFO, "%s: %s was handed over in %zu case%s but not checked: its stage %s reads %s, which "
            "was not handed over", fr->family->name, output_name(fr, o), cases, cases == 1 ? "" : "s", stage, names);
    }
    return ug_ok();
}

/* Why a run measured another element count than the baseline, as far as the run can tell. */
static void count_mismatch_reason(const ug_run_result *run, const ug_family_result *fr, char *out, size_t size)
{
    size_t unmeasured = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *r = &run->cases[i];
        if (r->c->family == fr->family && !r->c->expect_reject && first_path(r) == UG_ISA_COUNT && !r->source_ran)
            unmeasured++;
    }
    const ug_sweep *sw = run->sweep;
    if (sw->filter[0])
        snprintf(out, size, "this run is filtered with --filter '%s'", sw->filter);
    else if (sw->shard_count)
        snprintf(out, size, "this run is shard %zu/%zu of the sweep", sw->shard_index, sw->shard_count);
    else if (unmeasured)
        snprintf(out, size, "%zu accepted cases of %s were not measured: their kernel failed", unmeasured,
                 fr->family->name);
    else
        snprintf(out, size, "the baseline was recorded from other cases or shapes of this sweep");
}

static void check_output_mode(findings *fs, const ug_run_result *run, const ug_family_result *fr, size_t o,
                              ug_ref_mode m, const ug_budgets *budgets, const ug_baseline *baseline)
{
    ug_summary s = ug_stats_summary(&fr->agg[o][m]);
    if (s.elements == 0) return;
    const char *family = fr->family->name, *output = output_name(fr, o);
    const char *mode = ug_ref_mode_name(m);
    char what[160];
    snprintf(what, sizeof what, "%s %s %s", family, output, mode);
    const ug_budget *b = ug_budgets_find(budgets, family, output, m);
    if (b)
        check_budget(fs, what, &s, b, budgets, run->source_name);
    else
        add(fs, UG_FINDING_FAIL, "%s: no budget (add families.%s.%s.%s to the budgets)", what,
            family, output, mode);
    if (!baseline) return;
    const ug_baseline_entry *e = ug_baseline_find(baseline, family, output, m);
    uint64_t differing = differing_path_elements(run, fr, o, m), per_case_path = s.elements - differing;
    char reason[160];
    if (!e) {
        add(fs, UG_FINDING_INFO, "%s: not in the baseline (new)", what);
    } else if (e->elements != per_case_path) {
        count_mismatch_reason(run, fr, reason, sizeof reason);
        add(fs, UG_FINDING_FAIL, "%s: %" PRIu64 " elements measured, the baseline has %" PRIu64 ": %s; figures not "
            "compared", what, per_case_path, e->elements, reason);
    } else {
        check_regression(fs, what, &s, e, budgets, differing == 0);
        if (differing)
            add(fs, UG_FINDING_INFO, "%s: max_ulp_dist and max_ratio compared with the baseline; p99_ulp_dist and "
                "share_cr not (%" PRIu64 " of the %" PRIu64 " elements measured come from ISA paths that disagree)",
                what, differing, s.elements);
    }
}

static void check_bits(findings *fs, const ug_run_result *run, const ug_family_result *fr,
                       const ug_baseline *baseline)
{
    const ug_baseline_bits *b = ug_baseline_bits_find(baseline, fr->family->name);
    for (int i = 0; b && i < UG_ISA_COUNT; i++) {
        if (!fr->isa_ran[i] || !b->has[i] || b->hash[i] == fr->bits_hash[i]) continue;
        add(fs, UG_FINDING_INFO, "%s: bits changed on %s (baseline %016" PRIx64 ", now %016" PRIx64 ")",
            fr->family->name, ug_isa_name((ug_isa)i), b->hash[i], fr->bits_hash[i]);
    }
    if (b && fr->source_ran && b->has_source && b->source_hash != fr->source_bits_hash)
        add(fs, UG_FINDING_INFO, "%s: bits of the %s changed (baseline %016" PRIx64 ", now %016" PRIx64 ")",
            fr->family->name, run->source_name, b->source_hash, fr->source_bits_hash);
}

/* "built-in", "plugin libmine.so", "candidate cand". */
static void identity_text(const ug_kernel_identity *k, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s", k->kind, k->name[0] ? " " : "", k->name);
}

/* Two results are comparable when they measured the same kernel source under
 * the same profile; otherwise one FAIL naming both. A new build of the same
 * library (another content hash) is what a baseline gates: INFO. */
static bool same_identity(findings *fs, const char *older, const ug_kernel_identity *src_then,
                          const ug_profile_identity *prof_then, const ug_kernel_identity *src_now,
                          const ug_profile_identity *prof_now)
{
    char a[300], b[300];
    identity_text(src_then, a, sizeof a);
    identity_text(src_now, b, sizeof b);
    if (strcmp(src_then->kind, src_now->kind) != 0 || strcmp(src_then->name, src_now->name) != 0) {
        add(fs, UG_FINDING_FAIL, "%s measured the kernels of %s, this result those of %s: a baseline gates one "
            "kernel source (record one for this source with --write-baseline)", older, a, b);
        return false;
    }
    if (strcmp(prof_then->name, prof_now->name) != 0 ||
        (prof_then->has_hash && prof_now->has_hash && prof_then->hash != prof_now->hash)) {
        add(fs, UG_FINDING_FAIL, "%s was measured under profile %s, this result under %s (or another version of "
            "it): figures under different target arithmetic are not comparable", older, prof_then->name,
            prof_now->name);
        return false;
    }
    if (src_then->has_hash && src_now->has_hash && src_then->hash != src_now->hash)
        add(fs, UG_FINDING_INFO, "%s: content changed since %s (%016" PRIx64 " -> %016" PRIx64 ")", b, older,
            src_then->hash, src_now->hash);
    return true;
}

/* A baseline of another sweep cannot be compared with: FAIL, and no comparison. */
static bool same_sweep(findings *fs, const ug_run_result *run, const ug_baseline *baseline)
{
    if (baseline->sweep_hash == run->sweep->content_hash) return true;
    add(fs, UG_FINDING_FAIL,
        "the baseline was recorded on sweep %s (content hash %016" PRIx64 "), this run used %s "
        "(content hash %016" PRIx64 "): review the change and re-baseline (make baseline; for your own kernel, "
        "--write-baseline)",
        baseline->sweep_path, baseline->sweep_hash, run->sweep->path, run->sweep->content_hash);
    return false;
}

ug_status ug_gate_evaluate(const ug_run_result *run, const ug_budgets *budgets,
                           const ug_baseline *baseline, ug_verdict *out)
{
    *out = (ug_verdict){.pass = true};
    findings fs = {out, false};
    ug_kernel_identity source;
    ug_profile_identity profile;
    ug_run_identity(run, &source, &profile);
    if (baseline && (!same_sweep(&fs, run, baseline) ||
                     !same_identity(&fs, "the baseline", &baseline->source, &baseline->profile, &source, &profile)))
        baseline = NULL;
    check_cases(&fs, run);
    for (size_t i = 0; i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        for (size_t o = 0; o < fr->n_outputs; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++)
                check_output_mode(&fs, run, fr, o, (ug_ref_mode)m, budgets, baseline);
        check_paths_agree(&fs, run, fr);
        if (baseline) check_bits(&fs, run, fr, baseline);
        const ug_status st = check_unchecked(&fs, run, fr);
        if (!ug_is_ok(&st)) {
            ug_verdict_free(out);
            return st;
        }
    }
    if (!fs.out_of_memory) return ug_ok();
    ug_verdict_free(out);
    return ug_fail(UG_ENOMEM, "out of memory while evaluating the gate");
}

/* The summary a baseline entry stands for (share_cr = cr / elements exactly). */
static ug_summary entry_summary(const ug_baseline_entry *e)
{
    ug_summary s = {0};
    s.elements = e->elements;
    s.correctly_rounded = (uint64_t)llround(e->share_cr * (double)e->elements);
    s.max_ulp_dist = e->max_ulp_dist;
    s.p99_ulp_dist = e->p99_ulp_dist;
    s.max_ratio = e->max_ratio;
    s.max_ulp_err = e->max_ulp_err;
    return s;
}

ug_status ug_compare(const ug_baseline *old, const ug_baseline *new, const ug_budgets *budgets,
                     ug_verdict *out)
{
    *out = (ug_verdict){.pass = true};
    findings fs = {out, false};
    bool comparable = old->sweep_hash == new->sweep_hash;
    if (!comparable)
        add(&fs, UG_FINDING_FAIL,
            "the two results come from different sweeps (%s, content hash %016" PRIx64 "; %s, %016" PRIx64
            "): their figures are not comparable", old->sweep_path, old->sweep_hash, new->sweep_path,
            new->sweep_hash);
    else
        comparable = same_identity(&fs, "the old result", &old->source, &old->profile, &new->source, &new->profile);
    for (size_t i = 0; i < new->n && comparable; i++) {
        const ug_baseline_entry *e = &new->entries[i];
        char what[160];
        snprintf(what, sizeof what, "%s %s %s", e->family, e->output, ug_ref_mode_name(e->mode));
        const ug_baseline_entry *then = ug_baseline_find(old, e->family, e->output, e->mode);
        ug_summary now = entry_summary(e);
        if (!then)
            add(&fs, UG_FINDING_INFO, "%s: new (not in the old result)", what);
        else if (then->elements != e->elements)
            add(&fs, UG_FINDING_FAIL, "%s: %" PRIu64 " elements now, %" PRIu64 " before: not comparable",
                what, e->elements, then->elements);
        else
            check_regression(&fs, what, &now, then, budgets, true);
    }
    for (size_t i = 0; i < old->n && comparable; i++)
        if (!ug_baseline_find(new, old->entries[i].family, old->entries[i].output, old->entries[i].mode))
            add(&fs, UG_FINDING_FAIL, "%s %s %s: measured before, missing now", old->entries[i].family,
                old->entries[i].output, ug_ref_mode_name(old->entries[i].mode));
    for (size_t i = 0; i < new->n_bits && comparable; i++) {
        const ug_baseline_bits *b = &new->bits[i], *a = ug_baseline_bits_find(old, b->family);
        for (int isa = 0; a && isa < UG_ISA_COUNT; isa++)
            if (a->has[isa] && b->has[isa] && a->hash[isa] != b->hash[isa])
                add(&fs, UG_FINDING_INFO, "%s: bits changed on %s (%016" PRIx64 " -> %016" PRIx64 ")",
                    b->family, ug_isa_name((ug_isa)isa), a->hash[isa], b->hash[isa]);
        if (a && a->has_source && b->has_source && a->source_hash != b->source_hash)
            add(&fs, UG_FINDING_INFO, "%s: bits of the %s changed (%016" PRIx64 " -> %016" PRIx64 ")", b->family,
                new->source.kind, a->source_hash, b->source_hash);
    }
    if (!fs.out_of_memory) return ug_ok();
    ug_verdict_free(out);
    return ug_fail(UG_ENOMEM, "out of memory while comparing");
}

void ug_verdict_free(ug_verdict *v)
{
    free(v->items);
    memset(v, 0, sizeof *v);
}
