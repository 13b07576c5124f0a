/* SPDX-License-Identifier: MIT */
/* The kernels' exp: glibc's expf, written out so that the SIMD paths can
 * compute it sixteen (AVX-512) or eight (AVX2) lanes at a time with the same
 * bits as the scalar function.
 *
 * The algorithm is ARM's optimized-routines expf, as glibc 2.27+ ships it
 * (sysdeps/ieee754/flt-32/e_expf.c); the constants and the operation order
 * are those of Debian 12's glibc 2.36 on an FMA CPU (__expf_fma, read from
 * its disassembly): k = round(x * 32/ln2) by the 1.5 * 2^52 shift, r = x *
 * 32/ln2 - k as one FMA, 2^(k/32) from a 32-entry table and the exponent
 * bits, and a cubic in r as three FMAs, all in binary64, then one rounding to
 * binary32. Every result equals that libm's expf: checked for all 2^32 inputs
 * (tests/test_gemm_paths.c samples them in the unit tests). The kernels'
 * bits therefore do not change, and no longer depend on which libm a machine
 * has or on which variant of it (the non-FMA build of the same source rounds
 * differently in rare cases).
 *
 * |x| >= 88 and NaN go through the scalar special cases on every path (the
 * SIMD paths hand those lanes to ug_expf). */
#ifndef UG_EXPF_H
#define UG_EXPF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { UG_EXPF_TABLE_BITS = 5, UG_EXPF_TABLE_SIZE = 1 << UG_EXPF_TABLE_BITS };

/* Bit patterns of binary64 values: tab[i] = 2^(i/32) with the exponent bits
 * of i/32 taken out (added back from k). */
typedef struct {
    uint64_t tab[UG_EXPF_TABLE_SIZE];
    uint64_t inv_ln2_n; /* 32 / ln 2 */
    uint64_t shift;     /* 1.5 * 2^52: x + shift rounds x to an integer in the low bits */
    uint64_t c0, c1, c2; /* the cubic: c0 r^3 + c1 r^2 + c2 r + 1 ~ 2^(r/32) */
} ug_expf_constants;

extern const ug_expf_constants ug_expf_data;

/* The inputs that leave the main path: |x| >= 88 (its top 12 bits less the
 * sign at or above those of 88.0f), infinities and NaN. */
static inline bool ug_expf_special(uint32_t bits) { return ((bits >> 20) & 0x7FF) >= 0x42B; }

static inline double ug_expf_constant(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

float ug_expf(float x);

#endif
