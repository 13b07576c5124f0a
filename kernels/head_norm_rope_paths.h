/* SPDX-License-Identifier: MIT */
/* The per-ISA inner loops of head_norm_rope (private to kernels/).
 *
 * The portable path lives in head_norm_rope.c; head_norm_rope_avx2.c and
 * head_norm_rope_avx512.c instantiate head_norm_rope_simd.h over their
 * vec_<isa>.h (built with their ISA's flags by the Makefile); each registers
 * its paths (isa.h).
 * Every path performs, for every element, exactly the operations stated
 * below, so all paths produce identical bits. */
#ifndef UG_HEAD_NORM_ROPE_PATHS_H
#define UG_HEAD_NORM_ROPE_PATHS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "../core/bf16.h"
#include "isa.h"

typedef struct {
    /* The shader's sum of squares of x[0 .. n): thread t < tg (a power of
     * two) sums fmaf(x[k], x[k], .) over k = t, t + tg, ... from 0 into
     * partial[t], then the tree: for stride = tg/2, tg/4, ..., 1,
     * partial[t] = fl(partial[t] + partial[t + stride]) for t < stride
     * (head_norm_rope_fold is the scalar step); returns partial[0]. partial
     * holds tg floats (its contents are left undefined). */
    float (*sum_squares_bf16)(const ug_bf16 *x, size_t n, size_t tg, float *partial);
    float (*sum_squares_f32)(const float *x, size_t n, size_t tg, float *partial);
    /* y[i] = head_norm_rope_scale(x[i], r, w[i]) (w NULL: no weight) for i < n. */
    void (*scale_bf16)(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y);
    void (*scale_f32)(const float *x, const float *w, size_t n, float r, float *y);
    /* The NeoX rotation of n pairs in place, head_norm_rope_rotate_pair on
     * each (lo[k], hi[k]) with c[k], s[k]. */
    void (*rotate)(float *lo, float *hi, const float *c, const float *s, size_t n);
    /* A head whose every element is in a pair (n = 2 * half, span = half):
     * out = store_f32 of rotate of scale_f32(x, w, r), the same operations
     * on each element without the passes through memory between them.
     * stream as in store_f32, for whole vectors that are aligned in out
     * together with their partners. */
    void (*scale_rotate_store_f32)(const float *x, const float *w, float r, const float *c, const float *s,
                                   size_t half, float *out, bool stream);
    /* The same for `heads` consecutive bf16 heads of 2 * half elements, head
     * h with r[h]: out = bf16 of rotate of scale_bf16(x, w, r[h]), each
     * element rounded once (ug_bf16_from_f32) as it leaves registers. */
    void (*scale_rotate_round_bf16)(const ug_bf16 *x, size_t heads, const ug_bf16 *w, const float *r, const float *c,
                                    const float *s, size_t half, ug_bf16 *out);
    /* r[i] = head_norm_rope_inverse_rms(ss[i], count, eps) for i < n: the
     * heads' independent division, square root and division side by side. */
    void (*inverse_rms)(const float *ss, size_t n, float count, float eps, float *r);
    /* out[i] = y[i] for i < n. stream: the whole vectors that are aligned in
     * out are written with non-temporal stores, which skip the
     * read-for-ownership of out's lines and leave the caches to the input;
     * the caller issues end_stream before out is read by anyone. */
    void (*store_f32)(float *out, const float *y, size_t n, bool stream);
    /* Orders the calling thread's non-temporal stores before its later
     * stores (another thread may read them once this thread's work is done). */
    void (*end_stream)(void);
} head_norm_rope_paths;

static inline void head_norm_rope_fold(float *partial, size_t stride)
{
    for (size_t t = 0; t < stride; t++) partial[t] = partial[t] + partial[t + stride];
}

/* r = 1/sqrt(ss/count + eps): an f32 division, addition, square root and
 * reciprocal (the bound in docs/error-model-head_norm_rope.md §2). */
static inline float head_norm_rope_inverse_rms(float ss, float count, float eps)
{
    return 1.0f / sqrtf(ss / count + eps);
}

/* One normalized element: fl(x * r), then fl(that * w) when weighted. */
static inline float head_norm_rope_scale(float x, float r, const float *w)
{
    float y = x * r;
    return w ? y * *w : y;
}

/* One pair: lo' = fl(lo*c - fl(hi*s)), hi' = fl(hi*c + fl(lo*s)), each with
 * one fused multiply-add. The single scalar definition every path uses for
 * the elements its vectors leave over. */
static inline void head_norm_rope_rotate_pair(float *lo, float *hi, float c, float s)
{
    float l = *lo, h = *hi;
    *lo = fmaf(l, c, -(h * s));
    *hi = fmaf(h, c, l * s);
}

/* Element i of an f32 or bf16 vector, as f32 (bf16 widens exactly). */
static inline float head_norm_rope_element(const void *v, size_t i, bool f32)
{
    return f32 ? ((const float *)v)[i] : ug_bf16_to_f32(((const ug_bf16 *)v)[i]);
}

/* scale_rotate_store_f32 (f32: out is float) or scale_rotate_round_bf16
 * (x, w and out bf16) on pairs k = from .. half-1 of a head, one element at
 * a time: the portable path's whole loop and the SIMD paths' elements left
 * over. Always inlined: called out of line at the end of a SIMD function,
 * it became a tail call that left the vector registers' upper halves dirty
 * (no vzeroupper), and the caller's SSE code (sincosf, the angles) ran 35 %
 * slower on Zen 4 (docs/performance.md). */
static inline __attribute__((always_inline)) void head_norm_rope_scale_rotate_pairs(const void *x, const void *w, float r,
                                                                                    const float *c, const float *s,
                                                                                    size_t from, size_t half, void *out,
                                                                                    bool f32)
{
    for (size_t k = from; k < half; k++) {
        float wl = w ? head_norm_rope_element(w, k, f32) : 0.0f;
        float wh = w ? head_norm_rope_element(w, half + k, f32) : 0.0f;
        float lo = head_norm_rope_scale(head_norm_rope_element(x, k, f32), r, w ? &wl : NULL);
        float hi = head_norm_rope_scale(head_norm_rope_element(x, half + k, f32), r, w ? &wh : NULL);
        head_norm_rope_rotate_pair(&lo, &hi, c[k], s[k]);
        if (f32) {
            ((float *)out)[k] = lo;
            ((float *)out)[half + k] = hi;
        } else {
            ((ug_bf16 *)out)[k] = ug_bf16_from_f32(lo);
            ((ug_bf16 *)out)[half + k] = ug_bf16_from_f32(hi);
        }
    }
}

UG_ISA_PATHS_DECLARE(head_norm_rope);

#endif
