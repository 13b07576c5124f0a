/* SPDX-License-Identifier: MIT */
/* AVX-512 path of gdn_chunk_cumsum: sixteen heads per vector, masked at the
 * edge; the scan itself is gdn_chunk_cumsum_simd.h. */
#include "vec_avx512.h"
#include "gdn_chunk_cumsum_simd.h"
