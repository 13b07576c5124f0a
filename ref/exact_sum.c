/* SPDX-License-Identifier: MIT */
#include "exact_sum.h"

#include <limits.h>
#include <math.h>

#include "../core/bf16.h"

enum { DIGIT_BITS = 32, NO_QMIN = INT_MIN / 2 };
static const int64_t DIGIT = INT64_C(1) << DIGIT_BITS;

void ug_xsum_init(ug_xsum *a)
{
    memset(a->limb, 0, sizeof a->limb);
    a->lo = UG_XSUM_LIMBS;
    a->hi = -1;
    a->adds = 0;
    a->pos_zero = a->neg_zero = false;
    a->out_of_range = false;
}

void ug_xsum_clear(ug_xsum *a)
{
    if (a->lo <= a->hi) memset(a->limb + a->lo, 0, (size_t)(a->hi - a->lo + 1) * sizeof a->limb[0]);
    a->lo = UG_XSUM_LIMBS;
    a->hi = -1;
    a->adds = 0;
    a->pos_zero = a->neg_zero = false;
    a->out_of_range = false;
}

/* Limbs lo..hi-1 become digits in [0, 2^32); limb hi keeps the sign and
 * whatever exceeds them. The value is unchanged. */
static void propagate(ug_xsum *a)
{
    for (int i = a->lo; i < a->hi; i++) {
        const int64_t c = a->limb[i] >> DIGIT_BITS; /* floor division (arithmetic shift) */
        a->limb[i] -= c * DIGIT;
        a->limb[i + 1] += c;
    }
}

void ug_xsum_carry(ug_xsum *a)
{
    propagate(a);
    a->adds = 0;
}

void ug_xsum_mul_small(ug_xsum *a, uint32_t m)
{
    propagate(a);
    /* Every limb to a digit, the sign in the top one (|limb| < 2^32): each
     * product then stays below 2^56, and later adds below 2^63. */
    while (a->lo <= a->hi && (a->limb[a->hi] >= DIGIT || a->limb[a->hi] < -DIGIT)) {
        a->limb[a->hi + 1] += a->limb[a->hi] >> DIGIT_BITS;
        a->limb[a->hi] &= DIGIT - 1;
        a->hi++;
    }
    for (int i = a->lo; i <= a->hi; i++) a->limb[i] *= (int64_t)m;
    a->adds = 0;
}

/* Digit k of the normalized magnitude (0 outside lo..hi). */
static uint64_t digit(const ug_xsum *a, int k)
{
    return k < a->lo || k > a->hi ? 0 : (uint64_t)a->limb[k];
}

static bool bit_at(const ug_xsum *a, int b)
{
    return digit(a, b >> 5) >> (b & 31) & 1;
}

/* Whether any bit of the magnitude below bit b is set. */
static bool any_below(const ug_xsum *a, int b)
{
    const int k = b >> 5;
    for (int i = a->lo; i < k && i <= a->hi; i++)
        if (a->limb[i]) return true;
    return (digit(a, k) & ((UINT64_C(1) << (b & 31)) - 1)) != 0;
}

ug_xval ug_xsum_read(ug_xsum *a)
{
    ug_xval w = {0};
    const bool touched = a->lo <= a->hi; /* some nonzero value was added */
    propagate(a);
    a->adds = 0;
    int top = a->hi;
    while (top >= a->lo && a->limb[top] == 0) top--;
    if (top < a->lo) {
        w.zero = true;
        w.neg = a->neg_zero && !a->pos_zero && !touched;
        return w;
    }
    w.neg = a->limb[top] < 0;
    if (w.neg) {
        for (int i = a->lo; i <= a->hi; i++) a->limb[i] = -a->limb[i];
        propagate(a);
    }
    /* The top limb may hold more than a digit: move its excess up. */
    while (a->limb[a->hi] >= DIGIT) {
        a->limb[a->hi + 1] += a->limb[a->hi] >> DIGIT_BITS;
        a->limb[a->hi] &= DIGIT - 1;
        a->hi++;
    }
    top = a->hi;
    while (a->limb[top] == 0) top--;
    const int top_bit = top * DIGIT_BITS + 63 - __builtin_clzll((uint64_t)a->limb[top]);
    int q = top_bit - 127;
    if (q < a->lo * DIGIT_BITS) q = a->lo * DIGIT_BITS;
    const int k = q >> 5, off = q & 31;
    ug_u128 low = 0;
    for (int t = 3; t >= 0; t--) low = low << 32 | digit(a, k + t);
    w.m = low >> off;
    if (off) w.m |= (ug_u128)digit(a, k + 4) << (128 - off);
    w.e = q + UG_XSUM_EMIN;
    if (q > a->lo * DIGIT_BITS) {
        w.round = bit_at(a, q - 1);
        w.sticky = any_below(a, q - 1);
    }
    if (w.neg) /* give the accumulator back its value */
        for (int i = a->lo; i <= a->hi; i++) a->limb[i] = -a->limb[i];
    return w;
}

/* Whether a rounding that cut |v|'s bits at `half` (true: at least half a
 * unit below the cut) and `below` (something below that) goes up, in mode
 * rnd applied to the signed value; n the kept part (ties to even). */
UG_XSUM_INLINE bool rounds_up(bool half, bool below, uint64_t n, bool neg, mpfr_rnd_t rnd)
{
    switch (rnd) {
    case MPFR_RNDN: return half && (below || (n & 1));
    case MPFR_RNDU: return (half || below) && !neg;
    case MPFR_RNDD: return (half || below) && neg;
    case MPFR_RNDA: return half || below;
    default: return false; /* MPFR_RNDZ */
    }
}

/* Rounds the nonzero |w| to p <= 128 significant bits with the quantum at
 * least 2^qmin, in mode rnd applied to the signed value: |result| = n·2^q
 * (n may equal 2^p after a carry; for p = 128 the carry renormalizes). */
static void round_value(const ug_xval *w, int p, int qmin, mpfr_rnd_t rnd, ug_u128 *n_out, int *q_out)
{
    const ug_u128 m = ug_xval_m(w);
    const int top = ug_u128_bit_length(m) + w->e; /* |w| in [2^(top-1), 2^top) */
    int q = top - p > qmin ? top - p : qmin;
    const int d = q - w->e;
    ug_u128 n;
    bool half, below;
    if (d < 0) { /* then |w| has fewer than 128 bits: all of it is in m */
        *n_out = m << -d;
        *q_out = q;
        return;
    }
    if (d == 0) {
        n = m;
        half = w->round;
        below = w->sticky;
    } else {
        n = d < 128 ? m >> d : 0;
        half = d <= 128 ? (m >> (d - 1) & 1) != 0 : false;
        const ug_u128 under_half = d - 1 >= 128 ? m : m & (((ug_u128)1 << (d - 1)) - 1);
        below = under_half != 0 || ug_xval_inexact(w);
    }
    const bool up = rounds_up(half, below, (uint64_t)n, w->neg, rnd);
    n += up;
    if (up && n == 0) { /* 2^128: only p = 128 gets here */
        n = (ug_u128)1 << 127;
        q++;
    }
    *n_out = n;
    *q_out = q;
}

