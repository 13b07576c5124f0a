/* SPDX-License-Identifier: MIT */
/* ref/rowsimd.h on AVX-512 IFMA (built with SIMD_FLAGS_avx512ifma). */
#include <immintrin.h>
#include <stdatomic.h>

#include "rowsimd.h"

static atomic_bool enabled = true;

void ug_ref_simd_set_enabled(bool on) { atomic_store(&enabled, on); }

bool ug_ref_simd_available(void)
{
    return atomic_load(&enabled) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
}

/* Digit c of a term's row factor times its column factors t: the low and
 * high 52 bits of each product into the sums of its digit and the next. */
static inline __attribute__((always_inline)) void digit_product(__m512i *low, __m512i *high, __m512i *minus,
                                                                uint64_t c, __m512i t, __mmask8 neg)
{
    const __m512i cd = _mm512_set1_epi64((long long)c);
    *low = _mm512_madd52lo_epu64(*low, cd, t);
    *high = _mm512_madd52hi_epu64(*high, cd, t);
    *minus = _mm512_mask_add_epi64(*minus, neg, *minus, cd);
}

/* Term k's products added to the digit sums a (nd digits, a literal;
 * named sums rather than an array, which GCC keeps in memory). A
 * negative term -c·s is added as c·(2^52 - s) less c·2^52: two products a
 * digit where a set of positive and one of negative sums took four; the
 * c·2^52 gathers in m[d + 1]. */
static inline __attribute__((always_inline)) void add_term(const ug_xwin52_row *r, const ug_xwin52_signed *col,
                                                           bool presigned, int nd, size_t k, size_t col0, __mmask8 lanes, __m512i *a0,
                                                           __m512i *a1, __m512i *a2, __m512i *a3, __m512i *a4,
                                                           __m512i *m1, __m512i *m2, __m512i *m3, __m512i *m4)
{
    const size_t j = r->row_j[k], blocks = (r->width + 7) / 8;
    __m512i t;
    __mmask8 neg;
    if (presigned) { /* col: the caller's ug_xwin52_signed_digits for the row factor's sign */
        const int half = r->row_neg[k] & 1;
        t = _mm512_maskz_loadu_epi64(lanes, col->digit[half] + j * r->width + col0);
        neg = col->neg[half][j * blocks + col0 / 8];
    } else {
        const __m512i s = _mm512_maskz_loadu_epi64(lanes, r->col_digit + j * r->width + col0);
        /* s = 0 adds nothing either way (and 2^52 - 0 is no digit) */
        neg = (__mmask8)(r->col_neg[j * blocks + col0 / 8] ^ r->row_neg[k]) & _mm512_test_epi64_mask(s, s);
        t = _mm512_mask_sub_epi64(s, neg, _mm512_set1_epi64((long long)(UINT64_C(1) << 52)), s);
    }
    const uint64_t *c = r->row_digits + k * UG_XWIN52_DIGITS;
    digit_product(a0, a1, m1, c[0], t, neg);
    if (nd > 1) digit_product(a1, a2, m2, c[1], t, neg);
    if (nd > 2) digit_product(a2, a3, m3, c[2], t, neg);
    if (nd > 3) digit_product(a3, a4, m4, c[3], t, neg);
}

/* The signed digit sums of eight columns for row factors of nd digits (a
 * literal at each call), each in (-2^62, 2^63) for fewer than 2^10 terms.
 * Terms alternate between two sets of sums, so that a product waits on
 * its sum half as often. */
static inline __attribute__((always_inline)) void digit_sums(const ug_xwin52_row *r, const ug_xwin52_signed *col,
                                                             bool presigned, int nd, size_t col0, __mmask8 lanes, __m512i sum[])
{
    const __m512i zero = _mm512_setzero_si512();
    __m512i e0 = zero, e1 = zero, e2 = zero, e3 = zero, e4 = zero, o0 = zero, o1 = zero, o2 = zero, o3 = zero,
            o4 = zero, m1 = zero, m2 = zero, m3 = zero, m4 = zero;
    size_t k = 0;
    for (; k + 1 < r->n; k += 2) {
        add_term(r, col, presigned, nd, k, col0, lanes, &e0, &e1, &e2, &e3, &e4, &m1, &m2, &m3, &m4);
        add_term(r, col, presigned, nd, k + 1, col0, lanes, &o0, &o1, &o2, &o3, &o4, &m1, &m2, &m3, &m4);
    }
    if (k < r->n) add_term(r, col, presigned, nd, k, col0, lanes, &e0, &e1, &e2, &e3, &e4, &m1, &m2, &m3, &m4);
    sum[0] = _mm512_add_epi64(e0, o0);
    sum[1] = _mm512_sub_epi64(_mm512_add_epi64(e1, o1), m1);
    sum[2] = _mm512_sub_epi64(_mm512_add_epi64(e2, o2), m2);
    sum[3] = _mm512_sub_epi64(_mm512_add_epi64(e3, o3), m3);
    sum[4] = _mm512_sub_epi64(_mm512_add_epi64(e4, o4), m4);
}

