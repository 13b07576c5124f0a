/* SPDX-License-Identifier: MIT */
/* AVX-512 path of attn_reduce_fwht (built with -mavx512f ... -mfma); the
 * operations of attn_reduce_fwht_paths.h, 16 lanes at a time: the strided
 * merge and the in-register butterflies here, the rest
 * attn_reduce_fwht_simd.h. */
#include "attn_reduce_fwht_paths.h"
#include "vec_avx512.h"

enum { GROUP = 4 };

/* Groups i .. i + 3 (4 elements each) of one workgroup, as one vector. */
static inline __m512 load_four_groups(const float *group0, size_t group_stride)
{
    __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(group0));
    v = _mm512_insertf32x4(v, _mm_loadu_ps(group0 + group_stride), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(group0 + 2 * group_stride), 2);
    return _mm512_insertf32x4(v, _mm_loadu_ps(group0 + 3 * group_stride), 3);
}

/* Eight groups per iteration in two accumulators, so that two FMA chains
 * are in flight; any strides (merge_pairs covers the seed's). */
static void merge_strided(const float *partials, size_t groups, size_t group_stride, size_t nwg,
                           size_t wg_stride, const float *m, float inv_s, float *y)
{
    const __m512 inv = _mm512_set1_ps(inv_s);
    for (size_t i = 0; i < groups; i += 8) {
        const float *g = partials + i * group_stride;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (size_t w = 0; w < nwg; w++) {
            const __m512 weight = _mm512_set1_ps(m[w]);
            acc0 = _mm512_fmadd_ps(load_four_groups(g + w * wg_stride, group_stride), weight, acc0);
            acc1 = _mm512_fmadd_ps(load_four_groups(g + 4 * group_stride + w * wg_stride, group_stride),
                                   weight, acc1);
        }
        _mm512_storeu_ps(y + GROUP * i, _mm512_mul_ps(acc0, inv));
        _mm512_storeu_ps(y + GROUP * i + LANES, _mm512_mul_ps(acc1, inv));
    }
}

/* One butterfly stage inside a vector: partner holds lane l ^ h; the lane
 * without bit h gets v + partner (= x[l] + x[l+h]), the lane with it gets
 * partner - v (= x[l-h] - x[l]). */
static inline __m512 in_register_stage(__m512 v, __m512 partner, __mmask16 high_lanes)
{
    return _mm512_mask_blend_ps(high_lanes, _mm512_add_ps(v, partner), _mm512_sub_ps(partner, v));
}

static inline vec in_register_stages(vec v)
{
    v = in_register_stage(v, _mm512_permute_ps(v, 0xB1), 0xAAAA);                           /* h = 1 */
    v = in_register_stage(v, _mm512_permute_ps(v, 0x4E), 0xCCCC);                           /* h = 2 */
    v = in_register_stage(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)), 0xF0F0);  /* h = 4 */
    return in_register_stage(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)), 0xFF00); /* h = 8 */
}

#include "attn_reduce_fwht_simd.h"
