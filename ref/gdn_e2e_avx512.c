/* SPDX-License-Identifier: MIT */
/* ref/gdn_e2e_simd.h on AVX-512 (built with SIMD_FLAGS_avx512). */
#include <immintrin.h>

#include "gdn_e2e_simd.h"

int gdn_e2e_simd_set_digits(gdn_e2e_simd_digits *digits, const int64_t *m, size_t n, int64_t *m_sum)
{
    int64_t largest = 0;
    *m_sum = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t magnitude = m[i] < 0 ? -m[i] : m[i];
        if (magnitude > largest) largest = magnitude;
        *m_sum += m[i];
    }
    const int nd = largest >> GDN_E2E_SIMD_ONE_DIGIT_BITS ? 2 : 1;
    const int64_t digit_mask = (INT64_C(1) << GDN_E2E_SIMD_DIGIT_BITS) - 1;
    for (size_t i = 0; i < n; i++) {
        const int64_t sign = m[i] < 0 ? -1 : 1, magnitude = m[i] * sign;
        for (size_t lane = 4 * (i % 2); lane < 4 * (i % 2) + 4; lane++) {
            digits[i / 2][0][lane] = nd == 1 ? m[i] : sign * (magnitude & digit_mask);
            digits[i / 2][1][lane] = nd == 1 ? 0 : sign * (magnitude >> GDN_E2E_SIMD_DIGIT_BITS);
        }
    }
    return nd;
}

/* The four digit-product sums over the column (lo_hi and hi_hi stay 0 with
 * one digit: the loop a literal at each call, unrolled). */
static inline __attribute__((always_inline)) void digit_sums(const uint64_t (*col)[4], size_t n,
                                                             const gdn_e2e_simd_digits *digits, int nd,
                                                             __m512i sums[4])
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
        const __m512i d_lo = _mm512_loadu_si512(digits[p][0]);
        const __m512i low = _mm512_xor_si512(x, low_bias);
        const __m512i high = _mm512_xor_si512(_mm512_srli_epi64(x, 32), high_bias);
        lo_lo = _mm512_add_epi64(lo_lo, _mm512_mul_epi32(low, d_lo));
        hi_lo = _mm512_add_epi64(hi_lo, _mm512_mul_epi32(high, d_lo));
        if (nd == 2) {
            const __m512i d_hi = _mm512_loadu_si512(digits[p][1]);
            lo_hi = _mm512_add_epi64(lo_hi, _mm512_mul_epi32(low, d_hi));
            hi_hi = _mm512_add_epi64(hi_hi, _mm512_mul_epi32(high, d_hi));
        }
    }
    sums[0] = lo_lo, sums[1] = lo_hi, sums[2] = hi_lo, sums[3] = hi_hi;
}

