/* SPDX-License-Identifier: MIT */
/* AVX-512 path (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma).
 *
 * The product, BLIS-style: B is widened to f32 once per panel of 32 columns
 * and up to KC rows, packed [p][32] so that a k-step reads two aligned
 * vectors (a B stored by columns goes through the 8 x 16 bf16 transpose;
 * other strides and partial panels of such a B, one element at a time); an
 * 8 x 32 block of C keeps its 16 accumulators in registers while each A
 * element is broadcast from memory straight into its FMAs. The inner loop
 * is loads and FMAs only (the widening of B per block and per k-step, which
 * competed with the FMAs for ports 0 and 5, is gone). The loop nest and the
 * chains longer than KC: gemm_driver.h. Column tails are masked lanes, row
 * tails smaller blocks: the micro-kernel has no scalar code.
 *
 * The row operations do 16 elements per instruction, the last vector masked;
 * f32 -> bf16 is the integer rounding of ug_bf16_from_f32 (vcvtneps2bf16
 * would flush subnormals). */
#include <stdbool.h>

#include "gemm_paths.h"
#include "transpose_avx2.h"
#include "vec_avx512.h"

#define UG_GEMM_MR 8
enum { MR = UG_GEMM_MR, NR = 2 * LANES, KC = 256 };

/* -O2 does not unroll the block's short loops by itself; unrolled, with
 * constant trip counts, the accumulator array lives in registers. */
#define UNROLLED _Pragma("GCC unroll 8")

static const __mmask16 all_lanes = 0xFFFF;

/* ---- the product ----------------------------------------------------------------- */

/* C[rows][vectors * LANES] (the last vector limited to `last`) over the panel's
 * kc rows, starting from +0 (first) or from the partial sums in C; always
 * inlined so that rows and vectors are constants. */
static inline __attribute__((always_inline)) void
block(size_t rows, size_t vectors, __mmask16 last, size_t kc, const float *a, ptrdiff_t a_row, ptrdiff_t a_col,
      const float (*panel)[NR], float *c, size_t ldc, bool first)
{
    __m512 acc[MR][2];
    const __mmask16 lanes[2] = {vectors == 1 ? last : all_lanes, last};
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++)
            acc[r][v] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(lanes[v], c + r * ldc + v * LANES);
    for (size_t p = 0; p < kc; p++, a += a_col) {
        __m512 b[2];
        UNROLLED for (size_t v = 0; v < vectors; v++) b[v] = _mm512_load_ps(panel[p] + v * LANES);
        UNROLLED for (size_t r = 0; r < rows; r++) {
            const __m512 ar = _mm512_set1_ps(a[(ptrdiff_t)r * a_row]);
            UNROLLED for (size_t v = 0; v < vectors; v++) acc[r][v] = _mm512_fmadd_ps(ar, b[v], acc[r][v]);
        }
    }
    UNROLLED for (size_t r = 0; r < rows; r++)
        UNROLLED for (size_t v = 0; v < vectors; v++) _mm512_mask_storeu_ps(c + r * ldc + v * LANES, lanes[v], acc[r][v]);
}

static inline __attribute__((always_inline)) void
block_of_width(size_t rows, size_t nc, size_t kc, const float *a, ptrdiff_t a_row, ptrdiff_t a_col,
               const float (*panel)[NR], float *c, size_t ldc, bool first)
{
    if (nc > LANES) block(rows, 2, vec_first(nc - LANES), kc, a, a_row, a_col, panel, c, ldc, first);
    else block(rows, 1, vec_first(nc), kc, a, a_row, a_col, panel, c, ldc, first);
}

