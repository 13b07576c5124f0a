/* SPDX-License-Identifier: MIT */
/* The randomised-Hadamard sign tables of attn_reduce_fwht (SPEC §1.4), the
 * kernel's copy. The reference keeps its own (ref/attn_reduce_fwht.c), so a
 * typo here makes verify fail; tests/test_ref_attn_reduce_fwht.c checks both
 * against the upstream bytes and against the transform's self-inverse property.
 *
 * s_j = -1 when bit (j & 7) of SIGNS[j >> 3] is set, else +1. The DV = 512
 * table begins with the 32 bytes of the DV = 256 table, so one 64-byte array
 * serves both: DV = 256 reads its first 32 bytes. */
#ifndef UG_ATTN_REDUCE_FWHT_SIGNS_H
#define UG_ATTN_REDUCE_FWHT_SIGNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { ATTN_REDUCE_FWHT_SIGN_BYTES = 64 };

static const uint8_t attn_reduce_fwht_signs[ATTN_REDUCE_FWHT_SIGN_BYTES] = {
    /* DV = 256 (and the first half of DV = 512) */
    0xa7, 0x3b, 0x91, 0xf4, 0x6d, 0xc2, 0x58, 0x0e, 0xb3, 0x7f, 0x24, 0xd6, 0x89, 0x45, 0xea, 0x1c,
    0x63, 0xaf, 0xd8, 0x52, 0x97, 0x0b, 0xe1, 0x3d, 0x76, 0xc4, 0x19, 0xfe, 0x4a, 0x85, 0x2c, 0xdb,
    /* DV = 512, second half */
    0xd3, 0x4e, 0xa8, 0x17, 0x9c, 0x5b, 0xe6, 0x31, 0x72, 0xb9, 0x0d, 0xf5, 0x43, 0x8a, 0x6e, 0xc7,
    0x58, 0x2f, 0x94, 0xe1, 0xb6, 0x3d, 0x0a, 0x7c, 0xc5, 0x61, 0xd8, 0x4f, 0xa3, 0x97, 0x1e, 0x85,
};

/* s_j == -1 (j < 512; j < 256 for DV = 256). */
static inline bool attn_reduce_fwht_sign_is_negative(size_t j)
{
    return (attn_reduce_fwht_signs[j >> 3] >> (j & 7)) & 1u;
}

#endif
