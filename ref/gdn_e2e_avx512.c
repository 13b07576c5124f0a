/* SPDX-License-Identifier: MIT */
/* ref/gdn_e2e_simd.h on AVX-512 (built with SIMD_FLAGS_avx512). */
#include <immintrin.h>

#include "gdn_e2e_simd.h"

/* s = a + b + carry mod 2^64 (carry 0 or 1 in each lane), and the carry
 * out: the majority of the top bits of a, b and the carry into them, which
 * is s's top bit xor a's and b's: (a & b) | ((a | b) & ~s) (ternary-logic
 * table 0xD4), no mask registers. */
static inline __attribute__((always_inline)) __m512i add_carry(__m512i a, __m512i b, __m512i *carry)
{
    const __m512i s = _mm512_add_epi64(_mm512_add_epi64(a, b), *carry);
    *carry = _mm512_srli_epi64(_mm512_ternarylogic_epi64(a, b, s, 0xD4), 63);
    return s;
}

/* x += (q xor sign) + ((round xor sign) & 1) for eight entries, q = the
 * product |key| dm from limb L up, with L a literal. */
static inline __attribute__((always_inline)) void update_eight(__m512i x[4], const int64_t *key, const __m512i dl[4],
                                                             const __m512i dh[4], __m512i dneg, int L)
{
    const __m512i m = _mm512_loadu_si512(key), k = _mm512_abs_epi64(m);
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
    __m512i carry = _mm512_setzero_si512();
    p[0] = lo[0];
#pragma GCC unroll 4
    for (int i = 1; i < 4; i++) p[i] = add_carry(lo[i], hi[i - 1], &carry);
    p[4] = _mm512_add_epi64(hi[3], carry);
    const __m512i round = L ? _mm512_srli_epi64(p[L - 1], 63) : _mm512_setzero_si512();
    carry = _mm512_and_si512(_mm512_xor_si512(round, sign), _mm512_set1_epi64(1));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512i q = i + L <= 4 ? p[i + L] : _mm512_setzero_si512();
        x[i] = add_carry(x[i], _mm512_xor_si512(q, sign), &carry);
    }
}

/* Lane j of the result: the sum of a[j]'s lanes (a butterfly: pairs, then
 * 128-bit blocks twice). Every partial sum is a sum of at most n of the
 * products, exact in 64 bits (see the header). */