/* The windows, the column factors signed by the caller (col) where
 * presigned (a literal at each call: two instances). */
static inline __attribute__((always_inline)) void windows(const ug_xwin52_row *r, const ug_xwin52_signed *col,
                                                          bool presigned, uint64_t (*win)[UG_XWIN_LIMBS], size_t stride)
{
    for (size_t col0 = 0; col0 < r->width; col0 += 8) {
        const size_t lanes_left = r->width - col0;
        const __mmask8 lanes = lanes_left >= 8 ? 0xFF : (__mmask8)((1u << lanes_left) - 1);
        __m512i d[UG_XWIN52_DIGITS + 1];
        switch (r->nd) {
        case 1: digit_sums(r, col, presigned, 1, col0, lanes, d); break;
        case 2: digit_sums(r, col, presigned, 2, col0, lanes, d); break;
        case 3: digit_sums(r, col, presigned, 3, col0, lanes, d); break;
        default: digit_sums(r, col, presigned, 4, col0, lanes, d); break;
        }
        /* Per lane: the signed digit sums carried so that digits 0..3 lie
         * in [0, 2^52) and the top one keeps the sign, then packed into the
         * window's limbs. */
        const __m512i digit_mask = _mm512_set1_epi64((long long)((UINT64_C(1) << 52) - 1));
        for (int k = 0; k < UG_XWIN52_DIGITS; k++) {
            d[k + 1] = _mm512_add_epi64(d[k + 1], _mm512_srai_epi64(d[k], 52));
            d[k] = _mm512_and_si512(d[k], digit_mask);
        }
        const __m512i limb[UG_XWIN_LIMBS] = {
            _mm512_or_si512(d[0], _mm512_slli_epi64(d[1], 52)),
            _mm512_or_si512(_mm512_srli_epi64(d[1], 12), _mm512_slli_epi64(d[2], 40)),
            _mm512_or_si512(_mm512_srli_epi64(d[2], 24), _mm512_slli_epi64(d[3], 28)),
            _mm512_or_si512(_mm512_srli_epi64(d[3], 36), _mm512_slli_epi64(d[4], 16)),
            _mm512_srai_epi64(d[4], 48),
        };
        uint64_t out[UG_XWIN_LIMBS][8];
        for (int k = 0; k < UG_XWIN_LIMBS; k++) _mm512_storeu_si512(out[k], limb[k]);
        for (size_t lane = 0; lane < 8 && lane < lanes_left; lane++)
            for (int k = 0; k < UG_XWIN_LIMBS; k++) win[(col0 + lane) * stride][k] = out[k][lane];
    }
}

void ug_xwin52_windows(const ug_xwin52_row *r, uint64_t (*win)[UG_XWIN_LIMBS]) { windows(r, NULL, false, win, 1); }

void ug_xwin52_windows_signed(const ug_xwin52_row *r, const ug_xwin52_signed *col, uint64_t (*win)[UG_XWIN_LIMBS],
                              size_t stride)
{
    windows(r, col, true, win, stride);
}

void ug_xwin52_sign_columns(size_t tokens, size_t width, const uint64_t *col_digit, const uint8_t *col_neg,
                            uint64_t *const digit[2], uint8_t *const neg[2])
{
    const size_t blocks = (width + 7) / 8;
    const __m512i digit_top = _mm512_set1_epi64((long long)(UINT64_C(1) << 52));
    for (size_t j = 0; j < tokens; j++)
        for (size_t b = 0; b < blocks; b++) {
            const size_t at = j * width + 8 * b, left = width - 8 * b;
            const __mmask8 lanes = left >= 8 ? 0xFF : (__mmask8)((1u << left) - 1);
            const __m512i s = _mm512_maskz_loadu_epi64(lanes, col_digit + at);
            const __mmask8 nonzero = _mm512_test_epi64_mask(s, s), column = col_neg[j * blocks + b];
            const __mmask8 minus[2] = {(__mmask8)(column & nonzero), (__mmask8)(~column & nonzero)};
            for (int half = 0; half < 2; half++) {
                _mm512_mask_storeu_epi64(digit[half] + at, lanes, _mm512_mask_sub_epi64(s, minus[half], digit_top, s));
                neg[half][j * blocks + b] = minus[half];
            }
        }
}

/* One row's sums of eight columns (lanes) in registers: sum += a * part. */
typedef struct {
    __m512d abs, err, mag;
    __m256i flagged;
} bound_sums;

static inline __attribute__((always_inline)) bound_sums bound_load(const ug_ref_bound_row *sums, size_t col,
                                                                   __mmask8 lanes)
{
    return (bound_sums){_mm512_maskz_loadu_pd(lanes, sums->abs_sum + col),
                        _mm512_maskz_loadu_pd(lanes, sums->cast_err + col),
                        _mm512_maskz_loadu_pd(lanes, sums->acc_mag + col),
                        _mm256_maskz_loadu_epi32(lanes, sums->flagged + col)};
}

