/* AVX-512 path of attn_reduce_fwht (built with -mavx512f ... -mfma); the
 * operations of attn_reduce_fwht_paths.h, 16 lanes at a time. */
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

#include "attn_reduce_fwht_pairs.h"

/* One butterfly stage inside a vector: partner holds lane l ^ h; the lane
 * without bit h gets v + partner (= x[l] + x[l+h]), the lane with it gets
 * partner - v (= x[l-h] - x[l]). */
static inline __m512 in_register_stage(__m512 v, __m512 partner, __mmask16 high_lanes)
{
    return _mm512_mask_blend_ps(high_lanes, _mm512_add_ps(v, partner), _mm512_sub_ps(partner, v));
}

static void butterflies(float *x, size_t n)
{
    for (size_t j = 0; j < n; j += LANES) {
        __m512 v = _mm512_loadu_ps(x + j);
        v = in_register_stage(v, _mm512_permute_ps(v, 0xB1), 0xAAAA);                           /* h = 1 */
        v = in_register_stage(v, _mm512_permute_ps(v, 0x4E), 0xCCCC);                           /* h = 2 */
        v = in_register_stage(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)), 0xF0F0);  /* h = 4 */
        v = in_register_stage(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)), 0xFF00);  /* h = 8 */
        _mm512_storeu_ps(x + j, v);
    }
    for (size_t h = LANES; h < n; h *= 2)
        for (size_t base = 0; base < n; base += 2 * h)
            for (size_t j = base; j < base + h; j += LANES) {
                __m512 a = _mm512_loadu_ps(x + j), b = _mm512_loadu_ps(x + j + h);
                _mm512_storeu_ps(x + j, _mm512_add_ps(a, b));
                _mm512_storeu_ps(x + j + h, _mm512_sub_ps(a, b));
            }
}

static void scale_signs(const float *x, size_t n, float scale, const uint32_t *sign_bits, float *out)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (size_t j = 0; j < n; j += LANES) {
        __m512i product = _mm512_castps_si512(_mm512_mul_ps(_mm512_loadu_ps(x + j), s));
        __m512i signs = _mm512_loadu_si512(sign_bits + j);
        _mm512_storeu_ps(out + j, _mm512_castsi512_ps(_mm512_xor_si512(product, signs)));
    }
}

static const attn_reduce_fwht_paths paths = {merge_partials, butterflies, scale_signs, attn_reduce_fwht_fma_chain};
UG_ISA_PATHS(attn_reduce_fwht, UG_VEC_ISA, paths);
