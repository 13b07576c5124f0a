/* SPDX-License-Identifier: MIT */
#include "baseline.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "../core/json_dir.h"
#include "budgets.h"
#include "merge.h"

#define BASELINE_SCHEMA "ulpgate-baseline/1"
#define DEFAULT_PROFILE "cpu"

static const char *const source_kinds[] = {"built-in", "plugin", "candidate", NULL};

static ug_status out_of_memory(const char *file)
{
    return ug_fail(UG_ENOMEM, "%s: out of memory while loading", file);
}

static ug_status parse_entry(const char *file, const char *where, const json_t *obj, ug_baseline_entry *e)
{
    static const char *const keys[] = {"elements", "max_ulp_dist", "p99_ulp_dist", "share_cr",
                                       "max_ratio", "max_ulp_err", NULL};
    UG_TRY(ug_json_keys(file, where, obj, keys));
    /* Entries with no element are never written: one with 0 is not a measurement. */
    UG_TRY(ug_json_uint(file, where, obj, "elements", UINT64_MAX, &e->elements));
    if (e->elements == 0) return ug_json_fail(file, where, "elements", "0 elements: not a measurement");
    UG_TRY(ug_json_u32(file, where, obj, "max_ulp_dist", &e->max_ulp_dist));
    UG_TRY(ug_json_u32(file, where, obj, "p99_ulp_dist", &e->p99_ulp_dist));
    if (e->p99_ulp_dist > e->max_ulp_dist)
        return ug_json_fail(file, where, "p99_ulp_dist", "%" PRIu32 " is above max_ulp_dist %" PRIu32,
                            e->p99_ulp_dist, e->max_ulp_dist);
    UG_TRY(ug_json_real(file, where, obj, "share_cr", 0, 1, false, &e->share_cr));
    UG_TRY(ug_json_real(file, where, obj, "max_ratio", 0, INFINITY, false, &e->max_ratio));
    return ug_json_real(file, where, obj, "max_ulp_err", 0, INFINITY, false, &e->max_ulp_err);
}

static ug_status parse_output(const char *file, const char *where, const ug_family *f, const char *output,
                              const json_t *modes, ug_baseline *out)
{
    int b = ug_family_buffer_index(f, output);
    if (b < 0 || !f->buffers[b].is_output)
        return ug_json_fail(file, where, output, "%s has no output \"%s\"", f->name, output);
    char item[UG_JSON_WHERE];
    ug_json_join(item, where, output);
    UG_TRY(ug_json_check_object(file, where, output, modes));
    if (json_object_size(modes) == 0) return ug_json_fail(file, where, output, "no mode measured");
    const char *mode;
    json_t *obj;
    json_object_foreach((json_t *)modes, mode, obj) {
        char mode_item[UG_JSON_WHERE];
        ug_json_join(mode_item, item, mode);
        ug_baseline_entry *e = ug_append((void **)&out->entries, &out->n, sizeof *e);
        if (!e) return out_of_memory(file);
        snprintf(e->family, sizeof e->family, "%s", f->name);
        snprintf(e->output, sizeof e->output, "%s", output);
        UG_TRY(ug_json_mode(file, item, mode, obj, &e->mode));
        UG_TRY(parse_entry(file, mode_item, obj, e));
    }
    return ug_ok();
}

/* Keys are ISA paths, or the source's kind for the bits of a library or candidate. */
static ug_status parse_bits(const char *file, const char *where, const char *family, const json_t *bits,
                            const ug_kernel_identity *source, ug_baseline *out)
{
    ug_baseline_bits *b = ug_append((void **)&out->bits, &out->n_bits, sizeof *b);
    if (!b) return out_of_memory(file);
    snprintf(b->family, sizeof b->family, "%s", family);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)bits, name, v) {
        ug_isa isa;
        if (ug_isa_parse(name, &isa)) {
            UG_TRY(ug_json_hex64(file, where, bits, name, &b->hash[isa]));
            b->has[isa] = true;
        } else if (strcmp(name, source->kind) == 0) {
            UG_TRY(ug_json_hex64(file, where, bits, name, &b->source_hash));
            b->has_source = true;
        } else {
            return ug_json_fail(file, where, name, "unknown bits key \"%s\" (an ISA path: portable, avx2, avx512; "
                                "or the source kind \"%s\")", name, source->kind);
        }
    }
    return ug_ok();
}

