/* SPDX-License-Identifier: MIT */
/* MPFR reference of head_norm_rope (SPEC §1.5, §2), independent of
 * kernels/head_norm_rope.c: it shares only the bf16 encoding.
 *
 * Per head: ss = sum x_i^2, r = 1/sqrt(ss/head_dim + eps), y_i = x_i r (w_i),
 * then the NeoX rotation (pairs (i, i + half_rope_dim) for bf16, (i, i +
 * head_dim/2) for f32), every other element passing through.
 *
 * Both variants: SPEC names no deliberate intermediate rounding here, so the
 * staged reference is the exact one (one function per variant serves both
 * modes). bf16: cos/sin are the given f32 caches. f32: the angle is
 * pos * theta^(-2i/head_dim) / freq_factors[i], exactly, and its exact cos
 * and sin; the bound admits every faithful way a kernel may form the angle
 * (1/powf, exp2f of a scaled log2, expf of a log, an inv_freq table in f32 or
 * f64 times pos, a float64 angle) and every error of its elementary
 * operations that the profile `model` allows (ref/f32_model.h).
 * Per element it reports r, its correct rounding to the output dtype, the
 * bound derived in docs/error-model-head_norm_rope.md (infinite where the
 * profile states no accuracy for the kernel's sin/cos arguments) and the
 * magnitude sum; with ug_ref_fast(), the roundings to UG_REF_PREC bits of
 * the products and the rotation are done in integers where they fit (the
 * same values, bit for bit: docs/error-model.md §2.1). Shapes must satisfy
 * the kernel's validation (the caller checks). Assumed (not checked) by the
 * bounds: eps >= 0; theta and freq_factors positive and finite. */
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

ug_status head_norm_rope_bf16_reference(const ug_f32_model *model, const head_norm_rope_shape *s, const ug_bf16 *x,
                                        const ug_bf16 *w, const float *cos_cache, const float *sin_cache,
                                        ug_ref_value *out);

ug_status head_norm_rope_f32_reference(const ug_f32_model *model, const head_norm_rope_shape *s, size_t seq_len,
                                       float theta, const float *x, const float *w, const uint32_t *positions,
                                       const float *freq_factors, ug_ref_value *out);

/* The angle of pair i at a position (docs/error-model-head_norm_rope.md §4). */
typedef struct {
    double exact;     /* pos * theta^(-2i/head_dim) / freq_factor, nearest double */
    double deviation; /* bound on |a_hat - exact| for every admitted formula's f32 angle a_hat */
} head_norm_rope_angle;

/* freq_factor NULL: none (the formulas then have no division by it). */
ug_status head_norm_rope_angle_of(const ug_f32_model *model, uint32_t position, size_t i, size_t head_dim, float theta,
                                  const float *freq_factor, head_norm_rope_angle *out);

#endif
