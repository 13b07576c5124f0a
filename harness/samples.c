/* SPDX-License-Identifier: MIT */
#include "samples.h"

#include <stdlib.h>

ug_status ug_samples_push(ug_samples *s, const ug_sample *x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        ug_sample *grown = realloc(s->items, cap * sizeof *grown);
        if (!grown) return ug_fail(UG_ENOMEM, "cannot keep %zu plot samples", cap);
        s->items = grown;
        s->cap = cap;
    }
    s->items[s->n++] = *x;
    return ug_ok();
}

void ug_samples_free(ug_samples *s)
{
    free(s->items);
    *s = (ug_samples){0};
}
