/* SPDX-License-Identifier: MIT */
/* The reference of a case as the runner measures it, and the chained
 * verification of a pipeline family (ug_family.stages).
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
 * the staged mode, whose exact mode stays the pipeline's own reference (the
 * end-to-end comparison). An output no stage checks in a mode is not
 * measured in that mode. A family without stages: its own reference, every
 * output measured. */
#ifndef UG_CHAIN_H
#define UG_CHAIN_H

#include <stdbool.h>

#include "family.h"

/* Which outputs have a reference in this mode (measured[i], per buffer
 * index), given which buffers are there (present[i]: an input, or an
 * output the kernel wrote). Fails naming the family and the name when the
 * stage table does not fit the registered families (a descriptor bug). */
ug_status ug_case_measured(const ug_family *f, const bool present[UG_MAX_BUFFERS], ug_ref_mode mode,
                           bool measured[UG_MAX_BUFFERS]);

/* Why an intermediate the kernel handed over (optional, present) is checked
 * in neither mode: its stage lacked an input. Per buffer index,
 * missing[i] is the buffer index of the first input of the stage producing
 * buffer i that is not there, or -1 when buffer i is checked, not handed
 * over or not an intermediate. */
ug_status ug_case_unchecked(const ug_family *f, const bool present[UG_MAX_BUFFERS], int missing[UG_MAX_BUFFERS]);

/* The family name of the stage that produces buffer (a pipeline's output)
 * into *name; fails naming the buffer when no stage produces it. */
ug_status ug_chain_stage_name(const ug_family *f, size_t buffer, const char **name);

/* The reference of every measured output in this mode into outs (per
 * output ordinal, as ug_family.reference takes them): the family's own,
 * then its stages'. bufs: the inputs, and the kernel's outputs; an optional
 * output the kernel did not hand over has data NULL. A family's own
 * reference is given no array for (NULL), and must leave alone, a stage's
 * intermediate (an optional output a stage produces). */
ug_status ug_case_reference(const ug_family *f, const ug_params *p, const ug_buf *bufs, const ug_f32_model *model,
                            ug_ref_mode mode, ug_ref_value *const *outs);

/* Where ug_case_reference_streamed takes each part's buffers from, and
 * where it hands the part's references to. */
typedef struct {
    /* Optional (NULL: bufs hold every buffer's data already). Before each
     * part: sets the data of every buffer needed[i] names (per buffer
     * index: the inputs the part reads, the outputs it measures); the data
     * of the others may change or go until the next call. */
    ug_status (*gather)(void *ctx, const bool needed[UG_MAX_BUFFERS], ug_buf *bufs);
    /* A part's references in one mode: outs (per output ordinal) hold them
     * for the outputs measured[i] names (per buffer index); the others are
     * NULL, or hold values measured in the part's other mode. It may change
     * the values (the runner widens the bounds of flushed outputs): a staged
     * reference reused from the exact one is what the exact call left. */
    ug_status (*measure)(void *ctx, ug_ref_mode mode, const bool measured[UG_MAX_BUFFERS], ug_ref_value *const *outs);
    void *ctx;
} ug_reference_stream;

/* Every output measured in either mode (ug_case_measured of present),
 * handed to stream->measure once per mode with the values
 * ug_case_reference gives it in that mode (tests/test_slice.c), in parts:
 * the family's own reference, then each stage's in order; within a part
 * the exact mode, then the staged one. Only one part's buffers and
 * references are needed at a time, and a part whose family's staged
 * reference is the exact one (ug_family.staged_is_exact) is computed once
 * for both modes. bufs: counts and dtypes of every buffer, data as
 * stream->gather leaves it. peak_bytes (NULL: not asked): the most bytes of
 * references held at once, scratch included. */
ug_status ug_case_reference_streamed(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                     ug_buf *bufs, const ug_f32_model *model, const ug_reference_stream *stream,
                                     size_t *peak_bytes);

/* The same work a part at a time, for a caller that spreads the parts of
 * its slices over threads: *n_parts parts for these present buffers, and
 * part `part` (< *n_parts) alone, as ug_case_reference_streamed runs it.
 * The parts are independent (each gathers its own buffers) and each output
 * is measured by one part per mode, so the parts may run in any order, on
 * any threads (each with its own bufs and stream context). */
ug_status ug_case_reference_parts(const ug_family *f, const bool present[UG_MAX_BUFFERS], size_t *n_parts);
ug_status ug_case_reference_part(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                 size_t part, ug_buf *bufs, const ug_f32_model *model,
                                 const ug_reference_stream *stream, size_t *peak_bytes);

/* The n_parts parts largest first, by the elements of the outputs each
 * measures (ties in part order), into order[0 .. n_parts): the order
 * that leaves a case's smallest parts for last, when one thread may be
 * left working alone. */
ug_status ug_case_reference_part_order(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                       size_t n_parts, size_t order[]);

/* ug_case_reference_streamed keeps its references' memory (one mapping
 * of the largest part's bytes) on the calling thread for the next call,
 * the case's next slice; this gives it back. A thread calls it when it has
 * no more slices of the case. */
void ug_case_reference_release(void);

/* The most bytes of references ug_case_reference_streamed holds at once for
 * parameters p, whatever the kernel hands over: its largest part's. */
ug_status ug_case_reference_bytes(const ug_family *f, const ug_params *p, size_t *bytes);

#endif
