/* SPDX-License-Identifier: MIT */
/* Scoring kernels that ulpgate cannot link (a GPU kernel in MLX or PyTorch)
 * through safetensors files (docs/interop.md).
 *
 * export: for every accepted case of a sweep, one safetensors file with the
 * case's inputs (the SPEC buffer names and shapes) and, per output and
 * reference mode, the correctly rounded reference in the output's dtype,
 * the reference as f64 and the per-element bound; then manifest.json, written
 * last, describing the cases (family, label, params, regime, seed, file,
 * tensors, input hashes). Rejected cases are not exported: a file cannot ask
 * a candidate to refuse a shape.
 *
 * score: the manifest becomes a sweep of those cases; before anything runs,
 * every candidate file must exist and hold each output under its buffer name
 * with the manifest's dtype and shape, and this tool must draw inputs whose
 * hashes match the manifest's (otherwise the fixtures came from another
 * version of the generators); a user-supplied case (UG_USER_REGIME) takes
 * its inputs from its fixture file instead, whose input hashes must match
 * the manifest's. The returned kernel source then copies a
 * case's candidate outputs into the runner's buffers, and the normal runner,
 * gate and reports take it from there. */
#ifndef UG_INTEROP_H
#define UG_INTEROP_H

#include "../core/safetensors.h"
#include "runner.h"

#define UG_FIXTURES_SCHEMA "ulpgate-fixtures/1"
#define UG_FIXTURES_MANIFEST "manifest.json"

/* Writes the fixtures of sweep's accepted cases into dir (created if
 * missing; a manifest already there is removed first, so a failed export
 * leaves no manifest). Cases whose buffers exceed max_case_bytes are refused
 * with an error. n_exported and n_rejected_skipped count the cases; progress:
 * a "[i/n] export FAMILY/CASE" line on stderr, rewritten in place. The
 * bounds are model's (the manifest's "profile" names it). */
ug_status ug_export(const ug_sweep *sweep, const ug_f32_model *model, const char *dir, size_t max_case_bytes,
                    bool progress, size_t *n_exported, size_t *n_rejected_skipped);

/* Inputs a user supplied (`ulpgate reference`, harness/userinputs.h)
 * instead of a generator: the case's regime and the manifest's "origin" read
 * "user", and the manifest names the input file and its FNV-1a instead of
 * a seed. */
#define UG_USER_REGIME "user"
typedef struct {
    const char *name;   /* the input file's name as given */
    uint64_t fnv1a;     /* of its bytes */
} ug_user_origin;

/* Writes case c (index 0, inputs in bufs, descriptor order) as a fixture
 * directory dir in export's layout: the case file, then manifest.json. dir
 * must be absent or an empty directory; it is built beside dir and renamed
 * onto it, so on any failure nothing is written. */
ug_status ug_export_user(const ug_case *c, const ug_buf *bufs, const ug_f32_model *model, const ug_user_origin *user,
                         const char *dir);

/* Copies the outputs (or the inputs) of case c from sf into bufs
 * (descriptor order, counts and dtypes set), checking each is there with its
 * dtype and shape; one with no elements in this case may be absent. `what`
 * names sf in the UG_EPARSE messages. */
ug_status ug_fixture_tensors_copy(const char *what, const ug_st_file *sf, const ug_case *c, ug_buf *bufs, bool outputs);

typedef struct ug_candidate ug_candidate;

/* Reads fixtures/manifest.json into sweep, keeps the cases that
 * ug_case_matches filter (NULL: every case; none matching is UG_EINVAL),
 * checks those cases' candidate files in candidate_dir and the input hashes
 * (see above), and fills source (named "candidate") to read them. Free with
 * ug_candidate_free, then ug_sweep_free. */
ug_status ug_candidate_open(const char *fixtures, const char *candidate_dir, const char *filter,
                            size_t max_case_bytes, ug_sweep *sweep, ug_candidate **cand, ug_kernel_source *source);
void ug_candidate_free(ug_candidate *cand);

#endif
