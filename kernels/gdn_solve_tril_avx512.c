/* SPDX-License-Identifier: MIT */
/* AVX-512 path of gdn_solve_tril (built with -mavx512f ...): sixteen columns
 * per vector; the solver itself is gdn_solve_tril_simd.h. */
#include "vec_avx512.h"
#include "gdn_solve_tril_simd.h"
