/* SPDX-License-Identifier: MIT */
/* A reference's row operations on AVX-512, eight columns at a time, each
 * giving exactly what its scalar form gives:
 *
 * Windows of 52-bit digit products: the AVX-512 IFMA form of exact_sum.h's
 * windows (docs/error-model.md §2.1), for an output row whose terms are
 * row factor × column factor.
 *
 * Each row factor k (term k of the row) is an integer of nd <= 4 digits of
 * 52 bits, c_k = sum_d row_digits[k][d] 2^(52 d), on the row's grid; each
 * column factor is one digit s < 2^52 on its column's grid, stored by token
 * (col_digit[j][col], j = row_j[k]) so that eight columns load at once. A
 * term's sign is the row factor's (row_neg[k], 0 or 0xFF) xor the column
 * factor's (bit col % 8 of col_neg[j][col / 8]). vpmadd52luq / huq add the
 * low and high 52 bits of each digit product into per-digit sums, a
 * negative term -c·s as c·(2^52 - s) with c·2^52 subtracted from the next
 * digit's sum, each sum in (-2^62, 2^63) for fewer than 2^10 terms; the
 * windows then hold
 *     sum_k ±c_k s = sum_d D_d 2^(52 d)
 * exactly, per column, as nc + 2 = 5 limbs of two's complement (the
 * window exact_sum.h reads, below 2^(52·5 + 10)).
 *
 * ug_ref_simd_available() tells whether the CPU has AVX-512 IFMA (valgrind's
 * CPU does not: memcheck runs the portable windows) and the reference has
 * not been told to leave it (ug_xwin52_set_enabled, for the tests). */
#ifndef UG_REF_XWIN52_H
#define UG_REF_XWIN52_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exact_sum.h"

enum { UG_XWIN52_DIGITS = 4, UG_XWIN52_MAX_TERMS = 1 << 10 };

typedef struct {
    size_t n;                   /* terms, at most UG_XWIN52_MAX_TERMS */
    size_t width;               /* columns */
    int nd;                     /* digits of a row factor, 1 .. UG_XWIN52_DIGITS */
    const uint64_t *row_digits; /* [n][UG_XWIN52_DIGITS] */
    const uint8_t *row_neg;     /* [n] */
    const size_t *row_j;        /* [n] */
    const uint64_t *col_digit;  /* [tokens][width] */
    const uint8_t *col_neg;     /* [tokens][(width + 7) / 8] */
} ug_xwin52_row;

/* The column factors as a term with a positive ([0]) or negative ([1])
 * row factor adds them (ug_xwin52_sign_columns), laid out as col_digit
 * and col_neg. */
typedef struct {
    const uint64_t *digit[2];
    const uint8_t *neg[2];
} ug_xwin52_signed;

/* The 52-bit digits of a 208-bit integer given as four limbs (as
 * row_digits holds a row factor). */
static inline void ug_xwin52_digits(const uint64_t limbs[4], uint64_t digit[UG_XWIN52_DIGITS])
{
    for (int d = 0; d < UG_XWIN52_DIGITS; d++) {
        const int bit = 52 * d, k = bit >> 6, shift = bit & 63;
        const uint64_t low = limbs[k] >> shift, high = shift && k + 1 < 4 ? limbs[k + 1] << (64 - shift) : 0;
        digit[d] = (low | high) & ((UINT64_C(1) << 52) - 1);
    }
}

bool ug_ref_simd_available(void);
void ug_ref_simd_set_enabled(bool on); /* default on; process-wide, set while no reference runs */

/* win[col] = the window of column col (0 <= col < width). Requires
 * ug_ref_simd_available(). */
void ug_xwin52_windows(const ug_xwin52_row *r, uint64_t (*win)[UG_XWIN_LIMBS]);

/* The column factors col_digit / col_neg of `tokens` tokens (the layout
 * of ug_xwin52_row's) as terms with a positive (digit[0], neg[0]) or
 * negative ([1]) row factor add them: a negative term (the
 * row factor's sign xor the column factor's, s nonzero) as 2^52 - s, its
 * bit set in the mask, the others as s. Requires ug_ref_simd_available(). */
void ug_xwin52_sign_columns(size_t tokens, size_t width, const uint64_t *col_digit, const uint8_t *col_neg,
                            uint64_t *const digit[2], uint8_t *const neg[2]);

/* ug_xwin52_windows with the column factors signed beforehand and column
 * col's window at win[col * stride] (the same windows, fewer instructions
 * a term; for a caller whose column factors serve many rows of factors and
 * who reads the windows of one column of many rows together). */
void ug_xwin52_windows_signed(const ug_xwin52_row *r, const ug_xwin52_signed *col, uint64_t (*win)[UG_XWIN_LIMBS],
                              size_t stride);

/* The bound's sums of one term over a row of width columns. */
typedef struct {
    double *abs_sum, *cast_err, *acc_mag; /* [width] += a · part */
    uint32_t *flagged;                    /* [width] += part */
} ug_ref_bound_row;

/* Whole rows of such sums, up to UG_REF_BOUND_ROWS rows at once (1 <=
 * rows <= 4): for each row r and col < width, sums[r].X[col] +=
 * weight[r][j] * part_X[j * width + col] (the product rounded, then the
 * sum) and sums[r].flagged[col] += part_flagged[j * width + col], over
 * j = 0, 1, ..., n - 1 in order, a zero weight skipped (each sum held in a
 * register across the terms, the parts
 * loaded once for all the rows; weight and sums hold `rows` entries, only
 * those are read). Requires ug_ref_simd_available(). */
enum { UG_REF_BOUND_ROWS = 4 };
void ug_ref_simd_bound_rows(size_t n, size_t width, size_t rows, const double *const *weight,
                            const double *part_abs, const double *part_err, const double *part_mag,
                            const uint32_t *part_flagged, const ug_ref_bound_row *sums);

/* y[i] += a * x[i] for i < n, the product rounded and then the sum (as
 * the plain loop under -ffp-contract=off). Requires
 * ug_ref_simd_available(). */
void ug_ref_simd_axpy(size_t n, double a, const double *x, double *y);

#endif
