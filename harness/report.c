/* SPDX-License-Identifier: MIT */
#include "report.h"

#include "plots.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/report_dir.h"
#include "profile.h"

#define REPORT_SCHEMA "ulpgate-report/1"
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    const ug_run_result *run;
    const ug_budgets *budgets;
    const ug_verdict *verdict;
} report_in;

static const char *kind_name(ug_finding_kind k)
{
    switch (k) {
    case UG_FINDING_FAIL: return "FAIL";
    case UG_FINDING_WORSE_OK: return "WORSE_OK";
    case UG_FINDING_BETTER: return "BETTER";
    case UG_FINDING_INFO: return "INFO";
    }
    return "?";
}

static size_t fail_count(const ug_verdict *v)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++) n += v->items[i].kind == UG_FINDING_FAIL;
    return n;
}

static const char *output_name(const ug_family_result *fr, size_t o)
{
    return fr->family->buffers[fr->output_buffer[o]].name;
}

static const ug_family_result *family_result(const ug_run_result *run, const ug_family *f)
{
    for (size_t i = 0; i < run->n_families; i++)
        if (run->families[i].family == f) return &run->families[i];
    return NULL;
}

static const char *regime_name(const ug_case *c)
{
    if (c->expect_reject) return NULL;
    return c->regime < c->family->n_regimes ? c->family->regimes[c->regime] : "user";
}

/* "B=1 T=64 ..." in the family's parameter order. */
static void params_text(char *out, size_t cap, const ug_case *c)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < c->family->n_params && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s=%.17g", i ? " " : "",
                                c->family->param_names[i], c->params.v[i]);
}

typedef struct {
    size_t accepted, rejected, failed;
} case_counts;

static case_counts count_cases(const ug_run_result *run)
{
    case_counts n = {0, 0, 0};
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        if (cr->c->expect_reject) n.rejected++;
        else n.accepted++;
        if (!cr->passed) n.failed++;
    }
    return n;
}

/* ------------------------------------------------------------------------
 * Summary rows (kernel x output x mode), shared by report.md and the terminal */

typedef struct {
    const char *family, *output, *mode, *verdict;
    char elements[24], max[16], p99[16], share[16], ratio[24], rms[16], budget[64];
} row;

typedef void row_printer(FILE *out, const row *r);

static void row_fill(row *r, const ug_summary *s, const ug_budget *b, const char *verdict)
{
    r->verdict = verdict;
    snprintf(r->elements, sizeof r->elements, "%" PRIu64, s->elements);
    snprintf(r->max, sizeof r->max, "%" PRIu32, s->max_ulp_dist);
    snprintf(r->p99, sizeof r->p99, "%" PRIu32, s->p99_ulp_dist);
    snprintf(r->share, sizeof r->share, "%.4f", ug_summary_share_cr(s));
    snprintf(r->ratio, sizeof r->ratio, "%.4g", s->max_ratio);
    snprintf(r->rms, sizeof r->rms, "%.3g", ug_summary_rel_rms(s));
    if (b)
        snprintf(r->budget, sizeof r->budget, "%" PRIu32 "/%" PRIu32 "/%g/%g", b->max_ulp_dist,
                 b->p99_ulp_dist, b->min_share_cr, b->max_ratio);
    else
        snprintf(r->budget, sizeof r->budget, "-");
}

/* Calls print for every measured (family, output, mode), in run order. */
static void each_row(FILE *out, const ug_run_result *run, const ug_budgets *budgets,
                     row_printer *print)
{
    for (size_t i = 0; i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        for (size_t o = 0; o < fr->n_outputs; o++) {
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
                ug_summary s = ug_stats_summary(&fr->agg[o][m]);
                if (s.elements == 0) continue;
                row r = {.family = fr->family->name,
                         .output = output_name(fr, o),
                         .mode = ug_ref_mode_name((ug_ref_mode)m)};
                const ug_budget *b = ug_budgets_find(budgets, r.family, r.output, (ug_ref_mode)m);
                row_fill(&r, &s, b, ug_budget_verdict(budgets, b, &s, run->source_name));
                print(out, &r);
            }
        }
    }
}

/* ------------------------------------------------------------------------
 * report.md */

/* A table cell: '|' escaped, line breaks flattened. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
    }
}

static void md_row(FILE *f, const row *r)
{
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r->family, r->output,
            r->mode, r->elements, r->max, r->p99, r->share, r->ratio, r->rms, r->budget, r->verdict);
}

/* Which kernels the run measured: "built-in", or the source's label and what it is. */
static const char *kernels_label(const ug_run_result *run, char *label, size_t size)
{
    if (!run->source_name) return "built-in";
    snprintf(label, size, "%s%s%s", run->source_name, run->source_detail[0] ? ": " : "", run->source_detail);
    return label;
}

/* What sampled checking checked, and what it guarantees: a case's k of n
 * slices drawn without replacement miss an error present in m of them with
 * probability C(n-m, k) / C(n, k) <= (1 - k/n)^m; slices hold equal shares
 * of every output, so an error in a share q of the elements lies in at least
 * ceil(q n) slices. */
