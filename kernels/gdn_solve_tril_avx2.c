/* SPDX-License-Identifier: MIT */
/* AVX2 path of gdn_solve_tril (built with -mavx2 -mfma): eight columns per
 * vector; the solver itself is gdn_solve_tril_simd.h. */
#include "vec_avx2.h"
#include "gdn_solve_tril_simd.h"
