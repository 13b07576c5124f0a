/* SPDX-License-Identifier: MIT */
/* Pieces the fast paths of the chunked gated-delta references share
 * (ref/gdn_chunk_o.c, ref/gdn_chunk_scaled_kkt.c; docs/error-model.md §2.1):
 * RN_128(exp(g_t - g_s)) without an MPFR exp per pair, and exact dot products
 * of integer vectors.
 *
 * The exponential: exp(g) and exp(-g) at 256 bits once per token
 * (ug_gdn_exp_wide); their exact 512-bit product lies within 2^-253
 * relative of exp(g_t - g_s), so its rounding to 128 bits is the correct
 * rounding unless its bits after the 128th lie within 2^-64 of a half
 * (ug_gdn_round_certified answers false there: the caller asks MPFR). */
#ifndef UG_REF_GDN_FAST_H
#define UG_REF_GDN_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmp.h>
#include <mpfr.h>

#include "exact_sum.h"

/* A positive number m·2^e (m < 2^128): a correctly rounded exp. */
typedef struct {
    ug_u128 m;
    int e;
} ug_gdn_fx;

/* exp(y) at 256 bits, RN: the 256-bit integer d times 2^e. */
typedef struct {
    mp_limb_t d[4];
    long e;
} ug_gdn_exp256;

/* exp(g) and exp(-g) at 256 bits: E = RN(exp(g)) and F = RN(1/E), so
 * |E - exp(g)| <= 2^-256 E and |F - exp(-g)| < 2^-254.9 exp(-g); false
 * outside MPFR's regular numbers. wide: scratch of 256 bits precision. */
bool ug_gdn_exp_wide(mpfr_ptr wide, float g, ug_gdn_exp256 *e, ug_gdn_exp256 *inv);

/* RN_128 of a real known to lie within 2^-250 relative of the n-limb
 * integer d·2^e (d's top limb nonzero, at least 192 bits): the rounding of
 * d itself, certain unless d's bits after its leading 128 lie within 2^-64
 * of a half (then false: the caller asks MPFR). out->m has 128 bits. */
bool ug_gdn_round_certified(const mp_limb_t *d, int n, long e, ug_gdn_fx *out);

/* RN_128(exp(g_t - g_s)) from exp_t = exp(g_t) and inv_s = exp(-g_s) of
 * ug_gdn_exp_wide (their product lies within 2^-253 relative of the
 * exponential); false where ug_gdn_round_certified is. */
bool ug_gdn_pair_exp(const ug_gdn_exp256 *exp_t, const ug_gdn_exp256 *inv_s, ug_gdn_fx *out);

/* sum_d a[d] b[d] and sum_d |a[d] b[d]|, exact when the caller's domain
 * keeps every partial sum of magnitudes below 2^63; on AVX-512 where simd
 * is true (the caller checks ug_ref_simd_available and the CPU), else
 * portable C: integer sums, the same bits either way. */
int64_t ug_gdn_int_dot(const int64_t *a, const int64_t *b, size_t n, int64_t *magnitude, bool simd);

#endif