void gdn_e2e_simd_dot(const uint64_t (*col)[4], size_t n, const gdn_e2e_simd_digits *digits, int nd, int64_t m_sum,
                      uint64_t out[6])
{
    __m512i sums[4];
    if (nd == 1)
        digit_sums(col, n, digits, 1, sums);
    else
        digit_sums(col, n, digits, 2, sums);
    /* limb i's sum as a signed 128-bit value: the two entries' lanes (each
     * below 2^63), at their digits' offsets, and the biases */
    static const int offset[4] = {0, GDN_E2E_SIMD_DIGIT_BITS, 32, 32 + GDN_E2E_SIMD_DIGIT_BITS};
    __int128 limb_sum[4] = {0};
    for (int a = 0; a < 4; a++) {
        int64_t lanes[GDN_E2E_SIMD_LANES];
        _mm512_storeu_si512(lanes, sums[a]);
        for (int i = 0; i < 4; i++)
            limb_sum[i] += ((__int128)lanes[i] + lanes[i + 4]) * ((__int128)1 << offset[a]);
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

int gdn_e2e_simd_column_bits(const uint64_t (*col)[4], size_t n)
{
    const __m512i sign_lane = _mm512_set_epi64(7, 7, 7, 7, 3, 3, 3, 3); /* each entry's top limb */
    __m512i any = _mm512_setzero_si512();
    for (size_t p = 0; p < n / 2; p++) {
        const __m512i x = _mm512_loadu_si512(col[2 * p]);
        const __m512i sign = _mm512_permutexvar_epi64(sign_lane, _mm512_srai_epi64(x, 63));
        any = _mm512_or_si512(any, _mm512_xor_si512(x, sign));
    }
    uint64_t lanes[GDN_E2E_SIMD_LANES];
    _mm512_storeu_si512(lanes, any);
    for (int i = 3; i >= 0; i--) {
        const uint64_t word = lanes[i] | lanes[i + 4];
        if (word) return 64 * i + 64 - __builtin_clzll(word);
    }
    return 0;
}

unsigned __int128 gdn_e2e_simd_abs_window(const uint64_t (*col)[4], size_t n, const gdn_e2e_simd_digits *digits,
                                          int sh)
{
    const int j = sh / 64;
    const __m512i sign_lane = _mm512_set_epi64(7, 7, 7, 7, 3, 3, 3, 3);
    const __m512i next_limb = _mm512_set_epi64(7, 7, 6, 5, 3, 3, 2, 1);
    const __m128i right = _mm_cvtsi64_si128(sh % 64), left = _mm_cvtsi64_si128(64 - sh % 64); /* 64: shifts to 0 */
    __m512i low_sum = _mm512_setzero_si512(), high_sum = low_sum;
    for (size_t p = 0; p < n / 2; p++) {
        const __m512i x = _mm512_loadu_si512(col[2 * p]);
        const __m512i magnitude = _mm512_xor_si512(x, _mm512_permutexvar_epi64(sign_lane, _mm512_srai_epi64(x, 63)));
        /* lane j of each entry: M_j >> s | M_{j+1} << (64 - s) */
        const __m512i window = _mm512_or_si512(_mm512_srl_epi64(magnitude, right),
                                               _mm512_sll_epi64(_mm512_permutexvar_epi64(next_limb, magnitude), left));
        const __m512i factor = _mm512_abs_epi64(_mm512_loadu_si512(digits[p][0]));
        low_sum = _mm512_add_epi64(low_sum, _mm512_mul_epu32(window, factor));
        high_sum = _mm512_add_epi64(high_sum, _mm512_mul_epu32(_mm512_srli_epi64(window, 32), factor));
    }
    uint64_t low[GDN_E2E_SIMD_LANES], high[GDN_E2E_SIMD_LANES];
    _mm512_storeu_si512(low, low_sum);
    _mm512_storeu_si512(high, high_sum);
    return (unsigned __int128)low[j] + low[j + 4] + (((unsigned __int128)high[j] + high[j + 4]) << 32);
}

/* Eight entries' limbs i as one vector each (lane = entry), and back: the
 * same two rounds of permutes both ways. */
static inline __attribute__((always_inline)) void transpose(__m512i a, __m512i b, __m512i c, __m512i d, __m512i out[4])
{
    const __m512i pairs_low = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i pairs_high = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    const __m512i halves_low = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i halves_high = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    const __m512i ab_low = _mm512_permutex2var_epi64(a, pairs_low, b);
    const __m512i ab_high = _mm512_permutex2var_epi64(a, pairs_high, b);
    const __m512i cd_low = _mm512_permutex2var_epi64(c, pairs_low, d);
    const __m512i cd_high = _mm512_permutex2var_epi64(c, pairs_high, d);
    out[0] = _mm512_permutex2var_epi64(ab_low, halves_low, cd_low);
    out[1] = _mm512_permutex2var_epi64(ab_low, halves_high, cd_low);
    out[2] = _mm512_permutex2var_epi64(ab_high, halves_low, cd_high);
    out[3] = _mm512_permutex2var_epi64(ab_high, halves_high, cd_high);
}

static inline __attribute__((always_inline)) void untranspose(const __m512i limb[4], __m512i out[4])
{
    const __m512i halves_low = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i halves_high = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    const __m512i pairs_low = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i pairs_high = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    const __m512i ab_low = _mm512_permutex2var_epi64(limb[0], halves_low, limb[1]);
    const __m512i cd_low = _mm512_permutex2var_epi64(limb[0], halves_high, limb[1]);
    const __m512i ab_high = _mm512_permutex2var_epi64(limb[2], halves_low, limb[3]);
    const __m512i cd_high = _mm512_permutex2var_epi64(limb[2], halves_high, limb[3]);
    out[0] = _mm512_permutex2var_epi64(ab_low, pairs_low, ab_high);
    out[1] = _mm512_permutex2var_epi64(ab_low, pairs_high, ab_high);
    out[2] = _mm512_permutex2var_epi64(cd_low, pairs_low, cd_high);
    out[3] = _mm512_permutex2var_epi64(cd_low, pairs_high, cd_high);
}

/* sum = a + b + carry (carry a lane mask), and the carry out. */
static inline __attribute__((always_inline)) __m512i add_carry(__m512i a, __m512i b, __mmask8 carry, __mmask8 *out)
{
    const __m512i s = _mm512_add_epi64(a, b), t = _mm512_mask_add_epi64(s, carry, s, _mm512_set1_epi64(1));
    *out = _mm512_cmplt_epu64_mask(s, a) | (carry & _mm512_cmpeq_epi64_mask(t, _mm512_setzero_si512()));
    return t;
}

/* The update of eight entries with the rounding limb L a literal. */
static inline __attribute__((always_inline)) void update_eight(uint64_t (*x)[4], const int64_t *km, const __m512i dl[4],
                                                             const __m512i dh[4], __m512i dneg, int L)
{
    const __m512i m = _mm512_loadu_si512(km), k = _mm512_abs_epi64(m);
    const __m512i sign = _mm512_xor_si512(_mm512_srai_epi64(m, 63), dneg);
    /* the product k dm as five limbs p[0 .. 5), p[4] < 2^26 */
    __m512i lo[4], hi[4], p[5];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512i a = _mm512_mul_epu32(k, dl[i]), b = _mm512_mul_epu32(k, dh[i]); /* < 2^57 each */
        lo[i] = _mm512_add_epi64(a, _mm512_slli_epi64(b, 32));
        hi[i] = _mm512_mask_add_epi64(_mm512_srli_epi64(b, 32), _mm512_cmplt_epu64_mask(lo[i], a),
                                      _mm512_srli_epi64(b, 32), _mm512_set1_epi64(1));
    }
    __mmask8 carry = 0;
    p[0] = lo[0];
#pragma GCC unroll 4
    for (int i = 1; i < 4; i++) p[i] = add_carry(lo[i], hi[i - 1], carry, &carry);
    p[4] = _mm512_mask_add_epi64(hi[3], carry, hi[3], _mm512_set1_epi64(1));
    /* x += (q xor sign) + ((round xor sign) & 1), q = p[L ..] */
    const __m512i round = L ? _mm512_srli_epi64(p[L - 1], 63) : _mm512_setzero_si512();
    carry = _mm512_test_epi64_mask(_mm512_xor_si512(round, sign), _mm512_set1_epi64(1));
    __m512i limb[4];
    transpose(_mm512_loadu_si512(x[0]), _mm512_loadu_si512(x[2]), _mm512_loadu_si512(x[4]),
              _mm512_loadu_si512(x[6]), limb);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512i q = i + L <= 4 ? p[i + L] : _mm512_setzero_si512();
        limb[i] = add_carry(limb[i], _mm512_xor_si512(q, sign), carry, &carry);
    }
    __m512i out[4];
    untranspose(limb, out);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) _mm512_storeu_si512(x[2 * j], out[j]);
}

void gdn_e2e_simd_update(uint64_t (*col)[4], size_t n, const int64_t *km, const uint64_t dm[4], uint64_t neg,
                         int round_limbs)
{
    __m512i dl[4], dh[4];
    for (int i = 0; i < 4; i++) {
        dl[i] = _mm512_set1_epi64((long long)(dm[i] & 0xFFFFFFFFu));
        dh[i] = _mm512_set1_epi64((long long)(dm[i] >> 32));
    }
    const __m512i dneg = _mm512_set1_epi64((long long)neg);
    for (size_t k = 0; k < n; k += 8) switch (round_limbs) {
        case 0: update_eight(col + k, km + k, dl, dh, dneg, 0); break;
        case 1: update_eight(col + k, km + k, dl, dh, dneg, 1); break;
        case 2: update_eight(col + k, km + k, dl, dh, dneg, 2); break;
        case 3: update_eight(col + k, km + k, dl, dh, dneg, 3); break;
        case 4: update_eight(col + k, km + k, dl, dh, dneg, 4); break;
        default: break; /* every product rounds to 0 */
        }
}
