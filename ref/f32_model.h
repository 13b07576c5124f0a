/* SPDX-License-Identifier: MIT */
/* The f32 arithmetic every reference's bound assumes of a kernel: one model,
 * driven by an arithmetic profile (fixtures/profiles/NAME.json, loaded by
 * harness/profile.h; format in docs/profiles.md, derivations in
 * docs/error-model.md).
 *
 * Fixed by IEEE binary32, whatever the profile: + - * and every f32 rounding
 * are to nearest with unit roundoff u = 2^-24 (UG_F32_U). Declared by the
 * profile: the error of each elementary operation (exp, exp2, log2, pow,
 * rsqrt, sqrt, div, sin, cos) as a function of its argument, which of them
 * are exact at argument 0, how subnormals are handled, and whether the
 * matmul-like products round their operands to tf32 first.
 *
 * Every function here returns an upper bound rounded up (binary64), so a
 * reference can add and multiply them with UG_F32_SLACK as its only further
 * allowance. Under the built-in `cpu` profile each function returns exactly
 * the constants the references used before profiles existed (tested). */
#ifndef UG_REF_F32_MODEL_H
#define UG_REF_F32_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Unit roundoff of one f32 rounding to nearest (normal range). */
#define UG_F32_U 0x1p-24
/* The smallest normal f32: below it a flushing target may return zero. */
#define UG_F32_MIN_NORMAL 0x1p-126
/* Upward margin for the binary64 roundings of a bound's own formula (a sum
 * of at most 64 nonnegative terms in round-to-nearest errs by < 2^-46): every
 * reference multiplies by it where it rounds a bound; the only such constant. */
#define UG_F32_SLACK (1.0 + 0x1p-40)

/* The elementary operations a profile declares, in profile key order. */
typedef enum {
    UG_F32_EXP = 0, /* "exp":   expf(x) */
    UG_F32_EXP2,    /* "exp2":  exp2f(x) */
    UG_F32_LOG2,    /* "log2":  log2f(x) */
    UG_F32_POW,     /* "pow":   powf(b, x); x is the exponent */
    UG_F32_RSQRT,   /* "rsqrt": 1/sqrtf(x) as one operation */
    UG_F32_SQRT,    /* "sqrt":  sqrtf(x) */
    UG_F32_DIV,     /* "div":   a / x; x is the divisor */
    UG_F32_SIN,     /* "sin":   sinf(x) */
    UG_F32_COS,     /* "cos":   cosf(x) */
    UG_F32_OP_COUNT
} ug_f32_op;

/* The profile key of op ("exp", ...), or NULL for an out-of-range value. */
const char *ug_f32_op_name(ug_f32_op op);

typedef enum {
    UG_SUBNORMALS_GRADUAL = 0,   /* "gradual": IEEE gradual underflow */
    UG_SUBNORMALS_FLUSH_INPUTS,  /* "flush-inputs": subnormal operands read as +-0 */
    UG_SUBNORMALS_FLUSH_OUTPUTS, /* "flush-outputs": results below 2^-126 may become +-0 */
    UG_SUBNORMALS_FLUSH,         /* "flush": both */
} ug_subnormals;

typedef enum {
    UG_PRODUCTS_F32 = 0, /* "f32": products of f32 operands, rounded once */
    UG_PRODUCTS_TF32,    /* "tf32": matmul-like products round both operands to
                            11 significant bits first (opt-in, reported) */
} ug_products;

/* |op_hat(x) - op(x)| <= (ulps + ulps_per_abs_x |x|) ulp_f32(op(x)) + rel |op(x)| + abs
 * for x in [range_lo, range_hi]; outside, op is unbounded. exact_at_zero:
 * op_hat(0) == op(0) exactly. All fields >= 0 (the loader refuses others). */
typedef struct {
    double ulps, ulps_per_abs_x, rel, abs;
    double range_lo, range_hi; /* -inf, +inf when the profile gives no range */
    bool exact_at_zero;
} ug_f32_op_allowance;

enum { UG_PROFILE_NAME_MAX = 64, UG_PROFILE_ORIGIN_MAX = 512, UG_PROFILE_TEXT_MAX = 512 };

/* What a report and a baseline record of the profile a run used. */
typedef struct {
    char name[UG_PROFILE_NAME_MAX];     /* "cpu" (the file's "profile" key) */
    char hash[17];                      /* FNV-1a 64 of the file's bytes, 16 hex digits */
    char origin[UG_PROFILE_ORIGIN_MAX]; /* the path it was loaded from */
    ug_products products;               /* reports say "tf32 products" when set */
} ug_profile_id;