static ug_status parse_family(const char *file, const char *family, const json_t *obj, ug_baseline *out)
{
    static const char *const keys[] = {"outputs", "bits", NULL};
    const ug_family *f = ug_family_find(family);
    if (!f) return ug_json_fail(file, "families", family, "no kernel family \"%s\" (ulpgate list)", family);
    char where[UG_JSON_WHERE], item[UG_JSON_WHERE];
    ug_json_join(where, "families", family);
    UG_TRY(ug_json_check_object(file, "families", family, obj));
    UG_TRY(ug_json_keys(file, where, obj, keys));
    json_t *bits, *outputs, *modes;
    UG_TRY(ug_json_object(file, where, obj, "bits", &bits));
    ug_json_join(item, where, "bits");
    UG_TRY(parse_bits(file, item, f->name, bits, &out->source, out));
    UG_TRY(ug_json_object(file, where, obj, "outputs", &outputs));
    if (json_object_size(outputs) == 0) return ug_json_fail(file, where, "outputs", "no output measured");
    ug_json_join(item, where, "outputs");
    const char *output;
    json_object_foreach(outputs, output, modes) UG_TRY(parse_output(file, item, f, output, modes, out));
    return ug_ok();
}

static ug_status parse_source(const char *file, const json_t *root, ug_kernel_identity *s)
{
    static const char *const keys[] = {"kind", "name", "content_hash", NULL};
    json_t *obj;
    const char *kind, *name = "";
    snprintf(s->kind, sizeof s->kind, "built-in");
    if (!json_object_get(root, "source")) return ug_ok();
    UG_TRY(ug_json_object(file, "", root, "source", &obj));
    UG_TRY(ug_json_keys(file, "source", obj, keys));
    UG_TRY(ug_json_string(file, "source", obj, "kind", &kind));
    const char *const *k = source_kinds;
    while (*k && strcmp(*k, kind) != 0) k++;
    if (!*k) return ug_json_fail(file, "source", "kind", "expected \"built-in\", \"plugin\" or \"candidate\", found \"%s\"", kind);
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    if (strcmp(kind, "built-in") != 0) UG_TRY(ug_json_string(file, "source", obj, "name", &name));
    if (strlen(name) >= sizeof s->name) return ug_json_fail(file, "source", "name", "longer than %zu bytes", sizeof s->name - 1);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->has_hash = json_object_get(obj, "content_hash") != NULL;
    return s->has_hash ? ug_json_hex64(file, "source", obj, "content_hash", &s->hash) : ug_ok();
}

static ug_status parse_profile(const char *file, const json_t *root, ug_profile_identity *p)
{
    static const char *const keys[] = {"name", "content_hash", NULL};
    json_t *obj;
    const char *name;
    snprintf(p->name, sizeof p->name, DEFAULT_PROFILE);
    if (!json_object_get(root, "profile")) return ug_ok();
    UG_TRY(ug_json_object(file, "", root, "profile", &obj));
    UG_TRY(ug_json_keys(file, "profile", obj, keys));
    UG_TRY(ug_json_string(file, "profile", obj, "name", &name));
    if (!*name || strlen(name) >= sizeof p->name)
        return ug_json_fail(file, "profile", "name", "expected 1 to %zu bytes, found \"%s\"", sizeof p->name - 1, name);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->has_hash = json_object_get(obj, "content_hash") != NULL;
    return p->has_hash ? ug_json_hex64(file, "profile", obj, "content_hash", &p->hash) : ug_ok();
}

static ug_status parse_baseline(const char *file, const json_t *root, void *ctx)
{
    ug_baseline *out = ctx;
    static const char *const keys[] = {"schema", "sweep", "source", "profile", "families", NULL};
    static const char *const sweep_keys[] = {"path", "content_hash", NULL};
    UG_TRY(ug_json_schema(file, root, BASELINE_SCHEMA, keys));
    json_t *sweep, *families, *obj;
    const char *path, *family;
    UG_TRY(ug_json_object(file, "", root, "sweep", &sweep));
    UG_TRY(ug_json_keys(file, "sweep", sweep, sweep_keys));
    UG_TRY(ug_json_string(file, "sweep", sweep, "path", &path));
    if (strlen(path) >= sizeof out->sweep_path)
        return ug_json_fail(file, "sweep", "path", "longer than %zu bytes", sizeof out->sweep_path - 1);
    snprintf(out->sweep_path, sizeof out->sweep_path, "%s", path);
    UG_TRY(ug_json_hex64(file, "sweep", sweep, "content_hash", &out->sweep_hash));
    UG_TRY(parse_source(file, root, &out->source));
    UG_TRY(parse_profile(file, root, &out->profile));
    UG_TRY(ug_json_object(file, "", root, "families", &families));
    /* An empty baseline would silently turn the regression check off. */
    if (json_object_size(families) == 0) return ug_json_fail(file, "", "families", "empty: the baseline measures nothing");
    json_object_foreach(families, family, obj) UG_TRY(parse_family(file, family, obj, out));
    return ug_ok();
}

