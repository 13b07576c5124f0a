/* SPDX-License-Identifier: MIT */
/* Correct rounding of an MPFR value to bf16 and to f32, straight from the
 * MPFR value (never through a double, so no double rounding).
 *
 * Semantics match core/bf16.h's f32 -> bf16 conversion applied to an exact
 * real: round to nearest, ties to even, subnormals kept (bf16 spacing 2^-133,
 * f32 spacing 2^-149), overflow to +-inf by that rounding (|x| >= the midpoint
 * between the largest finite value and 2^128), NaN -> quiet NaN of the same
 * sign (bf16 sign|0x7FC0, f32 sign|0x7FC00000), +-0 and +-inf kept with sign.
 * A result that rounds to zero keeps the sign of x. */
#ifndef UG_REF_ROUND_H
#define UG_REF_ROUND_H

#include <mpfr.h>
#include <stdint.h>

uint16_t ug_mpfr_to_bf16(const mpfr_t x);
uint32_t ug_mpfr_to_f32_bits(const mpfr_t x);

/* The two bf16 values bracketing the interval [x - radius, x + radius] as
 * kernels could round a pre-cast value known only to lie in it: lo_out is
 * RN_bf16 of the interval's low end, hi_out of its high end (radius >= 0).
 * They are equal when every value in the interval rounds to the same bf16. */
void ug_mpfr_bf16_window(const mpfr_t x, const mpfr_t radius, uint16_t *lo_out,
                         uint16_t *hi_out);

#endif
