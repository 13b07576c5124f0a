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
 * x must be finite. */
double ug_ulp_bf16(double x);
double ug_ulp_f32(double x);

/* Number of representable values between a and b (0 when equal; +0 and -0
 * count as one value). Neither may be NaN. */
uint32_t ug_ordered_dist_bf16(ug_bf16 a, ug_bf16 b);
uint32_t ug_ordered_dist_f32(uint32_t a_bits, uint32_t b_bits);

#endif
