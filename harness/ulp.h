/* SPDX-License-Identifier: MIT */
/* Error of one output element against its reference (SPEC §3), the SLEEF
 * tester's idea: one small function, special cases handled explicitly.
 *
 *   ulp_err  = |y - r| / ulp_T(r)                  (0.5 or less: correctly rounded)
 *   ulp_dist = representable values between y and RN_T(r)   (0: correctly rounded)
 *   ratio    = |y - r| / bound                     (<= 1 for a correct kernel)
 *   cond     = abs_sum / |r|                        (+inf when r == 0 < abs_sum)
 *
 * Non-finite rules (SPEC §3 as docs/nonfinite.md reads it): y NaN or +-inf
 * where r is finite fails (class_ok false, ulp_err/ratio +inf, ulp_dist
 * UINT32_MAX) unless y is exactly RN_T(r), which is +-inf when r lies beyond
 * the format's overflow threshold; such a y is correctly rounded (ulp_err,
 * ulp_dist and ratio 0). A y = +-inf of r's sign is also accepted where
 * |r| + bound reaches that threshold (bf16 0x1.ffp127, f32 0x1.ffffffp127):
 * it is measured as the threshold, the least value that rounds to it, so its
 * ratio is <= 1 and its ulp_dist counts the step to the infinity. Where r
 * is +-inf, y must be that infinity; where r is
 * NaN, y must be a NaN of any sign (IEEE 754-2019 §6.3 leaves the sign of a
 * NaN result unspecified, and MPFR's NaN has none).
 *
 * On an element whose cone holds wild inputs (r->wild, see ref.h) the exact
 * formula fixes only part of the class: r NaN still needs y NaN; r +-inf
 * accepts that infinity or a NaN; r finite accepts a NaN or either infinity.
 * Such an accepted y that is not r's class has class_ok, ratio 0, ulp_err
 * +inf, ulp_dist UINT32_MAX and cond +inf (judged by its class alone). A
 * finite y against a finite r is held to the bound, except at
 * UG_WILD_UNBOUNDED, where the bound is void (ratio 0, the ULP figures kept). */
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
