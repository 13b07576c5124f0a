/* Error of one output element against its reference (SPEC §3), the SLEEF
 * tester's idea: one small function, special cases handled explicitly.
 *
 *   ulp_err  = |y - r| / ulp_T(r)                  (0.5 or less: correctly rounded)
 *   ulp_dist = representable values between y and RN_T(r)   (0: correctly rounded)
 *   ratio    = |y - r| / bound                     (<= 1 for a correct kernel)
 *   cond     = abs_sum / |r|                        (+inf when r == 0 < abs_sum)
 *
 * Non-finite rules: y NaN or +-inf where r is finite fails (class_ok false,
 * ulp_err/ratio +inf, ulp_dist UINT32_MAX) unless y is exactly RN_T(r), which
 * is +-inf when r lies beyond the format's overflow threshold; such a y is
 * correctly rounded (ulp_err, ulp_dist and ratio 0). Where r is non-finite,
 * y must have its class (NaN, +inf, -inf) and, for NaN, its sign. */
#ifndef UG_ULP_H
#define UG_ULP_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../ref/ref.h"

typedef struct {
    double ulp_err;
    uint32_t ulp_dist;
    double ratio;
    double cond;
    bool class_ok;
    double abs_err;  /* |y - r| (0 unless both are finite) */
    double abs_ref;  /* |r| (0 unless both are finite) */
} ug_elem_error;

/* y_bits: the kernel's output element (bf16 in the low 16 bits, or f32 bits);
 * t: UG_BF16 or UG_F32. */
ug_elem_error ug_measure(uint32_t y_bits, ug_dtype t, const ug_ref_value *r);

#endif
