/* SPDX-License-Identifier: MIT */
/* bf16 and f32 encodings, spacing and ordered distance (SPEC §1, §3).
 *
 * bf16 is binary32 truncated to its top 16 bits. f32 -> bf16 rounds to nearest,
 * ties to even, overflows to +-inf by that rounding, keeps subnormals and maps
 * every NaN to the quiet NaN of the same sign (sign | 0x7FC0). bf16 -> f32 is
 * exact. These are the only arithmetic helpers shared by kernels/ and ref/. */
#ifndef UG_BF16_H
#define UG_BF16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t ug_bf16;

static inline uint32_t ug_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float ug_f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline ug_bf16 ug_bf16_from_f32(float x)
{
    uint32_t u = ug_f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (ug_bf16)((u >> 16 & 0x8000u) | 0x7FC0u);
    /* Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry into
     * the exponent is the correct result, up to and including +-inf. */
    u += 0x7FFFu + (u >> 16 & 1u);
    return (ug_bf16)(u >> 16);
}

static inline float ug_bf16_to_f32(ug_bf16 h)
{
    return ug_f32_from_bits((uint32_t)h << 16);
}

/* Spacing of the format at x (SPEC §3): 2^(e-7) (bf16) or 2^(e-23) (f32) for
 * |x| in [2^e, 2^(e+1)), never below the subnormal spacing 2^-133 / 2^-149.
 * x must be finite. Inline for a normal x (the binade from the exponent
 * field, no libm: the references and the measuring take one an element);
 * ug_ulp_special for zero and subnormal x. */
double ug_ulp_special(double x, int fraction_bits, int min_exp);

static inline double ug_ulp_format(double x, int fraction_bits, int min_exp)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    const int biased = (int)(bits >> 52 & 0x7FF);
    if (biased == 0 || biased == 0x7FF) return ug_ulp_special(x, fraction_bits, min_exp);
    const int q = biased - 1023 - fraction_bits;
    const uint64_t ulp_bits = (uint64_t)((q < min_exp ? min_exp : q) + 1023) << 52;
    double ulp;
    memcpy(&ulp, &ulp_bits, sizeof ulp);
    return ulp;
}

static inline double ug_ulp_bf16(double x) { return ug_ulp_format(x, 7, -133); }
static inline double ug_ulp_f32(double x) { return ug_ulp_format(x, 23, -149); }

/* Number of representable values between a and b (0 when equal; +0 and -0
 * count as one value). Neither may be NaN. */
uint32_t ug_ordered_dist_bf16(ug_bf16 a, ug_bf16 b);
uint32_t ug_ordered_dist_f32(uint32_t a_bits, uint32_t b_bits);

#endif