static void md_sample(FILE *f, const ug_run_result *run)
{
    if (run->sample_fraction <= 0) return;
    uint64_t slices = 0, checked = 0;
    double worst = 0; /* the largest miss probability of one bad slice over the cases: 1 - k/n */
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        slices += cr->slices;
        checked += cr->slices_checked;
        if (cr->slices) worst = fmax(worst, 1.0 - (double)cr->slices_checked / (double)cr->slices);
    }
    fprintf(f, "- **sampled checking** (--sample-slices %g, seed %" PRIu64 "): the reference and the bound of %" PRIu64
               " of %" PRIu64 " slices (one batch entry and value head each; a family without slices is checked "
               "whole); every element was still run and checked for poison, guards and inputs. In any case, an "
               "error confined to one slice escapes with probability at most %.3g, one in a share q of a case's "
               "elements at most %.3g^ceil(q·n) (n: the case's slices; 10%% of 32 slices: %.3g)\n",
            run->sample_fraction, run->sample_seed, checked, slices, worst, worst, pow(worst, ceil(0.1 * 32)));
}

static void md_head(FILE *f, const report_in *in)
{
    const ug_run_result *run = in->run;
    double rate = run->wall_seconds > 0 ? (double)run->elements_checked / run->wall_seconds : 0;
    fprintf(f, "# ulpgate report: %s\n\n", run->sweep->path);
    fprintf(f, "- started: %s\n", run->started_utc);
    char kernels[320];
    fprintf(f, "- kernels: %s\n", kernels_label(run, kernels, sizeof kernels));
    fprintf(f, "- profile: %s (%s, hash %s)%s\n", run->profile.name, run->profile.origin, run->profile.hash,
            run->profile.products == UG_PRODUCTS_TF32 ? ", **tf32 products**" : "");
    fprintf(f, "- wall time: %.2f s\n", run->wall_seconds);
    fprintf(f, "- elements checked: %" PRIu64 " (%.0f elements/s)\n", run->elements_checked, rate);
    fprintf(f, "- moderate condition: <= %g\n", run->moderate_cond);
    md_sample(f, run);
    if (in->verdict->pass) fprintf(f, "- verdict: **PASS**\n\n");
    else fprintf(f, "- verdict: **FAIL** (%zu findings)\n\n", fail_count(in->verdict));
}

static void md_summary(FILE *f, const report_in *in)
{
    fputs("## Accuracy\n\n"
          "| kernel | output | mode | elements | max ulp_dist | p99 | share CR | max ratio "
          "| rel RMS | budget (max/p99/CR/ratio) | verdict |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n",
          f);
    each_row(f, in->run, in->budgets, md_row);
}

static void md_rejected(FILE *f, const ug_run_result *run)
{
    fputs("\n## Rejected shapes\n\n"
          "| kernel | case | expected | kernel said | result |\n|---|---|---|---|---|\n",
          f);
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        if (!cr->c->expect_reject) continue;
        fprintf(f, "| %s | ", cr->c->family->name);
        md_cell(f, cr->c->label);
        fputs(" | ", f);
        for (size_t e = 0; e < cr->c->n_expect; e++) {
            fputs(e ? ", \"" : "\"", f);
            md_cell(f, cr->c->expect[e]);
            fputc('"', f);
        }
        fputs(" | ", f);
        md_cell(f, cr->kernel_status.code == UG_OK ? "(accepted the shape)" : cr->kernel_status.msg);
        fputs(cr->passed ? " | rejected as expected |\n" : " | FAIL |\n", f);
    }
}

static void md_failures(FILE *f, const ug_run_result *run)
{
    fputs("\n## Failures\n\n", f);
    size_t n = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        if (cr->passed) continue;
        fprintf(f, "- `%s/%s`: %s\n", cr->c->family->name, cr->c->label, cr->failure);
        n++;
    }
    if (n == 0) fputs("None.\n", f);
}

static void md_findings(FILE *f, const ug_verdict *v)
{
    fputs("\n## Findings\n\n", f);
    for (size_t i = 0; i < v->n; i++)
        fprintf(f, "- **%s** %s\n", kind_name(v->items[i].kind), v->items[i].text);
    if (v->n == 0) fputs("None.\n", f);
}

/* Per output of a pipeline family (harness/chain.h): in how many accepted
 * cases each mode was measured; an intermediate the kernel did not hand
 * over, or whose stage lacked an input, is not. */