static inline __attribute__((always_inline)) __m512i lane_sums(const __m512i a[8])
{
    __m512i pairs[4], quads[2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        pairs[i] = _mm512_add_epi64(_mm512_unpacklo_epi64(a[2 * i], a[2 * i + 1]),
                                    _mm512_unpackhi_epi64(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        quads[i] = _mm512_add_epi64(_mm512_shuffle_i64x2(pairs[2 * i], pairs[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_i64x2(pairs[2 * i], pairs[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_epi64(_mm512_shuffle_i64x2(quads[0], quads[1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i64x2(quads[0], quads[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* sum_i (low[i] + high[i] 2^32 + bias_i m_sum) 2^(64 i) as 384-bit two's complement. */
static inline __attribute__((always_inline)) void dot_out(const __m512i low[4], const __m512i high[4], int64_t m_sum,
                                                         uint64_t out[6])
{
    const __m512i halves[8] = {low[0], low[1], low[2], low[3], high[0], high[1], high[2], high[3]};
    int64_t sums[8];
    _mm512_storeu_si512(sums, lane_sums(halves));
    __int128 carry = 0; /* each limb's sum below 2^122 in magnitude */
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
        __int128 t = carry;
        if (i < 4)
            t += sums[i] + (__int128)sums[4 + i] * ((__int128)1 << 32) +
                 (__int128)m_sum * (i < 3 ? ((__int128)1 << 31) + ((__int128)1 << 63) : (__int128)1 << 31);
        out[i] = (uint64_t)t;
        carry = t >> 64; /* arithmetic: GCC's >> of a negative __int128 */
    }
}

/* The pass with the update's rounding limb L a literal (-1: no update), and the window's lowest limb J
 * (window_shift / 64). */
static inline __attribute__((always_inline)) void column_pass(uint64_t *col, size_t n, const gdn_e2e_simd_pass_in *in,
                                                            gdn_e2e_simd_pass_out *out, int L, int J)
{
    __m512i dl[4], dh[4];
    for (int i = 0; i < 4; i++) {
        dl[i] = _mm512_set1_epi64((long long)(in->dm[i] & 0xFFFFFFFFu));
        dh[i] = _mm512_set1_epi64((long long)(in->dm[i] >> 32));
    }
    const __m512i dneg = _mm512_set1_epi64((long long)in->neg), bias = _mm512_set1_epi64(INT64_C(0x80000000));
    const __m512i zero = _mm512_setzero_si512();
    const __m128i right = _mm_cvtsi64_si128(in->window_shift % 64), left = _mm_cvtsi64_si128(63 - in->window_shift % 64);
    __m512i q_low[4], q_high[4], n_low[4], n_high[4], any[4];
    for (int i = 0; i < 4; i++)
        q_low[i] = q_high[i] = n_low[i] = n_high[i] = any[i] = _mm512_setzero_si512();
    __m512i window_sum[3] = {zero, zero, zero}; /* the window's 32-bit pieces times |q|, summed */
    for (size_t k = 0; k < n; k += GDN_E2E_SIMD_STEP) {
        __m512i x[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) x[i] = _mm512_loadu_si512(col + i * n + k);
        if (L >= 0) {
            update_eight(x, in->key + k, dl, dh, dneg, L);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) _mm512_storeu_si512(col + i * n + k, x[i]);
        }
        const __m512i q = _mm512_loadu_si512(in->query + k), next = _mm512_loadu_si512(in->next + k);
        const __m512i sign = _mm512_srai_epi64(x[3], 63);
        __m512i mag[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            mag[i] = _mm512_xor_si512(x[i], sign);
            any[i] = _mm512_or_si512(any[i], mag[i]);
            const __m512i low = _mm512_xor_si512(x[i], bias);
            const __m512i high = i < 3 ? _mm512_xor_si512(_mm512_srli_epi64(x[i], 32), bias)
                                       : _mm512_srli_epi64(x[i], 32);
            q_low[i] = _mm512_add_epi64(q_low[i], _mm512_mul_epi32(low, q));
            q_high[i] = _mm512_add_epi64(q_high[i], _mm512_mul_epi32(high, q));
            n_low[i] = _mm512_add_epi64(n_low[i], _mm512_mul_epi32(low, next));
            n_high[i] = _mm512_add_epi64(n_high[i], _mm512_mul_epi32(high, next));
        }
        /* M >> s in 96 bits: M_j >> s | M_{j+1} << (64 - s), and the same one limb up (the shifts left
         * in two steps: s may be 0) */
        const __m512i a = mag[J], b = mag[J + 1], c = J + 2 < 4 ? mag[J + 2] : zero; /* 0 beyond the top */
        const __m512i low = _mm512_or_si512(_mm512_srl_epi64(a, right), _mm512_sll_epi64(_mm512_slli_epi64(b, 1), left));
        const __m512i top = _mm512_or_si512(_mm512_srl_epi64(b, right), _mm512_sll_epi64(_mm512_slli_epi64(c, 1), left));
        const __m512i factor = _mm512_abs_epi64(q);
        window_sum[0] = _mm512_add_epi64(window_sum[0], _mm512_mul_epu32(low, factor));
        window_sum[1] = _mm512_add_epi64(window_sum[1], _mm512_mul_epu32(_mm512_srli_epi64(low, 32), factor));
        window_sum[2] = _mm512_add_epi64(window_sum[2], _mm512_mul_epu32(top, factor));
    }
    dot_out(q_low, q_high, in->query_sum, out->query_dot);
    dot_out(n_low, n_high, in->next_sum, out->next_dot);
    out->window = 0; /* each piece's sum below 2^64 (the header); the whole below 2^128 */
    for (int i = 0; i < 3; i++) {
        /* summed unsigned: _mm512_reduce_add_epi64 adds as signed long long, and a piece may pass 2^63 */
        uint64_t lanes[8], piece = 0;
        _mm512_storeu_si512(lanes, window_sum[i]);
        for (int l = 0; l < 8; l++) piece += lanes[l];
        out->window += (unsigned __int128)piece << (32 * i);
    }
    out->bits = 0;
    for (int i = 3; i >= 0 && !out->bits; i--) {
        const uint64_t word = (uint64_t)_mm512_reduce_or_epi64(any[i]);
        if (word) out->bits = 64 * i + 64 - __builtin_clzll(word);
    }
}

/* One copy per window limb J (0 .. 2: window_shift <= 191) for rounding limb L. */
#define COLUMN_PASS_WINDOWS(L)                                                                                         \
    switch (in->window_shift / 64) {                                                                                   \
    case 0: column_pass(col, n, in, out, L, 0); break;                                                                 \
    case 1: column_pass(col, n, in, out, L, 1); break;                                                                 \
    default: column_pass(col, n, in, out, L, 2); break;                                                                \
    }

void gdn_e2e_simd_column_pass(uint64_t *col, size_t n, const gdn_e2e_simd_pass_in *in, gdn_e2e_simd_pass_out *out)
{
    switch (in->key ? in->round_limbs : -1) {
    case 0: COLUMN_PASS_WINDOWS(0) break;
    case 1: COLUMN_PASS_WINDOWS(1) break;
    case 2: COLUMN_PASS_WINDOWS(2) break;
    case 3: COLUMN_PASS_WINDOWS(3) break;
    case 4: COLUMN_PASS_WINDOWS(4) break;
    default: COLUMN_PASS_WINDOWS(-1) break; /* no update, or every product rounds to 0 */
    }
}

void gdn_e2e_simd_regrid(uint64_t *col, size_t n, long s)
{
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
    const long t = s < 0 ? -s : s; /* below 256 for s < 0 (the header) */
    const int whole = (int)(t / 64), part = (int)(t % 64);
    const __m128i by = _mm_cvtsi64_si128(part), rest = _mm_cvtsi64_si128(64 - part); /* 64: shifts to 0 */
    __m512i half[4]; /* 2^(s - 1), for s > 0 */
    for (int i = 0; i < 4; i++)
        half[i] = s > 0 && i == (t - 1) / 64 ? _mm512_set1_epi64((long long)(UINT64_C(1) << ((t - 1) % 64))) : zero;
    for (size_t k = 0; k < n; k += GDN_E2E_SIMD_STEP) {
        /* ext: four zero limbs, the limbs, four zero limbs, so a shift reads limbs by index */
        __m512i ext[12] = {zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero};
        for (int i = 0; i < 4; i++) ext[4 + i] = _mm512_loadu_si512(col + i * n + k);
        __m512i out[4];
        if (s < 0) {
            for (int i = 0; i < 4; i++)
                out[i] = _mm512_or_si512(_mm512_sll_epi64(ext[4 + i - whole], by),
                                         _mm512_srl_epi64(ext[3 + i - whole], rest));
        } else if (t >= 256) {
            out[0] = out[1] = out[2] = out[3] = zero; /* |x| + 2^(s-1) < 2^256 <= 2^s */
        } else {
            /* |x| = (x xor sign) + [x < 0], plus 2^(s-1), shifted right, the sign put back */
            const __m512i sign = _mm512_srai_epi64(ext[7], 63);
            __m512i carry = _mm512_and_si512(sign, one), round_carry = zero;
            for (int i = 0; i < 4; i++) {
                const __m512i magnitude = add_carry(_mm512_xor_si512(ext[4 + i], sign), zero, &carry);
                ext[4 + i] = add_carry(magnitude, half[i], &round_carry);
            }
            carry = _mm512_and_si512(sign, one);
            for (int i = 0; i < 4; i++) {
                const __m512i shifted = _mm512_or_si512(_mm512_srl_epi64(ext[4 + i + whole], by),
                                                        _mm512_sll_epi64(ext[5 + i + whole], rest));
                out[i] = add_carry(_mm512_xor_si512(shifted, sign), zero, &carry);
            }
        }
        for (int i = 0; i < 4; i++) _mm512_storeu_si512(col + i * n + k, out[i]);
    }
}
