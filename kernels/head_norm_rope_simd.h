/* SPDX-License-Identifier: MIT */
/* The vector loops of head_norm_rope, written once for every SIMD path
 * (included by head_norm_rope_<isa>.c after its vec_<isa>.h), registered as
 * that ISA's paths. Each loop performs head_norm_rope_paths.h's operations
 * LANES elements at a time and the scalar definitions on the elements left
 * over; the tree's last steps over 2*LANES sums are vec_tree_sum, in
 * registers. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "head_norm_rope.h"
#include "head_norm_rope_paths.h"

/* Element i of x as f32, x of either dtype (bf16 widens exactly); the
 * always-inline callers pass a constant `bf16`. */
static inline vec load_as_f32(const void *x, size_t i, bool bf16)
{
    return bf16 ? vec_load_bf16((const ug_bf16 *)x + i) : vec_load((const float *)x + i);
}
static inline float scalar_as_f32(const void *x, size_t i, bool bf16)
{
    return bf16 ? ug_bf16_to_f32(((const ug_bf16 *)x)[i]) : ((const float *)x)[i];
}

/* partial[t] = fmaf(x[base + t], x[base + t], partial[t]) for t < n: one
 * step of the shader's per-thread sums. */
static inline __attribute__((always_inline)) void accumulate_squares(const void *x, size_t base, size_t n,
                                                                      float *partial, bool bf16)
{
    size_t t = 0;
    for (; t + LANES <= n; t += LANES) {
        vec v = load_as_f32(x, base + t, bf16);
        vec_store(partial + t, vec_fmadd(v, v, vec_load(partial + t)));
    }
    for (; t < n; t++) {
        float v = scalar_as_f32(x, base + t, bf16);
        partial[t] = fmaf(v, v, partial[t]);
    }
}

/* The tree's steps down to 2 * LANES sums as vector adds over memory, then
 * vec_tree_sum in registers. */
static float reduce(float *partial, size_t tg)
{
    if (tg < 2 * LANES) {
        for (size_t stride = tg / 2; stride > 0; stride /= 2) head_norm_rope_fold(partial, stride);
        return partial[0];
    }
    for (size_t stride = tg / 2; stride > LANES; stride /= 2)
        for (size_t t = 0; t < stride; t += LANES)
            vec_store(partial + t, vec_add(vec_load(partial + t), vec_load(partial + t + stride)));
    return vec_tree_sum(vec_load(partial), vec_load(partial + LANES));
}

/* A head of exactly tg = nv * LANES elements (nv a power of two, 2 .. 16,
 * a constant after inlining) has one element per thread: partial[t] is
 * fl(x[t]^2 + 0), and the whole tree runs in registers, the steps over
 * whole vectors as vector adds, then vec_tree_sum. */
static inline __attribute__((always_inline)) float sum_squares_in_registers(const void *x, size_t nv, bool bf16)
{
    vec v[16];
#pragma GCC unroll 16
    for (size_t i = 0; i < nv; i++) {
        vec a = load_as_f32(x, i * LANES, bf16);
        v[i] = vec_fmadd(a, a, vec_set1(0.0f));
    }
#pragma GCC unroll 4
    for (size_t half = nv / 2; half >= 2; half /= 2)
#pragma GCC unroll 8
        for (size_t i = 0; i < half; i++) v[i] = vec_add(v[i], v[i + half]);
    return vec_tree_sum(v[0], v[1]);
}

static inline __attribute__((always_inline)) float sum_squares(const void *x, size_t n, size_t tg, float *partial,
                                                                bool bf16)
{
    if (n == tg) switch (tg / LANES) {
        case 2: return sum_squares_in_registers(x, 2, bf16);
        case 4: return sum_squares_in_registers(x, 4, bf16);
        case 8: return sum_squares_in_registers(x, 8, bf16);
        case 16: return sum_squares_in_registers(x, 16, bf16);
        }
    memset(partial, 0, tg * sizeof(float));
    for (size_t base = 0; base < n; base += tg) accumulate_squares(x, base, n - base < tg ? n - base : tg, partial, bf16);
    return reduce(partial, tg);
}