static void md_chained(FILE *f, const ug_run_result *run)
{
    for (size_t i = 0; i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        if (!fr->family->n_stages) continue;
        fprintf(f, "\n## Chained stages of %s\n\n"
                   "Each output below is checked against its stage's reference computed from the kernel's own "
                   "earlier outputs (the staged mode of o and final_state; both modes of an intermediate); the exact "
                   "mode of o and final_state compares them with the exact recurrence. A case that does not hand "
                   "over an intermediate, or an input of its stage, leaves that check out; Findings has an INFO "
                   "for each intermediate handed over but not checked, naming the input its stage lacked.\n\n"
                   "| output | cases checked (exact) | cases checked (staged) | accepted cases | handed over, not "
                   "checked |\n|---|---:|---:|---:|---:|\n",
                fr->family->name);
        for (size_t o = 0; o < fr->n_outputs; o++) {
            size_t checked[UG_REF_MODE_COUNT] = {0}, unchecked = 0, accepted = 0;
            for (size_t k = 0; k < run->n_cases; k++) {
                const ug_case_result *cr = &run->cases[k];
                if (cr->c->family != fr->family || cr->c->expect_reject) continue;
                accepted++;
                unchecked += cr->unchecked[o];
                for (int m = 0; m < UG_REF_MODE_COUNT; m++) checked[m] += cr->sum[o][m].elements > 0;
            }
            fprintf(f, "| %s | %zu | %zu | %zu | %zu |\n", output_name(fr, o), checked[UG_REF_EXACT],
                    checked[UG_REF_STAGED], accepted, unchecked);
        }
    }
}

static void md_plan_findings(FILE *f, const ug_run_result *run)
{
    fputs("\n## Dispatch-plan audit (SPEC 1.6)\n\n", f);
    size_t audited = 0, found = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        audited += cr->has_plan;
        if (!cr->plan_finding[0]) continue;
        fprintf(f, "- `%s/%s`: %s\n", cr->c->family->name, cr->c->label, cr->plan_finding);
        found++;
    }
    if (found == 0) fprintf(f, "No finding over %zu audited shapes.\n", audited);
}

static ug_status write_md(FILE *f, const report_in *in)
{
    md_head(f, in);
    md_summary(f, in);
    md_rejected(f, in->run);
    md_failures(f, in->run);
    md_chained(f, in->run);
    md_plan_findings(f, in->run);
    md_findings(f, in->verdict);
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * cases.csv */

static const char *const csv_case_cols[] = {"family", "case", "kind", "regime", "params"};
static const char *const csv_stat_cols[] = {
    "output", "mode", "elements", "moderate", "correctly_rounded", "share_cr",
    "max_ulp_dist", "p99_ulp_dist", "max_ulp_dist_all", "max_ulp_err", "max_ratio", "max_cond",
    "over_bound", "class_failures", "flagged"};
static const char *const csv_tail_cols[] = {"passed", "failure"};

/* One field, quoted per RFC 4180 when it holds a comma, quote or line break. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_names(FILE *f, const char *const *names, size_t n, bool last)
{
    for (size_t i = 0; i < n; i++) {
        fputs(names[i], f);
        fputc(last && i + 1 == n ? '\n' : ',', f);
    }
}

static void csv_case_head(FILE *f, const ug_case_result *cr)
{
    const ug_case *c = cr->c;
    char params[512];
    params_text(params, sizeof params, c);
    const char *regime = regime_name(c);
    csv_field(f, c->family->name);
    fputc(',', f);
    csv_field(f, c->label);
    fprintf(f, ",%s,", c->expect_reject ? "rejected" : "accepted");
    csv_field(f, regime ? regime : "");
    fputc(',', f);
    csv_field(f, params);
    fputc(',', f);
}

static void csv_stats(FILE *f, const char *output, const char *mode, const ug_summary *s)
{
    csv_field(f, output);
    fprintf(f, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.17g,%" PRIu32 ",%" PRIu32 ",%" PRIu32
               ",%.17g,%.17g,%.17g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
            mode, s->elements, s->moderate, s->correctly_rounded, ug_summary_share_cr(s),
            s->max_ulp_dist, s->p99_ulp_dist, s->max_ulp_dist_all, s->max_ulp_err, s->max_ratio,
            s->max_cond, s->over_bound, s->class_failures, s->flagged);
}

static void csv_case_tail(FILE *f, const ug_case_result *cr)
{
    fputs(cr->passed ? "true," : "false,", f);
    csv_field(f, cr->passed ? "" : cr->failure);
    fputc('\n', f);
}

static void csv_case(FILE *f, const ug_run_result *run, const ug_case_result *cr)
{
    const ug_family_result *fr = family_result(run, cr->c->family);
    if (cr->c->expect_reject || !fr) {
        csv_case_head(f, cr);
        for (size_t i = 0; i < ARRAY_LEN(csv_stat_cols); i++) fputc(',', f);
        csv_case_tail(f, cr);
        return;
    }
    for (size_t o = 0; o < fr->n_outputs; o++) {
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            csv_case_head(f, cr);
            csv_stats(f, output_name(fr, o), ug_ref_mode_name((ug_ref_mode)m), &cr->sum[o][m]);
            csv_case_tail(f, cr);
        }
    }
}

static ug_status write_csv(FILE *f, const report_in *in)
{
    csv_names(f, csv_case_cols, ARRAY_LEN(csv_case_cols), false);
    csv_names(f, csv_stat_cols, ARRAY_LEN(csv_stat_cols), false);
    csv_names(f, csv_tail_cols, ARRAY_LEN(csv_tail_cols), true);
    for (size_t i = 0; i < in->run->n_cases; i++) csv_case(f, in->run, &in->run->cases[i]);
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * report.json. Builders return NULL when out of memory; jansson's setters
 * and json_pack accept (and release) NULL values, so a failure propagates. */

/* JSON has no literal for inf/NaN: those are written as strings. */
static json_t *real_json(double x)
{
    if (isfinite(x)) return json_real(x);
    return json_string(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
}

static json_t *hex_json(uint64_t h)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, h);
    return json_string(hex);
}

