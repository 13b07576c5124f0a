/* SPDX-License-Identifier: MIT */
/* gdn_e2e's exact dot products Xᵀm, |X|ᵀ|m|'s windows, bit lengths and
 * updates of one state column on AVX-512 (built with SIMD_FLAGS_avx512): the
 * same integers as the portable loops of ref/gdn_e2e.c, two entries per
 * vector (eight for the update).
 *
 * A column is n entries X_k of 4 limbs (two's complement, 256 bits); m_k is
 * a signed integer below 2^48, given as signed digits (below). Each
 * limb's two 32-bit halves enter vpmuldq as signed 32-bit digits: the low
 * half and every high half but the top limb's biased by -2^31, the top
 * limb's high half as it is (the sign of X); the biases come back as one
 * term (sum m_k) · 2^31 · (sum of the biased positions). m's digits: one,
 * d = m, where every |m| < 2^25 (the common case: half the multiplies), else
 * two, d_lo = sign · (|m| mod 2^24) and d_hi = sign · floor(|m| / 2^24).
 * Every product is below 2^56 and a lane adds at most n / 2 of them: n <=
 * GDN_E2E_SIMD_MAX_N keeps each lane below 2^63, so the lanes hold their
 * sums exactly. */
#ifndef UG_REF_GDN_E2E_SIMD_H
#define UG_REF_GDN_E2E_SIMD_H

#include <stddef.h>
#include <stdint.h>

enum { GDN_E2E_SIMD_MAX_N = 256, GDN_E2E_SIMD_LANES = 8, GDN_E2E_SIMD_ONE_DIGIT_BITS = 25, GDN_E2E_SIMD_DIGIT_BITS = 24 };

/* digits[p][0][lane], digits[p][1][lane] for the pair of entries 2p, 2p + 1:
 * d_lo (or d) and d_hi (unread with one digit) of m_{2p} in lanes 0-3, of
 * m_{2p+1} in lanes 4-7. */
typedef int64_t gdn_e2e_simd_digits[2][GDN_E2E_SIMD_LANES];

/* digits for m[0 .. n) (n even, |m_k| < 2^48): one digit where every |m_k| <
 * 2^25, else two; returns their count, *m_sum = sum_k m_k. Portable C. */
int gdn_e2e_simd_set_digits(gdn_e2e_simd_digits *digits, const int64_t *m, size_t n, int64_t *m_sum);

/* out[0 .. 6) = sum_k m_k X_k as 384-bit two's complement, for an even n
 * <= GDN_E2E_SIMD_MAX_N, m given as nd (1 or 2) digits; m_sum = sum_k m_k.
 * Requires AVX-512F (ug_ref_simd_available()). */
void gdn_e2e_simd_dot(const uint64_t (*col)[4], size_t n, const gdn_e2e_simd_digits *digits, int nd, int64_t m_sum,
                      uint64_t out[6]);

/* sum_k |m_k| floor(M_k / 2^sh), M_k = X_k xor its sign, 0 <= sh <= 191
 * and every M_k < 2^(sh + 64), for one-digit m (every |m_k| < 2^25): the
 * 64-bit window of each M at 2^sh times |m| as two 32-bit halves through
 * vpmuludq, each lane below 2^64 for n <= GDN_E2E_SIMD_MAX_N. Requires
 * AVX-512F. */
unsigned __int128 gdn_e2e_simd_abs_window(const uint64_t (*col)[4], size_t n, const gdn_e2e_simd_digits *digits,
                                          int sh);

/* x_k += sign_k RNA(|m_k| D / 2^(64 L)) mod 2^256 for every k < n (n a
 * multiple of 8), sign_k = m_k's sign xor neg (0 or all ones), D = dm (< 2^256),
 * L = round_limbs (0 .. 4; beyond: nothing changes), every |m_k| < 2^25: the
 * portable update of ref/gdn_e2e.c, eight entries a vector (lane = entry,
 * limbs transposed in registers; the product's limbs from 32-bit halves,
 * carries as lane masks). Requires AVX-512F. */
void gdn_e2e_simd_update(uint64_t (*col)[4], size_t n, const int64_t *km, const uint64_t dm[4], uint64_t neg,
                         int round_limbs);

/* The largest bit length of X_k xor its sign (X_k's ones' complement
 * magnitude) over the column, n even. Requires AVX-512F. */
int gdn_e2e_simd_column_bits(const uint64_t (*col)[4], size_t n);

#endif
