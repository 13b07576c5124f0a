/* What a reference computes for one output element (SPEC §2, §3).
 *
 * The reference works in MPFR, independently of the kernels' code. For each
 * output element it returns the high-precision value r, its correct rounding
 * to the output's format taken from the MPFR value directly (never through a
 * double), the a-priori error bound of the kernel's arithmetic for that
 * element, and the magnitude sum that defines the condition number. */
#ifndef UG_REF_H
#define UG_REF_H

#include <stdint.h>

typedef enum { UG_REF_EXACT = 0, UG_REF_STAGED, UG_REF_MODE_COUNT } ug_ref_mode;

const char *ug_ref_mode_name(ug_ref_mode mode); /* "exact", "staged" */

typedef struct {
    double r_hi, r_lo;  /* r ~= r_hi + r_lo (106 bits); r_hi carries inf/NaN */
    uint32_t rn_bits;   /* RN_T(r), T the output dtype (bf16 in the low 16 bits) */
    uint32_t flagged;   /* staged operands of this element that lie within the
                           kernel's pre-cast error of a bf16 rounding boundary */
    double bound;       /* bound on |y - r| for a correct kernel, rounded up */
    double abs_sum;     /* sum of |terms| (rounded up); condition = abs_sum/|r| */
} ug_ref_value;

#endif