/* Sets obj[key] = v; on failure releases obj and returns NULL. */
static json_t *set(json_t *obj, const char *key, json_t *v)
{
    if (json_object_set_new(obj, key, v) == 0) return obj;
    json_decref(obj);
    return NULL;
}

static json_t *append(json_t *arr, json_t *v)
{
    if (json_array_append_new(arr, v) == 0) return arr;
    json_decref(arr);
    return NULL;
}

static json_t *summary_json(const ug_summary *s)
{
    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:I}", "elements",
        (json_int_t)s->elements, "moderate", (json_int_t)s->moderate, "correctly_rounded",
        (json_int_t)s->correctly_rounded, "class_failures", (json_int_t)s->class_failures,
        "over_bound", (json_int_t)s->over_bound, "flagged", (json_int_t)s->flagged,
        "max_ulp_dist", (json_int_t)s->max_ulp_dist, "p99_ulp_dist", (json_int_t)s->p99_ulp_dist,
        "max_ulp_dist_all", (json_int_t)s->max_ulp_dist_all, "max_ulp_err",
        real_json(s->max_ulp_err), "max_ratio", real_json(s->max_ratio), "max_cond",
        real_json(s->max_cond), "share_cr", real_json(ug_summary_share_cr(s)), "worst_index",
        (json_int_t)s->worst_index);
}

/* Summary plus the relative RMS and the sums it is made of (merge adds them). */
static json_t *summary_rms_json(const ug_summary *s)
{
    json_t *j = summary_json(s);
    j = set(j, "rel_rms", real_json(ug_summary_rel_rms(s)));
    j = set(j, "sum_sq_err", real_json(s->sum_sq_err));
    return set(j, "sum_sq_ref", real_json(s->sum_sq_ref));
}

static json_t *budget_json(const ug_budget *b)
{
    if (!b) return json_null();
    return json_pack("{s:o, s:I, s:I, s:o}", "max_ratio", real_json(b->max_ratio), "max_ulp_dist",
                     (json_int_t)b->max_ulp_dist, "p99_ulp_dist", (json_int_t)b->p99_ulp_dist,
                     "min_share_cr", real_json(b->min_share_cr));
}

/* The case holding the aggregate's worst element: the first whose max_ratio
 * and worst_index are the aggregate's (ug_stats_merge keeps the first). */
static json_t *worst_case_json(const ug_run_result *run, const ug_family_result *fr, size_t o,
                               ug_ref_mode m, const ug_summary *agg)
{
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        const ug_summary *s = &cr->sum[o][m];
        if (cr->c->family != fr->family || cr->c->expect_reject || s->elements == 0) continue;
        if (s->max_ratio == agg->max_ratio && s->worst_index == agg->worst_index)
            return json_pack("{s:s, s:I}", "label", cr->c->label, "index",
                             (json_int_t)agg->worst_index);
    }
    return json_null();
}

/* The ulp_dist histogram of the moderate elements, sparse: [[bin, count], ...]
 * (what `merge` needs to combine shards' percentiles exactly). */
static json_t *histogram_json(const ug_stats *st)
{
    json_t *bins = json_array();
    for (size_t i = 0; bins && i < UG_DIST_BINS; i++) {
        double n = gsl_histogram_get(st->dist, i);
        if (n > 0) bins = append(bins, json_pack("[I, I]", (json_int_t)i, (json_int_t)n));
    }
    return bins;
}

static json_t *aggregate_json(const report_in *in, const ug_family_result *fr, size_t o,
                              ug_ref_mode m)
{
    ug_summary s = ug_stats_summary(&fr->agg[o][m]);
    const ug_budget *b = ug_budgets_find(in->budgets, fr->family->name, output_name(fr, o), m);
    json_t *j = summary_rms_json(&s);
    j = set(j, "dist_histogram", histogram_json(&fr->agg[o][m]));
    j = set(j, "budget", budget_json(b));
    j = set(j, "budget_verdict", json_string(ug_budget_verdict(in->budgets, b, &s, in->run->source_name)));
    return set(j, "worst_case", worst_case_json(in->run, fr, o, m, &s));
}

static json_t *family_outputs_json(const report_in *in, const ug_family_result *fr)
{
    json_t *outputs = json_array();
    for (size_t o = 0; outputs && o < fr->n_outputs; o++) {
        const ug_buffer_desc *d = &fr->family->buffers[fr->output_buffer[o]];
        json_t *modes = json_object();
        for (int m = 0; modes && m < UG_REF_MODE_COUNT; m++)
            modes = set(modes, ug_ref_mode_name((ug_ref_mode)m),
                        aggregate_json(in, fr, o, (ug_ref_mode)m));
        outputs = append(outputs, json_pack("{s:s, s:s, s:o}", "name", d->name, "dtype",
                                            ug_dtype_name(d->dtype), "modes", modes));
    }
    return outputs;
}