static float sum_squares_bf16(const ug_bf16 *x, size_t n, size_t tg, float *partial)
{
    return sum_squares(x, n, tg, partial, true);
}
static float sum_squares_f32(const float *x, size_t n, size_t tg, float *partial)
{
    return sum_squares(x, n, tg, partial, false);
}

static inline __attribute__((always_inline)) void scale(const void *x, const void *w, size_t n, float r, float *y,
                                                         bool bf16)
{
    const vec rv = vec_set1(r);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        vec v = vec_mul(load_as_f32(x, i, bf16), rv);
        vec_store(y + i, w ? vec_mul(v, load_as_f32(w, i, bf16)) : v);
    }
    for (; i < n; i++) {
        float wi = w ? scalar_as_f32(w, i, bf16) : 0.0f;
        y[i] = head_norm_rope_scale(scalar_as_f32(x, i, bf16), r, w ? &wi : NULL);
    }
}

static void scale_bf16(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y) { scale(x, w, n, r, y, true); }
static void scale_f32(const float *x, const float *w, size_t n, float r, float *y) { scale(x, w, n, r, y, false); }

static void rotate(float *lo, float *hi, const float *c, const float *s, size_t n)
{
    size_t k = 0;
    for (; k + LANES <= n; k += LANES) {
        vec l = vec_load(lo + k), h = vec_load(hi + k), cv = vec_load(c + k), sv = vec_load(s + k);
        vec_store(lo + k, vec_fmsub(l, cv, vec_mul(h, sv)));
        vec_store(hi + k, vec_fmadd(h, cv, vec_mul(l, sv)));
    }
    for (; k < n; k++) head_norm_rope_rotate_pair(lo + k, hi + k, c[k], s[k]);
}

/* Pairs k .. k + LANES - 1 of a head whose every element is in a pair:
 * scaled (x r, times w when given) and rotated, into *lo and *hi. */
static inline __attribute__((always_inline)) void scale_rotate_lanes(const void *x, const void *w, size_t k,
                                                                     size_t half, vec rv, const float *c,
                                                                     const float *s, bool bf16, vec *lo, vec *hi)
{
    vec l = vec_mul(load_as_f32(x, k, bf16), rv), h = vec_mul(load_as_f32(x, half + k, bf16), rv);
    if (w) {
        l = vec_mul(l, load_as_f32(w, k, bf16));
        h = vec_mul(h, load_as_f32(w, half + k, bf16));
    }
    const vec cv = vec_load(c + k), sv = vec_load(s + k);
    *lo = vec_fmsub(l, cv, vec_mul(h, sv));
    *hi = vec_fmadd(h, cv, vec_mul(l, sv));
}

static void scale_rotate_store_f32(const float *x, const float *w, float r, const float *c, const float *s,
                                   size_t half, float *out, bool stream)
{
    const vec rv = vec_set1(r);
    const bool aligned = (uintptr_t)out % sizeof(vec) == 0 && half % LANES == 0;
    size_t k = 0;
    for (; k + LANES <= half; k += LANES) {
        vec lo, hi;
        scale_rotate_lanes(x, w, k, half, rv, c, s, false, &lo, &hi);
        if (stream && aligned) {
            vec_stream(out + k, lo);
            vec_stream(out + half + k, hi);
        } else {
            vec_store(out + k, lo);
            vec_store(out + half + k, hi);
        }
    }
    head_norm_rope_scale_rotate_pairs(x, w, r, c, s, k, half, out, true);
}

