/* SPDX-License-Identifier: MIT */
/* The per-ISA chunk scans of gdn_chunk_cumsum (private to kernels/).
 *
 * The portable scan lives in gdn_chunk_cumsum.c; gdn_chunk_cumsum_avx2.c and
 * gdn_chunk_cumsum_avx512.c instantiate gdn_chunk_cumsum_simd.h over their
 * vec_<isa>.h; each registers its paths (isa.h). Each
 * computes, for every head h < heads of one chunk of `rows` tokens (row r at
 * in + r * stride), out[r][h] = fl(... fl(fl(+0 + in[0][h]) + in[1][h]) ...
 * + in[r][h]): one f32 addition per element in token order, so every path
 * produces identical bits. */
#ifndef UG_GDN_CHUNK_CUMSUM_PATHS_H
#define UG_GDN_CHUNK_CUMSUM_PATHS_H

#include <stddef.h>

#include "isa.h"

typedef struct {
    void (*scan)(const float *in, float *out, size_t rows, size_t heads, size_t stride);
} gdn_chunk_cumsum_paths;
UG_ISA_PATHS_DECLARE(gdn_chunk_cumsum);

#endif
