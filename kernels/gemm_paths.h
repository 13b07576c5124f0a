/* SPDX-License-Identifier: MIT */
/* The per-ISA implementations behind the products and row operations of
 * isa.h (private to kernels/).
 *
 * Each path lives in its own file so that the Makefile can build it with that
 * ISA's flags (gemm_avx2.c, gemm_avx512.c) while everything else stays free
 * of SIMD code; isa.c calls only the path the CPU supports. Every function
 * computes its contract in isa.h bit for bit; the scalar definitions below
 * are the contract written once, used by the portable path and by the SIMD
 * paths for what their vectors leave over. */
#ifndef UG_GEMM_PATHS_H
#define UG_GEMM_PATHS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../core/bf16.h"
#include "expf.h"
#include "isa.h"

/* One path: the product and every row operation; each path's file
 * registers its own (UG_ISA_PATHS(ug_gemm, ...), isa.h). */
typedef struct {
    void (*gemm)(const ug_gemm_operands *g);
    void (*widen)(size_t n, const ug_bf16 *x, float *out);
    void (*round)(size_t n, const float *x, ug_bf16 *out);
    void (*scale_round)(size_t n, const ug_bf16 *x, float s1, float s2, ug_bf16 *out);
    void (*mul3)(size_t n, float s, const float *x, const float *y, float *out);
    void (*fma)(size_t n, float d, float *acc, const float *add);
    void (*scaled_sum_round)(size_t n, float d, const float *x, const float *y, float scale, ug_bf16 *out);
    void (*residual)(size_t n, const ug_bf16 *u, const float *x, float d, ug_bf16 *v, ug_bf16 *dv);
    void (*exp_diff)(size_t n, float a, const float *x, float *out);
    void (*exp_sub)(size_t n, const float *x, float a, float *out);
    void (*decay_mul)(size_t n, float a, const float *x, float s, const float *y, float *out);
    void (*store)(size_t bytes, const void *src, void *dst, bool stream);
    void (*stream_end)(void);
    void (*transpose)(size_t rows, size_t cols, const ug_bf16 *src, size_t lds, ug_bf16 *dst, size_t ldd);
} ug_gemm_paths;
UG_ISA_PATHS_DECLARE(ug_gemm);

/* ---- the contract, one element at a time ------------------------------------ */

/* A(i, p) and B(p, j) of a product. */
static inline float ug_gemm_a(const ug_gemm_operands *g, size_t i, size_t p)
{
    return g->a[(ptrdiff_t)i * g->a_row + (ptrdiff_t)p * g->a_col];
}

static inline float ug_gemm_b(const ug_gemm_operands *g, size_t p, size_t j)
{
    return ug_bf16_to_f32(g->b[(ptrdiff_t)p * g->b_row + (ptrdiff_t)j * g->b_col]);
}

/* C(i, j) continued over p in [p0, p1) from acc: the FMA chain in increasing
 * p (from acc = +0.0f at p0 = 0). */
static inline float ug_gemm_chain(const ug_gemm_operands *g, size_t i, size_t j, size_t p0, size_t p1, float acc)
{
    for (size_t p = p0; p < p1; p++) acc = fmaf(ug_gemm_a(g, i, p), ug_gemm_b(g, p, j), acc);
    return acc;
}

static inline void ug_rows_widen_scalar(size_t n, const ug_bf16 *x, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_bf16_to_f32(x[i]);
}

static inline void ug_rows_round_scalar(size_t n, const float *x, ug_bf16 *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_bf16_from_f32(x[i]);
}

static inline void ug_rows_scale_round_scalar(size_t n, const ug_bf16 *x, float s1, float s2, ug_bf16 *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_bf16_from_f32(ug_bf16_to_f32(x[i]) * s1 * s2);
}

static inline void ug_rows_mul3_scalar(size_t n, float s, const float *x, const float *y, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = s * x[i] * y[i];
}

static inline void ug_rows_fma_scalar(size_t n, float d, float *acc, const float *add)
{
    for (size_t i = 0; i < n; i++) acc[i] = fmaf(d, acc[i], add[i]);
}

static inline void ug_rows_scaled_sum_round_scalar(size_t n, float d, const float *x, const float *y, float scale,
                                                   ug_bf16 *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_bf16_from_f32(d * x[i] * scale + y[i] * scale);
}

static inline void ug_rows_residual_scalar(size_t n, const ug_bf16 *u, const float *x, float d, ug_bf16 *v,
                                           ug_bf16 *dv)
{
    for (size_t i = 0; i < n; i++) {
        float r = ug_bf16_to_f32(u[i]) - x[i];
        v[i] = ug_bf16_from_f32(r);
        dv[i] = ug_bf16_from_f32(d * r);
    }
}

static inline void ug_rows_exp_diff_scalar(size_t n, float a, const float *x, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_expf(a - x[i]);
}

static inline void ug_rows_exp_sub_scalar(size_t n, const float *x, float a, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_expf(x[i] - a);
}

static inline void ug_rows_decay_mul_scalar(size_t n, float a, const float *x, float s, const float *y, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = s * ug_expf(a - x[i]) * y[i];
}

/* The portable path has no streaming stores. */
static inline void ug_rows_store_scalar(size_t bytes, const void *src, void *dst, __attribute__((unused)) bool stream)
{
    memcpy(dst, src, bytes);
}

static inline void ug_rows_stream_end_scalar(void) {}

/* store for a SIMD path: the whole 64-byte lines of dst by its `line` (a
 * non-temporal store of one line), a head or tail of partial lines by
 * memcpy. */
static inline __attribute__((always_inline)) void ug_rows_store_lines(size_t bytes, const void *src, void *dst,
                                                                      bool stream,
                                                                      void (*line)(void *dst, const void *src))
{
    enum { LINE = 64 };
    unsigned char *d = dst;
    const unsigned char *s = src;
    const size_t head = stream ? (LINE - (uintptr_t)d % LINE) % LINE : bytes;
    if (head >= bytes) {
        memcpy(d, s, bytes);
        return;
    }
    memcpy(d, s, head);
    size_t i = head;
    for (; i + LINE <= bytes; i += LINE) line(d + i, s + i);
    memcpy(d + i, s + i, bytes - i);
}

static inline void ug_rows_transpose_scalar(size_t rows, size_t cols, const ug_bf16 *src, size_t lds, ug_bf16 *dst,
                                            size_t ldd)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) dst[j * ldd + i] = src[i * lds + j];
}

#endif