/* 2^q as a double, q in [-1074, 1023]. */
UG_XSUM_INLINE double pow2(int q)
{
    const uint64_t bits = q >= -1022 ? (uint64_t)(q + 1023) << 52 : UINT64_C(1) << (q + 1074);
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* ±n·2^q as a double: ±inf from 2^1024 up, as mpfr_get_d in every mode
 * (it returns an infinity for any |x| >= 2^1024). */
static double to_double(bool neg, ug_u128 n, int q)
{
    const double x = ug_u128_bit_length(n) + q > 1024 ? INFINITY : (double)n * pow2(q); /* n <= 2^53: exact */
    return neg ? -x : x;
}

/* |v|'s leading 53 bits where v rounds to a normal double: *n the bits
 * (truncated), *half and *below what the cut dropped, *q the exponent of
 * n's unit. False when the general case applies (fewer than 54 bits in m
 * with bits below them, or an exponent near the double range's ends).
 * Inline in the roundings to doubles; one shift puts m's leading bit at
 * 2^127, and the cut then falls at fixed bits. */
UG_XSUM_INLINE bool leading_53(const ug_xval *v, uint64_t *n, bool *half, bool *below, int *q)
{
    const ug_u128 m = ug_xval_m(v);
    const int e = v->e, len = ug_u128_bit_length(m), top = e + len - 1; /* |v| in [2^top, 2^(top+1)) */
    const bool inexact = ug_xval_inexact(v);
    if (top < -1021 || top > 1022) return false;
    if (len <= 53) {
        if (inexact) return false;
        *n = (uint64_t)m;
        *half = *below = false;
        *q = e;
        return true;
    }
    const ug_u128 aligned = m << (128 - len);
    const uint64_t head = (uint64_t)(aligned >> 64);
    *n = head >> 11;
    *half = head >> 10 & 1;
    *below = (head & 0x3FF) != 0 || (uint64_t)aligned != 0 || inexact;
    *q = top - 52;
    return true;
}

/* ±n·2^q for n <= 2^53 and a normal result: exact. */
UG_XSUM_INLINE double scaled(bool neg, uint64_t n, int q)
{
    const double x = (double)n * pow2(q);
    return neg ? -x : x;
}

/* round_value to a double where the result is a normal double. */
UG_XSUM_INLINE bool to_double_normal(const ug_xval *v, mpfr_rnd_t rnd, double *out)
{
    uint64_t n;
    bool half, below;
    int q;
    if (!leading_53(v, &n, &half, &below, &q)) return false;
    *out = scaled(v->neg, n + rounds_up(half, below, n, v->neg, rnd), q);
    return true;
}

ug_xval_doubles ug_xval_to_doubles(const ug_xval *v)
{
    uint64_t n;
    bool half, below;
    int q;
    if (v->zero || !leading_53(v, &n, &half, &below, &q))
        return (ug_xval_doubles){ug_xval_to_double(v, MPFR_RNDN), ug_xval_to_double(v, MPFR_RNDA),
                                 ug_xval_to_double(v, MPFR_RNDU)};
    const double truncated = scaled(v->neg, n, q), away = scaled(v->neg, n + (half || below), q);
    return (ug_xval_doubles){scaled(v->neg, n + rounds_up(half, below, n, v->neg, MPFR_RNDN), q), away,
                             v->neg ? truncated : away};
}

/* ug_xval_to_double of a nonzero v in the general case (out of line: rare). */
static double to_double_general(const ug_xval *v, mpfr_rnd_t rnd)
{
    ug_u128 n;
    int q;
    round_value(v, 53, -1074, rnd, &n, &q);
    return to_double(v->neg, n, q);
}

/* ug_xval_to_double, inline in the stagings (their mode a constant). */
UG_XSUM_INLINE double xval_to_double(const ug_xval *v, mpfr_rnd_t rnd)
{
    if (v->zero) return v->neg ? -0.0 : 0.0;
    double x;
    return to_double_normal(v, rnd, &x) ? x : to_double_general(v, rnd);
}

double ug_xval_to_double(const ug_xval *v, mpfr_rnd_t rnd) { return xval_to_double(v, rnd); }

/* RN to the format of p bits and least quantum 2^qmin, as f32 bits; the
 * semantics of ref/round.c's round_to_format. */
/* |v| with its leading bit at 2^127 of *m (the value unchanged) and that
 * bit's exponent; false when v has bits below a significand of fewer than
 * 128 bits (not a form the reads produce). */
UG_XSUM_INLINE bool normalized(const ug_xval *v, ug_u128 *m, int *top)
{
    const ug_u128 value = ug_xval_m(v);
    const int len = ug_u128_bit_length(value);
    if (len == 0 || (len < 128 && ug_xval_inexact(v))) return false;
    *m = value << (128 - len);
    *top = v->e + len - 1;
    return true;
}

/* RN_T of ±m·2^(top-127) (m's leading bit at 2^127; round and sticky the
 * bits below m) where it is a normal number or infinite: the leading 8
 * (bf16) or 24 (f32) bits, rounded, in the f32 encoding. */
UG_XSUM_INLINE bool format_normalized(bool neg, ug_u128 m, int top, bool round_or_sticky, ug_dtype dtype,
                                     uint32_t *bits)
{
    if (top < -126 || top > 127) return false;
    const int cut = dtype == UG_BF16 ? 120 : 104; /* bits below the kept ones */
    uint32_t n = (uint32_t)(m >> cut);
    const bool half = (m >> (cut - 1) & 1) != 0;
    const bool below = (m & (((ug_u128)1 << (cut - 1)) - 1)) != 0 || round_or_sticky;
    n += rounds_up(half, below, n, neg, MPFR_RNDN);
    if (n >> (128 - cut)) { /* carried to the next binade */
        n >>= 1;
        top++;
    }
    const uint32_t fraction = (n << (cut - 104)) & 0x7FFFFFu; /* 2^128 and up: inf (fraction 0) */
    *bits = (neg ? 0x80000000u : 0u) | (uint32_t)(top + 127) << 23 | fraction;
    return true;
}

/* format_bits where RN_T(|v|) is a normal number or infinite. */
UG_XSUM_INLINE bool format_bits_normal(const ug_xval *v, ug_dtype dtype, uint32_t *bits)
{
    ug_u128 m;
    int top;
    return normalized(v, &m, &top) && format_normalized(v->neg, m, top, ug_xval_inexact(v), dtype, bits);
}

static uint32_t format_bits(const ug_xval *w, ug_dtype dtype)
{
    const uint32_t sign = w->neg ? 0x80000000u : 0u;
    if (w->zero) return sign;
    uint32_t fast;
    if (format_bits_normal(w, dtype, &fast)) return fast;
    ug_u128 n;
    int q;
    round_value(w, dtype == UG_BF16 ? 8 : 24, dtype == UG_BF16 ? -133 : -149, MPFR_RNDN, &n, &q);
    if (n == 0) return sign;
    if (ug_u128_bit_length(n) + q > 128) return sign | 0x7F800000u;
    const float f = (float)((double)n * pow2(q)); /* exact: a float */
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return sign | bits;
}

uint32_t ug_xval_rn_bits(const ug_xval *v, ug_dtype dtype)
{
    const uint32_t bits = format_bits(v, dtype);
    return dtype == UG_BF16 ? bits >> 16 : bits;
}

/* ug_xval_rn_bits to bf16 with its common case inline (the stagings'
 * window ends). */
UG_XSUM_INLINE uint16_t rn_bf16(const ug_xval *v)
{
    uint32_t bits;
    if (!v->zero && format_bits_normal(v, UG_BF16, &bits)) return (uint16_t)(bits >> 16);
    return (uint16_t)ug_xval_rn_bits(v, UG_BF16);
}

void ug_xsum_finish(ug_xsum *a, ug_ref_value *out, double pre_round_bound, double abs_sum,
                    uint32_t flagged, ug_dtype dtype)
{
    const ug_xval exact = ug_xsum_read(a);
    ug_xval_finish(&exact, out, pre_round_bound, abs_sum, flagged, dtype);
}

/* RN_53 of an integer x < 2^76 as a double: its leading 64 bits, a sticky
 * bit or'ed into the lowest (below the rounding position: 11 bits are cut),
 * converted by the hardware's round to nearest. */
UG_XSUM_INLINE double rn53_of_u76(ug_u128 x)
{
    const uint64_t high = (uint64_t)(x >> 64);
    if (!high) return (double)(uint64_t)x;
    const int k = 64 - __builtin_clzll(high); /* x >> k has 64 bits */
    const uint64_t lead = (uint64_t)(x >> k) | ((x & (((ug_u128)1 << k) - 1)) != 0);
    return (double)lead * (double)(UINT64_C(1) << k);
}

/* The finish of r = ±m·2^(top-127) (m's leading bit at 2^127, nothing
 * below m) where r_hi, r_lo and RN_T(r) are normal numbers (or r_lo zero):
 * r_hi is m's leading 53 bits rounded, r - r_hi the 75 bits below them less
 * one unit of r_hi when it rounded up, RN_T the leading 8 (bf16) or 24
 * (f32) bits rounded, in the f32 encoding. */
UG_XSUM_INLINE bool finish_normal(bool neg, ug_u128 m, int top, ug_dtype dtype, double *r_hi, double *r_lo,
                                 uint32_t *bits)
{
    if (top < -126 || top > 127) return false;
    const uint64_t head = (uint64_t)(m >> 64), tail = (uint64_t)m;
    uint64_t n = head >> 11;
    const bool up = rounds_up(head >> 10 & 1, (head & 0x3FF) != 0 || tail != 0, n, neg, MPFR_RNDN);
    n += up;
    const ug_u128 unit = (ug_u128)1 << 75, rest = m & (unit - 1);
    const double hi = (double)n * pow2(top - 52), lo = rn53_of_u76(up ? unit - rest : rest) * pow2(top - 127);
    *r_hi = neg ? -hi : hi;
    *r_lo = lo == 0 ? 0.0 : neg != up ? -lo : lo;
    const int cut = dtype == UG_BF16 ? 56 : 40; /* bits of head below the kept ones */
    uint32_t t = (uint32_t)(head >> cut);
    t += rounds_up(head >> (cut - 1) & 1, (head & ((UINT64_C(1) << (cut - 1)) - 1)) != 0 || tail != 0, t, neg,
                   MPFR_RNDN);
    if (t >> (64 - cut)) { /* carried to the next binade */
        t >>= 1;
        top++;
    }
    const uint32_t fraction = (t << (cut - 40)) & 0x7FFFFFu; /* 2^128 and up: inf (fraction 0) */
    *bits = (neg ? 0x80000000u : 0u) | (uint32_t)(top + 127) << 23 | fraction;
    return true;
}

/* *out = ±m·2^e (m != 0) with the given round bit and no sticky one,
 * field by field (as ug_xval_set). */
static void set_nonzero(ug_xval *out, bool neg, ug_u128 m, int e, bool round)
{
    out->neg = neg;
    out->zero = false;
    ug_xval_set_m(out, m);
    out->e = e;
    out->round = round;
    out->sticky = false;
}

ug_xval ug_xval_round128_short(const ug_xval *exact)
{
    ug_u128 m;
    int e;
    round_value(exact, UG_REF_PREC, NO_QMIN, MPFR_RNDN, &m, &e);
    ug_xval r;
    set_nonzero(&r, exact->neg, m, e, false); /* no vector build of m: it would wait for m's stores */
    return r;
}

void ug_xval_finish(const ug_xval *exact, ug_ref_value *out, double pre_round_bound, double abs_sum,
                    uint32_t flagged, ug_dtype dtype)
{
    const ug_xval r = ug_xval_round128(exact); /* r = RN_128(S), exactly as mpfr_sum at UG_REF_PREC bits */
    ug_u128 m = r.m;
    int top = r.e + 127;
    double hi, lo;
    uint32_t bits;
    const bool full = !r.zero && r.m >> 127; /* normalized already: the reads' common case */
    if (!r.zero && (full || normalized(&r, &m, &top)) && finish_normal(r.neg, m, top, dtype, &hi, &lo, &bits)) {
        ug_ref_fill(out, hi, lo, dtype == UG_BF16 ? bits >> 16 : bits, pre_round_bound, abs_sum, flagged, dtype);
        return;
    }
    double r_hi = r.neg ? -0.0 : 0.0, r_lo = 0.0;
    if (!r.zero) {
        ug_u128 n;
        int q;
        round_value(&r, 53, -1074, MPFR_RNDN, &n, &q);
        r_hi = to_double(r.neg, n, q);
        /* r - r_hi, exact: the bits of r below r_hi's quantum, less one
         * quantum when r_hi rounded up (then d <= 128: the half bit was set). */
        const int d = q - r.e;
        if (isfinite(r_hi) && d > 0) {
            const ug_u128 low = d >= 128 ? r.m : r.m & (((ug_u128)1 << d) - 1);
            const bool rounded_up = d >= 128 ? n != 0 : (r.m >> d) != n;
            ug_xval rest = {.neg = r.neg != rounded_up, .m = low, .e = r.e};
            if (rounded_up) rest.m = d == 128 ? -low : ((ug_u128)1 << d) - low;
            if (rest.m != 0) {
                round_value(&rest, 53, -1074, MPFR_RNDN, &n, &q);
                r_lo = to_double(rest.neg, n, q);
            }
        }
    }
    ug_ref_fill(out, r_hi, r_lo, ug_xval_rn_bits(&r, dtype), pre_round_bound, abs_sum, flagged, dtype);
}

/* ug_xval_product into *out, field by field (its callers read it at once). */
UG_XSUM_INLINE void product_read(bool neg, uint64_t m1, ug_u128 m2, int e, ug_xval *out)
{
    const ug_u128 low = (ug_u128)m1 * (uint64_t)m2, high = (ug_u128)m1 * (uint64_t)(m2 >> 64);
    const ug_u128 mid = (low >> 64) + (uint64_t)high;
    const uint64_t p0 = (uint64_t)low, p2 = (uint64_t)(high >> 64) + (uint64_t)(mid >> 64);
    const ug_u128 p10 = mid << 64 | p0; /* the low 128 bits */
    out->neg = neg;
    if (p2 == 0) { /* at most 128 bits: all of it */
        out->zero = p10 == 0;
        out->m = p10;
        out->e = e;
        out->round = out->sticky = false;
        return;
    }
    const int shift = 64 - __builtin_clzll(p2); /* 1..64: bits beyond the window */
    out->zero = false;
    out->m = (ug_u128)p2 << (128 - shift) | p10 >> shift;
    out->e = e + shift;
    out->round = (p10 >> (shift - 1) & 1) != 0;
    out->sticky = shift > 1 && (p10 & (((ug_u128)1 << (shift - 1)) - 1)) != 0;
}

ug_xval ug_xval_product(bool neg, uint64_t m1, ug_u128 m2, int e)
{
    ug_xval w;
    product_read(neg, m1, m2, e, &w);
    return w;
}

/* ug_xval_distance, inline in the stagings. */
UG_XSUM_INLINE bool distance(const ug_xval *v, double d, ug_xval *out)
{
    bool d_neg;
    uint64_t dm;
    int de;
    ug_xsum_split(d, &d_neg, &dm, &de);
    if (v->zero || dm == 0 || d_neg != v->neg) return false;
    const int zeros = __builtin_ctzll(dm);
    dm >>= zeros;
    de += zeros;
    const int up = de - v->e; /* d = dm·2^up in units of 2^e */
    if (up < 0 || up + (64 - __builtin_clzll(dm)) > 128) return false;
    const ug_u128 big = (ug_u128)dm << up;
    const ug_u128 m = ug_xval_m(v);
    const bool round = ug_bool_alone(&v->round), sticky = v->sticky, fraction = round || sticky;
    ug_u128 diff;
    bool diff_round = false, diff_sticky = false;
    if (m >= big) { /* |v| - |d| = (m - D) + f */
        diff = m - big;
        diff_round = round;
        diff_sticky = sticky;
    } else if (!fraction) { /* |d| - |v| = D - m exactly */
        diff = big - m;
    } else { /* |d| - |v| = (D - m - 1) + (1 - f) */
        diff = big - m - 1;
        diff_round = !(round && sticky);
        diff_sticky = sticky;
    }
    const bool zero = diff == 0 && !diff_round && !diff_sticky;
    out->neg = false;
    out->zero = zero;
    out->m = diff;
    out->e = v->e;
    out->round = diff_round;
    out->sticky = diff_sticky;
    /* the rounding of out to 53 bits must fall inside m (see round_value),
     * unless out is exact: nothing below m */
    return zero || ug_u128_bit_length(diff) >= 54 || (!diff_round && !diff_sticky);
}

bool ug_xval_distance(const ug_xval *v, double d, ug_xval *out) { return distance(v, d, out); }

/* The exact x + d (x = ±m1·m2·2^e, d a finite double) read out; false when
 * it leaves the accumulator's range or is exactly zero (whose sign MPFR's
 * rounding mode would decide). A nonzero sum that ug_xwin_read_plus holds comes
 * from it; the rest, zeros included (the caller reads scratch's range),
 * from scratch. */
/* shifted() where x = ±m·2^e (m < 2^128, nonzero) and d = ±dm·2^de lie on
 * x's grid (de >= e) with |d| < 2^128·2^e and |d| != |x|: x + d exactly in
 * one 128-bit add or subtract (a carried 129th bit shifts the lowest into
 * the round bit). False (out unset) otherwise. */
static bool shifted_on_grid(bool neg, ug_u128 m, int e, bool d_neg, uint64_t dm, int de, ug_xval *out)
{
    if (m == 0) return false;
    if (dm == 0) {
        set_nonzero(out, neg, m, e, false);
        return true;
    }
    if (de < e || 64 - __builtin_clzll(dm) + (de - e) > 128) return false;
    const ug_u128 r = (ug_u128)dm << (de - e);
    if (d_neg != neg) {
        if (r == m) return false; /* zero: the caller's rule for its sign */
        set_nonzero(out, r < m ? neg : !neg, r < m ? m - r : r - m, e, false);
        return true;
    }
    const ug_u128 sum = m + r;
    if (sum >= m)
        set_nonzero(out, neg, sum, e, false);
    else
        set_nonzero(out, neg, (ug_u128)1 << 127 | sum >> 1, e + 1, sum & 1);
    return true;
}

UG_XSUM_INLINE void magnitude_read(const uint64_t *mag, int limbs, int e, bool neg, ug_xval *out);

/* The same where |d| reaches up to 2^250·2^e (a radius far above x):
 * x + d on x's grid in four limbs, read as a window. */
static bool shifted_wide(bool neg, ug_u128 m, int e, bool d_neg, uint64_t dm, int de, ug_xval *out)
{
    const int s = de - e;
    if (m == 0 || dm == 0 || s < 0 || 64 - __builtin_clzll(dm) + s > 250) return false;
    const uint64_t x[4] = {(uint64_t)m, (uint64_t)(m >> 64), 0, 0};
    uint64_t r[4] = {0}, v[6] = {0}; /* v: the sum above two zero limbs (magnitude_read) */
    const int q = s >> 6, b = s & 63;
    r[q] = dm << b;
    if (b && q < 3) r[q + 1] = dm >> (64 - b);
    int k = 3;
    while (k >= 0 && x[k] == r[k]) k--;
    if (k < 0 && d_neg != neg) return false; /* zero: the caller's rule for its sign */
    const bool r_above = k >= 0 && r[k] > x[k];
    const uint64_t *big = r_above ? r : x, *small = r_above ? x : r;
    ug_u128 acc = d_neg == neg ? 0 : 1; /* |x| + |d|, or the larger less the smaller (+ ~small + 1) */
    for (int i = 0; i < 4; i++) {
        acc += (ug_u128)big[i] + (d_neg == neg ? small[i] : ~small[i]);
        v[i + 2] = (uint64_t)acc;
        acc >>= 64;
    }
    magnitude_read(v, 4, e, false, out); /* below 2^251: nonnegative */
    out->neg = r_above && d_neg != neg ? d_neg : neg;
    return true;
}

static bool shifted(bool neg, uint64_t m1, ug_u128 m2, int e, double d, ug_xsum *scratch, ug_xval *out)
{
    bool d_neg;
    uint64_t dm;
    int de;
    ug_xsum_split(d, &d_neg, &dm, &de);
    uint64_t x[4];
    ug_mul128(m1, m2, x);
    if (!x[2] && !x[3] && (shifted_on_grid(neg, (ug_u128)x[1] << 64 | x[0], e, d_neg, dm, de, out) ||
                           shifted_wide(neg, (ug_u128)x[1] << 64 | x[0], e, d_neg, dm, de, out)))
        return true;
    const uint64_t window = d_neg ? -dm : dm; /* d as a window of one limb: |d| < 2^53 */
    if (dm != 0 && ug_xwin_read_plus(&window, 1, de, neg, x, 4, e, out) && !out->zero) return true;
    ug_xsum_clear(scratch);
    ug_xsum_add_mul(scratch, neg, m1, m2, e);
    ug_xsum_add_double(scratch, d);
    if (!ug_xsum_in_range(scratch)) return false;
    *out = ug_xsum_read(scratch);
    return !out->zero;
}

/* |x - c| rounded up to a double as ug_stage_operand's deviation gives it
 * (mpfr_sub_d at x's precision + 160 >= 288 bits, rounded up twice): the
 * same when the difference is exact at 288 bits, which is checked; false
 * otherwise. bottom_x and top_x bound x's bits: 2^bottom_x <= its lowest,
 * |x| < 2^top_x; *x is x read (ug_xval_product), whose leading bits give
 * the difference where x is exact and c of its sign (ug_xval_distance). */
static bool deviation_up(const ug_xval *x, bool neg, uint64_t m1, ug_u128 m2, int e, int bottom_x, int top_x,
                         uint16_t c, ug_xsum *scratch, double *out)
{
    const double cd = ug_bf16_to_f32(c);
    if (cd != 0) {
        bool c_neg;
        uint64_t cm;
        int ce;
        ug_xsum_split(cd, &c_neg, &cm, &ce);
        const int bottom = ce + __builtin_ctzll(cm) < bottom_x ? ce + __builtin_ctzll(cm) : bottom_x;
        const int top = ce + 64 - __builtin_clzll(cm) > top_x ? ce + 64 - __builtin_clzll(cm) : top_x;
        if (top + 1 - bottom > 288) return false;
    }
    ug_xval d;
    if (!ug_xval_inexact(x) && distance(x, cd, &d)) { /* x exact, c of its sign: ||x| - |c|| */
        *out = d.zero ? 0.0 : fabs(xval_to_double(&d, MPFR_RNDA));
        return true;
    }
    if (!shifted(neg, m1, m2, e, -cd, scratch, &d)) { /* x == c: no deviation */
        if (!ug_xsum_in_range(scratch)) return false;
        *out = 0.0;
        return true;
    }
    *out = fabs(xval_to_double(&d, MPFR_RNDA));
    return true;
}

/* ug_stage_operand of an exact zero x of sign neg with an absolute radius
 * r > 0: its window [-r, r] rounds to RN_bf16(-r) < 0 and RN_bf16(r) > 0
 * (flagged), each at distance |RN_bf16(+-r)| from x. */
static bool stage_zero(bool neg, double radius_rel, double radius_abs, ug_staged *out)
{
    if (radius_rel != 0 || !(radius_abs > 0) || !isfinite(radius_abs)) return false;
    ug_xval r = {0};
    uint64_t m;
    bool r_neg;
    ug_xsum_split(radius_abs, &r_neg, &m, &r.e);
    r.m = m;
    const uint16_t hi = (uint16_t)ug_xval_rn_bits(&r, UG_BF16);
    r.neg = true;
    const uint16_t lo = (uint16_t)ug_xval_rn_bits(&r, UG_BF16);
    if ((hi & 0x7F80) == 0x7F80) return false;
    const double lo_value = ug_bf16_to_f32(lo), hi_value = ug_bf16_to_f32(hi);
    *out = (ug_staged){.rn = neg ? 0x8000 : 0, .lo = lo, .hi = hi, .flagged = true, .abs_x = 0.0,
                       .mag = fmax(fabs(lo_value), fabs(hi_value)), .gap = fabs(hi_value - lo_value),
                       .dev = fmax(0.0, fmax(fabs(lo_value), fabs(hi_value)))};
    return true;
}

/* ug_stage_certified of a nonzero x (read: x) whose RN_bf16 is rn and
 * whose doubles to nearest and away from zero are nearest and away;
 * out->dev (the deviations from x, its costliest part) only where
 * with_dev. */
static bool stage_certified_read(bool neg, uint64_t m1, ug_u128 m2, int e, const ug_xval *x, uint16_t rn,
                                 double nearest, double away, double radius_rel, double radius_abs, bool with_dev,
                                 ug_staged *out, ug_xsum *scratch)
{
    const uint16_t mag_bits = rn & 0x7FFF;
    if (mag_bits >= 0x7F80) return false;
    const double abs_rn = ug_bf16_to_f32(mag_bits);
    /* The radius is rounded up to 64 bits (at most 2^-53 |x0| more for its
     * relative part), within the certificate's margin. A window about a
     * rounding to zero always holds -0 and +0: never inside. */
    const bool inside = mag_bits != 0 && ug_bf16_window_inside(mag_bits, fabs(nearest), radius_rel, radius_abs);
    /* Otherwise the window's ends are needed: exactly x -+ radius for an
     * absolute radius (a double: exact in the MPFR path's 64 bits); not
     * computed here for a relative one. */
    if (!inside && radius_rel != 0) return false;
    *out = (ug_staged){.rn = rn, .lo = rn, .hi = rn, .flagged = false, .mag = abs_rn, .gap = 0.0,
                       .abs_x = fabs(away)};
    ug_xval deviation; /* |x - RN(x)|, from x's leading bits or else from an accumulator */
    if (inside && !with_dev) return true;
    if (inside && distance(x, ug_bf16_to_f32(rn), &deviation)) {
        out->dev = fabs(xval_to_double(&deviation, MPFR_RNDA));
        return true;
    }
    /* x's lowest bit, and its top (the product's leading 128 bits at 2^x.e) */
    const uint64_t m2_low = (uint64_t)m2;
    const int bottom_x = e + __builtin_ctzll(m1) + (m2_low ? __builtin_ctzll(m2_low) : 64 + __builtin_ctzll((uint64_t)(m2 >> 64)));
    const int top_x = x->e + ug_u128_bit_length(ug_xval_m(x));
    if (with_dev && !deviation_up(x, neg, m1, m2, e, bottom_x, top_x, rn, scratch, &out->dev)) return false;
    if (inside) return true;
    ug_xval end[2]; /* RN_bf16(x - radius), RN_bf16(x + radius), as ug_mpfr_bf16_window */
    if (!shifted(neg, m1, m2, e, -radius_abs, scratch, &end[0]) || !shifted(neg, m1, m2, e, radius_abs, scratch, &end[1]))
        return false;
    out->lo = rn_bf16(&end[0]);
    out->hi = rn_bf16(&end[1]);
    if ((out->lo & 0x7F80) == 0x7F80 || (out->hi & 0x7F80) == 0x7F80) return false;
    out->flagged = out->lo != out->hi;
    const double lo = ug_bf16_to_f32(out->lo), hi = ug_bf16_to_f32(out->hi);
    out->mag = fmax(fabs(lo), fabs(hi));
    out->gap = out->flagged ? fabs(hi - lo) : 0.0;
    if (!out->flagged || !with_dev) return true;
    double dev_lo = out->dev, dev_hi = out->dev; /* an end that rounds to rn: rn's deviation, already there */
    if ((out->lo != rn && !deviation_up(x, neg, m1, m2, e, bottom_x, top_x, out->lo, scratch, &dev_lo)) ||
        (out->hi != rn && !deviation_up(x, neg, m1, m2, e, bottom_x, top_x, out->hi, scratch, &dev_hi)))
        return false;
    out->dev = fmax(out->dev, fmax(dev_lo, dev_hi));
    return true;
}

/* RN_bf16(x) and x's doubles to nearest and away from zero, as
 * ug_xval_rn_bits and ug_xval_to_doubles give them, from one normalization
 * of the nonzero x, where |x| lies in bf16's normal binades [2^-126,
 * 2^128) (then in the normal doubles' too); false otherwise. */
static bool staging_roundings(const ug_xval *x, uint16_t *rn, double *nearest, double *away)
{
    ug_u128 m;
    int top;
    if (!normalized(x, &m, &top) || top < -126 || top > 127) return false;
    const bool inexact = ug_xval_inexact(x);
    const uint64_t head = (uint64_t)(m >> 64), n = head >> 11; /* the leading 53 bits, as leading_53 cuts them */
    const bool half = head >> 10 & 1, below = (head & 0x3FF) != 0 || (uint64_t)m != 0 || inexact;
    *nearest = scaled(x->neg, n + rounds_up(half, below, n, x->neg, MPFR_RNDN), top - 52);
    *away = scaled(x->neg, n + (half || below), top - 52);
    uint32_t bits;
    format_normalized(x->neg, m, top, inexact, UG_BF16, &bits);
    *rn = (uint16_t)(bits >> 16);
    return true;
}

static bool stage_certified(bool neg, uint64_t m1, ug_u128 m2, int e, double radius_rel, double radius_abs,
                            bool with_dev, ug_staged *out, ug_xsum *scratch)
{
    ug_xval x;
    product_read(neg, m1, m2, e, &x);
    if (x.zero) return stage_zero(neg, radius_rel, radius_abs, out);
    uint16_t rn;
    double nearest, away;
    if (!staging_roundings(&x, &rn, &nearest, &away)) {
        const ug_xval_doubles xd = ug_xval_to_doubles(&x);
        rn = (uint16_t)ug_xval_rn_bits(&x, UG_BF16);
        nearest = xd.nearest;
        away = xd.away;
    }
    return stage_certified_read(neg, m1, m2, e, &x, rn, nearest, away, radius_rel, radius_abs, with_dev, out,
                                scratch);
}

bool ug_stage_certified_finished(const ug_ref_value *finished, bool neg, ug_u128 m, int e, double radius_abs,
                                 bool with_dev, ug_staged *out, ug_xsum *scratch)
{
    const double hi = finished->r_hi, lo = finished->r_lo;
    /* r_hi = RN_53(x) and r_lo's sign says on which side of it x lies (x
     * has at most 128 bits: RN_128(x) = x); away from zero is r_hi or the
     * next double out, where r_hi is normal and that double finite. */
    if (m == 0 || !(fabs(hi) >= 0x1p-1000 && fabs(hi) <= 0x1p1000))
        return stage_certified(neg, 1, m, e, 0, radius_abs, with_dev, out, scratch);
    const double away = lo != 0 && (lo < 0) == (hi < 0) ? nextafter(hi, hi < 0 ? -INFINITY : INFINITY) : hi;
    const ug_xval x = {.neg = neg, .m = m, .e = e}; /* ug_xval_product(neg, 1, m, e): m has at most 128 bits */
    return stage_certified_read(neg, 1, m, e, &x, (uint16_t)finished->rn_bits, hi, away,
                                0, radius_abs, with_dev, out, scratch);
}

bool ug_stage_certified(bool neg, uint64_t m1, ug_u128 m2, int e, double radius_rel, double radius_abs,
                        ug_staged *out, ug_xsum *scratch)
{
    return stage_certified(neg, m1, m2, e, radius_rel, radius_abs, true, out, scratch);
}

bool ug_stage_certified_cast(bool neg, uint64_t m1, ug_u128 m2, int e, double radius_rel, double radius_abs,
                             ug_staged *out, ug_xsum *scratch)
{
    return stage_certified(neg, m1, m2, e, radius_rel, radius_abs, false, out, scratch);
}

void ug_xsum_get_mpfr(ug_xsum *a, mpfr_ptr out, mpz_t scratch)
{
    const ug_xval w = ug_xsum_read(a);
    if (w.zero) {
        mpfr_set_zero(out, w.neg ? -1 : 1);
        return;
    }
    ug_u128 n;
    int q;
    round_value(&w, (int)mpfr_get_prec(out), NO_QMIN, MPFR_RNDN, &n, &q);
    const uint64_t words[2] = {(uint64_t)n, (uint64_t)(n >> 64)};
    mpz_import(scratch, 2, -1, sizeof words[0], 0, 0, words);
    if (w.neg) mpz_neg(scratch, scratch);
    mpfr_set_z_2exp(out, scratch, q, MPFR_RNDN); /* exact: n <= 2^prec */
}

void ug_xsum_get_mpfr_wide(ug_xsum *a, mpfr_ptr out, mpz_t scratch)
{
    const ug_xval w = ug_xsum_read(a); /* carries propagated; a negative S is left as negated digits */
    if (w.zero) {
        mpfr_set_zero(out, w.neg ? -1 : 1);
        return;
    }
    const size_t n = (size_t)(a->hi - a->lo + 1);
    uint32_t digits[UG_XSUM_LIMBS];
    for (size_t k = 0; k < n; k++) {
        const int64_t limb = a->limb[a->lo + (int)k];
        digits[k] = (uint32_t)(w.neg ? -limb : limb);
    }
    mpz_import(scratch, n, -1, sizeof digits[0], 0, 0, digits);
    if (w.neg) mpz_neg(scratch, scratch);
    mpfr_set_z_2exp(out, scratch, a->lo * DIGIT_BITS + UG_XSUM_EMIN, MPFR_RNDN);
}

/* MPFR's custom interface reads the significand's limbs in place: x =
 * 0.d[n-1]...d[0] * 2^exp with the leading bit set and the bits below the
 * precision zero, as the MPFR manual's "Custom Interface" specifies. */
_Static_assert(GMP_NUMB_BITS == 64 && GMP_NAIL_BITS == 0, "64-bit limbs without nails");

bool ug_xsum_split_mpfr(mpfr_srcptr x, bool *neg, ug_u128 *m, int *e)
{
    const mpfr_prec_t prec = mpfr_get_prec(x);
    if (!mpfr_regular_p(x) || prec > 128) return false;
    const mpfr_exp_t exp = mpfr_custom_get_exp(x) - prec;
    if (exp < INT_MIN / 4 || exp > INT_MAX / 4) return false;
    const mp_limb_t *d = mpfr_custom_get_significand(x);
    const int limbs = (int)((prec + 63) / 64);
    const ug_u128 significand = limbs == 2 ? (ug_u128)d[1] << 64 | d[0] : (ug_u128)d[0];
    *m = significand >> (64 * limbs - prec); /* the integer of prec bits, as mpfr_get_z_2exp gives it */
    *neg = mpfr_signbit(x);
    *e = (int)exp;
    return true;
}

void ug_xval_finish_mpfr(mpfr_srcptr r, ug_ref_value *out, double pre_round_bound, double abs_sum, uint32_t flagged,
                         ug_dtype dtype)
{
    enum { WIDE_LIMBS = 3, WIDE_BITS = 64 * WIDE_LIMBS, EXP_LIMIT = 1000 };
    const mpfr_prec_t prec = mpfr_get_prec(r);
    if (!mpfr_regular_p(r) || prec > WIDE_BITS || mpfr_get_exp(r) < -EXP_LIMIT || mpfr_get_exp(r) > EXP_LIMIT) {
        ug_ref_finish(out, r, pre_round_bound, abs_sum, flagged, dtype);
        return;
    }
    /* |r| = M 2^(exp - 192), M's leading bit at 2^191 (MPFR's limbs, top aligned) */
    const int exp = (int)mpfr_get_exp(r), limbs = (int)((prec + 63) / 64);
    const mp_limb_t *d = mpfr_custom_get_significand(r);
    uint64_t m[WIDE_LIMBS + 1] = {0};
    for (int i = 0; i < limbs; i++) m[WIDE_LIMBS - limbs + i] = d[i];
    const bool neg = mpfr_signbit(r);
    const ug_xval value = {.neg = neg, .m = (ug_u128)m[2] << 64 | m[1], .e = exp - 128, .round = m[0] >> 63,
                           .sticky = (m[0] << 1) != 0};
    const double r_hi = ug_xval_to_double(&value, MPFR_RNDN);
    /* |r_hi| = h 2^he, normal: on M's grid h 2^shift, shift 139 (or 140 when
     * r rounded up to 2^exp), so |r| - |r_hi| is exact in four limbs */
    bool h_neg;
    uint64_t h;
    int he;
    ug_xsum_split(r_hi, &h_neg, &h, &he);
    const int shift = he - (exp - WIDE_BITS), word = shift / 64, bit = shift % 64;
    uint64_t hs[WIDE_LIMBS + 1] = {0}, rest[WIDE_LIMBS + 1];
    hs[word] = h << bit;
    hs[word + 1] = bit ? h >> (64 - bit) : 0; /* word <= 2 */
    uint64_t borrow = 0;
    for (int i = 0; i <= WIDE_LIMBS; i++) {
        const ug_u128 t = (ug_u128)m[i] - hs[i] - borrow;
        rest[i] = (uint64_t)t;
        borrow = (uint64_t)(t >> 64) & 1;
    }
    ug_xval low = ug_xwin_read(rest, WIDE_LIMBS + 1, exp - WIDE_BITS);
    if (!low.zero) low.neg ^= neg; /* an exact zero difference is +0, as mpfr_sub_d rounds to nearest */
    ug_ref_fill(out, r_hi, ug_xval_to_double(&low, MPFR_RNDN), ug_xval_rn_bits(&value, dtype), pre_round_bound,
                abs_sum, flagged, dtype);
}

int ug_xwin_bit_length(const uint64_t *m, int n)
{
    for (int k = n - 1; k >= 0; k--)
        if (m[k]) return 64 * k + 64 - __builtin_clzll(m[k]);
    return 0;
}

bool ug_xwin_place(const uint64_t *m, int n, int e, int grid, uint64_t *out, int nl)
{
    if (n == 1 && nl == 1) { /* the column factors' case */
        const int d = e - grid;
        *out = 0;
        if (m[0] == 0) return true;
        if (d < 0 || 64 - __builtin_clzll(m[0]) + d > 64) return false;
        *out = m[0] << d;
        return true;
    }
    const int len = ug_xwin_bit_length(m, n), d = e - grid;
    const bool on = len == 0 || (d >= 0 && len + d <= 64 * nl);
    const int q = on && len ? d >> 6 : 0, r = on && len ? d & 63 : 0;
    for (int k = 0; k < nl; k++) { /* each limb written once: no memset call for these few limbs */
        const int i = k - q; /* the limb of m whose low bits land in out[k] */
        const uint64_t high = on && i >= 0 && i < n ? m[i] : 0, low = on && r && i >= 1 && i - 1 < n ? m[i - 1] : 0;
        out[k] = high << r | (r ? low >> (64 - r) : 0);
    }
    return on;
}

/* |acc| of a two's complement window, and its sign. */
UG_XSUM_INLINE bool window_magnitude(const uint64_t *acc, int limbs, uint64_t *mag)
{
    const uint64_t flip = acc[limbs - 1] >> 63 ? ~UINT64_C(0) : 0;
    uint64_t carry = flip & 1;
    for (int k = 0; k < limbs; k++) {
        const uint64_t x = (acc[k] ^ flip) + carry;
        carry = carry && x == 0;
        mag[k] = x;
    }
    return flip != 0;
}

/* The widest sum the reads below take: a window and a value on the lower
 * one's grid. */
enum { WIDE_LIMBS = 8 };

/* The magnitude mag[2 .. limbs + 2) (limbs <= WIDE_LIMBS) times 2^e with
 * the sign neg, read into *out field by field (its callers' values are
 * read again at once: a returned struct is copied through wide loads
 * that wait for these stores); zero reads as +0. mag[0] and mag[1] are
 * zero, so that the three limbs from the top one down always exist:
 * shifted to put the leading bit at 2^191, their top 128 bits are m, the
 * next the round bit, the rest (and every limb below them) the sticky
 * part. */
UG_XSUM_INLINE void magnitude_read(const uint64_t *mag, int limbs, int e, bool neg, ug_xval *out)
{
    int t = limbs + 1;
    while (t >= 2 && mag[t] == 0) t--;
    if (t < 2) {
        *out = (ug_xval){.zero = true};
        return;
    }
    const int z = __builtin_clzll(mag[t]);
    const uint64_t hi = mag[t], mid = mag[t - 1], lo = mag[t - 2];
    const uint64_t w2 = z ? hi << z | mid >> (64 - z) : hi, w1 = z ? mid << z | lo >> (64 - z) : mid, w0 = lo << z;
    bool sticky = (w0 << 1) != 0;
    for (int k = 2; k < t - 2; k++) sticky |= mag[k] != 0;
    out->neg = neg;
    out->zero = false;
    out->m = (ug_u128)w2 << 64 | w1;
    out->e = e + 64 * (t - 2) + 63 - z - 127;
    out->round = w0 >> 63;
    out->sticky = sticky;
}

/* ug_xwin_read for up to WIDE_LIMBS limbs, into *out. */
UG_XSUM_INLINE void window_read(const uint64_t *acc, int limbs, int e, ug_xval *out)
{
    uint64_t mag[WIDE_LIMBS + 2];
    mag[0] = mag[1] = 0; /* the limbs above them are all written */
    const bool neg = window_magnitude(acc, limbs, mag + 2);
    magnitude_read(mag, limbs, e, neg, out);
}

ug_xval ug_xwin_read(const uint64_t *acc, int limbs, int e)
{
    ug_xval w;
    window_read(acc, limbs, e, &w);
    return w;
}

/* v·2^d (v of n <= width limbs of two's complement, d >= 0) in out's
 * width <= WIDE_LIMBS limbs; false where |v·2^d| > 2^(64 width - 3) (two
 * such values then add without overflow). */
UG_XSUM_INLINE bool shift_signed(const uint64_t *v, int n, int d, int width, uint64_t *out)
{
    const uint64_t sign = (uint64_t)((int64_t)v[n - 1] >> 63);
    int top = n - 1;
    while (top >= 0 && v[top] == sign) top--;
    const int bits = top < 0 ? 0 : 64 * top + 64 - __builtin_clzll(v[top] ^ sign); /* -2^bits <= v < 2^bits */
    if (bits + d > 64 * width - 3) return false;
    const int q = d >> 6, r = d & 63;
    for (int k = 0; k < width; k++) {
        const int i = k - q; /* the word of v whose low bits land in out[k] */
        const uint64_t hi = i < 0 ? 0 : i < n ? v[i] : sign, lo = i < 1 ? 0 : i - 1 < n ? v[i - 1] : sign;
        out[k] = r ? hi << r | lo >> (64 - r) : hi;
    }
    return true;
}

/* ug_xwin_read_plus in width limbs (UG_XWIN_LIMBS or WIDE_LIMBS); inline
 * in each, so that its loops run over a known width. */
UG_XSUM_INLINE bool read_plus(const uint64_t *acc, int limbs, int e, bool neg, const uint64_t *m, int n, int m_e, int width,
                      ug_xval *out)
{
    uint64_t value[WIDE_LIMBS], a[WIDE_LIMBS], b[WIDE_LIMBS];
    const uint64_t mask = neg ? ~UINT64_C(0) : 0;
    uint64_t carry = mask & 1;
    for (int k = 0; k < width; k++) { /* ±m in two's complement: |m| < 2^256 */
        const ug_u128 x = (ug_u128)((k < n ? m[k] : 0) ^ mask) + carry;
        value[k] = (uint64_t)x;
        carry = (uint64_t)(x >> 64);
    }
    const int grid = e < m_e ? e : m_e;
    if (grid < UG_XSUM_EMIN || grid > UG_XSUM_EMAX - 64 * width || !shift_signed(acc, limbs, e - grid, width, a) ||
        !shift_signed(value, width, m_e - grid, width, b))
        return false;
    ug_u128 sum = 0;
    for (int k = 0; k < width; k++) {
        sum += (ug_u128)a[k] + b[k];
        a[k] = (uint64_t)sum;
        sum >>= 64;
    }
    window_read(a, width, grid, out);
    return true;
}

bool ug_xwin_read_plus(const uint64_t *acc, int limbs, int e, bool neg, const uint64_t *m, int n, int m_e,
                       ug_xval *out)
{
    return read_plus(acc, limbs, e, neg, m, n, m_e, UG_XWIN_LIMBS, out);
}

bool ug_xwin_read_plus_wide(const uint64_t *acc, int limbs, int e, bool neg, const uint64_t *m, int n, int m_e,
                            ug_xval *out)
{
    return read_plus(acc, limbs, e, neg, m, n, m_e, WIDE_LIMBS, out);
}

void ug_xsum_add_xwin(ug_xsum *a, const uint64_t *acc, int limbs, int e)
{
    uint64_t mag[UG_XWIN_LIMBS];
    const bool neg = window_magnitude(acc, limbs, mag);
    for (int k = 0; k < limbs; k++)
        if (mag[k]) ug_xsum_add(a, neg, mag[k], e + 64 * k);
}

bool ug_xwin_magnitude(const uint64_t *acc, int limbs, uint64_t *mag) { return window_magnitude(acc, limbs, mag); }
