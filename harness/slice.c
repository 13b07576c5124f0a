/* SPDX-License-Identifier: MIT */
#include "slice.h"

#include <limits.h>
#include <string.h>

/* How many slices a slicing parameter makes: its value; 1 for none (-1),
 * and for 0 (a variant without that dimension). */
static size_t extent(const ug_params *p, int param)
{
    return param >= 0 && p->v[param] > 1 ? (size_t)p->v[param] : 1;
}

/* The parameter's value in a slice: 1, or 0 where the case has 0. */
static void set_one(ug_params *p, int param)
{
    if (param >= 0 && p->v[param] > 1) p->v[param] = 1;
}

void ug_slice_plan(const ug_family *f, const ug_params *p, ug_slicing_plan *out)
{
    memset(out, 0, sizeof *out);
    out->f = f;
    out->params = *p;
    out->n = 1;
    out->whole = true;
    if (!f->slicing.on) return;
    for (size_t i = 0; i < f->n_buffers; i++)
        if (f->buffers[i].layout_words) return;
    const ug_slicing *sl = &f->slicing;
    out->heads = extent(p, sl->head);
    out->group = sl->key_head >= 0 ? out->heads / extent(p, sl->key_head) : 1;
    out->n = extent(p, sl->batch) * out->heads;
    out->whole = false;
}

void ug_slice_params(const ug_slicing_plan *sp, size_t s __attribute__((unused)), ug_params *sub)
{
    *sub = sp->params;
    if (sp->whole) return;
    const ug_slicing *sl = &sp->f->slicing;
    set_one(sub, sl->batch);
    set_one(sub, sl->head);
    set_one(sub, sl->key_head);
}

/* Per dimension of buffer i: its size in the case, and the index it is
 * fixed at in slice s (SIZE_MAX: the slice spans it). */
static size_t dims_of(const ug_slicing_plan *sp, size_t s, size_t i, size_t size[UG_LAYOUT_MAX_DIMS],
                      size_t fixed[UG_LAYOUT_MAX_DIMS])
{
    const ug_family *f = sp->f;
    const ug_buffer_desc *b = &f->buffers[i];
    const ug_slicing *sl = &f->slicing;
    const size_t batch = s / sp->heads, head = s % sp->heads;
    uint64_t shape[UG_LAYOUT_MAX_DIMS];
    size_t rank;
    ug_family_buffer_shape(f, &sp->params, i, 0, shape, &rank);
    for (size_t d = 0; d < rank; d++) {
        size[d] = (size_t)shape[d];
        /* a parameter's index, or a derived dim (negative), which no slicing parameter is */
        const int dim = d < b->rank ? b->dims[d] : INT_MIN;
        fixed[d] = dim < 0 ? SIZE_MAX
                   : dim == sl->batch ? batch
                   : dim == sl->head ? head
                   : dim == sl->key_head ? head / sp->group
                   : SIZE_MAX;
    }
    return rank;
}

void ug_slice_layout_of(const ug_slicing_plan *sp, size_t s, size_t i, ug_slice_layout *out)
{
    out->whole = sp->whole;
    out->rank = sp->whole ? 0 : dims_of(sp, s, i, out->size, out->fixed);
}

size_t ug_slice_layout_index(const ug_slice_layout *l, size_t j)
{
    if (l->whole) return j;
    size_t index = 0, stride = 1;
    for (size_t d = l->rank; d-- > 0;) {
        size_t at = l->fixed[d];
        if (at == SIZE_MAX) {
            at = j % l->size[d];
            j /= l->size[d];
        }
        index += at * stride;
        stride *= l->size[d];
    }
    return index;
}

void ug_slice_walk_start(ug_slice_walk *w, const ug_slice_layout *l)
{
    /* A run: the trailing dimensions the slice spans (every element when whole). */
    size_t run = 1;
    for (size_t d = l->rank; d-- > 0 && l->fixed[d] == SIZE_MAX;) run *= l->size[d];
    *w = (ug_slice_walk){.l = l, .run = l->whole ? SIZE_MAX : run};
}

size_t ug_slice_index(const ug_slicing_plan *sp, size_t s, size_t i, size_t j)
{
    ug_slice_layout l;
    ug_slice_layout_of(sp, s, i, &l);
    return ug_slice_layout_index(&l, j);
}

void ug_slice_gather(const ug_slicing_plan *sp, size_t s, size_t i, const ug_buf *full, ug_buf *sub)
{
    const size_t elem = ug_dtype_size(full->dtype);
    if (sp->whole || sub->count == 0) {
        memcpy(sub->data, full->data, sub->count * elem);
        return;
    }
    size_t size[UG_LAYOUT_MAX_DIMS], fixed[UG_LAYOUT_MAX_DIMS];
    const size_t rank = dims_of(sp, s, i, size, fixed);
    /* The trailing dimensions the slice spans are one contiguous run. */
    size_t inner = rank, run = 1;
    while (inner > 0 && fixed[inner - 1] == SIZE_MAX) run *= size[--inner];
    size_t at[UG_LAYOUT_MAX_DIMS] = {0};
    const unsigned char *src = full->data;
    unsigned char *dst = sub->data;
    for (size_t copied = 0; copied < sub->count; copied += run) {
        size_t offset = 0;
        for (size_t d = 0; d < inner; d++) offset = offset * size[d] + (fixed[d] == SIZE_MAX ? at[d] : fixed[d]);
        for (size_t d = inner; d < rank; d++) offset *= size[d];
        memcpy(dst + copied * elem, src + offset * elem, run * elem);
        for (size_t d = inner; d-- > 0;) { /* the next spanned outer index */
            if (fixed[d] != SIZE_MAX) continue;
            if (++at[d] < size[d]) break;
            at[d] = 0;
        }
    }
}
