/* SPDX-License-Identifier: MIT */
/* AVX2 path of gdn_chunk_cumsum: eight heads per vector, masked at the edge
 * (vmaskmovps: masked-off lanes are neither read nor written); the scan
 * itself is gdn_chunk_cumsum_simd.h. */
#include "vec_avx2.h"
#include "gdn_chunk_cumsum_simd.h"
