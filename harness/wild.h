/* SPDX-License-Identifier: MIT */
/* Wild inputs (NaN, +-inf, |x| >= 2^64) and the outputs they can reach
 * (docs/nonfinite.md).
 *
 * The exact formula of a family fixes the class of an output only along its
 * own terms; a correct chunked kernel also multiplies masked or triangular
 * zeros by its inputs (0 * NaN = NaN), reorders sums of infinities and forms
 * f32 intermediates that overflow where the exact ones do not. So a family's
 * descriptor marks, after its reference, every output element whose kernel-
 * side dependence cone holds a wild input with the largest wild level there
 * (ug_ref_value.wild), and ug_measure relaxes the class rule on exactly
 * those elements. The cone is a chunk's tile: the tokens of chunk c of one
 * head, as every kernel of a chunked family computes a chunk as full tiles;
 * a carried state (gdn_e2e) extends it to every later chunk of that head. */
#ifndef UG_WILD_H
#define UG_WILD_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/buf.h"
#include "../ref/ref.h"

/* NaN or +-inf: UG_WILD_CLASS; finite with |x| >= 2^64 (its square
 * overflows f32): UG_WILD_UNBOUNDED; else UG_WILD_NONE. */
ug_wild ug_wild_value(double x);

/* One tensor, seen as [B, rows, heads, width] from element `offset` of buf
 * (f32 or bf16): chunk c owns rows [c * rows_per_chunk, (c + 1) *
 * rows_per_chunk); rows_per_chunk 0 means one row per (batch, head) that
 * belongs to every chunk (an initial or final state, a shared weight). The
 * head of value head h is h / (H / heads). */
typedef struct {
    const ug_buf *buf;
    size_t offset, heads, width, rows_per_chunk;
} ug_wild_tensor;

typedef struct {
    size_t batch, chunks, heads; /* B, T / BT, H (the value heads) */
    bool carry;                  /* a chunk's level reaches every later chunk */
} ug_wild_grid;

/* For each (b, chunk, h): the largest wild level of the inputs' slices (and,
 * with carry, of the earlier chunks), stored into every element of that
 * slice of each output, outputs[o] laid out as out_layout[o] describes. */
void ug_wild_mark(const ug_wild_grid *g, const ug_wild_tensor *inputs, size_t n_inputs,
                  const ug_wild_tensor *out_layout, ug_ref_value *const *outputs, size_t n_outputs);

#endif
