/* SPDX-License-Identifier: MIT */
#include "family.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const ug_family *const __start_ug_families[];
extern const ug_family *const __stop_ug_families[];

enum { MAX_FAMILIES = 64 };
static const ug_family *sorted[MAX_FAMILIES];
static size_t n_sorted;

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const ug_family *const *)a)->name, (*(const ug_family *const *)b)->name);
}

static void collect(void)
{
    if (n_sorted) return;
    for (const ug_family *const *f = __start_ug_families; f < __stop_ug_families && n_sorted < MAX_FAMILIES; f++)
        sorted[n_sorted++] = *f;
    qsort(sorted, n_sorted, sizeof *sorted, by_name);
}

size_t ug_family_count(void)
{
    collect();
    return n_sorted;
}

const ug_family *ug_family_at(size_t i)
{
    collect();
    return i < n_sorted ? sorted[i] : NULL;
}

const ug_family *ug_family_find(const char *name)
{
    collect();
    for (size_t i = 0; i < n_sorted; i++)
        if (strcmp(sorted[i]->name, name) == 0) return sorted[i];
    return NULL;
}

int ug_family_param_index(const ug_family *f, const char *name)
{
    for (size_t i = 0; i < f->n_params; i++)
        if (strcmp(f->param_names[i], name) == 0) return (int)i;
    return -1;
}

int ug_family_buffer_index(const ug_family *f, const char *name)
{
    for (size_t i = 0; i < f->n_buffers; i++)
        if (strcmp(f->buffers[i].name, name) == 0) return (int)i;
    return -1;
}

/* Appends to out[used..size), keeping out terminated when it is full. */
static void append(char *out, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size) return;
    va_list ap;
    va_start(ap, fmt);
    *used += (size_t)vsnprintf(out + *used, size - *used, fmt, ap);
    va_end(ap);
}

void ug_plan_finding(const ug_plan *p, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
#define UG_PLAN_NOTE(cond, ...) \
    if ((cond) && used < size) used += (size_t)snprintf(out + used, size - used, __VA_ARGS__)
    UG_PLAN_NOTE(p->threads_planned > UG_PLAN_MAX_THREADS, "%s%" PRIu64 " threads per threadgroup exceed the limit %d",
                 used ? "; " : "", p->threads_planned, UG_PLAN_MAX_THREADS);
    UG_PLAN_NOTE(p->threads_planned < p->threads_needed, "%splan launches %" PRIu64 " threads, the algorithm needs %" PRIu64,
                 used ? "; " : "", p->threads_planned, p->threads_needed);
    UG_PLAN_NOTE(p->tg_bytes_planned > UG_PLAN_MAX_TG_BYTES, "%s%" PRIu64 " threadgroup bytes exceed the %d-byte cap",
                 used ? "; " : "", p->tg_bytes_planned, UG_PLAN_MAX_TG_BYTES);
    UG_PLAN_NOTE(p->tg_bytes_planned < p->tg_bytes_needed, "%splan reserves %" PRIu64 " threadgroup bytes, the algorithm needs %" PRIu64,
                 used ? "; " : "", p->tg_bytes_planned, p->tg_bytes_needed);
#undef UG_PLAN_NOTE
}

static size_t dim_value(const ug_family *f, const ug_params *p, int dim)
{
    return dim >= 0 ? (size_t)p->v[dim] : f->derived_dims[UG_DIM_DERIVED(dim)].value(p);
}

static bool present(const ug_params *p, const ug_buffer_desc *b)
{
    for (size_t c = 0; c < b->n_conditions; c++) {
        const ug_condition *w = &b->only_if[c];
        if (w->value == UG_IF_SET ? p->v[w->param] == 0 : p->v[w->param] != w->value) return false;
    }
    return true;
}

ug_status ug_family_buffer_count(const ug_family *f, const ug_params *p, size_t i, size_t *count)
{
    const ug_buffer_desc *b = &f->buffers[i];
    if (f->check_params) UG_TRY(f->check_params(p));
    size_t n = present(p, b) ? 1 : 0;
    bool fits = !n || !b->count || b->count(p, &n);
    for (size_t d = 0; d < b->rank && n && fits; d++)
        fits = !__builtin_mul_overflow(n, dim_value(f, p, b->dims[d]), &n);
    if (!fits) {
        char layout[128];
        ug_family_buffer_layout(f, i, layout, sizeof layout);
        return ug_fail(UG_EINVAL, "%s: %s %s has more than SIZE_MAX elements", f->name, b->name, layout);
    }
    *count = n;
    return ug_ok();
}

/* A flag alone reads "none without has_h0"; after a selector, "variant 0,
 * has_weight" (the cases in which the buffer exists). */
void ug_family_buffer_layout(const ug_family *f, size_t i, char *out, size_t size)
{
    const ug_buffer_desc *b = &f->buffers[i];
    if (b->layout_words) {
        snprintf(out, size, "%s", b->layout_words);
        return;
    }
    size_t used = 0;
    for (size_t d = 0; d < b->rank; d++)
        append(out, size, &used, "%s%s", d ? "," : "[",
               b->dims[d] >= 0 ? f->param_names[b->dims[d]] : f->derived_dims[UG_DIM_DERIVED(b->dims[d])].name);
    append(out, size, &used, "]");
    for (size_t c = 0; c < b->n_conditions; c++) {
        const ug_condition *w = &b->only_if[c];
        const char *lead = c ? ", " : b->n_conditions == 1 && w->value == UG_IF_SET ? " (none without " : " (";
        if (w->value == UG_IF_SET) append(out, size, &used, "%s%s", lead, f->param_names[w->param]);
        else append(out, size, &used, "%s%s %d", lead, f->param_names[w->param], w->value);
    }
    if (b->n_conditions) append(out, size, &used, ")");
}

void ug_family_buffer_shape(const ug_family *f, const ug_params *p, size_t i, size_t count,
                            uint64_t shape[UG_LAYOUT_MAX_DIMS], size_t *rank)
{
    const ug_buffer_desc *b = &f->buffers[i];
    if (b->layout_words || !present(p, b)) {
        shape[0] = count;
        *rank = 1;
        return;
    }
    for (size_t d = 0; d < b->rank; d++) shape[d] = dim_value(f, p, b->dims[d]);
    *rank = b->rank;
}
