/* SPDX-License-Identifier: MIT */
/* The AVX-512 vector of the kernels' per-ISA files (private to kernels/;
 * included only by *_avx512.c, which the Makefile builds with -mavx512f
 * -mavx512bw -mavx512vl -mavx512dq -mfma): sixteen f32 lanes. The names and
 * their contract are vec_avx2.h's; beyond it, vec_load_bf16_first (masked
 * bf16 loads exist here), vec_store_bf16_first and vec_store_bf16_pair. */
#ifndef UG_VEC_AVX512_H
#define UG_VEC_AVX512_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/bf16.h"
#include "isa.h"

#define UG_VEC_ISA UG_ISA_AVX512

typedef __m512 vec;
typedef __mmask16 vec_mask;
typedef __m256i vec_bf16;
enum { LANES = 16 };

static inline vec vec_zero(void) { return _mm512_setzero_ps(); }
static inline vec vec_set1(float x) { return _mm512_set1_ps(x); }
static inline vec vec_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vec_store(float *p, vec v) { _mm512_storeu_ps(p, v); }
static inline void vec_stream(float *p, vec v) { _mm512_stream_ps(p, v); }
static inline void vec_stream_fence(void) { _mm_sfence(); }
static inline vec vec_add(vec a, vec b) { return _mm512_add_ps(a, b); }
static inline vec vec_sub(vec a, vec b) { return _mm512_sub_ps(a, b); }
static inline vec vec_mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
static inline vec vec_div(vec a, vec b) { return _mm512_div_ps(a, b); }
static inline vec vec_sqrt(vec v) { return _mm512_sqrt_ps(v); }
static inline vec vec_fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline vec vec_fmsub(vec a, vec b, vec c) { return _mm512_fmsub_ps(a, b, c); }
static inline vec vec_neg(vec v)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
}

static inline vec vec_load_bf16(const ug_bf16 *p)
{
    __m512i widened = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}

static inline vec_mask vec_first(size_t n) { return n >= LANES ? (vec_mask)0xFFFF : (vec_mask)((1u << n) - 1u); }

static inline vec vec_load_first(const float *p, vec_mask lanes) { return _mm512_maskz_loadu_ps(lanes, p); }
static inline void vec_store_first(float *p, vec_mask lanes, vec v) { _mm512_mask_storeu_ps(p, lanes, v); }

static inline vec vec_load_bf16_first(const ug_bf16 *p, vec_mask lanes)
{
    __m512i widened = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}

static inline vec vec_fma_first(vec w, vec x, vec acc, vec_mask lanes)
{
    return _mm512_mask3_fmadd_ps(w, x, acc, lanes);
}

/* bf16(x) in the upper half of each lane (the lower half is left over):
 * NaN -> sign | 0x7FC0, otherwise add 0x7FFF plus the lowest kept bit
 * (vcvtneps2bf16 would flush subnormals). */
static inline __m512i vec_round_bf16_high_number(vec x)
{
    const __m512i u = _mm512_castps_si512(x);
    const __mmask16 odd = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000));
    const __m512i half_down = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF));
    return _mm512_mask_add_epi32(half_down, odd, half_down, _mm512_set1_epi32(1));
}

static inline __m512i vec_round_bf16_high(vec x)
{
    const __m512i u = _mm512_castps_si512(x), rounded = vec_round_bf16_high_number(x);
    /* (u & sign) | quiet NaN: ternary-logic table A & B | C. */
    const __m512i quiet =
        _mm512_ternarylogic_epi32(u, _mm512_set1_epi32(INT32_MIN), _mm512_set1_epi32(0x7FC00000), 0xEA);
    return _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), quiet);
}

static inline vec_bf16 vec_round_bf16(vec x)
{
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(vec_round_bf16_high(x), 16));
}

/* The 2 * LANES bf16 at p widened, split by index: elements 0, 2, 4, ... in
 * *even, 1, 3, 5, ... in *odd (a bf16 pair is one 32-bit lane). */
static inline void vec_load_bf16_split(const ug_bf16 *p, vec *even, vec *odd)
{
    const __m512i v = _mm512_loadu_si512(p);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
}

/* The 2 * LANES f32 at p split the same way. */
static inline void vec_load_split(const float *p, vec *even, vec *odd)
{
    const __m512 a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + LANES);
    const __m512i index = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *even = _mm512_permutex2var_ps(a, index, b);
    *odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(index, _mm512_set1_epi32(1)), b);
}

/* (odd & 0xFFFF0000) | (even >> 16): ternary-logic table A & C | B. */
static inline void store_bf16_halves(ug_bf16 *p, __m512i even_high, __m512i odd_high)
{
    const __m512i merged = _mm512_ternarylogic_epi32(odd_high, _mm512_srli_epi32(even_high, 16),
                                                     _mm512_set1_epi32((int)0xFFFF0000u), 0xEC);
    _mm512_storeu_si512(p, merged);
}

/* The inverse of the split: bf16(even[i]) to p[2i], bf16(odd[i]) to
 * p[2i + 1], rounded as vec_round_bf16 rounds every lane that is not NaN;
 * returns the lanes where even or odd is NaN, whose stored values are wrong. */
static inline vec_mask vec_store_bf16_merge_numbers(ug_bf16 *p, vec even, vec odd)
{
    store_bf16_halves(p, vec_round_bf16_high_number(even), vec_round_bf16_high_number(odd));
    return _mm512_cmp_ps_mask(even, even, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(odd, odd, _CMP_UNORD_Q);
}

/* bf16(lo) to p[0 .. LANES), bf16(hi) to p[LANES .. 2 * LANES), rounded as
 * vec_round_bf16 rounds, in one 64-byte store: one word permute gathers the
 * upper halves of both vectors' lanes (half the work of narrowing each
 * vector and storing it masked). NaN lanes are rare: a pair holding one
 * takes the full rounding. */
static inline void vec_store_bf16_pair(ug_bf16 *p, vec lo, vec hi)
{
    /* Word i of the result is word 2i + 1 of lo:hi (the words 32..63 are hi's). */
    const __m512i upper_words = _mm512_setr_epi32(0x30001, 0x70005, 0xB0009, 0xF000D, 0x130011, 0x170015, 0x1B0019,
                                                  0x1F001D, 0x230021, 0x270025, 0x2B0029, 0x2F002D, 0x330031,
                                                  0x370035, 0x3B0039, 0x3F003D);
    const bool nan = (_mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q)) != 0;
    const __m512i low_rounded = nan ? vec_round_bf16_high(lo) : vec_round_bf16_high_number(lo);
    const __m512i high_rounded = nan ? vec_round_bf16_high(hi) : vec_round_bf16_high_number(hi);
    _mm512_storeu_si512(p, _mm512_permutex2var_epi16(low_rounded, upper_words, high_rounded));
}

static inline vec_mask vec_no_lanes(void) { return 0; }
static inline vec_mask vec_mask_or(vec_mask a, vec_mask b) { return a | b; }
static inline bool vec_mask_any(vec_mask m) { return m != 0; }

static inline void vec_store_bf16(ug_bf16 *p, vec_bf16 x) { _mm256_storeu_si256((__m256i *)p, x); }
static inline void vec_store_bf16_first(ug_bf16 *p, vec_mask lanes, vec_bf16 x)
{
    _mm256_mask_storeu_epi16(p, lanes, x);
}

static inline vec vec_xor_bits(vec v, const uint32_t *bits)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_loadu_si512(bits)));
}

static inline float vec_tree_sum(vec lo, vec hi)
{
    __m512 v = _mm512_add_ps(lo, hi);
    __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}

#endif
