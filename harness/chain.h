/* SPDX-License-Identifier: MIT */
/* Chained verification of a pipeline family (ug_family.stages).
 *
 * A pipeline's end-to-end outputs have no a-priori bound (its stages round
 * deliberately), so a bug that moves an intermediate by a few ulps hides in
 * the end-to-end statistics. When the kernel hands over its intermediates
 * (optional outputs), each stage is checked on its own: the stage family's
 * reference, with its rigorous bound, computed from the pipeline's inputs and
 * the kernel's own outputs of earlier stages. A stage runs when every input
 * it reads is there (an input of the pipeline, or an output the kernel
 * handed over); it then checks those of its outputs the kernel handed over:
 * an optional output in both modes, a pipeline output (o, final_state) in
 * the staged mode, whose exact mode stays the pipeline's own reference. */
#ifndef UG_CHAIN_H
#define UG_CHAIN_H

#include <stdbool.h>

#include "family.h"

enum { UG_MAX_STAGES = 16 };

typedef struct {
    size_t n_stages;
    bool stage_runs[UG_MAX_STAGES];
    int checked_by[UG_MAX_BUFFERS]; /* per buffer: the stage checking it, -1 none */
    int produced_by[UG_MAX_BUFFERS]; /* per buffer: the stage computing it, -1 none */
    const char *missing[UG_MAX_STAGES]; /* a stage that does not run: the first input it lacks */
} ug_chain_plan;

/* Which stages run and what they check, given which buffers are there
 * (present[i]: an input, or an output the kernel wrote). Fails naming the
 * family and the name when the stage table does not fit the registered
 * families (a descriptor bug). */
ug_status ug_chain_plan_make(const ug_family *f, const bool present[UG_MAX_BUFFERS], ug_chain_plan *out);

/* Whether output buffer i is measured in this mode: an output no stage
 * computes always (the family's own reference); a stage's output when the
 * stage checks it, except a pipeline output's exact mode, which is always
 * measured (against the family's own reference). */
bool ug_chain_output_checked(const ug_family *f, const ug_chain_plan *cp, size_t i, ug_ref_mode mode);

/* Overwrites outs (per output ordinal of f, as ug_family.reference takes
 * them) with the stage references of the outputs the stages check in this
 * mode, from bufs: the pipeline's inputs and the kernel's outputs. */
ug_status ug_chain_reference(const ug_family *f, const ug_chain_plan *cp, const ug_params *p, const ug_buf *bufs,
                             const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *const *outs);

#endif
