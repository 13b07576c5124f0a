#include "family.h"

#include <inttypes.h>
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

ug_status ug_layout_count(const char *family, const ug_buffer_desc *buf, const int dims[UG_LAYOUT_MAX_DIMS],
                          const ug_params *p, size_t chunks, size_t *count)
{
    size_t n = 1;
    for (int d = 0; d < UG_LAYOUT_MAX_DIMS && dims[d] != UG_DIM_END; d++)
        if (__builtin_mul_overflow(n, dims[d] == UG_DIM_CHUNKS ? chunks : (size_t)p->v[dims[d]], &n))
            return ug_fail(UG_EINVAL, "%s: %s %s has more than SIZE_MAX elements", family, buf->name, buf->layout);
    *count = n;
    return ug_ok();
}
