/* MPFR reference of head_norm_rope (SPEC §1.5, §2), independent of
 * kernels/head_norm_rope.c: it shares only the bf16 encoding.
 *
 * Per head: ss = sum x_i^2, r = 1/sqrt(ss/head_dim + eps), y_i = x_i r (w_i),
 * then the NeoX rotation (pairs (i, i + half_rope_dim) for bf16, (i, i +
 * head_dim/2) for f32), every other element passing through.
 *
 * bf16 variant: cos/sin are the given f32 caches; nothing is rounded on
 *   purpose before the output, so staged == exact.
 * f32 variant, exact:  angle = pos * theta^(-2i/head_dim) / freq_factors[i],
 *   exactly, and its exact cos and sin.
 * f32 variant, staged: angle = the f32 angle formula of kernels/head_norm_rope.h
 *   with every step correctly rounded (the deliberate f32 intermediate), and
 *   the exact cos and sin of that f32 value.
 * Per element it reports r, its correct rounding to the output dtype, the
 * bound derived in docs/error-model-head_norm_rope.md and the magnitude sum.
 * Shapes must satisfy the kernel's validation (the caller checks); theta,
 * freq_factors > 0 and finite, eps >= 0 (assumptions of the bound). */
#ifndef UG_REF_HEAD_NORM_ROPE_H
#define UG_REF_HEAD_NORM_ROPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/bf16.h"
#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t n_heads, head_dim, half_rope_dim;
    float eps;
} head_norm_rope_shape;

/* Accuracy the bounds assume of the libm calls in the kernel's angle formula
 * (tested in tests/test_ref_head_norm_rope.c):
 *   log2 (binary64): within 2^-52 relative of log2(theta);
 *   exp2f: the correct rounding of some value within 2^-33 relative of 2^x
 *          (glibc: 1.69 * 2^-34 before its final rounding);
 *   cosf, sinf: within 2^-23 relative (one ulp) plus 2^-149. */
#define HEAD_NORM_ROPE_LOG2_REL 0x1p-52
#define HEAD_NORM_ROPE_EXP2F_REL 0x1p-33
#define HEAD_NORM_ROPE_TRIG_REL 0x1p-23

ug_status head_norm_rope_bf16_reference(const head_norm_rope_shape *s, const ug_bf16 *x, const ug_bf16 *w,
                                        const float *cos_cache, const float *sin_cache, ug_ref_value *out);

ug_status head_norm_rope_f32_reference(const head_norm_rope_shape *s, size_t seq_len, float theta, const float *x,
                                       const float *w, const uint32_t *positions, const float *freq_factors,
                                       ug_ref_mode mode, ug_ref_value *out);

/* The angle of pair i at a position (freq_factor 1 when there are none). */
typedef struct {
    double exact;          /* pos * theta^(-2i/head_dim) / freq_factor, nearest double */
    float staged;          /* the f32 formula, every step correctly rounded */
    bool flagged;          /* a libm step of the formula may round to the other neighbour */
    double staged_error;   /* |staged - exact|, rounded up */
    double kernel_vs_exact;  /* bound on |kernel's angle - exact| */
    double kernel_vs_staged; /* bound on |kernel's angle - staged|: 0 unless flagged */
} head_norm_rope_angle;

ug_status head_norm_rope_angle_of(uint32_t position, size_t i, size_t head_dim, float theta, float freq_factor,
                                  head_norm_rope_angle *out);

#endif
