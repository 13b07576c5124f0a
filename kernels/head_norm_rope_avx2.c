/* SPDX-License-Identifier: MIT */
/* AVX2 path of head_norm_rope (built with -mavx2 -mfma): eight lanes per
 * vector; the loops are head_norm_rope_simd.h. */
#include "vec_avx2.h"
#include "head_norm_rope_simd.h"