/* B(p0 .. p0+kc, j0 .. j0+nc) widened into the panel, zero beyond nc. */
static void pack_panel(const ug_gemm_operands *g, size_t p0, size_t kc, size_t j0, size_t nc, float (*panel)[NR])
{
    if (g->b_col == 1) {
        const __mmask16 low = vec_first(nc), high = nc > LANES ? vec_first(nc - LANES) : 0;
        for (size_t p = 0; p < kc; p++) {
            const ug_bf16 *row = g->b + (ptrdiff_t)(p0 + p) * g->b_row + (ptrdiff_t)j0;
            _mm512_store_ps(panel[p], vec_load_bf16_first(row, low));
            _mm512_store_ps(panel[p] + LANES, vec_load_bf16_first(row + LANES, high));
        }
        return;
    }
    if (g->b_row == 1 && g->b_col > 0 && nc % 8 == 0) { /* B stored by columns: 16 terms at a time */
        /* A partial panel (nc of 8, 16 or 24 columns: gdn_chunk_o's
         * triangular bands) is transposed as far as it goes, the rest zero. */
        ug_bf16 terms[LANES][NR] __attribute__((aligned(64)));
        const __mmask16 low = vec_first(nc), high = nc > LANES ? vec_first(nc - LANES) : 0;
        size_t p = 0;
        for (; p + LANES <= kc; p += LANES) {
            ug_transpose_terms_avx2(g->b + (ptrdiff_t)j0 * g->b_col + (ptrdiff_t)(p0 + p), (size_t)g->b_col, nc,
                                    terms[0], NR);
            for (size_t q = 0; q < LANES; q++) {
                _mm512_store_ps(panel[p + q], vec_load_bf16_first(terms[q], low));
                _mm512_store_ps(panel[p + q] + LANES, vec_load_bf16_first(terms[q] + LANES, high));
            }
        }
        for (; p < kc; p++)
            for (size_t j = 0; j < NR; j++) panel[p][j] = j < nc ? ug_gemm_b(g, p0 + p, j0 + j) : 0.0f;
        return;
    }
    /* Other strides, partial panels: one element at a time. */
    for (size_t j = 0; j < NR; j++)
        for (size_t p = 0; p < kc; p++) panel[p][j] = j < nc ? ug_gemm_b(g, p0 + p, j0 + j) : 0.0f;
}

#include "gemm_driver.h"

/* ---- the row operations: sixteen lanes at a time, the last vector masked --------- */

static void widen(size_t n, const ug_bf16 *x, float *out)
{
    for (size_t i = 0; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        _mm512_mask_storeu_ps(out + i, lanes, vec_load_bf16_first(x + i, lanes));
    }
}

static void round_rows(size_t n, const float *x, ug_bf16 *out)
{
    size_t i = 0;
    for (; i + 2 * LANES <= n; i += 2 * LANES) vec_store_bf16_pair(out + i, vec_load(x + i), vec_load(x + i + LANES));
    for (; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        vec_store_bf16_first(out + i, lanes, vec_round_bf16(_mm512_maskz_loadu_ps(lanes, x + i)));
    }
}

static void scale_round(size_t n, const ug_bf16 *x, float s1, float s2, ug_bf16 *out)
{
    const __m512 v1 = _mm512_set1_ps(s1), v2 = _mm512_set1_ps(s2);
    size_t i = 0;
    for (; i + 2 * LANES <= n; i += 2 * LANES)
        vec_store_bf16_pair(out + i, _mm512_mul_ps(_mm512_mul_ps(vec_load_bf16(x + i), v1), v2),
                            _mm512_mul_ps(_mm512_mul_ps(vec_load_bf16(x + i + LANES), v1), v2));
    for (; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        const __m512 scaled = _mm512_mul_ps(_mm512_mul_ps(vec_load_bf16_first(x + i, lanes), v1), v2);
        vec_store_bf16_first(out + i, lanes, vec_round_bf16(scaled));
    }
}

static void mul3(size_t n, float s, const float *x, const float *y, float *out)
{
    const __m512 sv = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        const __m512 sx = _mm512_mul_ps(sv, _mm512_maskz_loadu_ps(lanes, x + i));
        _mm512_mask_storeu_ps(out + i, lanes, _mm512_mul_ps(sx, _mm512_maskz_loadu_ps(lanes, y + i)));
    }
}

static void fma_rows(size_t n, float d, float *acc, const float *add)
{
    const __m512 dv = _mm512_set1_ps(d);
    for (size_t i = 0; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        const __m512 sum = _mm512_fmadd_ps(dv, _mm512_maskz_loadu_ps(lanes, acc + i), _mm512_maskz_loadu_ps(lanes, add + i));
        _mm512_mask_storeu_ps(acc + i, lanes, sum);
    }
}

static void scaled_sum_round(size_t n, float d, const float *x, const float *y, float scale, ug_bf16 *out)
{
    const __m512 dv = _mm512_set1_ps(d), sv = _mm512_set1_ps(scale);
    for (size_t i = 0; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        const __m512 first = _mm512_mul_ps(_mm512_mul_ps(dv, _mm512_maskz_loadu_ps(lanes, x + i)), sv);
        const __m512 second = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, y + i), sv);
        vec_store_bf16_first(out + i, lanes, vec_round_bf16(_mm512_add_ps(first, second)));
    }
}

static void residual(size_t n, const ug_bf16 *u, const float *x, float d, ug_bf16 *v, ug_bf16 *dv)
{
    const __m512 dd = _mm512_set1_ps(d);
    for (size_t i = 0; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        const __m512 r = _mm512_sub_ps(vec_load_bf16_first(u + i, lanes), _mm512_maskz_loadu_ps(lanes, x + i));
        vec_store_bf16_first(v + i, lanes, vec_round_bf16(r));
        vec_store_bf16_first(dv + i, lanes, vec_round_bf16(_mm512_mul_ps(dd, r)));
    }
}

