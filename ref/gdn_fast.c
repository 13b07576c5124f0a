/* SPDX-License-Identifier: MIT */
#include "gdn_fast.h"

#include <limits.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* sum_d a[d] b[d] (exact: the domain's bound) and sum_d |a[d] b[d]|. */
static int64_t int_dot_portable(const int64_t *a, const int64_t *b, size_t n, int64_t *magnitude)
{
    int64_t sum = 0, mag = 0;
    for (size_t d = 0; d < n; d++) {
        const int64_t p = a[d] * b[d];
        sum += p;
        mag += p < 0 ? -p : p;
    }
    *magnitude = mag;
    return sum;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same eight terms at a time (integer sums: any order, the same bits). */
__attribute__((target("avx512f,avx512dq"))) static int64_t int_dot_avx512(const int64_t *a, const int64_t *b,
                                                                           size_t n, int64_t *magnitude)
{
    __m512i sum = _mm512_setzero_si512(), mag = _mm512_setzero_si512();
    size_t d = 0;
    for (; d + 8 <= n; d += 8) {
        const __m512i p = _mm512_mullo_epi64(_mm512_loadu_si512(a + d), _mm512_loadu_si512(b + d));
        sum = _mm512_add_epi64(sum, p);
        mag = _mm512_add_epi64(mag, _mm512_abs_epi64(p));
    }
    int64_t rest_mag;
    const int64_t rest = int_dot_portable(a + d, b + d, n - d, &rest_mag);
    *magnitude = _mm512_reduce_add_epi64(mag) + rest_mag;
    return _mm512_reduce_add_epi64(sum) + rest;
}
#endif

int64_t ug_gdn_int_dot(const int64_t *a, const int64_t *b, size_t n, int64_t *magnitude, bool simd)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (simd) return int_dot_avx512(a, b, n, magnitude);
#endif
    (void)simd;
    return int_dot_portable(a, b, n, magnitude);
}

bool ug_gdn_exp_wide(mpfr_ptr wide, float g, ug_gdn_exp256 *e, ug_gdn_exp256 *inv)
{
    mpfr_set_flt(wide, g, MPFR_RNDN);
    mpfr_exp(wide, wide, MPFR_RNDN);
    if (!mpfr_regular_p(wide)) return false;
    memcpy(e->d, mpfr_custom_get_significand(wide), sizeof e->d);
    e->e = mpfr_get_exp(wide) - 4 * 64;
    mpfr_ui_div(wide, 1, wide, MPFR_RNDN);
    if (!mpfr_regular_p(wide)) return false;
    memcpy(inv->d, mpfr_custom_get_significand(wide), sizeof inv->d);
    inv->e = mpfr_get_exp(wide) - 4 * 64;
    return true;
}

/* 64 bits of the n-limb integer d from bit `bit` up (zeros above). */
static uint64_t bits_at(const mp_limb_t *d, int n, int bit)
{
    const int k = bit >> 6, shift = bit & 63;
    const uint64_t low = k < n ? d[k] >> shift : 0, high = shift && k + 1 < n ? d[k + 1] << (64 - shift) : 0;
    return low | high;
}

/* exp(y) is never a 128-bit midpoint, nor exactly representable but at
 * y = 0: a certified rounding is exp's. */
bool ug_gdn_round_certified(const mp_limb_t *d, int n, long e, ug_gdn_fx *out)
{
    const int top = 64 * (n - 1) + 64 - __builtin_clzll(d[n - 1]); /* bit length */
    const uint64_t next = bits_at(d, n, top - 192);
    if (next == UINT64_C(1) << 63 || next == (UINT64_C(1) << 63) - 1) return false;
    out->m = (ug_u128)bits_at(d, n, top - 64) << 64 | bits_at(d, n, top - 128);
    long q = e + top - 128;
    if (next > UINT64_C(1) << 63 && ++out->m == 0) {
        out->m = (ug_u128)1 << 127;
        q++;
    }
    if (q < INT_MIN / 4 || q > INT_MAX / 4) return false;
    out->e = (int)q;
    return true;
}

bool ug_gdn_pair_exp(const ug_gdn_exp256 *exp_t, const ug_gdn_exp256 *inv_s, ug_gdn_fx *out)
{
    mp_limb_t product[8];
    mpn_mul_n(product, exp_t->d, inv_s->d, 4);
    return ug_gdn_round_certified(product, 8, exp_t->e + inv_s->e, out);
}
