/* SPDX-License-Identifier: MIT */
#include "worker_scratch.h"

#include <string.h>

ug_status ug_worker_scratch_alloc(ug_worker_scratch *s, unsigned workers, size_t bytes)
{
    memset(s, 0, sizeof *s);
    if (workers < 1 || workers > UG_KERNEL_MAX_THREADS)
        return ug_fail(UG_EINVAL, "worker scratch: %u workers is outside 1 .. %d", workers, UG_KERNEL_MAX_THREADS);
    for (s->workers = 0; s->workers < workers; s->workers++) {
        ug_status st = ug_guarded_alloc(&s->slice[s->workers], bytes);
        if (!ug_is_ok(&st)) {
            (void)ug_worker_scratch_free(s, "worker scratch");
            return st;
        }
    }
    return ug_ok();
}

ug_status ug_worker_scratch_free(ug_worker_scratch *s, const char *what)
{
    ug_status first = ug_ok();
    for (unsigned w = 0; w < s->workers; w++) {
        ug_status st = ug_guarded_free(&s->slice[w], what);
        if (ug_is_ok(&first) && !ug_is_ok(&st)) first = st;
    }
    s->workers = 0;
    return first;
}