static json_t *bits_json(const ug_run_result *run, const ug_family_result *fr)
{
    json_t *bits = json_object();
    for (int i = 0; bits && i < UG_ISA_COUNT; i++)
        if (fr->isa_ran[i]) bits = set(bits, ug_isa_name((ug_isa)i), hex_json(fr->bits_hash[i]));
    if (bits && fr->source_ran) bits = set(bits, run->source_name, hex_json(fr->source_bits_hash));
    return bits;
}

static json_t *families_json(const report_in *in)
{
    json_t *families = json_array();
    for (size_t i = 0; families && i < in->run->n_families; i++) {
        const ug_family_result *fr = &in->run->families[i];
        families = append(families,
                          json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:o}", "name", fr->family->name,
                                    "spec_section", fr->family->spec_section, "cases_accepted",
                                    (json_int_t)fr->cases_accepted, "cases_rejected",
                                    (json_int_t)fr->cases_rejected, "cases_failed",
                                    (json_int_t)fr->cases_failed, "bits", bits_json(in->run, fr),
                                    "outputs", family_outputs_json(in, fr)));
    }
    return families;
}

/* Shapes are integers (stored exactly, below 2^53): written as JSON integers. */
static json_t *param_json(double v)
{
    if (v == trunc(v) && fabs(v) < 0x1p53) return json_integer((json_int_t)v);
    return real_json(v);
}

static json_t *case_params_json(const ug_case *c)
{
    json_t *params = json_object();
    for (size_t i = 0; params && i < c->family->n_params; i++)
        params = set(params, c->family->param_names[i], param_json(c->params.v[i]));
    return params;
}

static json_t *case_outputs_json(const ug_run_result *run, const ug_case_result *cr)
{
    const ug_family_result *fr = family_result(run, cr->c->family);
    json_t *outputs = json_object();
    for (size_t o = 0; outputs && fr && !cr->c->expect_reject && o < fr->n_outputs; o++) {
        json_t *modes = json_object();
        for (int m = 0; modes && m < UG_REF_MODE_COUNT; m++)
            modes = set(modes, ug_ref_mode_name((ug_ref_mode)m), summary_rms_json(&cr->sum[o][m]));
        outputs = set(outputs, output_name(fr, o), modes);
    }
    return outputs;
}

/* {output: the stage input that was missing} per intermediate handed over and not checked (harness/chain.h). */
static json_t *case_unchecked_json(const ug_run_result *run, const ug_case_result *cr)
{
    const ug_family_result *fr = family_result(run, cr->c->family);
    json_t *unchecked = json_object();
    for (size_t o = 0; unchecked && fr && o < fr->n_outputs; o++)
        if (cr->unchecked[o])
            unchecked = set(unchecked, output_name(fr, o),
                            json_string(cr->c->family->buffers[cr->unchecked_missing[o]].name));
    return unchecked;
}

static json_t *expect_json(const ug_case *c)
{
    json_t *expect = json_array();
    for (size_t i = 0; expect && i < c->n_expect; i++)
        expect = append(expect, json_string(c->expect[i]));
    return expect;
}

static json_t *case_json(const ug_run_result *run, const ug_case_result *cr)
{
    const ug_case *c = cr->c;
    json_t *status = json_pack("{s:s, s:s}", "code", ug_code_name(cr->kernel_status.code),
                               "message", cr->kernel_status.msg);
    json_t *j = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:b, s:s?, s:o, s:o}", "family",
                          c->family->name, "label", c->label, "kind",
                          c->expect_reject ? "rejected" : "accepted", "regime", regime_name(c),
                          "params", case_params_json(c), "passed", cr->passed, "failure",
                          cr->passed ? NULL : cr->failure, "kernel_status", status, "expect",
                          expect_json(c));
    j = set(j, "index", json_integer((json_int_t)c->index));
    json_t *samples = json_array();
    for (size_t k = 0; samples && k < cr->samples.n; k++) {
        const ug_sample *x = &cr->samples.items[k];
        samples = append(samples, json_pack("[i, i, o, o, o]", x->output, x->mode, real_json(x->cond),
                                            real_json(x->ulp_err), real_json(x->bound_ulps)));
    }
    j = set(j, "samples", samples);
    j = set(j, "elements", json_integer((json_int_t)cr->elements));
    json_t *isa_bits = json_object();
    for (int isa = 0; isa_bits && isa < UG_ISA_COUNT; isa++)
        if (cr->isa_ran[isa]) isa_bits = set(isa_bits, ug_isa_name((ug_isa)isa), hex_json(cr->isa_bits[isa]));
    if (isa_bits && cr->source_ran) isa_bits = set(isa_bits, run->source_name, hex_json(cr->bits_hash));
    j = set(j, "isa_bits", isa_bits);
    j = set(j, "bits_hash", c->expect_reject ? json_null() : hex_json(cr->bits_hash));
    j = set(j, "isa_bits_agree", json_boolean(cr->isa_bits_agree));
    j = set(j, "kernel_seconds", real_json(cr->kernel_seconds));
    j = set(j, "reference_seconds", real_json(cr->reference_seconds));
    j = set(j, "plan", !cr->has_plan ? json_null()
                                      : json_pack("{s:I, s:I, s:I, s:I, s:s?}", "threads_planned",
                                                  (json_int_t)cr->plan.threads_planned, "threads_needed",
                                                  (json_int_t)cr->plan.threads_needed, "tg_bytes_planned",
                                                  (json_int_t)cr->plan.tg_bytes_planned, "tg_bytes_needed",
                                                  (json_int_t)cr->plan.tg_bytes_needed, "finding",
                                                  cr->plan_finding[0] ? cr->plan_finding : NULL));
    j = set(j, "unchecked", case_unchecked_json(run, cr));
    return set(j, "outputs", case_outputs_json(run, cr));
}

