/* SPDX-License-Identifier: MIT */
/* ref/gdn_e2e_simd.h on AVX-512 (built with SIMD_FLAGS_avx512). */
#include <immintrin.h>

#include "gdn_e2e_simd.h"

void gdn_e2e_simd_dot(const uint64_t (*col)[4], size_t n, const gdn_e2e_simd_digits *digits, int64_t m_sum,
                      uint64_t out[6])
{
    /* bias: -2^31 in every low half (xor of bit 31 on the low word), and in
     * every high half but the top limb's (lanes 3 and 7: vpmuldq reads the
     * shifted top half as signed, X's sign) */
    const __m512i low_bias = _mm512_set1_epi64(INT64_C(0x80000000));
    const __m512i high_bias = _mm512_set_epi64(0, 0x80000000, 0x80000000, 0x80000000, 0, 0x80000000, 0x80000000,
                                               0x80000000);
    __m512i lo_lo = _mm512_setzero_si512(), lo_hi = lo_lo, hi_lo = lo_lo, hi_hi = lo_lo;
    for (size_t p = 0; p < n / 2; p++) {
        const __m512i x = _mm512_loadu_si512(col[2 * p]);
        const __m512i d_lo = _mm512_loadu_si512(digits[p][0]), d_hi = _mm512_loadu_si512(digits[p][1]);
        const __m512i low = _mm512_xor_si512(x, low_bias);
        const __m512i high = _mm512_xor_si512(_mm512_srli_epi64(x, 32), high_bias);
        lo_lo = _mm512_add_epi64(lo_lo, _mm512_mul_epi32(low, d_lo));
        lo_hi = _mm512_add_epi64(lo_hi, _mm512_mul_epi32(low, d_hi));
        hi_lo = _mm512_add_epi64(hi_lo, _mm512_mul_epi32(high, d_lo));
        hi_hi = _mm512_add_epi64(hi_hi, _mm512_mul_epi32(high, d_hi));
    }
    /* limb i's sum as a signed 128-bit value: the two entries' lanes (each
     * below 2^62), at their digits' offsets, and the biases */
    const __m512i sums[4] = {lo_lo, lo_hi, hi_lo, hi_hi};
    static const int offset[4] = {0, 24, 32, 56};
    __int128 limb_sum[4] = {0};
    for (int a = 0; a < 4; a++) {
        int64_t lanes[GDN_E2E_SIMD_LANES];
        _mm512_storeu_si512(lanes, sums[a]);
        for (int i = 0; i < 4; i++) limb_sum[i] += (__int128)(lanes[i] + lanes[i + 4]) * ((__int128)1 << offset[a]);
    }
    for (int i = 0; i < 4; i++) limb_sum[i] += (__int128)m_sum * (i < 3 ? ((__int128)1 << 31) + ((__int128)1 << 63)
                                                                          : (__int128)1 << 31);
    __int128 carry = 0; /* out = sum_i limb_sum[i] 2^(64 i), each below 2^122 */
    for (int i = 0; i < 6; i++) {
        const __int128 t = carry + (i < 4 ? limb_sum[i] : 0);
        out[i] = (uint64_t)t;
        carry = t >> 64; /* arithmetic: GCC's >> of a negative __int128 */
    }
}
