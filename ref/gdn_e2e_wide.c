/* SPDX-License-Identifier: MIT */
/* See gdn_e2e_wide.h. */
#include "gdn_e2e_wide.h"

#include "exact_sum.h"
#include "gdn_e2e_divide.h"

typedef unsigned __int128 u128;
enum { WIDE = GDN_E2E_WIDE_LIMBS, INVERSE = WIDE + 1, SUB_LIMBS = 8 };
_Static_assert(GDN_E2E_RECIPROCAL_EXTRA == 64, "the reciprocal holds one limb more than the quotient");
_Static_assert(GMP_NUMB_BITS == 64 && GMP_NAIL_BITS == 0, "MPFR's limbs read as 64-bit words");

/* Bits pos .. pos + 63 of the n-limb a, zeros outside it (pos may be negative). */
static inline uint64_t bits_at(const uint64_t *a, int n, long pos)
{
    const long word = pos >> 6; /* floor: arithmetic shift */
    const int off = (int)(pos & 63);
    const uint64_t lo = word >= 0 && word < n ? a[word] : 0, hi = word + 1 >= 0 && word + 1 < n ? a[word + 1] : 0;
    return off ? lo >> off | hi << (64 - off) : lo;
}

/* out (out_n limbs) = mag (n limbs) rounded to nearest at 64 out_n bits,
 * ties to even, its leading bit at the top (zeros for mag = 0): mag ~ out
 * 2^returned. */