static json_t *cases_json(const ug_run_result *run)
{
    json_t *cases = json_array();
    for (size_t i = 0; cases && i < run->n_cases; i++)
        cases = append(cases, case_json(run, &run->cases[i]));
    return cases;
}

static json_t *run_json(const ug_run_result *run)
{
    case_counts n = count_cases(run);
    double rate = run->wall_seconds > 0 ? (double)run->elements_checked / run->wall_seconds : 0;
    json_t *sweep = json_pack("{s:s, s:o, s:I}", "path", run->sweep->path, "content_hash",
                              hex_json(run->sweep->content_hash), "seed",
                              (json_int_t)run->sweep->seed);
    json_object_set_new(sweep, "filter", json_string(run->sweep->filter));
    json_t *memory = json_pack("{s:I}", "peak_rss_kib", (json_int_t)run->peak_rss_kib);
    json_object_set_new(sweep, "shard", run->sweep->shard_count
                                            ? json_pack("{s:I, s:I}", "index", (json_int_t)run->sweep->shard_index,
                                                        "count", (json_int_t)run->sweep->shard_count)
                                            : json_null());
    char kernels[320];
    json_t *j = json_pack("{s:s, s:o, s:o, s:s, s:o, s:I, s:o, s:o, s:I, s:I, s:I}", "kernels",
                     kernels_label(run, kernels, sizeof kernels), "memory", memory, "sweep", sweep,
                     "started_utc", run->started_utc, "wall_seconds", real_json(run->wall_seconds),
                     "elements_checked", (json_int_t)run->elements_checked, "elements_per_second",
                     real_json(rate), "moderate_condition", real_json(run->moderate_cond),
                     "cases_accepted", (json_int_t)n.accepted, "cases_rejected",
                     (json_int_t)n.rejected, "cases_failed", (json_int_t)n.failed);
    if (run->sample_fraction <= 0) return j;
    uint64_t slices = 0, checked = 0;
    for (size_t i = 0; i < run->n_cases; i++) slices += run->cases[i].slices, checked += run->cases[i].slices_checked;
    return set(j, "sample", json_pack("{s:o, s:I, s:I, s:I}", "fraction", real_json(run->sample_fraction), "seed",
                                      (json_int_t)run->sample_seed, "slices", (json_int_t)slices, "slices_checked",
                                      (json_int_t)checked));
}

static json_t *verdict_json(const ug_verdict *v)
{
    json_t *findings = json_array();
    for (size_t i = 0; findings && i < v->n; i++)
        findings = append(findings, json_pack("{s:s, s:s}", "kind", kind_name(v->items[i].kind),
                                              "text", v->items[i].text));
    return json_pack("{s:b, s:I, s:o}", "pass", v->pass, "fail_count",
                     (json_int_t)fail_count(v), "findings", findings);
}

static ug_status write_json(FILE *f, const report_in *in)
{
    json_t *root = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "schema", REPORT_SCHEMA, "profile",
                             ug_profile_id_json(&in->run->profile), "run", run_json(in->run), "verdict",
                             verdict_json(in->verdict), "families", families_json(in), "cases",
                             cases_json(in->run));
    if (!root) return ug_fail(UG_ENOMEM, "out of memory while building report.json");
    int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (rc != 0 || fputc('\n', f) == EOF) return ug_fail(UG_EIO, "writing report.json failed");
    return ug_ok();
}

/* ------------------------------------------------------------------------
 * junit.xml: one test case per swept case, one for the gate's verdict, in
 * the shape CI systems ingest (testsuites > testsuite > testcase > failure). */

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') fputc(*s, f);
        }
    }
}

static void junit_case(FILE *f, const char *classname, const char *name, double seconds, const char *failure)
{
    fputs("    <testcase classname=\"", f);
    xml_text(f, classname);
    fputs("\" name=\"", f);
    xml_text(f, name);
    fprintf(f, "\" time=\"%.3f\"", seconds);
    if (!failure) {
        fputs("/>\n", f);
        return;
    }
    fputs(">\n      <failure message=\"", f);
    xml_text(f, failure);
    fputs("\">", f);
    xml_text(f, failure);
    fputs("</failure>\n    </testcase>\n", f);
}

