/* SPDX-License-Identifier: MIT */
/* The merge of attn_reduce_fwht_paths.h for the seed's layout (wg_stride 4,
 * group_stride nwg * 4), shared by the AVX2 and AVX-512 paths (private to
 * kernels/; included by files built with -mavx2 -mfma or more).
 *
 * A 256-bit vector holds groups i and i + 1 (their chains: one per lane).
 * Each 32-byte load is one group's partials of workgroups w and w + 1, so
 * the loads of two groups are a 2 x 2 of 128-bit blocks, transposed by one
 * in-lane insert and one cross-lane permute into the vectors of w and of
 * w + 1: per 16 elements per workgroup two shuffles of 256 bits, where the
 * 4 x 4 transpose of zmm blocks had two double-pumped ones on Zen 4 and the
 * 128-bit inserts three (measured: docs/performance.md, "Measurements behind
 * code comments"). MERGE_PAIRS pairs of groups (chains) are in flight.
 *
 * It also gives the paths' merge_partials: the including file defines
 * merge_strided (any strides) first. */
#ifndef UG_ATTN_REDUCE_FWHT_PAIRS_H
#define UG_ATTN_REDUCE_FWHT_PAIRS_H

#include <immintrin.h>
#include <stddef.h>

#include "attn_reduce_fwht_paths.h"

enum { MERGE_PAIRS = 4, MERGE_GROUP = 4 };

/* groups a multiple of 2 * MERGE_PAIRS. */
static void merge_pairs(const float *partials, size_t groups, size_t nwg, const float *m, float inv_s, float *y)
{
    const size_t group_stride = nwg * MERGE_GROUP;
    const __m256 inv = _mm256_set1_ps(inv_s);
    for (size_t i = 0; i < groups; i += 2 * MERGE_PAIRS) {
        __m256 acc[MERGE_PAIRS];
        _Pragma("GCC unroll 4") for (size_t u = 0; u < MERGE_PAIRS; u++) acc[u] = _mm256_setzero_ps();
        size_t w = 0;
        for (; w + 2 <= nwg; w += 2) {
            const __m256 m0 = _mm256_set1_ps(m[w]), m1 = _mm256_set1_ps(m[w + 1]);
            _Pragma("GCC unroll 4") for (size_t u = 0; u < MERGE_PAIRS; u++) {
                const float *g = partials + (i + 2 * u) * group_stride + MERGE_GROUP * w;
                const __m256 l0 = _mm256_loadu_ps(g), l1 = _mm256_loadu_ps(g + group_stride);
                acc[u] = _mm256_fmadd_ps(_mm256_insertf128_ps(l0, _mm256_castps256_ps128(l1), 1), m0, acc[u]);
                acc[u] = _mm256_fmadd_ps(_mm256_permute2f128_ps(l0, l1, 0x31), m1, acc[u]);
            }
        }
        if (w < nwg) {
            const __m256 m0 = _mm256_set1_ps(m[w]);
            _Pragma("GCC unroll 4") for (size_t u = 0; u < MERGE_PAIRS; u++) {
                const float *g = partials + (i + 2 * u) * group_stride + MERGE_GROUP * w;
                const __m256 last = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(g)),
                                                         _mm_loadu_ps(g + group_stride), 1);
                acc[u] = _mm256_fmadd_ps(last, m0, acc[u]);
            }
        }
        _Pragma("GCC unroll 4") for (size_t u = 0; u < MERGE_PAIRS; u++)
            _mm256_storeu_ps(y + MERGE_GROUP * (i + 2 * u), _mm256_mul_ps(acc[u], inv));
    }
}

static void merge_partials(const float *partials, size_t groups, size_t group_stride, size_t nwg,
                           size_t wg_stride, const float *m, float inv_s, float *y)
{
    if (wg_stride == MERGE_GROUP && group_stride == nwg * MERGE_GROUP && groups % (2 * MERGE_PAIRS) == 0)
        merge_pairs(partials, groups, nwg, m, inv_s, y);
    else
        merge_strided(partials, groups, group_stride, nwg, wg_stride, m, inv_s, y);
}

#endif
