/* SPDX-License-Identifier: MIT */
/* The AVX2 vector of the kernels' per-ISA files (private to kernels/;
 * included only by *_avx2.c, which the Makefile builds with -mavx2 -mfma).
 *
 * Contract shared with vec_avx512.h, so that a family's loops are written
 * once (its *_simd.h) over these names: vec (LANES f32 lanes) and vec_mask
 * (a set of lanes); vec_zero, vec_set1, vec_load, vec_store, vec_stream (a
 * non-temporal store to a vector-aligned address), vec_add, vec_sub,
 * vec_mul, vec_div, vec_sqrt, vec_fmadd(a, b, c) = fl(a*b + c), vec_fmsub(a, b, c) = fl(a*b -
 * c), vec_neg (the sign flipped, NaNs too), vec_load_bf16 (LANES bf16
 * widened exactly: a bf16 is the upper half of its f32), vec_first(n) (the
 * lanes below n, all for n >= LANES), vec_stream_fence (orders this
 * thread's vec_stream stores before its later stores), vec_load_first / vec_store_first
 * (masked-off lanes neither read nor written; they load as +0),
 * vec_fma_first(w, x, acc, lanes) (fmadd on those lanes, acc kept on the
 * others, NaN or not), vec_round_bf16 (ug_bf16_from_f32 on every lane, as a
 * vec_bf16), vec_load_bf16_split / vec_load_split (2 * LANES bf16 or f32,
 * the even-indexed elements in one vec and the odd in another),
 * vec_store_bf16_merge_numbers (their inverse, each lane rounded as
 * vec_round_bf16 does where no lane is NaN; returns the NaN lanes),
 * vec_no_lanes / vec_mask_or / vec_mask_any (sets
 * of lanes), vec_xor_bits(v, bits) (each lane's bits XORed with LANES
 * uint32 read from bits), vec_tree_sum(lo, hi) (the 2*LANES sums folded as a tree: hi
 * onto lo, then the upper half of the lanes onto the lower, down to one;
 * lane t + stride added to lane t, as head_norm_rope_fold does); and
 * UG_VEC_ISA, the ug_isa these vectors are. Every helper is one IEEE
 * operation per lane or moves bits, so a loop written over them gives the
 * scalar contract's bits on every ISA. */
#ifndef UG_VEC_AVX2_H
#define UG_VEC_AVX2_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/bf16.h"
#include "isa.h"

#define UG_VEC_ISA UG_ISA_AVX2

typedef __m256 vec;
typedef __m256i vec_mask;  /* all-ones in the selected lanes */
typedef __m128i vec_bf16;  /* LANES bf16 */
enum { LANES = 8 };

static inline vec vec_zero(void) { return _mm256_setzero_ps(); }
static inline vec vec_set1(float x) { return _mm256_set1_ps(x); }
static inline vec vec_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vec_store(float *p, vec v) { _mm256_storeu_ps(p, v); }
static inline void vec_stream(float *p, vec v) { _mm256_stream_ps(p, v); }
static inline void vec_stream_fence(void) { _mm_sfence(); }
static inline vec vec_add(vec a, vec b) { return _mm256_add_ps(a, b); }
static inline vec vec_sub(vec a, vec b) { return _mm256_sub_ps(a, b); }
static inline vec vec_mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
static inline vec vec_div(vec a, vec b) { return _mm256_div_ps(a, b); }
static inline vec vec_sqrt(vec v) { return _mm256_sqrt_ps(v); }
static inline vec vec_fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline vec vec_fmsub(vec a, vec b, vec c) { return _mm256_fmsub_ps(a, b, c); }
static inline vec vec_neg(vec v) { return _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))); }

static inline vec vec_load_bf16(const ug_bf16 *p)
{
    __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
}

static inline vec_mask vec_first(size_t n)
{
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int below = n >= LANES ? LANES : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(below), index);
}

static inline vec vec_load_first(const float *p, vec_mask lanes) { return _mm256_maskload_ps(p, lanes); }
static inline void vec_store_first(float *p, vec_mask lanes, vec v) { _mm256_maskstore_ps(p, lanes, v); }

/* A blend, not a multiply by zero: the discarded lanes may be NaN. */
static inline vec vec_fma_first(vec w, vec x, vec acc, vec_mask lanes)
{
    return _mm256_blendv_ps(acc, _mm256_fmadd_ps(w, x, acc), _mm256_castsi256_ps(lanes));
}

/* bf16(x) in the upper half of each lane (the lower half is left over):
 * NaN -> sign | 0x7FC0, otherwise add 0x7FFF plus the lowest kept bit. */
static inline __m256i vec_round_bf16_high_number(vec x)
{
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
}

static inline __m256i vec_round_bf16_high(vec x)
{
    const __m256i u = _mm256_castps_si256(x), rounded = vec_round_bf16_high_number(x);
    const __m256i quiet =
        _mm256_or_si256(_mm256_and_si256(u, _mm256_set1_epi32(INT32_MIN)), _mm256_set1_epi32(0x7FC00000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(rounded, quiet, nan);
}

static inline vec_bf16 vec_round_bf16(vec x)
{
    const __m256i bits = _mm256_srli_epi32(vec_round_bf16_high(x), 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}

/* The 2 * LANES bf16 at p widened, split by index: elements 0, 2, 4, ... in
 * *even, 1, 3, 5, ... in *odd (a bf16 pair is one 32-bit lane). */
static inline void vec_load_bf16_split(const ug_bf16 *p, vec *even, vec *odd)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)p);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u)));
}

/* The 2 * LANES f32 at p split the same way. */
static inline void vec_load_split(const float *p, vec *even, vec *odd)
{
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + LANES);
    /* Within each 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6; then the 64-bit
     * quarters reordered to a0 a2 a4 a6 b0 b2 b4 b6. */
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
}

static inline void store_bf16_halves(ug_bf16 *p, __m256i even_high, __m256i odd_high)
{
    const __m256i high = _mm256_and_si256(odd_high, _mm256_set1_epi32((int)0xFFFF0000u));
    _mm256_storeu_si256((__m256i *)p, _mm256_or_si256(high, _mm256_srli_epi32(even_high, 16)));
}

/* The inverse of the split: bf16(even[i]) to p[2i], bf16(odd[i]) to
 * p[2i + 1], rounded as vec_round_bf16 rounds every lane that is not NaN;
 * returns the lanes where even or odd is NaN, whose stored values are wrong. */
static inline vec_mask vec_store_bf16_merge_numbers(ug_bf16 *p, vec even, vec odd)
{
    store_bf16_halves(p, vec_round_bf16_high_number(even), vec_round_bf16_high_number(odd));
    const __m256 nan = _mm256_or_ps(_mm256_cmp_ps(even, even, _CMP_UNORD_Q), _mm256_cmp_ps(odd, odd, _CMP_UNORD_Q));
    return _mm256_castps_si256(nan);
}

static inline vec_mask vec_no_lanes(void) { return _mm256_setzero_si256(); }
static inline vec_mask vec_mask_or(vec_mask a, vec_mask b) { return _mm256_or_si256(a, b); }
static inline bool vec_mask_any(vec_mask m) { return !_mm256_testz_si256(m, m); }

static inline void vec_store_bf16(ug_bf16 *p, vec_bf16 x) { _mm_storeu_si128((__m128i *)p, x); }

static inline vec vec_xor_bits(vec v, const uint32_t *bits)
{
    return _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)bits)));
}

static inline float vec_tree_sum(vec lo, vec hi)
{
    __m256 v = _mm256_add_ps(lo, hi);
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}

#endif
