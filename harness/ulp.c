/* SPDX-License-Identifier: MIT */
/* Error of one output element against its reference (see ulp.h).
 *
 * r = r_hi + r_lo is a double-double. |y - r| is formed as (y - r_hi) - r_lo:
 * y - r_hi is exact whenever y is within a factor 2 of r_hi (Sterbenz), which
 * is every case that matters (a far-off y only needs a few correct digits), and
 * the one rounding that follows is monotone, so an error of exactly half an ulp
 * is never reported above it. ulp_T is taken at r, not at r_hi: when r_hi is a
 * power of two and r_lo pulls r below it, r lies in the binade below.
 *
 * cond is abs_sum/|r| (0 when abs_sum is 0, +inf when r == 0 < abs_sum); where
 * r is not finite it is +inf: no condition number exists, and such elements
 * are judged by their class alone. */
#include "ulp.h"

#include <math.h>
#include <string.h>

#include "../core/bf16.h"

static const ug_elem_error class_fail = {.ulp_err = INFINITY, .ulp_dist = UINT32_MAX, .ratio = INFINITY, .cond = INFINITY};
/* A class the exact formula does not give, accepted on a wild cone. */
static const ug_elem_error wild_accepted = {
    .ulp_err = INFINITY, .ulp_dist = UINT32_MAX, .ratio = 0, .cond = INFINITY, .class_ok = true};

/* |x| is a power of two, read from the bits (no libm call per element).
 * Only normal x: below 2^-1022 lies far below the smallest ulp of either
 * format, where the binade does not change ulp_T. */
static bool is_normal_power_of_two(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    const uint64_t exponent = bits >> 52 & 0x7FF, fraction = bits & ((UINT64_C(1) << 52) - 1);
    return exponent != 0 && exponent != 0x7FF && fraction == 0;
}

/* 1 / x for x a normal power of two whose reciprocal is normal too (an
 * ulp: 2^-149 .. 2^1016), from the bits: d * (1 / ulp) is then d / ulp
 * bit for bit (both round the same d 2^-q once), without a division per
 * element. */
static double reciprocal_of_power_of_two(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits = (UINT64_C(2046) - (bits >> 52)) << 52;
    memcpy(&x, &bits, sizeof x);
    return x;
}

ug_elem_error ug_measure(uint32_t y_bits, ug_dtype t, const ug_ref_value *r)
{
    if (t != UG_BF16 && t != UG_F32) return class_fail;
    const bool bf = t == UG_BF16;
    const double y = bf ? ug_bf16_to_f32((ug_bf16)y_bits) : ug_f32_from_bits(y_bits);

    ug_elem_error e = {.cond = INFINITY, .class_ok = true};

    /* Non-finite reference: y must have its class; a NaN's sign is free. */
    if (isnan(r->r_hi)) {
        e.class_ok = isnan(y);
    } else if (isinf(r->r_hi)) {
        e.class_ok = y == r->r_hi;
        if (!e.class_ok && isnan(y) && r->wild != UG_WILD_NONE) return wild_accepted;
    } else {
        const double rv = r->r_hi; /* r == 0 iff r_hi == 0 */
        e.cond = r->abs_sum == 0 ? 0 : rv == 0 ? INFINITY : r->abs_sum / fabs(rv);
        double measured = y;
        if (isnan(y)) {
            e.class_ok = false;
        } else if (isinf(y)) {
            /* Allowed where r rounds to that infinity; and where r's bound
             * reaches the threshold beyond which T rounds to it (a kernel's
             * value within the bound may lie there), measured as that
             * threshold: the least value that rounds to y. */
            const uint32_t rn = bf ? r->rn_bits & 0xFFFFu : r->rn_bits;
            const double threshold = bf ? 0x1.ffp127 : 0x1.ffffffp127;
            if ((bf ? y_bits & 0xFFFFu : y_bits) != rn) {
                e.class_ok = (y > 0) == (rv > 0) && fabs(rv) + r->bound >= threshold;
                measured = copysign(threshold, y);
            }
        }
        if (!e.class_ok && r->wild != UG_WILD_NONE) return wild_accepted;
        if (e.class_ok && isfinite(measured)) {
            const double d = fabs((measured - r->r_hi) - r->r_lo);
            double at = r->r_hi;
            if (r->r_lo != 0 && (r->r_lo < 0) != (at < 0) && is_normal_power_of_two(at))
                at = nextafter(at, 0.0); /* |r| < |r_hi| = 2^k: the binade below */
            e.ulp_err = d * reciprocal_of_power_of_two(bf ? ug_ulp_bf16(at) : ug_ulp_f32(at));
            e.ulp_dist = bf ? ug_ordered_dist_bf16((ug_bf16)y_bits, (ug_bf16)r->rn_bits)
                            : ug_ordered_dist_f32(y_bits, r->rn_bits);
            e.ratio = d == 0 || r->wild == UG_WILD_UNBOUNDED ? 0 : r->bound == 0 ? INFINITY : d / r->bound;
            e.abs_err = d;
            e.abs_ref = fabs(r->r_hi);
            return e;
        }
    }
    if (!e.class_ok) {
        e.ulp_err = INFINITY;
        e.ulp_dist = UINT32_MAX;
        e.ratio = INFINITY;
    }
    return e;
}
