/* SPDX-License-Identifier: MIT */
#include "f32_model.h"

#include <math.h>

/* Significand bits kept by a tf32 operand: relative rounding error 2^-11. */
#define TF32_U 0x1p-11

const char *ug_f32_op_name(ug_f32_op op)
{
    static const char *const names[UG_F32_OP_COUNT] = {"exp",   "exp2", "log2", "pow", "rsqrt",
                                                       "sqrt", "div",  "sin",  "cos"};
    return (unsigned)op < UG_F32_OP_COUNT ? names[op] : NULL;
}

const char *ug_subnormals_name(ug_subnormals s)
{
    static const char *const names[] = {"gradual", "flush-inputs", "flush-outputs", "flush"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : NULL;
}

const char *ug_products_name(ug_products p) { return p == UG_PRODUCTS_F32 ? "f32" : p == UG_PRODUCTS_TF32 ? "tf32" : NULL; }

double ug_f32_gamma(size_t n)
{
    const double nu = (double)n * UG_F32_U;
    return nu / (1 - nu);
}

double ug_f32_dot_gamma(const ug_f32_model *m, double gamma)
{
    if (m->products == UG_PRODUCTS_F32) return gamma;
    /* Each operand a (1 + d), |d| <= 2^-11; the product of two 11-bit
     * significands is exact in f32, so only the sum's roundings follow. */
    const double operands = (2 + TF32_U) * TF32_U; /* (1 + 2^-11)^2 - 1, exact */
    return (gamma + operands + gamma * operands) * UG_F32_SLACK * UG_F32_SLACK;
}

bool ug_f32_flushes(const ug_f32_model *m) { return m->subnormals != UG_SUBNORMALS_GRADUAL; }

double ug_f32_underflow(const ug_f32_model *m) { return ug_f32_flushes(m) ? UG_F32_MIN_NORMAL : 0x1p-149; }

double ug_f32_underflow_half(const ug_f32_model *m) { return ug_f32_flushes(m) ? UG_F32_MIN_NORMAL : 0x1p-150; }

ug_f32_error ug_f32_op_error(const ug_f32_model *m, ug_f32_op op, double lo, double hi)
{
    static const ug_f32_error unbounded = {INFINITY, INFINITY};
    if ((unsigned)op >= UG_F32_OP_COUNT) return unbounded;
    const ug_f32_op_allowance *a = &m->ops[op];
    if (!(lo <= hi) || lo < a->range_lo || hi > a->range_hi) return unbounded; /* NaN too */
    if (lo == 0 && hi == 0 && a->exact_at_zero) return (ug_f32_error){0, 0};
    double ulps = a->ulps;
    if (a->ulps_per_abs_x != 0) ulps = (ulps + a->ulps_per_abs_x * fmax(fabs(lo), fabs(hi))) * UG_F32_SLACK;
    /* ulp_f32(y) <= 2^-23 |y| + 2^-149 (the subnormal ulp); both products
     * are exact scalings by powers of two. */
    ug_f32_error e = {ulps * 0x1p-23, ulps * 0x1p-149};
    if (a->rel != 0) e.rel = (e.rel + a->rel) * UG_F32_SLACK;
    if (a->abs != 0) e.abs = (e.abs + a->abs) * UG_F32_SLACK;
    if (ug_f32_flushes(m)) e.abs = (e.abs + UG_F32_MIN_NORMAL) * UG_F32_SLACK;
    return e;
}

/* The f32 subtraction is exact iff the exact difference (TwoSum in binary64:
 * s + err == a - b exactly) is an f32 value. */
static bool f32_difference_is_exact(float a, float b)
{
    const double x = a, y = -(double)b, s = x + y;
    const double y_virtual = s - x, err = (x - (s - y_virtual)) + (y - y_virtual);
    return err == 0 && (double)(float)s == s;
}

ug_f32_error ug_f32_exp_of_rounded(const ug_f32_model *m, double d_away)
{
    if (d_away == 0) return ug_f32_op_error(m, UG_F32_EXP, 0, 0);
    /* fl32(d) = d (1 + delta), |delta| <= u: the argument lies within
     * (1 + u) |d| of zero on d's side, and exp(d_hat) / exp(d) within
     * exp(+-u |d|). */
    const double reach = d_away * (1 + UG_F32_U) * UG_F32_SLACK;
    ug_f32_error e = ug_f32_op_error(m, UG_F32_EXP, fmin(reach, 0), fmax(reach, 0));
    double shift = expm1(UG_F32_U * fabs(d_away)) * UG_F32_SLACK;
    /* A flushing target may read a difference below 2^-126 as zero:
     * exp(0) / exp(d) - 1 <= expm1(2^-126). */
    if (ug_f32_flushes(m) && fabs(d_away) < UG_F32_MIN_NORMAL) shift = (shift + UG_F32_MIN_NORMAL) * UG_F32_SLACK;
    e.rel = (shift + e.rel + shift * e.rel) * UG_F32_SLACK;
    return e;
}

ug_f32_error ug_f32_exp_of_difference(const ug_f32_model *m, float a, float b)
{
    if (a == b) return ug_f32_op_error(m, UG_F32_EXP, 0, 0);
    const double d = (double)a - (double)b; /* exact unless the exponents lie > 29 apart */
    const bool may_flush = ug_f32_flushes(m) && fabs(d) < UG_F32_MIN_NORMAL;
    if (f32_difference_is_exact(a, b) && !may_flush) return ug_f32_op_error(m, UG_F32_EXP, d, d);
    /* As ug_f32_exp_of_rounded, with the roundings of the formula placed as
     * the bounds of gdn_chunk_scaled_kkt and gdn_chunk_state had them before
     * profiles (fixtures/baseline.json's figures depend on the last bit). */
    const double reach = d * (1 + UG_F32_U) * UG_F32_SLACK;
    ug_f32_error e = ug_f32_op_error(m, UG_F32_EXP, fmin(reach, 0), fmax(reach, 0));
    double drift = expm1(UG_F32_U * fabs(d) * UG_F32_SLACK);
    if (may_flush) drift = (drift + UG_F32_MIN_NORMAL) * UG_F32_SLACK;
    e.rel = (drift + e.rel * (1 + drift)) * UG_F32_SLACK;
    return e;
}

double ug_f32_error_at(ug_f32_error e, double magnitude)
{
    if (e.rel == 0 && e.abs == 0) return 0;
    if (isinf(e.rel) || isinf(e.abs)) return INFINITY;
    return (magnitude * e.rel + e.abs) * UG_F32_SLACK;
}
