/* SPDX-License-Identifier: MIT */
/* gdn_e2e's division of each column's delta by the decay c, d / c correctly
 * rounded to nearest (ties to even) at q's precision, as mpfr_div gives it,
 * but mostly by one multiplication: c's reciprocal is kept at
 * GDN_E2E_RECIPROCAL_EXTRA more bits than q, d times it is within 2^-(P-2)
 * of d / c relatively (P that reciprocal's precision: two roundings to
 * nearest), and mpfr_can_round decides whether every number within that
 * error rounds to the same q; where it cannot (a quotient within about
 * 2^-62 of a rounding boundary, relative to q's last bit) mpfr_div gives q.
 * d / c is never exactly halfway (d and c both of q's precision, c != 0:
 * an odd multiple of half an ulp times c's odd part would need more bits
 * than d has), so no tie reaches the reciprocal's result. */
#ifndef UG_REF_GDN_E2E_DIVIDE_H
#define UG_REF_GDN_E2E_DIVIDE_H

#include <stdbool.h>
#include <stdint.h>
#include <gmp.h>
#include <mpfr.h>

/* With prec a multiple of 64 the 64 bits below q's last are read directly:
 * the quotient decides unless they lie within GDN_E2E_MIDPOINT_MARGIN of
 * 2^63 (the error is below 4 units of that limb); other precisions ask
 * mpfr_can_round. */
enum { GDN_E2E_RECIPROCAL_EXTRA = 64, GDN_E2E_MIDPOINT_MARGIN = 16 };

/* The margin in use (here and in gdn_e2e_wide_divide): GDN_E2E_MIDPOINT_MARGIN.
 * A test may widen it, up to 2^63 - 1 (then every quotient but an exact one
 * goes to mpfr_div), so that the fallbacks run, which a quotient within 16
 * units of a midpoint (~2^-58 of them) almost never makes happen; set it
 * back before references run on other threads. */
extern uint64_t gdn_e2e_midpoint_margin;

/* Whether a quotient whose 64 bits below its last (`below`, in units of
 * 2^-64 of that last bit) are read decides its rounding: they lie outside
 * the margin around the midpoint 2^63. Both divisions' rule. */
static inline bool gdn_e2e_quotient_decides(uint64_t below)
{
    const uint64_t half = UINT64_C(1) << 63;
    return below < half - gdn_e2e_midpoint_margin || below > half + gdn_e2e_midpoint_margin;
}

typedef struct {
    mpfr_t inverse;  /* RN(1 / c) at prec + GDN_E2E_RECIPROCAL_EXTRA bits */
    mpfr_t quotient; /* d · inverse, same precision */
} gdn_e2e_divider;

/* For quotients of prec bits (prec >= MPFR_PREC_MIN); clear with gdn_e2e_divider_clear. */
void gdn_e2e_divider_init(gdn_e2e_divider *dv, mpfr_prec_t prec);
void gdn_e2e_divider_clear(gdn_e2e_divider *dv);

/* The divisor of the following gdn_e2e_divide calls: c finite and nonzero. */
void gdn_e2e_divider_set(gdn_e2e_divider *dv, mpfr_srcptr c);

/* q = RN(d / c) at q's precision (at most prec), c the divisor last set, d
 * finite (q may be d). Returns whether the reciprocal decided it (false:
 * mpfr_div did); either way q equals mpfr_div(q, d, c, MPFR_RNDN)'s. */
bool gdn_e2e_divide(mpfr_ptr q, mpfr_srcptr d, mpfr_srcptr c, gdn_e2e_divider *dv);

#endif
