/* SPDX-License-Identifier: MIT */
/* Slices of a case: one (batch entry, value head) at a time.
 *
 * A family that declares ug_family.slicing has math that is independent per
 * batch entry b and value head h, with value head h reading key head
 * h / (H / Hg). Slice s = b * H + h is then the sub-case with B = H = Hg = 1
 * whose buffers are the case's elements at b, h (and key head) in every
 * dimension named by those parameters. The family's reference computed on a
 * slice equals the case's reference at those elements, so the runner computes
 * and measures the reference slice by slice: memory bounded by one slice's
 * references, slices on every core, figures merged in slice order (the same
 * at any thread count).
 *
 * Either parameter may be -1 (none): head_norm_rope slices by token alone.
 * A slicing parameter of value 0 (a variant without that dimension) makes
 * one slice and stays 0. A family without slicing, or a buffer declared in
 * words (no dims), makes the whole case one slice: the identity. */
#ifndef UG_SLICE_H
#define UG_SLICE_H

#include <stdbool.h>
#include <stddef.h>

#include "family.h"

typedef struct {
    const ug_family *f;
    ug_params params;      /* the case's */
    size_t n;              /* slices */
    size_t heads, group;   /* H and H / Hg (1 without key heads) */
    bool whole;            /* one slice: the case itself */
} ug_slicing_plan;

/* The slices of a case of family f with parameters p. */
void ug_slice_plan(const ug_family *f, const ug_params *p, ug_slicing_plan *out);
/* The parameters of slice s. */
void ug_slice_params(const ug_slicing_plan *sp, size_t s, ug_params *sub);
/* Where buffer i's slice s lies in the case's buffer: per dimension, its
 * size in the case and the index the slice is fixed at (SIZE_MAX: spans it).
 * Worked out once per slice and buffer, read per element. */
typedef struct {
    bool whole;
    size_t rank;
    size_t size[UG_LAYOUT_MAX_DIMS], fixed[UG_LAYOUT_MAX_DIMS];
} ug_slice_layout;

void ug_slice_layout_of(const ug_slicing_plan *sp, size_t s, size_t i, ug_slice_layout *out);
/* The case's index of the slice's element j. */
size_t ug_slice_layout_index(const ug_slice_layout *l, size_t j);
/* The case's indices of the slice's elements j = 0, 1, 2, ... in turn, as
 * ug_slice_layout_index gives them (increasing), with one such call per
 * contiguous run of the case's buffer instead of a division per element. */
typedef struct {
    const ug_slice_layout *l;
    size_t j, index, run, left;
} ug_slice_walk;

void ug_slice_walk_start(ug_slice_walk *w, const ug_slice_layout *l);
/* The index of element j, then j + 1. */
static inline size_t ug_slice_walk_next(ug_slice_walk *w)
{
    if (w->left == 0) {
        w->index = ug_slice_layout_index(w->l, w->j);
        w->left = w->run;
    } else {
        w->index++;
    }
    w->left--;
    w->j++;
    return w->index;
}
/* The same in one call (ug_slice_layout_of, then ug_slice_layout_index). */
size_t ug_slice_index(const ug_slicing_plan *sp, size_t s, size_t i, size_t j);
/* Copies slice s of buffer i from the case's full buffer into sub, whose
 * count and dtype describe the slice (ug_family_buffer_count of the slice's
 * parameters). */
void ug_slice_gather(const ug_slicing_plan *sp, size_t s, size_t i, const ug_buf *full, ug_buf *sub);

#endif
