/* SPDX-License-Identifier: MIT */
/* AVX-512 path of head_norm_rope (built with -mavx512f -mavx512bw ...):
 * sixteen lanes per vector; the loops are head_norm_rope_simd.h. */
#include "vec_avx512.h"
#include "head_norm_rope_simd.h"
