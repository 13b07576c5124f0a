/* SPDX-License-Identifier: MIT */
/* head_norm_rope: fused per-head RMS norm + NeoX rotary embedding (SPEC §1.5;
 * seed fused_head_norm_rope.rs).
 *
 * Per head: ss = sum_i x_i^2 (f32), r = 1/sqrt(ss/head_dim + eps),
 * y_i = x_i * r (* w_i when a weight is given), then the NeoX rotation
 *   out_i     = y_i * c_i - y_{i+span} * s_i
 *   out_{i+span} = y_{i+span} * c_i + y_i * s_i        for i < half_rope_dim,
 * every other element passes through (out = y).
 *
 * bf16 variant (one token): input/output bf16 [n_heads, head_dim], weight
 *   bf16 [head_dim] or none, cos/sin f32 caches of >= half_rope_dim entries;
 *   span = half_rope_dim; output rounded to bf16.
 * f32 variant (a sequence): input/output f32 [seq_len, n_heads, head_dim],
 *   weight f32 [head_dim] or none, positions u32 [seq_len], theta, optional
 *   freq_factors f32 [>= half_rope_dim]; span = head_dim / 2. The angle is
 *   computed in f32 as a Metal kernel would, by this exact formula (docs/
 *   error-model-head_norm_rope.md §4):
 *     L = (float)log2((double)theta)            once per call (host constant)
 *     e_i = (float)(2i) / (float)head_dim        f32 division
 *     w_i = exp2f(-(e_i * L))                    f32 product, libm exp2f
 *     f_i = freq_factors ? w_i / freq_factors[i] : w_i
 *     angle = (float)pos * f_i;  c = cosf(angle), s = sinf(angle)
 *
 * Validation is the seed's, rule for rule and in its order, with the C-side
 * additions listed in the .c file after the seed's rules; the first broken
 * rule is reported (UG_EINVAL) and nothing is written.
 * Scratch mirrors the per-head threadgroup memory (SPEC §1.6) and is guarded. */
#ifndef UG_KERNEL_HEAD_NORM_ROPE_H
#define UG_KERNEL_HEAD_NORM_ROPE_H

#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

typedef struct {
    uint32_t n_heads, head_dim, half_rope_dim;
    float eps;
} head_norm_rope_bf16_params;

typedef struct {
    uint32_t n_heads, head_dim, half_rope_dim, seq_len;
    float eps, theta;
} head_norm_rope_f32_params;

/* Deliberately broken variants, built with -DUG_MUTANT=<value>; the gate must
 * catch each one. The default build (UG_MUTANT 0) is the correct kernel. */
enum head_norm_rope_mutant {
    HEAD_NORM_ROPE_CORRECT = 0,
    HEAD_NORM_ROPE_MUT_NEIGHBOUR_PAIRS = 1,        /* pairs (2k, 2k+1) instead of NeoX's (i, i+span) */
    HEAD_NORM_ROPE_MUT_EPS_OUTSIDE_SQRT = 2,       /* r = 1/(sqrt(ss/head_dim) + eps) */
    HEAD_NORM_ROPE_MUT_ONE_PLUS_WEIGHT = 3,        /* y = x*r*(1 + w) */
    HEAD_NORM_ROPE_MUT_PASS_THROUGH_OFF_BY_ONE = 4, /* the last rotary pair passes through */
    HEAD_NORM_ROPE_MUT_SIN_SIGN_FLIPPED = 5,       /* rotation by -angle */
    HEAD_NORM_ROPE_MUT_MEAN_OVER_HALF_ROPE = 6,    /* ss / half_rope_dim instead of ss / head_dim */
    HEAD_NORM_ROPE_MUT_EXPONENT_OVER_ROPE_DIM = 7, /* f32: theta^(-2i/(2*half_rope_dim)) */
    HEAD_NORM_ROPE_MUT_FREQ_FACTOR_MULTIPLIES = 8, /* f32: frequency times freq_factors[i] */
    HEAD_NORM_ROPE_MUT_OUTPUT_TRUNCATED = 9,       /* bf16: output truncated, not rounded */
    HEAD_NORM_ROPE_MUT_VECTOR_EVEN_ODD_SWAPPED = 10, /* vector paths, bf16 head block: pairs of outputs swapped */
};

/* The build's variant (the .c file and its vector paths read it). */
#ifndef UG_MUTANT
#define UG_MUTANT 0 /* the correct kernel; a plain 0, as other families' headers may be included too */
#endif

/* The seed host's plan: threads per threadgroup min(256, next_pow2(head_dim)),
 * threadgroup bytes tg_size*4 (bf16 host) and max(tg_size, head_dim)*4
 * (f32 host). Both C kernels allocate the second per threadgroup (the f32
 * kernel one per kernel thread): the algorithm caches head_dim normalized
 * values there (see the .c file; the f32 kernel's heads that are rotated
 * whole keep them in registers). */
uint32_t head_norm_rope_tg_size(uint32_t head_dim);
uint64_t head_norm_rope_bf16_planned_bytes(uint32_t head_dim);
uint64_t head_norm_rope_f32_planned_bytes(uint32_t head_dim);

/* input/output bf16[n_heads*head_dim]; norm_weight bf16[head_dim] or NULL;
 * cos_cache, sin_cache f32[>= half_rope_dim]. */
ug_status head_norm_rope_bf16(const head_norm_rope_bf16_params *p, const ug_buf *input, ug_buf *output,
                              const ug_buf *norm_weight, const ug_buf *cos_cache, const ug_buf *sin_cache);

/* input/output f32[seq_len*n_heads*head_dim]; norm_weight f32[head_dim] or
 * NULL; positions u32[seq_len]; freq_factors f32[>= half_rope_dim] or NULL. */
ug_status head_norm_rope_f32(const head_norm_rope_f32_params *p, const ug_buf *input, ug_buf *output,
                             const ug_buf *norm_weight, const ug_buf *positions, const ug_buf *freq_factors);

#endif