/* The profile the suite's bounds assume, as JUnit properties. */
static void junit_profile_properties(FILE *f, const ug_profile_id *p)
{
    const char *const props[][2] = {{"profile", p->name},
                                    {"profile.hash", p->hash},
                                    {"profile.origin", p->origin},
                                    {"profile.products", ug_products_name(p->products)}};
    fputs("    <properties>\n", f);
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        fprintf(f, "      <property name=\"%s\" value=\"", props[i][0]);
        xml_text(f, props[i][1]);
        fputs("\"/>\n", f);
    }
    fputs("    </properties>\n", f);
}

/* Appends the words of a finding's detail that name its check, leaving out
 * the measured values (numbers, hashes, "->", parenthesized remarks) and
 * stopping at the end of the first clause: a name that is the same in every run. */
static void check_words(const char *detail, char *out, size_t cap)
{
    size_t len = strlen(out), words = 0;
    int depth = 0;
    for (const char *p = detail; *p && words < 6;) {
        size_t n = strcspn(p, " ");
        char word[UG_MSG_MAX];
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        p += n + (p[n] == ' ');
        bool opens = word[0] == '(', closes = n > 0 && word[n - 1] == ')';
        depth += opens;
        bool skip = depth > 0 || n == 0 || strcmp(word, "->") == 0;
        depth -= closes && depth > 0;
        bool last = n > 0 && (word[n - 1] == ',' || word[n - 1] == ':');
        if (last) word[n - 1] = '\0';
        char *end;
        strtod(word, &end);
        skip = skip || (*end == '\0' && end != word) || strspn(word, "0123456789abcdef") == 16;
        if (!skip && len < cap) {
            len += (size_t)snprintf(out + len, cap - len, "%s%s", words ? " " : "", word);
            words++;
        }
        if (last) break;
    }
}

/* The test name of a gate finding, which the gate words "FAMILY OUTPUT MODE:
 * FIGURE <values> <check>" (budgets, regressions) or "FAMILY/CASE: reason" (a
 * failed case): "gdn_chunk_o o exact: max_ratio exceeds budget",
 * "gdn_chunk_o o exact: max_ratio worsened", "gdn_chunk_o/CASE: case failed";
 * any other finding is "gate: " and the words of its first clause. */
static void finding_test_name(const ug_run_result *run, const char *text, char *out, size_t cap)
{
    const char *colon = strstr(text, ": ");
    size_t family_len = strcspn(text, " /");
    bool about_family = false;
    for (size_t i = 0; colon && i < run->n_families && !about_family; i++)
        about_family = strlen(run->families[i].family->name) == family_len &&
                       strncmp(text, run->families[i].family->name, family_len) == 0;
    if (about_family && text[family_len] == '/') {
        snprintf(out, cap, "%.*s: case failed", (int)(colon - text), text);
        return;
    }
    if (about_family) {
        snprintf(out, cap, "%.*s: ", (int)(colon - text), text);
        check_words(colon + 2, out, cap);
        return;
    }
    snprintf(out, cap, "gate: ");
    check_words(text, out, cap);
}

static ug_status write_junit(FILE *f, const report_in *in)
{
    const ug_run_result *run = in->run;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ulpgate\">\n", f);
    for (size_t fi = 0; fi < run->n_families; fi++) {
        const ug_family_result *fr = &run->families[fi];
        char classname[96];
        snprintf(classname, sizeof classname, "ulpgate.%s", fr->family->name);
        fprintf(f, "  <testsuite name=\"%s\" tests=\"%zu\" failures=\"%zu\">\n", fr->family->name,
                fr->cases_accepted + fr->cases_rejected, fr->cases_failed);
        junit_profile_properties(f, &run->profile);
        for (size_t i = 0; i < run->n_cases; i++) {
            const ug_case_result *cr = &run->cases[i];
            if (cr->c->family != fr->family) continue;
            junit_case(f, classname, cr->c->label, cr->kernel_seconds + cr->reference_seconds,
                       cr->passed ? NULL : cr->failure);
        }
        fputs("  </testsuite>\n", f);
    }
    size_t fails = 0;
    for (size_t i = 0; i < in->verdict->n; i++) fails += in->verdict->items[i].kind == UG_FINDING_FAIL;
    fprintf(f, "  <testsuite name=\"gate\" tests=\"%zu\" failures=\"%zu\">\n", fails ? fails : 1, fails);
    for (size_t i = 0; i < in->verdict->n; i++) {
        if (in->verdict->items[i].kind != UG_FINDING_FAIL) continue;
        char name[UG_MSG_MAX];
        finding_test_name(run, in->verdict->items[i].text, name, sizeof name);
        junit_case(f, "ulpgate.gate", name, 0, in->verdict->items[i].text);
    }
    if (!fails) junit_case(f, "ulpgate.gate", "budgets and baseline", 0, NULL);
    fputs("  </testsuite>\n</testsuites>\n", f);
    return ug_ok();
}

static ug_status write_html(FILE *f, const report_in *in)
{
    return ug_plots_write_html(f, in->run, in->verdict);
}

/* ------------------------------------------------------------------------
 * The set (core/report_dir): every file rendered in memory, then written. */

typedef ug_status file_writer(FILE *f, const report_in *in);

