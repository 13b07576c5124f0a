/* SPDX-License-Identifier: MIT */
/* AVX2 path of attn_reduce_fwht (built with -mavx2 -mfma); the operations of
 * attn_reduce_fwht_paths.h, 8 lanes at a time: the strided merge and the
 * in-register butterflies here, the rest attn_reduce_fwht_simd.h. */
#include "attn_reduce_fwht_paths.h"
#include "vec_avx2.h"

enum { GROUP = 4 };

/* Groups i and i + 1 (4 elements each) of workgroup w, as one vector. */
static inline __m256 load_two_groups(const float *group0, size_t group_stride)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(group0)),
                                _mm_loadu_ps(group0 + group_stride), 1);
}

/* Four groups per iteration in two accumulators, so that two FMA chains
 * are in flight; any strides (merge_pairs covers the seed's). */
static void merge_strided(const float *partials, size_t groups, size_t group_stride, size_t nwg,
                          size_t wg_stride, const float *m, float inv_s, float *y)
{
    const __m256 inv = _mm256_set1_ps(inv_s);
    for (size_t i = 0; i < groups; i += 4) {
        const float *g = partials + i * group_stride;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        for (size_t w = 0; w < nwg; w++) {
            const __m256 weight = _mm256_set1_ps(m[w]);
            acc0 = _mm256_fmadd_ps(load_two_groups(g + w * wg_stride, group_stride), weight, acc0);
            acc1 = _mm256_fmadd_ps(load_two_groups(g + 2 * group_stride + w * wg_stride, group_stride),
                                   weight, acc1);
        }
        _mm256_storeu_ps(y + GROUP * i, _mm256_mul_ps(acc0, inv));
        _mm256_storeu_ps(y + GROUP * i + LANES, _mm256_mul_ps(acc1, inv));
    }
}

/* One butterfly stage inside a vector: partner holds lane l ^ h; the lane
 * without bit h gets v + partner (= x[l] + x[l+h]), the lane with it gets
 * partner - v (= x[l-h] - x[l]). */
#define IN_REGISTER_STAGE(v, partner, high_lanes)                                                   \
    _mm256_blend_ps(_mm256_add_ps((v), (partner)), _mm256_sub_ps((partner), (v)), (high_lanes))

static inline vec in_register_stages(vec v)
{
    v = IN_REGISTER_STAGE(v, _mm256_permute_ps(v, 0xB1), 0xAA);           /* h = 1 */
    v = IN_REGISTER_STAGE(v, _mm256_permute_ps(v, 0x4E), 0xCC);           /* h = 2 */
    return IN_REGISTER_STAGE(v, _mm256_permute2f128_ps(v, v, 0x01), 0xF0); /* h = 4 */
}

#include "attn_reduce_fwht_simd.h"
