/* SPDX-License-Identifier: MIT */
/* One pass over a gdn_e2e state column on AVX-512 (built with
 * SIMD_FLAGS_avx512): the update, the bit length, Xᵀq, the next token's
 * Xᵀk and |X|ᵀ|q|'s windows, the same integers as the portable loops of
 * ref/gdn_e2e.c, eight entries a vector.
 *
 * A column is n entries X_k of 4 limbs (two's complement, 256 bits), stored
 * planar: limb i of entry k at col[i n + k], so a vector holds one limb of
 * eight entries and the limbs' carry chains run lane by lane. Every factor
 * m_k is a signed integer with |m_k| < 2^GDN_E2E_SIMD_FACTOR_BITS. In the
 * dot products each limb's two 32-bit halves enter vpmuldq as signed 32-bit
 * numbers: the low half and every high half but the top limb's biased by
 * -2^31, the top limb's high half as it is (the sign of X); the biases come
 * back as one term (sum m_k) · 2^31 · (sum of the biased positions). Every
 * product is below 2^56 in magnitude, so a limb half's n <= GDN_E2E_SIMD_MAX_N
 * products sum below 2^63 even after the lanes are added: the sums are
 * exact. */
#ifndef UG_REF_GDN_E2E_SIMD_H
#define UG_REF_GDN_E2E_SIMD_H

#include <stddef.h>
#include <stdint.h>

enum { GDN_E2E_SIMD_MAX_N = 128, GDN_E2E_SIMD_STEP = 8, GDN_E2E_SIMD_FACTOR_BITS = 25 };

typedef struct {
    /* The update x_k += sign_k RNA(|key_k| D / 2^(64 L)) mod 2^256, sign_k =
     * key_k's sign xor neg (0 or all ones), D = dm (< 2^256), L =
     * round_limbs (0 .. 4; beyond: nothing changes); key NULL: no update. */
    const int64_t *key;
    uint64_t dm[4], neg;
    int round_limbs;
    /* The dot products' factors (zeros where a vector is absent) and their sums. */
    const int64_t *query, *next;
    int64_t query_sum, next_sum;
    /* |X|ᵀ|q|'s 96-bit windows at 2^window_shift, 0 <= window_shift <= 191. */
    int window_shift;
} gdn_e2e_simd_pass_in;

typedef struct {
    uint64_t query_dot[6], next_dot[6]; /* Xᵀq, Xᵀnext after the update: 384-bit two's complement */
    unsigned __int128 window;           /* sum_k |q_k| (floor(M_k / 2^window_shift) mod 2^96), M_k = X_k xor its sign */
    int bits;                           /* the largest bit length of M_k */
} gdn_e2e_simd_pass_out;

/* The pass over col (planar, n a multiple of GDN_E2E_SIMD_STEP, n <=
 * GDN_E2E_SIMD_MAX_N): the update, then every read of the updated column.
 * The window equals sum_k |q_k| floor(M_k / 2^window_shift) where out->bits
 * <= window_shift + 96 (the caller checks); its three 32-bit pieces' sums
 * each stay below 2^64 (n products below 2^57), the whole below 2^128.
 * Requires AVX-512F (ug_ref_simd_available()). */
void gdn_e2e_simd_column_pass(uint64_t *col, size_t n, const gdn_e2e_simd_pass_in *in, gdn_e2e_simd_pass_out *out);

/* A column's grid moves (planar, n as above): x_k = RNA(x_k / 2^s) (ties
 * away from zero) for s > 0, x_k 2^-s for s < 0, exact where the caller
 * keeps every |x_k 2^-s| below 2^255; for s >= 256 every x_k must lie
 * above -2^255 (the result is then 0). Requires AVX-512F. */
void gdn_e2e_simd_regrid(uint64_t *col, size_t n, long s);

#endif