static inline __attribute__((always_inline)) void bound_store(const ug_ref_bound_row *sums, size_t col, __mmask8 lanes,
                                                              bound_sums b)
{
    _mm512_mask_storeu_pd(sums->abs_sum + col, lanes, b.abs);
    _mm512_mask_storeu_pd(sums->cast_err + col, lanes, b.err);
    _mm512_mask_storeu_pd(sums->acc_mag + col, lanes, b.mag);
    _mm256_mask_storeu_epi32(sums->flagged + col, lanes, b.flagged);
}

static inline __attribute__((always_inline)) void bound_add(bound_sums *b, double a, __m512d abs, __m512d err,
                                                            __m512d mag, __m256i flagged)
{
    const __m512d va = _mm512_set1_pd(a);
    b->abs = _mm512_add_pd(b->abs, _mm512_mul_pd(va, abs));
    b->err = _mm512_add_pd(b->err, _mm512_mul_pd(va, err));
    b->mag = _mm512_add_pd(b->mag, _mm512_mul_pd(va, mag));
    b->flagged = _mm256_add_epi32(b->flagged, flagged);
}

/* Rows of eight columns from col on, as ug_ref_simd_bound_rows; rows a
 * literal at each call, so that each row's sums stay in registers (named
 * rather than an array, which GCC keeps in memory). A missing row's
 * weights read as zero. */
static inline __attribute__((always_inline)) void bound_rows_block(size_t n, size_t width, int rows, size_t col,
                                                                   const double *const *weight,
                                                                   const double *part_abs, const double *part_err,
                                                                   const double *part_mag,
                                                                   const uint32_t *part_flagged,
                                                                   const ug_ref_bound_row *sums)
{
    const __mmask8 lanes = width - col >= 8 ? 0xFF : (__mmask8)((1u << (width - col)) - 1);
    bound_sums b0 = bound_load(&sums[0], col, lanes), b1 = rows > 1 ? bound_load(&sums[1], col, lanes) : b0,
               b2 = rows > 2 ? bound_load(&sums[2], col, lanes) : b0,
               b3 = rows > 3 ? bound_load(&sums[3], col, lanes) : b0;
    for (size_t j = 0; j < n; j++) {
        const double a0 = weight[0][j], a1 = rows > 1 ? weight[1][j] : 0.0, a2 = rows > 2 ? weight[2][j] : 0.0,
                     a3 = rows > 3 ? weight[3][j] : 0.0;
        if (a0 == 0 && a1 == 0 && a2 == 0 && a3 == 0) continue;
        const size_t at = j * width + col;
        const __m512d abs = _mm512_maskz_loadu_pd(lanes, part_abs + at),
                      err = _mm512_maskz_loadu_pd(lanes, part_err + at),
                      mag = _mm512_maskz_loadu_pd(lanes, part_mag + at);
        const __m256i flagged = _mm256_maskz_loadu_epi32(lanes, part_flagged + at);
        if (a0 != 0) bound_add(&b0, a0, abs, err, mag, flagged);
        if (a1 != 0) bound_add(&b1, a1, abs, err, mag, flagged);
        if (a2 != 0) bound_add(&b2, a2, abs, err, mag, flagged);
        if (a3 != 0) bound_add(&b3, a3, abs, err, mag, flagged);
    }
    bound_store(&sums[0], col, lanes, b0);
    if (rows > 1) bound_store(&sums[1], col, lanes, b1);
    if (rows > 2) bound_store(&sums[2], col, lanes, b2);
    if (rows > 3) bound_store(&sums[3], col, lanes, b3);
}

void ug_ref_simd_bound_rows(size_t n, size_t width, size_t rows, const double *const *weight,
                            const double *part_abs, const double *part_err, const double *part_mag,
                            const uint32_t *part_flagged, const ug_ref_bound_row *sums)
{
    for (size_t col = 0; col < width; col += 8) switch (rows) {
        case 1: bound_rows_block(n, width, 1, col, weight, part_abs, part_err, part_mag, part_flagged, sums); break;
        case 2: bound_rows_block(n, width, 2, col, weight, part_abs, part_err, part_mag, part_flagged, sums); break;
        case 3: bound_rows_block(n, width, 3, col, weight, part_abs, part_err, part_mag, part_flagged, sums); break;
        default: bound_rows_block(n, width, 4, col, weight, part_abs, part_err, part_mag, part_flagged, sums); break;
        }
}

void ug_ref_simd_axpy(size_t n, double a, const double *x, double *y)
{
    const __m512d va = _mm512_set1_pd(a);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(y + i, _mm512_add_pd(_mm512_loadu_pd(y + i), _mm512_mul_pd(va, _mm512_loadu_pd(x + i))));
    if (i < n) {
        const __mmask8 lanes = (__mmask8)((1u << (n - i)) - 1);
        _mm512_mask_storeu_pd(y + i, lanes, _mm512_add_pd(_mm512_maskz_loadu_pd(lanes, y + i),
                                                          _mm512_mul_pd(va, _mm512_maskz_loadu_pd(lanes, x + i))));
    }
}
