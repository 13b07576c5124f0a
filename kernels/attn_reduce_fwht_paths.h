/* SPDX-License-Identifier: MIT */
/* The per-ISA inner loops of attn_reduce_fwht (private to kernels/).
 *
 * The portable path lives in attn_reduce_fwht.c; attn_reduce_fwht_avx2.c and
 * attn_reduce_fwht_avx512.c are built with their ISA's flags by the Makefile
 * over their vec_<isa>.h; each registers its paths (isa.h).
 * Every path performs, for every element, exactly the operations stated
 * below in the order stated, so all paths produce identical bits. */
#ifndef UG_ATTN_REDUCE_FWHT_PATHS_H
#define UG_ATTN_REDUCE_FWHT_PATHS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "isa.h"

typedef struct {
    /* y[4i + c] = fl(acc * inv_s) for i < groups, c < 4, where
     * acc = fmaf(P[w = nwg-1], m[nwg-1], ... fmaf(P[w = 0], m[0], +0.0f)) and
     * P[w] = partials[i*group_stride + w*wg_stride + c]. groups is a
     * multiple of 8. */
    void (*merge_partials)(const float *partials, size_t groups, size_t group_stride, size_t nwg,
                           size_t wg_stride, const float *m, float inv_s, float *y);
    /* The in-place natural-order Walsh-Hadamard butterflies on x[0..n), n a
     * power of two >= 32: for h = 1, 2, 4, ..., n/2 in that order, every pair
     * (j, j + h) with j & h == 0 becomes (fl(x[j] + x[j+h]), fl(x[j] - x[j+h])). */
    void (*butterflies)(float *x, size_t n);
    /* out[j] = fl(x[j] * scale) with its sign bit XORed with sign_bits[j]
     * (0 or 0x80000000); n a multiple of 16; out may equal x. */
    void (*scale_signs)(const float *x, size_t n, float scale, const uint32_t *sign_bits, float *out);
    /* fmaf(x[n-1], y[n-1], ... fmaf(x[0], y[0], +0.0f)): every path
     * points to attn_reduce_fwht_fma_chain compiled with its own flags, so
     * that on the SIMD paths fmaf is one instruction, not a libm call. */
    float (*fma_chain)(size_t n, const float *x, const float *y);
} attn_reduce_fwht_paths;

static inline float attn_reduce_fwht_fma_chain(size_t n, const float *x, const float *y)
{
    float acc = 0.0f;
    for (size_t i = 0; i < n; i++) acc = fmaf(x[i], y[i], acc);
    return acc;
}

UG_ISA_PATHS_DECLARE(attn_reduce_fwht);

#endif
