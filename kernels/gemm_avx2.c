/* SPDX-License-Identifier: MIT */
/* AVX2 path (built with -mavx2 -mfma).
 *
 * The product has the AVX-512 path's structure at half the width: B widened
 * to f32 once per panel of 16 columns and up to KC rows, a 6 x 16 block of C
 * in 12 accumulators (of the 16 ymm registers), A broadcast from memory into
 * the FMAs. Partial panels are packed element by element (AVX2 has no 16-bit
 * masked load) and zero-filled; C's column tail is a masked store.
 *
 * The row operations do eight elements per instruction, the elements beyond
 * the last whole vector by the scalar contract (gemm_paths.h); f32 -> bf16 is
 * the integer rounding of ug_bf16_from_f32. */
#include <stdbool.h>
#include <stdint.h>

#include "gemm_paths.h"
#include "transpose_avx2.h"
#include "vec_avx2.h"

#define UG_GEMM_MR 6
enum { MR = UG_GEMM_MR, NR = 2 * LANES, KC = 256 };

/* -O2 does not unroll the block's short loops by itself; unrolled, with
 * constant trip counts, the accumulator array lives in registers. */
#define UNROLLED _Pragma("GCC unroll 8")

/* C[rows][vectors * LANES] over the panel's kc rows, from +0 (first) or from
 * the partial sums in C; `lanes` limits each vector's columns. */
static inline __attribute__((always_inline)) void
block(size_t rows, size_t vectors, const __m256i lanes[2], size_t kc, const float *a, ptrdiff_t a_row,
      ptrdiff_t a_col, const float (*panel)[NR], float *c, size_t ldc, bool first)
{
    __m256 acc[MR][2];
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++)
            acc[r][v] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(c + r * ldc + v * LANES, lanes[v]);
    for (size_t p = 0; p < kc; p++, a += a_col) {
        __m256 b[2];
        UNROLLED for (size_t v = 0; v < vectors; v++) b[v] = _mm256_load_ps(panel[p] + v * LANES);
        UNROLLED for (size_t r = 0; r < rows; r++) {
            const __m256 ar = _mm256_broadcast_ss(a + (ptrdiff_t)r * a_row);
            UNROLLED for (size_t v = 0; v < vectors; v++) acc[r][v] = _mm256_fmadd_ps(ar, b[v], acc[r][v]);
        }
    }
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++) _mm256_maskstore_ps(c + r * ldc + v * LANES, lanes[v], acc[r][v]);
}

static inline __attribute__((always_inline)) void
block_of_width(size_t rows, size_t nc, size_t kc, const float *a, ptrdiff_t a_row, ptrdiff_t a_col,
               const float (*panel)[NR], float *c, size_t ldc, bool first)
{
    const __m256i lanes[2] = {vec_first(nc), vec_first(nc > LANES ? nc - LANES : 0)};
    if (nc > LANES) block(rows, 2, lanes, kc, a, a_row, a_col, panel, c, ldc, first);
    else block(rows, 1, lanes, kc, a, a_row, a_col, panel, c, ldc, first);
}

/* B(p0 .. p0+kc, j0 .. j0+nc) widened into the panel, zero beyond nc. */
static void pack_panel(const ug_gemm_operands *g, size_t p0, size_t kc, size_t j0, size_t nc, float (*panel)[NR])
{
    if (g->b_col == 1 && nc == NR) {
        for (size_t p = 0; p < kc; p++) {
            const ug_bf16 *row = g->b + (ptrdiff_t)(p0 + p) * g->b_row + (ptrdiff_t)j0;
            _mm256_store_ps(panel[p], vec_load_bf16(row));
            _mm256_store_ps(panel[p] + LANES, vec_load_bf16(row + LANES));
        }
        return;
    }
    if (g->b_row == 1 && g->b_col > 0 && nc == NR) { /* B stored by columns: 16 terms at a time */
        ug_bf16 terms[16][NR] __attribute__((aligned(32)));
        size_t p = 0;
        for (; p + 16 <= kc; p += 16) {
            ug_transpose_terms_avx2(g->b + (ptrdiff_t)j0 * g->b_col + (ptrdiff_t)(p0 + p), (size_t)g->b_col, NR, terms[0],
                                    NR);
            for (size_t q = 0; q < 16; q++) {
                _mm256_store_ps(panel[p + q], vec_load_bf16(terms[q]));
                _mm256_store_ps(panel[p + q] + LANES, vec_load_bf16(terms[q] + LANES));
            }
        }
        for (; p < kc; p++)
            for (size_t j = 0; j < NR; j++) panel[p][j] = ug_gemm_b(g, p0 + p, j0 + j);
        return;
    }
    /* Other strides, partial panels: one element at a time. */
    for (size_t j = 0; j < NR; j++)
        for (size_t p = 0; p < kc; p++) panel[p][j] = j < nc ? ug_gemm_b(g, p0 + p, j0 + j) : 0.0f;
}

#include "gemm_driver.h"

/* ---- the row operations: eight lanes at a time, the rest by the scalar contract ---- */

static void widen(size_t n, const ug_bf16 *x, float *out)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) _mm256_storeu_ps(out + i, vec_load_bf16(x + i));
    ug_rows_widen_scalar(n - i, x + i, out + i);
}

static void round_rows(size_t n, const float *x, ug_bf16 *out)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) vec_store_bf16(out + i, vec_round_bf16(_mm256_loadu_ps(x + i)));
    ug_rows_round_scalar(n - i, x + i, out + i);
}

static void scale_round(size_t n, const ug_bf16 *x, float s1, float s2, ug_bf16 *out)
{
    const __m256 v1 = _mm256_set1_ps(s1), v2 = _mm256_set1_ps(s2);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        vec_store_bf16(out + i, vec_round_bf16(_mm256_mul_ps(_mm256_mul_ps(vec_load_bf16(x + i), v1), v2)));
    ug_rows_scale_round_scalar(n - i, x + i, s1, s2, out + i);
}