ug_status ug_baseline_load(const char *path, ug_baseline *out)
{
    memset(out, 0, sizeof *out);
    ug_status s = ug_json_read("baseline", path, parse_baseline, out);
    if (!ug_is_ok(&s)) ug_baseline_free(out);
    return s;
}

/* "built-in", or "KIND: NAME" as report.json's run.kernels writes a source. */
static json_t *source_of_kernels(const char *kernels)
{
    if (strcmp(kernels, "built-in") == 0) return json_pack("{s:s}", "kind", "built-in");
    const char *sep = strstr(kernels, ": ");
    size_t kind_len = sep ? (size_t)(sep - kernels) : strlen(kernels);
    return json_pack("{s:s%, s:s}", "kind", kernels, kind_len, "name", sep ? sep + 2 : "");
}

/* The figures of a report.json (checked by ug_report_load), rewritten in the
 * baseline's schema, so that one parser validates both. */
static json_t *report_as_baseline(const json_t *report)
{
    static const char *const figures[] = {"elements", "max_ulp_dist", "p99_ulp_dist", "share_cr",
                                          "max_ratio", "max_ulp_err", NULL};
    json_t *run = json_object_get(report, "run"), *sweep = json_object_get(run, "sweep");
    json_t *families = json_object(), *family;
    size_t i, j;
    json_array_foreach(json_object_get(report, "families"), i, family) {
        json_t *outputs = json_object(), *output;
        json_array_foreach(json_object_get(family, "outputs"), j, output) {
            json_t *modes = json_object(), *figs;
            const char *mode;
            json_object_foreach(json_object_get(output, "modes"), mode, figs) {
                json_t *kept = json_object();
                /* A mode with no measured element is written with zero elements: not a figure. */
                if (json_integer_value(json_object_get(figs, "elements")) == 0) continue;
                for (const char *const *f = figures; *f; f++) json_object_set(kept, *f, json_object_get(figs, *f));
                json_object_set_new(modes, mode, kept);
            }
            if (json_object_size(modes)) json_object_set_new(outputs, json_string_value(json_object_get(output, "name")), modes);
            else json_decref(modes);
        }
        json_t *fam = json_pack("{s:O, s:o}", "bits", json_object_get(family, "bits"), "outputs", outputs);
        json_object_set_new(families, json_string_value(json_object_get(family, "name")), fam);
    }
    json_t *profile = json_object_get(report, "profile");
    return json_pack("{s:s, s:{s:O, s:O}, s:o, s:o, s:o}", "schema", BASELINE_SCHEMA, "sweep", "path",
                     json_object_get(sweep, "path"), "content_hash", json_object_get(sweep, "content_hash"), "source",
                     source_of_kernels(json_string_value(json_object_get(run, "kernels"))), "profile",
                     json_pack("{s:O, s:O}", "name", json_object_get(profile, "name"), "content_hash",
                               json_object_get(profile, "hash")),
                     "families", families);
}

ug_status ug_figures_load(const char *path, ug_baseline *out)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    UG_TRY(ug_json_load("result", path, &root));
    const char *schema = json_string_value(json_object_get(root, "schema"));
    ug_status s = ug_ok();
    if (schema && strcmp(schema, UG_REPORT_SCHEMA) == 0) {
        s = ug_report_check(path, root);
        json_t *figures = ug_is_ok(&s) ? report_as_baseline(root) : NULL;
        if (ug_is_ok(&s)) s = figures ? parse_baseline(path, figures, out) : ug_fail(UG_ENOMEM, "%s: out of memory", path);
        json_decref(figures);
    } else {
        s = parse_baseline(path, root, out);
    }
    json_decref(root);
    if (!ug_is_ok(&s)) ug_baseline_free(out);
    return s;
}

void ug_baseline_free(ug_baseline *b)
{
    free(b->entries);
    free(b->bits);
    memset(b, 0, sizeof *b);
}

const ug_baseline_entry *ug_baseline_find(const ug_baseline *b, const char *family, const char *output,
                                          ug_ref_mode mode)
{
    for (size_t i = 0; i < b->n; i++) {
        const ug_baseline_entry *e = &b->entries[i];
        if (e->mode == mode && strcmp(e->family, family) == 0 && strcmp(e->output, output) == 0) return e;
    }
    return NULL;
}

const ug_baseline_bits *ug_baseline_bits_find(const ug_baseline *b, const char *family)
{
    for (size_t i = 0; i < b->n_bits; i++)
        if (strcmp(b->bits[i].family, family) == 0) return &b->bits[i];
    return NULL;
}

