/* SPDX-License-Identifier: MIT */
/* The vector chunk scan of gdn_chunk_cumsum, written once for every SIMD
 * path (included by gdn_chunk_cumsum_<isa>.c after its vec_<isa>.h), which
 * it registers as that ISA's. The running sums of a group of up to
 * MAX_VECTORS * LANES heads stay in registers over the chunk's rows: each
 * row is one vector load, add and store per LANES heads. */
#include "gdn_chunk_cumsum.h"
#include "gdn_chunk_cumsum_paths.h"

enum { MAX_VECTORS = 4 };

/* One group of `vectors` (a constant after inlining) vectors of heads, the
 * last holding `last` heads. */
static inline __attribute__((always_inline)) void scan_group(const float *in, float *out, size_t rows,
                                                             size_t stride, size_t vectors, size_t last)
{
    vec sum[MAX_VECTORS];
#pragma GCC unroll 4
    for (size_t v = 0; v < vectors; v++) sum[v] = vec_zero();
    for (size_t r = 0; r < rows; r++) {
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; v++) {
            const size_t at = r * stride + v * LANES;
            const size_t stored = UG_MUTANT == GDN_CHUNK_CUMSUM_MUT_VECTOR_TAIL_LANE_DROPPED ? last - 1 : last;
            const vec_mask lanes = vec_first(v + 1 < vectors ? LANES : stored);
            sum[v] = vec_add(sum[v], vec_load_first(in + at, lanes));
            vec_store_first(out + at, lanes, sum[v]);
        }
    }
}

static void scan(const float *in, float *out, size_t rows, size_t heads, size_t stride)
{
    for (size_t h0 = 0; h0 < heads; h0 += MAX_VECTORS * LANES) {
        const size_t width = heads - h0 < MAX_VECTORS * LANES ? heads - h0 : MAX_VECTORS * LANES;
        const size_t vectors = (width + LANES - 1) / LANES, last = width - (vectors - 1) * LANES;
        switch (vectors) {
        case 1: scan_group(in + h0, out + h0, rows, stride, 1, last); break;
        case 2: scan_group(in + h0, out + h0, rows, stride, 2, last); break;
        case 3: scan_group(in + h0, out + h0, rows, stride, 3, last); break;
        default: scan_group(in + h0, out + h0, rows, stride, 4, last); break;
        }
    }
}

static const gdn_chunk_cumsum_paths paths = {scan};
UG_ISA_PATHS(gdn_chunk_cumsum, UG_VEC_ISA, paths);