/* ug_expf (expf.h) on eight binary64 lanes, for arguments off its special
 * cases: the table lookup is two two-register permutes (entries 0-15 and
 * 16-31) and a blend on bit 4 of k. */
static inline __m512d exp_main_path(__m512d xd, const __m512d table[4])
{
    const ug_expf_constants *d = &ug_expf_data;
    const __m512d inv_ln2_n = _mm512_set1_pd(ug_expf_constant(d->inv_ln2_n));
    const __m512d shift = _mm512_set1_pd(ug_expf_constant(d->shift));
    const __m512d shifted = _mm512_fmadd_pd(inv_ln2_n, xd, shift);
    const __m512i ki = _mm512_castpd_si512(shifted);
    const __m512d r = _mm512_fmsub_pd(inv_ln2_n, xd, _mm512_sub_pd(shifted, shift));
    const __m512d low = _mm512_permutex2var_pd(table[0], ki, table[1]);
    const __m512d high = _mm512_permutex2var_pd(table[2], ki, table[3]);
    const __m512d entry = _mm512_mask_blend_pd(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), low, high);
    const __m512d s = _mm512_castsi512_pd(
        _mm512_add_epi64(_mm512_castpd_si512(entry), _mm512_slli_epi64(ki, 52 - UG_EXPF_TABLE_BITS)));
    const __m512d z = _mm512_fmadd_pd(r, _mm512_set1_pd(ug_expf_constant(d->c0)), _mm512_set1_pd(ug_expf_constant(d->c1)));
    const __m512d y = _mm512_fmadd_pd(r, _mm512_set1_pd(ug_expf_constant(d->c2)), _mm512_set1_pd(1.0));
    return _mm512_mul_pd(_mm512_fmadd_pd(z, _mm512_mul_pd(r, r), y), s);
}

/* ug_expf on sixteen lanes, right wherever ug_expf_special is false. */
static inline __m512 expf16(__m512 x, const __m512d table[4])
{
    const __m256 low = _mm512_cvtpd_ps(exp_main_path(_mm512_cvtps_pd(_mm512_castps512_ps256(x)), table));
    const __m256 high = _mm512_cvtpd_ps(exp_main_path(_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)), table));
    return _mm512_insertf32x8(_mm512_castps256_ps512(low), high, 1);
}

/* The lanes of x for which ug_expf_special holds. */
static inline __mmask16 exp_special(__m512 x, __mmask16 lanes)
{
    const __m512i top = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7FF));
    return _mm512_mask_cmpge_epu32_mask(lanes, top, _mm512_set1_epi32(0x42B));
}

/* exp(a - x) or, with x_minus_a, exp(x - a): each its own subtraction, as a
 * negated operand could flip a NaN's sign; with y, s * exp(a - x) * y (the
 * decays and their products in one pass, without storing the decays).
 * Arguments with |x| >= 88 or NaN are rare: they are redone by ug_expf after
 * the vector loop, which has no call in it (a call would move its constants
 * out of the registers). */
static inline __attribute__((always_inline)) void exp_rows_times(size_t n, float a, const float *x, bool x_minus_a,
                                                                 float s, const float *y, float *out)
{
    const __m512d table[4] = {_mm512_loadu_pd(ug_expf_data.tab), _mm512_loadu_pd(ug_expf_data.tab + 8),
                              _mm512_loadu_pd(ug_expf_data.tab + 16), _mm512_loadu_pd(ug_expf_data.tab + 24)};
    const __m512 av = _mm512_set1_ps(a);
    __mmask16 special = 0;
    for (size_t i = 0; i < n; i += LANES) {
        const __mmask16 lanes = vec_first(n - i);
        const __m512 xv = _mm512_maskz_loadu_ps(lanes, x + i);
        const __m512 diff = x_minus_a ? _mm512_sub_ps(xv, av) : _mm512_sub_ps(av, xv);
        special |= exp_special(diff, lanes);
        __m512 e = expf16(diff, table);
        if (y) e = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(s), e), _mm512_maskz_loadu_ps(lanes, y + i));
        _mm512_mask_storeu_ps(out + i, lanes, e);
    }
    if (special)
        for (size_t i = 0; i < n; i++) {
            const float diff = x_minus_a ? x[i] - a : a - x[i];
            if (ug_expf_special(ug_f32_bits(diff))) out[i] = y ? s * ug_expf(diff) * y[i] : ug_expf(diff);
        }
}

#include "gemm_simd.h"
