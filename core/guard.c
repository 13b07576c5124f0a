/* SPDX-License-Identifier: MIT */
#include "guard.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/memcheck.h>

enum { guard_pattern = 0xA5 };

static unsigned char *tail_guard(const ug_guarded *g)
{
    return g->block + UG_GUARD_BYTES + g->bytes;
}

/* The tail guard runs from the end of the data over the alignment padding
 * and one full guard zone. */
static size_t tail_guard_bytes(const ug_guarded *g)
{
    size_t padded = (g->bytes + UG_GUARD_BYTES - 1) / UG_GUARD_BYTES * UG_GUARD_BYTES;
    return padded - g->bytes + UG_GUARD_BYTES;
}

static void guards_set_access(const ug_guarded *g, bool accessible)
{
    if (accessible) {
        VALGRIND_MAKE_MEM_DEFINED(g->block, UG_GUARD_BYTES);
        VALGRIND_MAKE_MEM_DEFINED(tail_guard(g), tail_guard_bytes(g));
    } else {
        VALGRIND_MAKE_MEM_NOACCESS(g->block, UG_GUARD_BYTES);
        VALGRIND_MAKE_MEM_NOACCESS(tail_guard(g), tail_guard_bytes(g));
    }
}

static _Thread_local long allocations_left = -1;

void ug_guarded_fail_after(long successes) { allocations_left = successes; }

ug_status ug_guarded_alloc(ug_guarded *g, size_t bytes)
{
    g->block = NULL;
    g->bytes = 0;
    if (allocations_left == 0) return ug_fail(UG_ENOMEM, "cannot allocate %zu bytes (injected failure)", bytes);
    if (allocations_left > 0) allocations_left--;
    /* Round the data up to the alignment so the tail guard starts aligned. */
    size_t padded = (bytes + UG_GUARD_BYTES - 1) / UG_GUARD_BYTES * UG_GUARD_BYTES;
    if (padded < bytes || padded > SIZE_MAX - 3 * UG_GUARD_BYTES)
        return ug_fail(UG_ENOMEM, "allocation of %zu bytes exceeds the address space", bytes);
    /* malloc, aligned by hand, rather than posix_memalign, which bypasses
     * glibc's per-thread cache: a kernel that lasts a microsecond allocates
     * its scratch on every call (docs/performance.md). The malloc'd start
     * is kept in the word before the block, outside the guards. */
    unsigned char *raw = malloc(padded + 3 * UG_GUARD_BYTES);
    if (!raw) return ug_fail(UG_ENOMEM, "cannot allocate %zu bytes", bytes);
    const uintptr_t after_word = (uintptr_t)(raw + sizeof raw);
    unsigned char *p = raw + sizeof raw + (UG_GUARD_BYTES - after_word % UG_GUARD_BYTES) % UG_GUARD_BYTES;
    memcpy(p - sizeof raw, &raw, sizeof raw);
    g->block = p;
    g->bytes = bytes;
    memset(g->block, guard_pattern, UG_GUARD_BYTES);
    memset(tail_guard(g), guard_pattern, tail_guard_bytes(g));
    guards_set_access(g, false);
    return ug_ok();
}

/* A guard zone is at most 2 * UG_GUARD_BYTES - 1 bytes (the tail's padding
 * and one zone): compared with memcmp, not a byte loop, since the check runs
 * on every call of kernels that last a microsecond. */
static bool all_pattern(const unsigned char *p, size_t n)
{
    static const unsigned char pattern[2 * UG_GUARD_BYTES] = {[0 ... 2 * UG_GUARD_BYTES - 1] = guard_pattern};
    return memcmp(p, pattern, n) == 0;
}

bool ug_guarded_intact(const ug_guarded *g)
{
    if (!g->block) return true;
    guards_set_access(g, true);
    bool ok = all_pattern(g->block, UG_GUARD_BYTES) && all_pattern(tail_guard(g), tail_guard_bytes(g));
    guards_set_access(g, false);
    return ok;
}

ug_status ug_guarded_free(ug_guarded *g, const char *what)
{
    if (!g->block) return ug_ok();
    bool intact = ug_guarded_intact(g);
    guards_set_access(g, true);
    unsigned char *raw;
    memcpy(&raw, g->block - sizeof raw, sizeof raw);
    free(raw);
    size_t bytes = g->bytes;
    g->block = NULL;
    g->bytes = 0;
    if (!intact)
        return ug_fail(UG_EGUARD, "%s: guard zone around its %zu bytes was overwritten", what, bytes);
    return ug_ok();
}
