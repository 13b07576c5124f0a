/* The f32 arithmetic model behind the bounds of the gated-delta stages
 * (docs/error-model-gdn_stages.md §0): round to nearest with unit roundoff
 * u = 2^-24, gradual underflow (absolute error <= 2^-150 per rounding to a
 * subnormal, 2^-149 allowed), and expf within 1 f32 ulp (relative 2^-23,
 * absolute 2^-149 for subnormal results; tested in tests/test_ref_*). */
#ifndef UG_REF_F32_MODEL_H
#define UG_REF_F32_MODEL_H

#include <stddef.h>

#define UG_F32_U 0x1p-24
#define UG_F32_UNDERFLOW 0x1p-149
#define UG_EXPF_REL 0x1p-23

/* gamma_n = n u / (1 - n u), rounded up. */
double ug_f32_gamma(size_t n);

/* eps such that |expf(fl32(a - b)) - exp(a - b)| <= eps exp(a - b) + 2^-149
 * for f32 a and b (a - b below the f32 overflow threshold): 0 when a == b
 * (expf(0) == 1), 2^-23 when the f32 difference is exact, else widened by
 * exp(u |a - b|) for its rounding.
 * Rounded up. */
double ug_expf_of_difference_rel(float a, float b);

/* |expf(fl32(a - b)) - e| <= this, for e >= exp(a - b) (rounded up) and eps
 * from ug_expf_of_difference_rel(a, b): 0 when eps is (expf(0) == 1). */
double ug_expf_error(double e, double eps);

#endif
