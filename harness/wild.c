/* SPDX-License-Identifier: MIT */
/* Wild inputs and their cones (see wild.h). */
#include "wild.h"

#include <math.h>

#include "../core/bf16.h"

ug_wild ug_wild_value(double x)
{
    if (!isfinite(x)) return UG_WILD_CLASS;
    return fabs(x) >= 0x1p64 ? UG_WILD_UNBOUNDED : UG_WILD_NONE;
}

static double element(const ug_buf *b, size_t i)
{
    return b->dtype == UG_BF16 ? ug_bf16_to_f32(((const ug_bf16 *)b->data)[i]) : ((const float *)b->data)[i];
}

/* The rows of (b, chunk, head) of a tensor: [*first, *first + *count). */
static void slice(const ug_wild_grid *g, const ug_wild_tensor *t, size_t b, size_t c, size_t h,
                  size_t *first, size_t *count)
{
    const size_t per = t->rows_per_chunk, rows = per ? g->chunks * per : 1;
    const size_t head = h / (g->heads / t->heads), row0 = per ? c * per : 0, n = per ? per : 1;
    *first = t->offset + ((b * rows + row0) * t->heads + head) * t->width;
    *count = n; /* rows; each row of one head is width contiguous elements */
}

static ug_wild slice_level(const ug_wild_grid *g, const ug_wild_tensor *t, size_t b, size_t c, size_t h)
{
    if (t->buf->count == 0 || (t->buf->dtype != UG_F32 && t->buf->dtype != UG_BF16)) return UG_WILD_NONE;
    size_t first, rows;
    slice(g, t, b, c, h, &first, &rows);
    ug_wild level = UG_WILD_NONE;
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < t->width; i++) {
            ug_wild w = ug_wild_value(element(t->buf, first + r * t->heads * t->width + i));
            if (w > level) level = w;
        }
    return level;
}

void ug_wild_mark(const ug_wild_grid *g, const ug_wild_tensor *inputs, size_t n_inputs,
                  const ug_wild_tensor *out_layout, ug_ref_value *const *outputs, size_t n_outputs)
{
    for (size_t b = 0; b < g->batch; b++)
        for (size_t h = 0; h < g->heads; h++) {
            ug_wild carried = UG_WILD_NONE;
            for (size_t c = 0; c < g->chunks; c++) {
                ug_wild level = g->carry ? carried : UG_WILD_NONE;
                for (size_t i = 0; i < n_inputs; i++) {
                    ug_wild w = slice_level(g, &inputs[i], b, c, h);
                    if (w > level) level = w;
                }
                carried = level;
                if (level == UG_WILD_NONE) continue;
                for (size_t o = 0; o < n_outputs; o++) {
                    const ug_wild_tensor *t = &out_layout[o];
                    if (t->buf->count == 0) continue; /* per-sequence rows take every chunk's level */
                    size_t first, rows;
                    slice(g, t, b, c, h, &first, &rows);
                    for (size_t r = 0; r < rows; r++)
                        for (size_t i = 0; i < t->width; i++) {
                            ug_ref_value *v = &outputs[o][first + r * t->heads * t->width + i];
                            if (level > v->wild) v->wild = level;
                        }
                }
            }
        }
}
