/* SPDX-License-Identifier: MIT */
/* See gdn_e2e_divide.h. */
#include "gdn_e2e_divide.h"

uint64_t gdn_e2e_midpoint_margin = GDN_E2E_MIDPOINT_MARGIN;

void gdn_e2e_divider_init(gdn_e2e_divider *dv, mpfr_prec_t prec)
{
    mpfr_inits2(prec + GDN_E2E_RECIPROCAL_EXTRA, dv->inverse, dv->quotient, (mpfr_ptr)0);
}

void gdn_e2e_divider_clear(gdn_e2e_divider *dv)
{
    mpfr_clears(dv->inverse, dv->quotient, (mpfr_ptr)0);
}

void gdn_e2e_divider_set(gdn_e2e_divider *dv, mpfr_srcptr c)
{
    mpfr_ui_div(dv->inverse, 1, c, MPFR_RNDN);
}

/* Whether every number within the quotient's error rounds to nearest at prec
 * bits as the quotient does: no midpoint of that grid within the error. */
static bool quotient_decides(const gdn_e2e_divider *dv, mpfr_prec_t prec)
{
    /* |quotient - d/c| <= |d/c| (2^-P + 2^-P + 2^-2P) < 2^(EXP(quotient) - P + 2) */
    const mpfr_prec_t p = mpfr_get_prec(dv->quotient);
    if (p - prec != GMP_NUMB_BITS || prec % GMP_NUMB_BITS != 0)
        return mpfr_can_round(dv->quotient, p - 3, MPFR_RNDN, MPFR_RNDN, prec);
    /* the lowest limb holds exactly the bits below prec, in units of 2^(EXP - P): the
     * error is below 4 of them, a midpoint is that limb at 2^63 */
    return gdn_e2e_quotient_decides(((const mp_limb_t *)mpfr_custom_get_significand(dv->quotient))[0]);
}

bool gdn_e2e_divide(mpfr_ptr q, mpfr_srcptr d, mpfr_srcptr c, gdn_e2e_divider *dv)
{
    /* A zero d (its sign), an infinite or NaN one (a wild input's cone), and a
     * product outside the exponent range: mpfr_div; a singular quotient has
     * no significand to read. */
    if (!mpfr_regular_p(d)) {
        mpfr_div(q, d, c, MPFR_RNDN);
        return false;
    }
    mpfr_mul(dv->quotient, d, dv->inverse, MPFR_RNDN);
    if (!mpfr_regular_p(dv->quotient) || !quotient_decides(dv, mpfr_get_prec(q))) {
        mpfr_div(q, d, c, MPFR_RNDN);
        return false;
    }
    mpfr_set(q, dv->quotient, MPFR_RNDN);
    return true;
}
