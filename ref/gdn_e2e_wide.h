/* SPDX-License-Identifier: MIT */
/* gdn_e2e's fast-path scalars (ref/gdn_e2e.c): the per-column numbers of
 * the recurrence (Xᵀk and Xᵀq rounded, d = beta (v - c acc), d / c, the
 * output's scaling) as 192-bit binary floats on three 64-bit limbs, every
 * operation correctly rounded to nearest, ties to even, bit for bit as
 * MPFR rounds it at 192 bits. Where the limbs do not decide (operands too
 * far apart, a double outside the normal range, a quotient too close to a
 * midpoint) a function returns false and leaves its output alone: the
 * caller asks MPFR (gdn_e2e_wide_view, gdn_e2e_wide_from_mpfr). The signs
 * of zeros follow MPFR's for products; a difference that cancels exactly
 * is +0, as MPFR gives it to nearest. */
#ifndef UG_REF_GDN_E2E_WIDE_H
#define UG_REF_GDN_E2E_WIDE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <gmp.h>
#include <mpfr.h>

enum { GDN_E2E_WIDE_LIMBS = 3, GDN_E2E_WIDE_BITS = 64 * GDN_E2E_WIDE_LIMBS };

typedef struct {
    uint64_t m[GDN_E2E_WIDE_LIMBS]; /* 0 (a zero), or the leading bit at 2^(GDN_E2E_WIDE_BITS - 1) */
    long e;                         /* the value (-1)^neg m 2^e */
    bool neg;                       /* a zero's sign too */
} gdn_e2e_wide;

static inline bool gdn_e2e_wide_zero(const gdn_e2e_wide *a) { return a->m[GDN_E2E_WIDE_LIMBS - 1] == 0; }

/* r = RN(z 2^e), z the two's complement integer of 1 <= n <= 6 limbs (as mpfr_set_z_2exp; z = 0 gives +0). */
void gdn_e2e_wide_from_twos(gdn_e2e_wide *r, const uint64_t *z, int n, long e);

/* a = RN(a · b 2^be), b a positive integer of GDN_E2E_WIDE_LIMBS limbs (mpfr_mul by such a number). */
void gdn_e2e_wide_mul(gdn_e2e_wide *a, const uint64_t b[GDN_E2E_WIDE_LIMBS], long be);

/* a = RN(a · x), x a finite double (mpfr_mul_d). */
void gdn_e2e_wide_mul_double(gdn_e2e_wide *a, double x);

/* d = RN(v - a) for a finite float v (mpfr_sub); false (d untouched)
 * where the two lie more than about 384 bits apart. */
bool gdn_e2e_wide_float_minus(gdn_e2e_wide *d, float v, const gdn_e2e_wide *a);

/* *out = |a| rounded away from zero to a double (mpfr_get_d, MPFR_RNDA);
 * false (nothing written) where that is not a normal double below 2^1023. */
bool gdn_e2e_wide_abs_up(const gdn_e2e_wide *a, double *out);

/* d = RN(d / c) from RN(1 / c) at GDN_E2E_WIDE_BITS + 64 bits, inverse =
 * its significand (4 limbs, MPFR's, leading bit at the top) and exponent
 * (MPFR's): gdn_e2e_divide's rule (gdn_e2e_divide.h); false (d untouched)
 * where it leaves the quotient to mpfr_div. */
bool gdn_e2e_wide_divide(gdn_e2e_wide *d, const uint64_t inverse[GDN_E2E_WIDE_LIMBS + 1], long inverse_exp);

/* out = floor(|a| 2^shift) mod 2^(64 n), shift >= 0. */
void gdn_e2e_wide_limbs(const gdn_e2e_wide *a, long shift, uint64_t *out, int n);

/* a as an MPFR number of GDN_E2E_WIDE_BITS bits read in place from limbs
 * (valid while limbs is), and back from any finite MPFR number of that
 * precision. */
mpfr_srcptr gdn_e2e_wide_view(mpfr_ptr view, uint64_t limbs[GDN_E2E_WIDE_LIMBS], const gdn_e2e_wide *a);
void gdn_e2e_wide_from_mpfr(gdn_e2e_wide *r, mpfr_srcptr x);

/* top 2^exponent as a double, 2^52 <= top <= 2^53, where that is a normal double: from its bits. */
static inline double gdn_e2e_normal_double(uint64_t top, long exponent)
{
    if (top >> 53) top >>= 1, exponent++;
    const uint64_t bits = (uint64_t)(exponent + 52 + 1023) << 52 | (top & ((UINT64_C(1) << 52) - 1));
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

#endif
