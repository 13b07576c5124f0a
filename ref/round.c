/* SPDX-License-Identifier: MIT */
/* Correct rounding of MPFR values to bf16 and f32 (see round.h).
 *
 * Method: a finite nonzero x = m·2^e with 0.5 <= |m| < 1 is rounded to the
 * multiple of 2^q nearest to it, ties to even, where q = max(e - P, qmin) is
 * the format's quantum at x: P significant bits (bf16 8, f32 24) in the normal
 * range, the fixed subnormal spacing 2^qmin (bf16 2^-133, f32 2^-149) below it.
 * The scaling by 2^-q and back is exact, and mpfr_rint rounds to an integer
 * with ties to even, so the whole rounding is done once, on the exact value.
 * The rounded value has at most P significant bits and, unless it reaches
 * 2^128 (overflow), is exactly a float: its bits are read from mpfr_get_flt. */
#include "round.h"

#include <string.h>

enum { BF16_P = 8, F32_P = 24, BF16_QMIN = -133, F32_QMIN = -149 };

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* RN of x to the format with precision p and minimal quantum 2^qmin, as f32
 * bits (a bf16 result has its low 16 bits zero). NaN is not handled here. */
static uint32_t round_to_format(const mpfr_t x, mpfr_prec_t p, mpfr_exp_t qmin)
{
    const uint32_t sign = mpfr_signbit(x) ? 0x80000000u : 0u;
    if (mpfr_inf_p(x)) return sign | 0x7F800000u;
    if (mpfr_zero_p(x)) return sign;

    const mpfr_exp_t e = mpfr_get_exp(x); /* |x| in [2^(e-1), 2^e) */
    if (e > 128) return sign | 0x7F800000u; /* |x| >= 2^128 */
    if (e < qmin) return sign;              /* |x| < 2^(qmin-1): below half the quantum */

    const mpfr_exp_t q = e - p > qmin ? e - p : qmin;
    /* The precision holds x exactly and the rounded integer (< 2^(p+1)). */
    mpfr_prec_t tp = mpfr_get_prec(x);
    if (tp < p + 2) tp = p + 2;
    mpfr_t t;
    mpfr_init2(t, tp);
    mpfr_mul_2si(t, x, -q, MPFR_RNDN); /* exact: same significand */
    mpfr_rint(t, t, MPFR_RNDN);        /* ties to even; may carry to 2^p */
    mpfr_mul_2si(t, t, q, MPFR_RNDN);  /* exact */

    uint32_t bits;
    if (mpfr_zero_p(t))
        bits = sign; /* rounded to zero: keep the sign of x */
    else if (mpfr_get_exp(t) > 128)
        bits = sign | 0x7F800000u; /* rounded up to 2^128: overflow */
    else
        bits = sign | (float_bits(mpfr_get_flt(t, MPFR_RNDN)) & 0x7FFFFFFFu); /* exact */
    mpfr_clear(t);
    return bits;
}

uint16_t ug_mpfr_to_bf16(const mpfr_t x)
{
    if (mpfr_nan_p(x)) return mpfr_signbit(x) ? 0xFFC0u : 0x7FC0u;
    return (uint16_t)(round_to_format(x, BF16_P, BF16_QMIN) >> 16);
}

uint32_t ug_mpfr_to_f32_bits(const mpfr_t x)
{
    if (mpfr_nan_p(x)) return mpfr_signbit(x) ? 0xFFC00000u : 0x7FC00000u;
    return round_to_format(x, F32_P, F32_QMIN);
}

/* rop = x + s·radius (s = +-1) rounded to odd at rop's precision: truncate,
 * then set the last bit when inexact. For any precision P <= prec(rop) - 2 and
 * any coarser fixed quantum, rounding this value to nearest gives the same
 * result as rounding the exact sum (Boldo & Melquiond, "Emulation of FMA and
 * correctly rounded sums: proved algorithms using rounding to odd", 2008), so
 * the window's ends are rounded exactly as their exact values would be,
 * whatever the exponent gap between x and radius. */
static void add_round_to_odd(mpfr_t rop, const mpfr_t x, const mpfr_t radius, int s)
{
    int inexact = s > 0 ? mpfr_add(rop, x, radius, MPFR_RNDZ)
                        : mpfr_sub(rop, x, radius, MPFR_RNDZ);
    /* The last bit is 0 iff the value needs fewer bits than the precision. */
    if (inexact && mpfr_min_prec(rop) < mpfr_get_prec(rop)) {
        if (mpfr_sgn(rop) > 0)
            mpfr_nextabove(rop);
        else
            mpfr_nextbelow(rop);
    }
}

void ug_mpfr_bf16_window(const mpfr_t x, const mpfr_t radius, uint16_t *lo_out,
                         uint16_t *hi_out)
{
    mpfr_prec_t p = mpfr_get_prec(x);
    if (mpfr_get_prec(radius) > p) p = mpfr_get_prec(radius);
    p += 64; /* >= BF16_P + 2; exact whenever the exponent gap is below 64 */
    mpfr_t lo, hi;
    mpfr_inits2(p, lo, hi, (mpfr_ptr)0);
    add_round_to_odd(lo, x, radius, -1);
    add_round_to_odd(hi, x, radius, +1);
    *lo_out = ug_mpfr_to_bf16(lo);
    *hi_out = ug_mpfr_to_bf16(hi);
    mpfr_clears(lo, hi, (mpfr_ptr)0);
}