static void mul3(size_t n, float s, const float *x, const float *y, float *out)
{
    const __m256 sv = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(sv, _mm256_loadu_ps(x + i)), _mm256_loadu_ps(y + i)));
    ug_rows_mul3_scalar(n - i, s, x + i, y + i, out + i);
}

static void fma_rows(size_t n, float d, float *acc, const float *add)
{
    const __m256 dv = _mm256_set1_ps(d);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(dv, _mm256_loadu_ps(acc + i), _mm256_loadu_ps(add + i)));
    ug_rows_fma_scalar(n - i, d, acc + i, add + i);
}

static void scaled_sum_round(size_t n, float d, const float *x, const float *y, float scale, ug_bf16 *out)
{
    const __m256 dv = _mm256_set1_ps(d), sv = _mm256_set1_ps(scale);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        const __m256 first = _mm256_mul_ps(_mm256_mul_ps(dv, _mm256_loadu_ps(x + i)), sv);
        const __m256 second = _mm256_mul_ps(_mm256_loadu_ps(y + i), sv);
        vec_store_bf16(out + i, vec_round_bf16(_mm256_add_ps(first, second)));
    }
    ug_rows_scaled_sum_round_scalar(n - i, d, x + i, y + i, scale, out + i);
}

static void residual(size_t n, const ug_bf16 *u, const float *x, float d, ug_bf16 *v, ug_bf16 *dv)
{
    const __m256 dd = _mm256_set1_ps(d);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        const __m256 r = _mm256_sub_ps(vec_load_bf16(u + i), _mm256_loadu_ps(x + i));
        vec_store_bf16(v + i, vec_round_bf16(r));
        vec_store_bf16(dv + i, vec_round_bf16(_mm256_mul_ps(dd, r)));
    }
    ug_rows_residual_scalar(n - i, u + i, x + i, d, v + i, dv + i);
}

/* ug_expf (expf.h) on four binary64 lanes, for arguments off its special
 * cases; the table entry is gathered. */
static inline __m256d exp_main_path(__m256d xd)
{
    const ug_expf_constants *d = &ug_expf_data;
    const __m256d inv_ln2_n = _mm256_set1_pd(ug_expf_constant(d->inv_ln2_n));
    const __m256d shift = _mm256_set1_pd(ug_expf_constant(d->shift));
    const __m256d shifted = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
    const __m256i ki = _mm256_castpd_si256(shifted);
    const __m256d r = _mm256_fmsub_pd(inv_ln2_n, xd, _mm256_sub_pd(shifted, shift));
    const __m256i index = _mm256_and_si256(ki, _mm256_set1_epi64x(UG_EXPF_TABLE_SIZE - 1));
    const __m256i entry = _mm256_i64gather_epi64((const long long *)ug_expf_data.tab, index, 8);
    const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(entry, _mm256_slli_epi64(ki, 52 - UG_EXPF_TABLE_BITS)));
    const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(ug_expf_constant(d->c0)), _mm256_set1_pd(ug_expf_constant(d->c1)));
    const __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(ug_expf_constant(d->c2)), _mm256_set1_pd(1.0));
    return _mm256_mul_pd(_mm256_fmadd_pd(z, _mm256_mul_pd(r, r), y), s);
}

/* ug_expf on eight lanes, right wherever ug_expf_special is false. */
static inline __m256 expf8(__m256 x)
{
    const __m128 low = _mm256_cvtpd_ps(exp_main_path(_mm256_cvtps_pd(_mm256_castps256_ps128(x))));
    const __m128 high = _mm256_cvtpd_ps(exp_main_path(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
    return _mm256_set_m128(high, low);
}

/* All-ones in the lanes of x for which ug_expf_special holds. */
static inline __m256i exp_special(__m256 x)
{
    const __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), _mm256_set1_epi32(0x7FF));
    return _mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x42A));
}

/* exp(a - x) or, with x_minus_a, exp(x - a): each its own subtraction, as a
 * negated operand could flip a NaN's sign; with y, s * exp(a - x) * y (the
 * decays and their products in one pass). The last vector is masked (no
 * scalar tail): the kernels' rows of exponents are mostly short and of every
 * length. Arguments with |x| >= 88 or NaN are rare: they are redone by
 * ug_expf after the vector loop, which has no call in it (a call would move
 * its constants out of the registers). */
static inline __attribute__((always_inline)) void exp_rows_times(size_t n, float a, const float *x, bool x_minus_a,
                                                                 float s, const float *y, float *out)
{
    const __m256 av = _mm256_set1_ps(a);
    __m256i special = _mm256_setzero_si256();
    for (size_t i = 0; i < n; i += LANES) {
        const __m256i lanes = vec_first(n - i);
        const __m256 xv = _mm256_maskload_ps(x + i, lanes);
        const __m256 diff = x_minus_a ? _mm256_sub_ps(xv, av) : _mm256_sub_ps(av, xv);
        special = _mm256_or_si256(special, _mm256_and_si256(lanes, exp_special(diff)));
        __m256 e = expf8(diff);
        if (y) e = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(s), e), _mm256_maskload_ps(y + i, lanes));
        _mm256_maskstore_ps(out + i, lanes, e);
    }
    if (!_mm256_testz_si256(special, special))
        for (size_t i = 0; i < n; i++) {
            const float diff = x_minus_a ? x[i] - a : a - x[i];
            if (ug_expf_special(ug_f32_bits(diff))) out[i] = y ? s * ug_expf(diff) * y[i] : ug_expf(diff);
        }
}

#include "gemm_simd.h"
