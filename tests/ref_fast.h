/* SPDX-License-Identifier: MIT */
/* The references' fast paths against their MPFR paths (ug_ref_set_fast),
 * shared by the test files that compare them (tests/test_ref_fast_*.c). */
#ifndef UG_TESTS_REF_FAST_H
#define UG_TESTS_REF_FAST_H

#include <stddef.h>

#include "../ref/ref.h"

/* The elements of two reference outputs that differ in any field, bit for
 * bit (NaNs of either sign equal); each counted into *mismatches, the first
 * five printed. */
size_t ug_test_count_ref_differences(const ug_ref_value *a, const ug_ref_value *b, size_t n, size_t *mismatches);

/* Every regime of a family on n_shapes shapes (values: n_names parameter
 * values each, in the order of names), both modes, fast path against MPFR
 * path; returns the elements compared. */
size_t ug_test_family_fast_equals_mpfr(const char *family, const char *const *names, size_t n_names,
                                       const double *values, size_t n_shapes);

#endif
