/* The per-ISA inner loops of head_norm_rope (private to kernels/).
 *
 * The portable path lives in head_norm_rope.c; head_norm_rope_avx2.c and
 * head_norm_rope_avx512.c are built with their ISA's flags by the Makefile.
 * Every path performs, for every element, exactly the operations stated
 * below, so all paths produce identical bits. */
#ifndef UG_HEAD_NORM_ROPE_PATHS_H
#define UG_HEAD_NORM_ROPE_PATHS_H

#include <math.h>
#include <stddef.h>

#include "../core/bf16.h"

typedef struct {
    /* partial[t] = fmaf(x[t], x[t], partial[t]) for t < n: one step of the
     * shader's per-thread sums of squares (thread t owns x[t], x[t+tg], ...). */
    void (*accumulate_squares_bf16)(const ug_bf16 *x, size_t n, float *partial);
    void (*accumulate_squares_f32)(const float *x, size_t n, float *partial);
    /* The shader's tree over tg (a power of two) partial sums: for stride =
     * tg/2, tg/4, ..., 1, partial[t] = fl(partial[t] + partial[t + stride])
     * for t < stride; returns partial[0] (the rest of partial is left
     * undefined). head_norm_rope_fold is the scalar step. */
    float (*reduce)(float *partial, size_t tg);
    /* y[i] = head_norm_rope_scale(x[i], r, w[i]) (w NULL: no weight) for i < n. */
    void (*scale_bf16)(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y);
    void (*scale_f32)(const float *x, const float *w, size_t n, float r, float *y);
    /* The NeoX rotation of n pairs in place, head_norm_rope_rotate_pair on
     * each (lo[k], hi[k]) with c[k], s[k]. */
    void (*rotate)(float *lo, float *hi, const float *c, const float *s, size_t n);
} head_norm_rope_path;

static inline void head_norm_rope_fold(float *partial, size_t stride)
{
    for (size_t t = 0; t < stride; t++) partial[t] = partial[t] + partial[t + stride];
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

extern const head_norm_rope_path head_norm_rope_path_avx2;
extern const head_norm_rope_path head_norm_rope_path_avx512;

#endif
