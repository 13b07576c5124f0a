/* SPDX-License-Identifier: MIT */
/* What a reference computes for one output element (SPEC §2, §3).
 *
 * The reference works in MPFR, independently of the kernels' code. For each
 * output element it returns the high-precision value r, its correct rounding
 * to the output's format taken from the MPFR value directly (never through a
 * double), the a-priori error bound of the kernel's arithmetic for that
 * element, and the magnitude sum that defines the condition number. */
#ifndef UG_REF_H
#define UG_REF_H

#include <mpfr.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/buf.h"
#include "f32_model.h"

typedef enum { UG_REF_EXACT = 0, UG_REF_STAGED, UG_REF_MODE_COUNT } ug_ref_mode;

const char *ug_ref_mode_name(ug_ref_mode mode); /* "exact", "staged" */

/* What a kernel's dependence cone of an output element holds beyond the
 * inputs the bound was derived for (docs/nonfinite.md). Ordered: a cone holds
 * the largest level of its inputs. */
typedef enum {
    UG_WILD_NONE = 0,  /* finite inputs below 2^64 in magnitude */
    UG_WILD_CLASS,     /* a NaN or +-inf: a chunked kernel may form a NaN or an
                          infinity the exact formula does not (0 * NaN of a
                          masked term, inf - inf of a reordered sum) */
    UG_WILD_UNBOUNDED, /* a finite |x| >= 2^64: besides, f32 intermediates may
                          overflow where the exact ones do not, which voids the
                          a-priori bound */
} ug_wild;

typedef struct {
    double r_hi, r_lo;  /* r ~= r_hi + r_lo (106 bits); r_hi carries inf/NaN */
    uint32_t rn_bits;   /* RN_T(r), T the output dtype (bf16 in the low 16 bits) */
    uint32_t flagged;   /* staged operands of this element that lie within the
                           kernel's pre-cast error of a bf16 rounding boundary */
    double bound;       /* bound on |y - r| for a correct kernel, rounded up */
    double abs_sum;     /* sum of |terms| (rounded up); condition = abs_sum/|r| */
    ug_wild wild;       /* wild inputs in a kernel's dependence cone of this
                           element (docs/nonfinite.md); ug_ref_finish clears
                           it, the family's descriptor sets it */
    bool no_bound;      /* r is finite but the bound is +inf: an operation the
                           element depends on has an argument outside the
                           profile's declared range (ug_f32_op_error). The
                           runner fails such an element unless its cone is
                           wild; ug_ref_fill sets it */
} ug_ref_value;



/* Working precision of every reference (bits). See docs/error-model.md: the
 * only rounding a reference commits before its final sum is the correctly
 * rounded transcendental (exp), relative error <= 2^-UG_REF_PREC; the sums
 * themselves are exact inputs summed by mpfr_sum with one rounding. */
enum { UG_REF_PREC = 128 };

/* A staged operand: the spec casts x (exact) to bf16, while a kernel casts a
 * pre-cast value known only to lie within `radius` of x. */
typedef struct {
    uint16_t rn;     /* RN_bf16(x): the staged reference's operand */
    uint16_t lo, hi; /* what a correct kernel may produce (equal unless flagged) */
    bool flagged;    /* the window straddles a bf16 rounding boundary */
    double dev;      /* >= max |candidate - x| (rounded up) */
    double mag;      /* max |candidate| */
    double gap;      /* |hi - lo| when flagged, else 0 */
    double abs_x;    /* |x| rounded up */
} ug_staged;

/* x exact (any precision); radius >= 0 an upper bound of the kernel's
 * pre-cast error. A NaN or infinite x is its own cast, unflagged, with
 * infinite magnitudes. */
void ug_stage_operand(const mpfr_t x, const mpfr_t radius, ug_staged *out);

/* Fills a reference value from the reference result r (MPFR), the bound E on
 * the kernel's error before its final rounding to dtype (a double rounded
 * up), and the magnitude sum: bound = E + half an ulp of dtype at |r| + E. */
void ug_ref_finish(ug_ref_value *out, const mpfr_t r, double pre_round_bound, double abs_sum,
                   uint32_t flagged, ug_dtype dtype);

/* The same from r's parts: r_hi = RN_53(r), r_lo = RN_53(r - r_hi) (0 when
 * r_hi is not finite), rn_bits = RN_T(r). ug_ref_finish and the exact
 * accumulator (ref/exact_sum.h) both end here. */
void ug_ref_fill(ug_ref_value *out, double r_hi, double r_lo, uint32_t rn_bits, double pre_round_bound,
                 double abs_sum, uint32_t flagged, ug_dtype dtype);

/* Whether the references take their fast paths (ref/exact_sum.h: exact
 * accumulators, operands prepared once) where those certify the result, or
 * the plain MPFR path everywhere. Both give bit-identical ug_ref_values
 * (tests/test_exact_sum.c); the switch exists so tests can compare them.
 * Default on; process-wide, meant to be set while no reference runs. */
void ug_ref_set_fast(bool on);
bool ug_ref_fast(void);

/* Under a profile that flushes (ug_f32_flushes), a kernel may return a
 * signed zero for a result below the normal range: widens the bound of each
 * of the n values whose |r| - bound lies below 2^-126 to cover |0 - r|.
 * Nothing changes under gradual underflow. The runner applies it to every
 * reference value (all families, both modes). */
void ug_ref_allow_flushed_output(const ug_f32_model *m, ug_ref_value *v, size_t n);

#endif
