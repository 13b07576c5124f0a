/* SPDX-License-Identifier: MIT */
/* FNV-1a, 64-bit: the one hash of the project (output bits, input files,
 * exported inputs, case seeds; docs/report-format.md prints it as 16 hex
 * digits). Not cryptographic: it detects change, not tampering.
 *
 * Contract: ug_fnv1a(h, data, n) folds n bytes into the running hash h;
 * start from UG_FNV1A_OFFSET. Folding a buffer in pieces gives the hash of
 * the whole. */
#ifndef UG_HASH_H
#define UG_HASH_H

#include <stddef.h>
#include <stdint.h>

#define UG_FNV1A_OFFSET 0xcbf29ce484222325ull

static inline uint64_t ug_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#endif
