/* AVX-512 path of attn_reduce_fwht (built with -mavx512f ... -mfma); the
 * operations of attn_reduce_fwht_paths.h, 16 lanes at a time. */
#include <immintrin.h>

#include "attn_reduce_fwht_paths.h"

enum { LANES = 16, GROUP = 4 };

/* Groups i .. i + 3 (4 elements each) of one workgroup, as one vector. */
static inline __m512 load_four_groups(const float *group0, size_t group_stride)
{
    __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(group0));
    v = _mm512_insertf32x4(v, _mm_loadu_ps(group0 + group_stride), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(group0 + 2 * group_stride), 2);
    return _mm512_insertf32x4(v, _mm_loadu_ps(group0 + 3 * group_stride), 3);
}

/* Eight groups per iteration in two accumulators, so that two FMA chains
 * are in flight; any strides (the transposed merge below covers the seed's). */
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

/* Quads of groups i .. i + 3 whose partials are [group][workgroup][4]
 * (wg_stride 4): a group's partials of four workgroups are one 64-byte line,
 * so each line is loaded whole and the 4 x 4 blocks of 128 bits of four
 * groups' lines transposed (eight two-source shuffles), which gives one
 * vector per workgroup holding the four groups, in the order of its FMA
 * chain. QUADS quads are merged at once, so that as many chains are in flight. */
enum { QUADS = 4 };

/* -O2 does not unroll these short loops by itself; unrolled, with constant
 * trip counts, the accumulators and the transposed vectors stay in registers. */
#define UNROLLED _Pragma("GCC unroll 4")

static void merge_contiguous(const float *partials, size_t groups, size_t nwg, const float *m, float inv_s,
                             float *y)
{
    const size_t group_stride = nwg * GROUP;
    const __m512 inv = _mm512_set1_ps(inv_s);
    for (size_t i = 0; i < groups; i += QUADS * 4) {
        __m512 acc[QUADS];
        UNROLLED for (size_t u = 0; u < QUADS; u++) acc[u] = _mm512_setzero_ps();
        for (size_t w0 = 0; w0 < nwg; w0 += 4) {
            const __mmask16 lanes = nwg - w0 >= 4 ? 0xFFFF : (__mmask16)((1u << (GROUP * (nwg - w0))) - 1u);
            __m512 by_wg[QUADS][4];
            UNROLLED for (size_t u = 0; u < QUADS; u++) {
                const float *line = partials + (i + 4 * u) * group_stride + w0 * GROUP;
                const __m512 l0 = _mm512_maskz_loadu_ps(lanes, line), l1 = _mm512_maskz_loadu_ps(lanes, line + group_stride),
                             l2 = _mm512_maskz_loadu_ps(lanes, line + 2 * group_stride),
                             l3 = _mm512_maskz_loadu_ps(lanes, line + 3 * group_stride);
                const __m512 t0 = _mm512_shuffle_f32x4(l0, l1, _MM_SHUFFLE(1, 0, 1, 0));
                const __m512 t1 = _mm512_shuffle_f32x4(l0, l1, _MM_SHUFFLE(3, 2, 3, 2));
                const __m512 t2 = _mm512_shuffle_f32x4(l2, l3, _MM_SHUFFLE(1, 0, 1, 0));
                const __m512 t3 = _mm512_shuffle_f32x4(l2, l3, _MM_SHUFFLE(3, 2, 3, 2));
                by_wg[u][0] = _mm512_shuffle_f32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));
                by_wg[u][1] = _mm512_shuffle_f32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
                by_wg[u][2] = _mm512_shuffle_f32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
                by_wg[u][3] = _mm512_shuffle_f32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
            }
            UNROLLED for (size_t k = 0; k < 4; k++) {
                if (w0 + k == nwg) break;
                const __m512 weight = _mm512_set1_ps(m[w0 + k]);
                UNROLLED for (size_t u = 0; u < QUADS; u++) acc[u] = _mm512_fmadd_ps(by_wg[u][k], weight, acc[u]);
            }
        }
        UNROLLED for (size_t u = 0; u < QUADS; u++) _mm512_storeu_ps(y + GROUP * (i + 4 * u), _mm512_mul_ps(acc[u], inv));
    }
}

static void merge_partials(const float *partials, size_t groups, size_t group_stride, size_t nwg,
                           size_t wg_stride, const float *m, float inv_s, float *y)
{
    if (wg_stride == GROUP && group_stride == nwg * GROUP && groups % (QUADS * 4) == 0)
        merge_contiguous(partials, groups, nwg, m, inv_s, y);
    else
        merge_strided(partials, groups, group_stride, nwg, wg_stride, m, inv_s, y);
}

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

const attn_reduce_fwht_path attn_reduce_fwht_path_avx512 = {merge_partials, butterflies, scale_signs,
                                                       attn_reduce_fwht_fma_chain};