static const struct {
    const char *name;
    file_writer *write;
} set_files[] = {
    {"report.md", write_md},     {"report.json", write_json}, {"junit.xml", write_junit},
    {"report.html", write_html}, {"cases.csv", write_csv},
};

ug_status ug_report_open(const char *dir, ug_report_dir *set)
{
    const char *names[ARRAY_LEN(set_files)];
    for (size_t i = 0; i < ARRAY_LEN(set_files); i++) names[i] = set_files[i].name;
    return ug_report_dir_open(set, dir, names, ARRAY_LEN(set_files));
}

static ug_status add_file(ug_report_dir *set, const char *name, file_writer *write, const report_in *in)
{
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    if (!mem) return ug_fail(UG_ENOMEM, "cannot buffer %s: %s", name, strerror(errno));
    ug_status st = write(mem, in);
    bool failed = ferror(mem) != 0;
    if (fclose(mem) != 0) failed = true;
    if (ug_is_ok(&st) && failed) st = ug_fail(UG_ENOMEM, "out of memory while rendering %s", name);
    if (ug_is_ok(&st)) st = ug_report_dir_add(set, name, text, size);
    free(text);
    return st;
}

ug_status ug_report_write(ug_report_dir *set, const ug_run_result *run, const ug_budgets *budgets,
                          const ug_verdict *verdict)
{
    report_in in = {run, budgets, verdict};
    for (size_t i = 0; i < ARRAY_LEN(set_files); i++)
        UG_TRY(add_file(set, set_files[i].name, set_files[i].write, &in));
    return ug_report_dir_commit(set);
}

ug_status ug_report_write_all(const char *dir, const ug_run_result *run,
                              const ug_budgets *budgets, const ug_verdict *verdict)
{
    ug_report_dir set;
    UG_TRY(ug_report_open(dir, &set));
    ug_status st = ug_report_write(&set, run, budgets, verdict);
    ug_report_dir_close(&set);
    return st;
}

/* ------------------------------------------------------------------------
 * Terminal summary */

#define SUMMARY_FMT "%-22s %-12s %-7s %10s %10s %5s %9s %10s %9s %-22s %s\n"

static void summary_row(FILE *out, const row *r)
{
    fprintf(out, SUMMARY_FMT, r->family, r->output, r->mode, r->elements, r->max, r->p99,
            r->share, r->ratio, r->rms, r->budget, r->verdict);
}

static bool same_plan_finding(const ug_case_result *a, const ug_case_result *b)
{
    return a->plan_finding[0] && a->c->family == b->c->family && strcmp(a->plan_finding, b->plan_finding) == 0;
}

/* One line per family and distinct dispatch-plan finding, with the number of
 * shapes it holds for (report.md lists the shapes). */
static void print_plan_findings(FILE *out, const ug_run_result *run)
{
    for (size_t i = 0; i < run->n_cases; i++) {
        const ug_case_result *cr = &run->cases[i];
        bool seen = !cr->plan_finding[0];
        for (size_t k = 0; k < i && !seen; k++) seen = same_plan_finding(&run->cases[k], cr);
        if (seen) continue;
        size_t shapes = 1;
        for (size_t k = i + 1; k < run->n_cases; k++) shapes += same_plan_finding(&run->cases[k], cr);
        fprintf(out, "PLAN: %s: %s (%zu shape%s; the seed's dispatch plan, SPEC 1.6, not part of the verdict: "
                     "README, report.md)\n",
                cr->c->family->name, cr->plan_finding, shapes, shapes == 1 ? "" : "s");
    }
}

void ug_report_print_summary(FILE *out, const ug_run_result *run, const ug_budgets *budgets,
                             const ug_verdict *verdict)
{
    fprintf(out, SUMMARY_FMT, "kernel", "output", "mode", "elements", "max", "p99", "share_cr",
            "max_ratio", "rel_rms", "budget", "verdict");
    each_row(out, run, budgets, summary_row);
    case_counts n = count_cases(run);
    fprintf(out, "%zu cases, %zu rejected shapes checked, %zu failed\n", n.accepted, n.rejected,
            n.failed);
    char kernels[320];
    if (run->source_name) fprintf(out, "kernels: %s\n", kernels_label(run, kernels, sizeof kernels));
    fprintf(out, "%" PRIu64 " elements checked in %.1f s (%.0f elements/s; each against both reference modes), "
                 "peak resident memory %.0f MiB\n",
            run->elements_checked, run->wall_seconds,
            run->wall_seconds > 0 ? (double)run->elements_checked / run->wall_seconds : 0.0,
            (double)run->peak_rss_kib / 1024.0);
    print_plan_findings(out, run);
    for (size_t i = 0; i < verdict->n; i++) {
        const ug_finding *f = &verdict->items[i];
        if (f->kind != UG_FINDING_WORSE_OK) fprintf(out, "%s: %s\n", kind_name(f->kind), f->text);
    }
    if (verdict->pass) fputs("ulpgate: PASS\n", out);
    else fprintf(out, "ulpgate: FAIL (%zu findings)\n", fail_count(verdict));
}