__attribute__((always_inline)) static inline long round_nearest_even(uint64_t *out, int out_n, const uint64_t *mag,
                                                                     int n)
{
    int top = n - 1;
    while (top > 0 && !mag[top]) top--;
    const long s = 64L * top + (mag[top] ? 64 - __builtin_clzll(mag[top]) : 0) - 64L * out_n;
    if (s <= 0) {
        for (int i = 0; i < out_n; i++) out[i] = bits_at(mag, top + 1, s + 64L * i);
        return s;
    }
    /* shifts in two steps (<< 1 << (63 - off)): off may be 0; no branch on the data */
    const int word = (int)(s >> 6), off = (int)(s & 63);
#pragma GCC unroll 4
    for (int i = 0; i < out_n; i++) {
        const uint64_t hi = word + i + 1 <= top ? mag[word + i + 1] : 0;
        out[i] = mag[word + i] >> off | hi << 1 << (63 - off);
    }
    /* the 64 bits below out, and whether any bit below those is set */
    const uint64_t next = word ? mag[word - 1] : 0, below = next >> off | mag[word] << 1 << (63 - off);
    uint64_t rest = (below << 1) | next << 1 << (63 - off);
    for (int i = 0; i + 1 < word; i++) rest |= mag[i];
    uint64_t carry = below >> 63 & ((rest != 0) | out[0]);
#pragma GCC unroll 4
    for (int i = 0; i < out_n; i++) {
        const u128 t = (u128)out[i] + carry;
        out[i] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
    if (!carry) return s;
    out[out_n - 1] = UINT64_C(1) << 63; /* carried out of the top: the rest are 0 */
    return s + 1;
}

/* r = RN((-1)^neg mag 2^e), mag of n limbs. */
__attribute__((always_inline)) static inline void wide_round(gdn_e2e_wide *r, const uint64_t *mag, int n, long e,
                                                             bool neg)
{
    r->neg = neg;
    r->e = e + round_nearest_even(r->m, WIDE, mag, n);
}

/* p = a b (an + bn limbs), schoolbook: at these sizes GMP's call and
 * dispatch cost more than the multiplies. */
__attribute__((always_inline)) static inline void limbs_mul(uint64_t *p, const uint64_t *a, int an, const uint64_t *b,
                                                            int bn)
{
    memset(p, 0, (size_t)(an + bn) * sizeof *p);
#pragma GCC unroll 4
    for (int i = 0; i < an; i++) {
        uint64_t carry = 0;
#pragma GCC unroll 4
        for (int j = 0; j < bn; j++) {
            const u128 t = (u128)a[i] * b[j] + p[i + j] + carry;
            p[i + j] = (uint64_t)t;
            carry = (uint64_t)(t >> 64);
        }
        p[i + bn] = carry;
    }
}

void gdn_e2e_wide_from_twos(gdn_e2e_wide *r, const uint64_t *z, int n, long e)
{
    uint64_t mag[6] = {0};
    const uint64_t neg = (uint64_t)((int64_t)z[n - 1] >> 63);
    uint64_t carry = neg & 1;
    for (int i = 0; i < n; i++) {
        const u128 t = (u128)(z[i] ^ neg) + carry;
        mag[i] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
    wide_round(r, mag, n, e, neg != 0);
}

void gdn_e2e_wide_mul(gdn_e2e_wide *a, const uint64_t b[WIDE], long be)
{
    uint64_t p[2 * WIDE];
    limbs_mul(p, a->m, WIDE, b, WIDE);
    wide_round(a, p, 2 * WIDE, a->e + be, a->neg);
}

void gdn_e2e_wide_mul_double(gdn_e2e_wide *a, double x)
{
    bool neg;
    uint64_t m, p[WIDE + 1];
    int e;
    ug_xsum_split(x, &neg, &m, &e);
    limbs_mul(p, a->m, WIDE, &m, 1);
    wide_round(a, p, WIDE + 1, a->e + e, a->neg != neg);
}

bool gdn_e2e_wide_float_minus(gdn_e2e_wide *d, float v, const gdn_e2e_wide *a)
{
    bool x_neg;
    uint64_t x_m;
    int x_e;
    ug_xsum_split(v, &x_neg, &x_m, &x_e);
    if (gdn_e2e_wide_zero(a)) { /* v exactly; of two zeros, -0 only for (-0) - (+0) */
        wide_round(d, &x_m, 1, x_e, x_m ? x_neg : x_neg && !a->neg);
        return true;
    }
    if (x_m == 0) { /* -a exactly */
        *d = *a;
        d->neg = !a->neg;
        return true;
    }
    const long lo = x_e < a->e ? x_e : a->e, top = x_e + 64 > a->e + WIDE * 64 ? x_e + 64 : a->e + WIDE * 64;
    if (top - lo >= 64 * (SUB_LIMBS - 1)) return false;
    const int n = (int)((top - lo) / 64) + 1; /* both, and the sum's carry */
    uint64_t xs[SUB_LIMBS], as[SUB_LIMBS], r[SUB_LIMBS];
    for (int i = 0; i < n; i++) {
        xs[i] = bits_at(&x_m, 1, 64L * i - (x_e - lo));
        as[i] = bits_at(a->m, WIDE, 64L * i - (a->e - lo));
    }
    if (x_neg != a->neg) { /* |v| + |a|, v's sign */
        mpn_add_n(r, xs, as, n);
        wide_round(d, r, n, lo, x_neg);
        return true;
    }
    const bool v_larger = mpn_cmp(xs, as, n) >= 0;
    if (v_larger)
        mpn_sub_n(r, xs, as, n);
    else
        mpn_sub_n(r, as, xs, n);
    wide_round(d, r, n, lo, v_larger ? x_neg : !x_neg);
    if (gdn_e2e_wide_zero(d)) d->neg = false; /* an exact zero difference is +0 to nearest */
    return true;
}

bool gdn_e2e_wide_abs_up(const gdn_e2e_wide *a, double *out)
{
    if (gdn_e2e_wide_zero(a)) {
        *out = 0.0;
        return true;
    }
    const long exponent = a->e + 64 * WIDE - 53; /* of the top 53 bits */
    if (exponent < -1074 || exponent > 1023 - 53) return false;
    const uint64_t top = a->m[WIDE - 1] >> 11;
    bool below = (a->m[WIDE - 1] & 0x7FF) != 0;
    for (int i = 0; i + 1 < WIDE; i++) below = below || a->m[i];
    *out = gdn_e2e_normal_double(top + below, exponent);
    return true;
}

bool gdn_e2e_wide_divide(gdn_e2e_wide *d, const uint64_t inverse[INVERSE], long inverse_exp)
{
    if (gdn_e2e_wide_zero(d)) return true; /* ±0 / c, c > 0 */
    uint64_t p[WIDE + INVERSE], q[INVERSE];
    limbs_mul(p, inverse, INVERSE, d->m, WIDE);
    const long e = d->e + inverse_exp - 64 * INVERSE + round_nearest_even(q, INVERSE, p, WIDE + INVERSE);
    /* the lowest limb holds the bits below the quotient's precision */
    if (!gdn_e2e_quotient_decides(q[0])) return false;
    wide_round(d, q, INVERSE, e, d->neg);
    return true;
}

void gdn_e2e_wide_limbs(const gdn_e2e_wide *a, long shift, uint64_t *out, int n)
{
    for (int i = 0; i < n; i++) out[i] = bits_at(a->m, WIDE, 64L * i - shift);
}

mpfr_srcptr gdn_e2e_wide_view(mpfr_ptr view, uint64_t limbs[WIDE], const gdn_e2e_wide *a)
{
    memcpy(limbs, a->m, sizeof a->m);
    const int kind = gdn_e2e_wide_zero(a) ? MPFR_ZERO_KIND : MPFR_REGULAR_KIND;
    mpfr_custom_init_set(view, a->neg ? -kind : kind, gdn_e2e_wide_zero(a) ? 0 : a->e + 64 * WIDE, 64 * WIDE, limbs);
    return view;
}

void gdn_e2e_wide_from_mpfr(gdn_e2e_wide *r, mpfr_srcptr x)
{
    *r = (gdn_e2e_wide){.neg = mpfr_signbit(x)};
    if (mpfr_zero_p(x)) return;
    memcpy(r->m, mpfr_custom_get_significand(x), sizeof r->m);
    r->e = mpfr_get_exp(x) - 64 * WIDE;
}