void ug_run_identity(const ug_run_result *run, ug_kernel_identity *source, ug_profile_identity *profile)
{
    memset(source, 0, sizeof *source);
    memset(profile, 0, sizeof *profile);
    snprintf(source->kind, sizeof source->kind, "%s", run->source_name ? run->source_name : "built-in");
    if (run->source_name) snprintf(source->name, sizeof source->name, "%s", run->source_detail);
    source->has_hash = run->has_source_hash;
    source->hash = run->source_hash;
    snprintf(profile->name, sizeof profile->name, "%s", run->profile.name[0] ? run->profile.name : DEFAULT_PROFILE);
    profile->has_hash = strlen(run->profile.hash) == 16;
    if (profile->has_hash) profile->hash = strtoull(run->profile.hash, NULL, 16);
}

/* ------------------------------------------------------------------------
 * Writing the baseline */

static json_t *entry_json(const ug_summary *s)
{
    return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o}", "elements", (json_int_t)s->elements,
                     "max_ulp_dist", (json_int_t)s->max_ulp_dist, "p99_ulp_dist",
                     (json_int_t)s->p99_ulp_dist, "share_cr", ug_json_from_real(ug_summary_share_cr(s)),
                     "max_ratio", ug_json_from_real(s->max_ratio), "max_ulp_err",
                     ug_json_from_real(s->max_ulp_err));
}

static const char *output_name(const ug_family_result *fr, size_t o)
{
    return fr->family->buffers[fr->output_buffer[o]].name;
}

static json_t *outputs_json(const ug_family_result *fr)
{
    json_t *outputs = json_object();
    for (size_t o = 0; outputs && o < fr->n_outputs; o++) {
        json_t *modes = json_object();
        for (int m = 0; modes && m < UG_REF_MODE_COUNT; m++) {
            ug_summary s = ug_stats_summary(&fr->agg[o][m]);
            if (s.elements == 0) continue;
            if (json_object_set_new(modes, ug_ref_mode_name((ug_ref_mode)m), entry_json(&s)) != 0) {
                json_decref(modes);
                modes = NULL;
            }
        }
        if (modes && json_object_size(modes) == 0) {
            json_decref(modes);
            continue;
        }
        if (json_object_set_new(outputs, output_name(fr, o), modes) != 0) {
            json_decref(outputs);
            outputs = NULL;
        }
    }
    return outputs;
}

static json_t *bits_json(const ug_run_result *run, const ug_family_result *fr)
{
    json_t *bits = json_object();
    for (int i = 0; bits && i < UG_ISA_COUNT; i++)
        if (fr->isa_ran[i] && json_object_set_new(bits, ug_isa_name((ug_isa)i), ug_json_from_hex64(fr->bits_hash[i])) != 0) {
            json_decref(bits);
            bits = NULL;
        }
    if (bits && fr->source_ran && json_object_set_new(bits, run->source_name, ug_json_from_hex64(fr->source_bits_hash)) != 0) {
        json_decref(bits);
        bits = NULL;
    }
    return bits;
}

static json_t *source_json(const ug_kernel_identity *s)
{
    json_t *j = json_pack("{s:s}", "kind", s->kind);
    if (j && strcmp(s->kind, "built-in") != 0) json_object_set_new(j, "name", json_string(s->name));
    if (j && s->has_hash) json_object_set_new(j, "content_hash", ug_json_from_hex64(s->hash));
    return j;
}

static json_t *profile_json(const ug_profile_identity *p)
{
    json_t *j = json_pack("{s:s}", "name", p->name);
    if (j && p->has_hash) json_object_set_new(j, "content_hash", ug_json_from_hex64(p->hash));
    return j;
}

static json_t *baseline_json(const ug_run_result *run)
{
    json_t *families = json_object();
    for (size_t i = 0; families && i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        json_t *outputs = outputs_json(fr);
        if (outputs && json_object_size(outputs) == 0) {
            json_decref(outputs); /* a family with no accepted case has no figure */
            continue;
        }
        json_t *fam = json_pack("{s:o, s:o}", "outputs", outputs, "bits", bits_json(run, fr));
        if (json_object_set_new(families, fr->family->name, fam) != 0) {
            json_decref(families);
            families = NULL;
        }
    }
    ug_kernel_identity source;
    ug_profile_identity profile;
    ug_run_identity(run, &source, &profile);
    return json_pack("{s:s, s:{s:s, s:o}, s:o, s:o, s:o}", "schema", BASELINE_SCHEMA, "sweep", "path",
                     run->sweep->path, "content_hash", ug_json_from_hex64(run->sweep->content_hash), "source",
                     source_json(&source), "profile", profile_json(&profile), "families", families);
}

ug_status ug_baseline_write(const char *path, const ug_run_result *run)
{
    json_t *root = baseline_json(run);
    if (!root) return ug_fail(UG_ENOMEM, "%s: out of memory while building the baseline", path);
    ug_status s = ug_write_json_file(path, root);
    json_decref(root);
    return s;
}
