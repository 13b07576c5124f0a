/* SPDX-License-Identifier: MIT */
/* Guarded allocations: every buffer a kernel reads or writes, and every
 * scratch area a kernel plans, sits between two guard zones. A write past
 * either end is detected when the guards are checked (UG_EGUARD); under
 * valgrind the guards are also marked no-access, so a read past either end is
 * reported at the faulting instruction. */
#ifndef UG_GUARD_H
#define UG_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

enum { UG_GUARD_BYTES = 64 };

typedef struct {
    unsigned char *block; /* guard | data (bytes, 64-byte aligned) | guard */
    size_t bytes;
} ug_guarded;

/* bytes may be 0 (a valid empty buffer whose data pointer is still unique). */
ug_status ug_guarded_alloc(ug_guarded *g, size_t bytes);
static inline void *ug_guarded_data(const ug_guarded *g) { return g->block + UG_GUARD_BYTES; }
bool ug_guarded_intact(const ug_guarded *g);
/* Fault injection for tests: the next `successes` guarded allocations
 * succeed, then every one fails with UG_ENOMEM until reset with -1 (the
 * default: never fail). Per thread. */
void ug_guarded_fail_after(long successes);
/* Frees the block; reports UG_EGUARD naming `what` when a guard was written.
 * Safe on a zeroed ug_guarded. */
ug_status ug_guarded_free(ug_guarded *g, const char *what);

#endif