/* One head of scale_rotate_round_bf16. */
static inline __attribute__((always_inline)) void scale_rotate_round_head(const ug_bf16 *x, const ug_bf16 *w, float r,
                                                                          const float *c, const float *s, size_t half,
                                                                          ug_bf16 *out)
{
    const vec rv = vec_set1(r);
    size_t k = 0;
    /* Two vectors a step, split into even- and odd-indexed elements: a bf16
     * pair is one 32-bit lane, so the widening is a shift and a mask and the
     * rounded halves merge back into lanes without a narrowing shuffle. NaNs
     * are rare: the rounding skips their case, and a head that has one is
     * redone element by element. */
    vec_mask nan = vec_no_lanes();
    for (; k + 2 * LANES <= half; k += 2 * LANES) {
        vec l_even, l_odd, h_even, h_odd, c_even, c_odd, s_even, s_odd;
        vec_load_bf16_split(x + k, &l_even, &l_odd);
        vec_load_bf16_split(x + half + k, &h_even, &h_odd);
        l_even = vec_mul(l_even, rv), l_odd = vec_mul(l_odd, rv);
        h_even = vec_mul(h_even, rv), h_odd = vec_mul(h_odd, rv);
        if (w) {
            vec wl_even, wl_odd, wh_even, wh_odd;
            vec_load_bf16_split(w + k, &wl_even, &wl_odd);
            vec_load_bf16_split(w + half + k, &wh_even, &wh_odd);
            l_even = vec_mul(l_even, wl_even), l_odd = vec_mul(l_odd, wl_odd);
            h_even = vec_mul(h_even, wh_even), h_odd = vec_mul(h_odd, wh_odd);
        }
        vec_load_split(c + k, &c_even, &c_odd);
        vec_load_split(s + k, &s_even, &s_odd);
        const vec lo_even = vec_fmsub(l_even, c_even, vec_mul(h_even, s_even)),
                  lo_odd = vec_fmsub(l_odd, c_odd, vec_mul(h_odd, s_odd));
        nan = UG_MUTANT == HEAD_NORM_ROPE_MUT_VECTOR_EVEN_ODD_SWAPPED
                  ? vec_mask_or(nan, vec_store_bf16_merge_numbers(out + k, lo_odd, lo_even))
                  : vec_mask_or(nan, vec_store_bf16_merge_numbers(out + k, lo_even, lo_odd));
        nan = vec_mask_or(nan, vec_store_bf16_merge_numbers(out + half + k,
                                                            vec_fmadd(h_even, c_even, vec_mul(l_even, s_even)),
                                                            vec_fmadd(h_odd, c_odd, vec_mul(l_odd, s_odd))));
    }
    if (vec_mask_any(nan)) k = 0;
    for (; k + LANES <= half; k += LANES) {
        vec lo, hi;
        scale_rotate_lanes(x, w, k, half, rv, c, s, true, &lo, &hi);
        vec_store_bf16(out + k, vec_round_bf16(lo));
        vec_store_bf16(out + half + k, vec_round_bf16(hi));
    }
    head_norm_rope_scale_rotate_pairs(x, w, r, c, s, k, half, out, false);
}

static void scale_rotate_round_bf16(const ug_bf16 *x, size_t heads, const ug_bf16 *w, const float *r, const float *c,
                                    const float *s, size_t half, ug_bf16 *out)
{
    for (size_t h = 0; h < heads; h++)
        scale_rotate_round_head(x + h * 2 * half, w, r[h], c, s, half, out + h * 2 * half);
}

static void inverse_rms(const float *ss, size_t n, float count, float eps, float *r)
{
    const vec one = vec_set1(1.0f), cv = vec_set1(count), ev = vec_set1(eps);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        vec_store(r + i, vec_div(one, vec_sqrt(vec_add(vec_div(vec_load(ss + i), cv), ev))));
    for (; i < n; i++) r[i] = head_norm_rope_inverse_rms(ss[i], count, eps);
}

static void store_f32(float *out, const float *y, size_t n, bool stream)
{
    size_t i = 0;
    if (stream) {
        for (; i < n && (uintptr_t)(out + i) % sizeof(vec) != 0; i++) out[i] = y[i];
        for (; i + LANES <= n; i += LANES) vec_stream(out + i, vec_load(y + i));
    }
    memcpy(out + i, y + i, (n - i) * sizeof(float));
}

static const head_norm_rope_paths paths = {
    sum_squares_bf16,        sum_squares_f32, scale_bf16, scale_f32, rotate, scale_rotate_store_f32,
    scale_rotate_round_bf16, inverse_rms,     store_f32,  vec_stream_fence,
};
UG_ISA_PATHS(head_norm_rope, UG_VEC_ISA, paths);
