/* SPDX-License-Identifier: MIT */
/* ref/rowsimd.h on AVX-512 IFMA (built with SIMD_FLAGS_avx512ifma). */
#include <immintrin.h>
#include <stdatomic.h>

#include "rowsimd.h"

static atomic_bool enabled = true;

void ug_ref_simd_set_enabled(bool on) { atomic_store(&enabled, on); }

bool ug_ref_simd_available(void)
{
    return atomic_load(&enabled) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
}

/* The digit sums of eight columns for row factors of nd digits (a literal
 * at each call: the loops unroll). */
static inline __attribute__((always_inline)) void digit_sums(const ug_xwin52_row *r, int nd, size_t col0,
                                                             __mmask8 lanes, __m512i pos[], __m512i neg[])
{
    const size_t blocks = (r->width + 7) / 8;
    for (int d = 0; d <= nd; d++) pos[d] = neg[d] = _mm512_setzero_si512();
    for (size_t k = 0; k < r->n; k++) {
        const size_t j = r->row_j[k];
        const __m512i s = _mm512_maskz_loadu_epi64(lanes, r->col_digit + j * r->width + col0);
        const __mmask8 minus = (__mmask8)(r->col_neg[j * blocks + col0 / 8] ^ r->row_neg[k]) & lanes;
        const __mmask8 plus = (__mmask8)~minus & lanes;
        const uint64_t *c = r->row_digits + k * UG_XWIN52_DIGITS;
#pragma GCC unroll 4
        for (int d = 0; d < nd; d++) {
            const __m512i cd = _mm512_set1_epi64((long long)c[d]);
            pos[d] = _mm512_mask_madd52lo_epu64(pos[d], plus, cd, s);
            pos[d + 1] = _mm512_mask_madd52hi_epu64(pos[d + 1], plus, cd, s);
            neg[d] = _mm512_mask_madd52lo_epu64(neg[d], minus, cd, s);
            neg[d + 1] = _mm512_mask_madd52hi_epu64(neg[d + 1], minus, cd, s);
        }
    }
}

void ug_xwin52_windows(const ug_xwin52_row *r, uint64_t (*win)[UG_XWIN_LIMBS])
{
    for (size_t col0 = 0; col0 < r->width; col0 += 8) {
        const size_t lanes_left = r->width - col0;
        const __mmask8 lanes = lanes_left >= 8 ? 0xFF : (__mmask8)((1u << lanes_left) - 1);
        __m512i pos[UG_XWIN52_DIGITS + 1], neg[UG_XWIN52_DIGITS + 1];
        switch (r->nd) {
        case 1: digit_sums(r, 1, col0, lanes, pos, neg); break;
        case 2: digit_sums(r, 2, col0, lanes, pos, neg); break;
        case 3: digit_sums(r, 3, col0, lanes, pos, neg); break;
        default: digit_sums(r, 4, col0, lanes, pos, neg); break;
        }
        /* Per lane: the signed digit sums P_d - N_d (each below 2^63 in
         * magnitude), carried so that digits 0..3 lie in [0, 2^52) and the
         * top one keeps the sign, then packed into the window's limbs. */
        const __m512i digit_mask = _mm512_set1_epi64((long long)((UINT64_C(1) << 52) - 1));
        __m512i d[UG_XWIN52_DIGITS + 1];
        for (int k = 0; k <= UG_XWIN52_DIGITS; k++)
            d[k] = k <= r->nd ? _mm512_sub_epi64(pos[k], neg[k]) : _mm512_setzero_si512();
        for (int k = 0; k < UG_XWIN52_DIGITS; k++) {
            d[k + 1] = _mm512_add_epi64(d[k + 1], _mm512_srai_epi64(d[k], 52));
            d[k] = _mm512_and_si512(d[k], digit_mask);
        }
        const __m512i limb[UG_XWIN_LIMBS] = {
            _mm512_or_si512(d[0], _mm512_slli_epi64(d[1], 52)),
            _mm512_or_si512(_mm512_srli_epi64(d[1], 12), _mm512_slli_epi64(d[2], 40)),
            _mm512_or_si512(_mm512_srli_epi64(d[2], 24), _mm512_slli_epi64(d[3], 28)),
            _mm512_or_si512(_mm512_srli_epi64(d[3], 36), _mm512_slli_epi64(d[4], 16)),
            _mm512_srai_epi64(d[4], 48),
        };
        uint64_t out[UG_XWIN_LIMBS][8];
        for (int k = 0; k < UG_XWIN_LIMBS; k++) _mm512_storeu_si512(out[k], limb[k]);
        for (size_t lane = 0; lane < 8 && lane < lanes_left; lane++)
            for (int k = 0; k < UG_XWIN_LIMBS; k++) win[col0 + lane][k] = out[k][lane];
    }
}

/* Eight columns from col on (lanes: the columns that exist). Full blocks
 * take plain loads and stores: a masked store does not forward to the next
 * term's load of the same sums. */
static inline __attribute__((always_inline)) void bound_block(size_t col, __mmask8 lanes, bool full, __m512d va,
                                                              const double *part_abs, const double *part_err,
                                                              const double *part_mag, const uint32_t *part_flagged,
                                                              const ug_ref_bound_row *sums)
{
    double *const dst[3] = {sums->abs_sum + col, sums->cast_err + col, sums->acc_mag + col};
    const double *const src[3] = {part_abs + col, part_err + col, part_mag + col};
#pragma GCC unroll 3
    for (int k = 0; k < 3; k++) {
        const __m512d part = full ? _mm512_loadu_pd(src[k]) : _mm512_maskz_loadu_pd(lanes, src[k]);
        const __m512d sum = full ? _mm512_loadu_pd(dst[k]) : _mm512_maskz_loadu_pd(lanes, dst[k]);
        const __m512d next = _mm512_add_pd(sum, _mm512_mul_pd(va, part));
        if (full)
            _mm512_storeu_pd(dst[k], next);
        else
            _mm512_mask_storeu_pd(dst[k], lanes, next);
    }
    const __m256i f = full ? _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(sums->flagged + col)),
                                              _mm256_loadu_si256((const __m256i *)(part_flagged + col)))
                           : _mm256_add_epi32(_mm256_maskz_loadu_epi32(lanes, sums->flagged + col),
                                              _mm256_maskz_loadu_epi32(lanes, part_flagged + col));
    if (full)
        _mm256_storeu_si256((__m256i *)(sums->flagged + col), f);
    else
        _mm256_mask_storeu_epi32(sums->flagged + col, lanes, f);
}

void ug_ref_simd_bound_parts(size_t width, double a, const double *part_abs, const double *part_err,
                             const double *part_mag, const uint32_t *part_flagged, const ug_ref_bound_row *sums)
{
    const __m512d va = _mm512_set1_pd(a);
    size_t col = 0;
    for (; col + 8 <= width; col += 8)
        bound_block(col, 0xFF, true, va, part_abs, part_err, part_mag, part_flagged, sums);
    if (col < width)
        bound_block(col, (__mmask8)((1u << (width - col)) - 1), false, va, part_abs, part_err, part_mag, part_flagged,
                    sums);
}