/* A profile as loaded (harness/profile.h fills it; tests may build one). */
typedef struct ug_f32_model {
    ug_profile_id id;
    char description[UG_PROFILE_TEXT_MAX];
    char doc[UG_PROFILE_TEXT_MAX];      /* "docs/profiles.md#cuda" */
    ug_subnormals subnormals;
    ug_products products;
    ug_f32_op_allowance ops[UG_F32_OP_COUNT];
} ug_f32_model;

/* |op_hat(x) - op(x)| <= rel |op(x)| + abs. {0, 0}: exact. */
typedef struct {
    double rel, abs;
} ug_f32_error;

/* "gradual", "flush-inputs", ...; "f32", "tf32". */
const char *ug_subnormals_name(ug_subnormals s);
const char *ug_products_name(ug_products p);

/* gamma_n = n u / (1 - n u) in binary64 (one rounding to nearest, within
 * 2^-53 relative: the UG_F32_SLACK a bound multiplies by covers it): the
 * relative error of n f32 roundings in a row, e.g. of a sum of n + 1 terms in
 * any order. Independent of the profile. n u < 1 assumed (n < 2^23). */
double ug_f32_gamma(size_t n);

/* The same for a matmul-like dot product whose n roundings include its
 * products: gamma itself (bit for bit) under "f32" products; under "tf32"
 * widened by the operands' rounding to 11 bits, (1+gamma)(1+2^-11)^2 - 1
 * rounded up. Use it for the sums of products a tensor core would form. */
double ug_f32_dot_gamma(const ug_f32_model *m, double gamma);

/* Absolute error allowed per rounding whose exact result lies below the
 * normal range: 2^-149 (a subnormal ulp) under gradual underflow, 2^-126
 * when the profile flushes inputs or outputs (a flushed value or operand). */
double ug_f32_underflow(const ug_f32_model *m);
/* The same for a correctly rounded step: 2^-150 (half a subnormal ulp)
 * under gradual underflow, 2^-126 under any flushing. */
double ug_f32_underflow_half(const ug_f32_model *m);
/* Whether results below 2^-126 may come out as a signed zero (outputs
 * flushed, or inputs flushed by whatever consumes them). */
bool ug_f32_flushes(const ug_f32_model *m);

/* Error of op_hat(x) for every x in [lo, hi] (lo <= hi; lo == hi for one
 * argument): rel = (ulps + ulps_per_abs_x max|x|) 2^-23 + rel_op,
 * abs = (ulps + ulps_per_abs_x max|x|) 2^-149 + abs_op (+ 2^-126 when the
 * profile flushes), from ulp_f32(y) <= 2^-23 |y| + 2^-149. {0, 0} when
 * lo == hi == 0 and op is exact at zero; {inf, inf} when [lo, hi] leaves the
 * declared range or is NaN: the element's bound becomes infinite, and the
 * runner reports such an element, it never passes silently. */
ug_f32_error ug_f32_op_error(const ug_f32_model *m, ug_f32_op op, double lo, double hi);

/* Error of the kernel's expf(fl32(d)) against exp(d), for a difference d
 * known only to within its sign and magnitude (d_away: d rounded away from
 * zero): the exp allowance over the argument's reach, rel widened by
 * exp(u |d|) - 1 for the f32 rounding of d (and by 2^-126 when a flushing
 * profile may zero it). d_away == 0: the allowance at argument 0. */
ug_f32_error ug_f32_exp_of_rounded(const ug_f32_model *m, double d_away);

/* Error of the kernel's expf(fl32(a - b)) against exp(a - b), for f32 a, b
 * with a - b below the f32 overflow threshold: {0, 0} when a == b and exp
 * is exact at zero; the exp allowance at a - b when the f32 difference is
 * exact; else widened by exp(u |a - b|) - 1 for the difference's rounding
 * (and by 2^-126 when a flushing profile may zero it). */
ug_f32_error ug_f32_exp_of_difference(const ug_f32_model *m, float a, float b);

/* |op_hat - op| for |op| <= magnitude: (magnitude rel + abs) UG_F32_SLACK,
 * rounded up; 0 when e is exact ({0, 0}), inf when e is. */
double ug_f32_error_at(ug_f32_error e, double magnitude);

#endif
