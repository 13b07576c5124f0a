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
 * version of the generators). The returned kernel source then copies a
 * case's candidate outputs into the runner's buffers, and the normal runner,
 * gate and reports take it from there. */
#ifndef UG_INTEROP_H
#define UG_INTEROP_H

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

typedef struct ug_candidate ug_candidate;

/* Reads fixtures/manifest.json into sweep, checks the candidate's files in
 * candidate_dir and the input hashes (see above), and fills source (named
 * "candidate") to read them. Free with ug_candidate_free, then
 * ug_sweep_free. */
ug_status ug_candidate_open(const char *fixtures, const char *candidate_dir, size_t max_case_bytes,
                            ug_sweep *sweep, ug_candidate **cand, ug_kernel_source *source);
void ug_candidate_free(ug_candidate *cand);

#endif
