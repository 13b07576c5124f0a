#include "f32_model.h"

#include <math.h>

/* Upward margin for the few binary64 roundings of these formulas. */
#define MARGIN (1.0 + 0x1p-40)

double ug_f32_gamma(size_t n)
{
    const double nu = (double)n * UG_F32_U;
    return nu / (1 - nu) * MARGIN;
}

/* The f32 subtraction is exact iff the exact difference (TwoSum in binary64:
 * s + err == a - b exactly) is an f32 value. */
static int f32_difference_is_exact(float a, float b)
{
    const double x = a, y = -(double)b, s = x + y;
    const double y_virtual = s - x, err = (x - (s - y_virtual)) + (y - y_virtual);
    return err == 0 && (double)(float)s == s;
}

double ug_expf_of_difference_rel(float a, float b)
{
    if (a == b) return 0; /* expf(0) is exactly 1 (tested) */
    if (f32_difference_is_exact(a, b)) return UG_EXPF_REL;
    /* fl32(a - b) = d (1 + delta), |delta| <= u: exp(d_hat) / exp(d) lies
     * within exp(+-u |d|), then expf adds its own 2^-23. */
    const double drift = expm1(UG_F32_U * fabs((double)a - (double)b) * MARGIN);
    return (drift + UG_EXPF_REL * (1 + drift)) * MARGIN;
}

double ug_expf_error(double e, double eps) { return eps == 0 ? 0 : (e * eps + UG_F32_UNDERFLOW) * MARGIN; }
