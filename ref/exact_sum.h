/* SPDX-License-Identifier: MIT */
/* Exact sums of binary64-range values, and their roundings as a reference
 * reports them (the fast path of ref/; docs/error-model.md §2.1).
 *
 * An accumulator holds a sum of values ±m·2^e (m < 2^128, or a product
 * m1·m2 < 2^192; UG_XSUM_EMIN <= e and the value below 2^UG_XSUM_EMAX)
 * exactly: a fixed-point integer over 32-bit digits kept in int64 limbs, so
 * each add touches five (seven) limbs and carries are propagated only when
 * the sum is read (or after 2^29 adds, before a limb could overflow). This
 * covers every product of two finite doubles (m < 2^106, e in
 * [-2148, 1942]) and a 64-bit integer times a 128-bit MPFR significand
 * scaled into that range. An add outside
 * the range does not change the sum; it marks the accumulator, and
 * ug_xsum_in_range() then tells the caller to take the MPFR path.
 *
 * Reading (ug_xsum_read) gives S's leading bits, from which each request
 * rounds once, as MPFR would round the exact S: ug_xval_to_double (any
 * mpfr_rnd_t but MPFR_RNDF, as mpfr_get_d), ug_xval_rn_bits (RN to bf16 /
 * f32 exactly as ref/round.c); and ug_xsum_finish, which fills
 * a ug_ref_value bit for bit as ug_ref_finish does from the 128-bit value
 * that mpfr_sum(..., MPFR_RNDN) at UG_REF_PREC bits returns for the same
 * terms: r = RN_128(S), then r_hi = RN_53(r), r_lo = RN_53(r - r_hi),
 * rn_bits = RN_T(r). An exactly zero S is -0 when every value added was a
 * -0 (at least one), +0 otherwise, as mpfr_sum rounds to nearest. */
#ifndef UG_REF_EXACT_SUM_H
#define UG_REF_EXACT_SUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mpfr.h>

#include "../core/bf16.h"
#include "../core/buf.h"
#include "ref.h"

typedef unsigned __int128 ug_u128;

/* The adds sit in the references' innermost loops: always inlined. */
#define UG_XSUM_INLINE __attribute__((always_inline)) static inline

enum {
    UG_XSUM_EMIN = -2240,                                  /* lowest bit: 2^EMIN */
    UG_XSUM_EMAX = 2240,                                   /* |S| < 2^EMAX (before carries) */
    UG_XSUM_LIMBS = (UG_XSUM_EMAX - UG_XSUM_EMIN) / 32 + 8, /* + room for the 5-limb spill and carries */
    UG_XSUM_ADDS_BEFORE_CARRY = 1 << 29                    /* each add moves a limb by < 2^33 */
};

typedef struct {
    int64_t limb[UG_XSUM_LIMBS]; /* S = sum limb[i] 2^(32 i + EMIN) */
    int lo, hi;                  /* limbs touched since the last clear (lo > hi: none) */
    uint32_t adds;               /* adds since carries were last propagated */
    bool pos_zero, neg_zero;     /* a +0 / a -0 was added */
    bool out_of_range;           /* some add was outside [EMIN, EMAX): S is not valid */
} ug_xsum;

void ug_xsum_init(ug_xsum *a);  /* S = 0 (whole accumulator) */
void ug_xsum_clear(ug_xsum *a); /* S = 0 (touched limbs only) */
static inline bool ug_xsum_in_range(const ug_xsum *a) { return !a->out_of_range; }

void ug_xsum_carry(ug_xsum *a); /* internal: keeps the limbs from overflowing */

/* Adds the digits d[0..n) (each < 2^32) times 2^(32 i), negated when
 * mask is -1 (signs are data: no branch). */
UG_XSUM_INLINE void ug_xsum_add_digits(ug_xsum *a, int i, const uint64_t *d, int n, int64_t mask)
{
    int64_t *limb = a->limb + i;
#pragma GCC unroll 8
    for (int k = 0; k < n; k++) limb[k] += ((int64_t)d[k] ^ mask) - mask;
    if (i < a->lo) a->lo = i;
    if (i + n - 1 > a->hi) a->hi = i + n - 1;
    if (++a->adds == UG_XSUM_ADDS_BEFORE_CARRY) ug_xsum_carry(a);
}

/* The limb and shift of bit 2^e, or false (and the accumulator marked) when
 * a value of `bits` bits at 2^e would leave the range. */
UG_XSUM_INLINE bool ug_xsum_place(ug_xsum *a, int e, int bits, int *limb, unsigned *shift)
{
    const unsigned pos = (unsigned)(e - UG_XSUM_EMIN); /* e < EMIN wraps far above */
    if (pos > (unsigned)(UG_XSUM_EMAX - UG_XSUM_EMIN - bits)) {
        a->out_of_range = true;
        return false;
    }
    *limb = (int)(pos >> 5);
    *shift = pos & 31;
    return true;
}

static inline void ug_xsum_add_zero(ug_xsum *a, bool neg)
{
    if (neg)
        a->neg_zero = true;
    else
        a->pos_zero = true;
}

/* S += (neg ? -1 : 1) · m · 2^e. m == 0 adds a signed zero. */
UG_XSUM_INLINE void ug_xsum_add(ug_xsum *a, bool neg, ug_u128 m, int e)
{
    int i;
    unsigned s;
    if (m == 0) {
        ug_xsum_add_zero(a, neg);
        return;
    }
    if (!ug_xsum_place(a, e, 128, &i, &s)) return;
    /* m << s (< 2^159) as three words, then five 32-bit digits. */
    const uint64_t lo = (uint64_t)m, hi = (uint64_t)(m >> 64);
    const uint64_t w0 = lo << s, w1 = hi << s | (lo >> 1) >> (63 - s), w2 = (hi >> 1) >> (63 - s);
    const uint64_t d[5] = {(uint32_t)w0, w0 >> 32, (uint32_t)w1, w1 >> 32, w2};
    ug_xsum_add_digits(a, i, d, 5, -(int64_t)neg);
}

/* A finite double as ±m·2^e (m < 2^53). */
static inline void ug_xsum_split(double x, bool *neg, uint64_t *m, int *e)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    const int biased = (int)(bits >> 52 & 0x7FF);
    *neg = bits >> 63;
    *m = (bits & ((UINT64_C(1) << 52) - 1)) | (biased ? UINT64_C(1) << 52 : 0);
    *e = (biased ? biased : 1) - 1075;
}

/* S += x (finite). */
static inline void ug_xsum_add_double(ug_xsum *a, double x)
{
    bool neg;
    uint64_t m;
    int e;
    ug_xsum_split(x, &neg, &m, &e);
    ug_xsum_add(a, neg, m, e);
}

/* S += ±m1·m2·2^e (a 64-bit integer times a 128-bit one, exactly). */
UG_XSUM_INLINE void ug_xsum_add_mul(ug_xsum *a, bool neg, uint64_t m1, ug_u128 m2, int e)
{
    int i;
    unsigned s;
    if (m1 == 0 || m2 == 0) {
        ug_xsum_add_zero(a, neg);
        return;
    }
    if (!ug_xsum_place(a, e, 192, &i, &s)) return;
    /* The 192-bit product as three words, shifted: four words, seven digits. */
    const ug_u128 low = (ug_u128)m1 * (uint64_t)m2, high = (ug_u128)m1 * (uint64_t)(m2 >> 64);
    const ug_u128 mid = (low >> 64) + (uint64_t)high; /* < 2^65 */
    const uint64_t p0 = (uint64_t)low, p1 = (uint64_t)mid, p2 = (uint64_t)(high >> 64) + (uint64_t)(mid >> 64);
    const uint64_t w0 = p0 << s, w1 = p1 << s | (p0 >> 1) >> (63 - s), w2 = p2 << s | (p1 >> 1) >> (63 - s),
                   w3 = (p2 >> 1) >> (63 - s);
    const uint64_t d[7] = {(uint32_t)w0, w0 >> 32, (uint32_t)w1, w1 >> 32, (uint32_t)w2, w2 >> 32, w3};
    ug_xsum_add_digits(a, i, d, 7, -(int64_t)neg);
}

/* S += x·y, x and y finite doubles, exactly. */
static inline void ug_xsum_add_product(ug_xsum *a, double x, double y)
{
    bool nx, ny;
    uint64_t mx, my;
    int ex, ey;
    ug_xsum_split(x, &nx, &mx, &ex);
    ug_xsum_split(y, &ny, &my, &ey);
    ug_xsum_add(a, nx ^ ny, (ug_u128)mx * my, ex + ey);
}

/* S *= m (0 < m < 2^24) exactly, as if every value added so far had been
 * multiplied by m; adds may go on afterwards. Lets a caller add terms
 * that share a small factor (a reference's scale) without it. */
void ug_xsum_mul_small(ug_xsum *a, uint32_t m);

/* The exact sum as read out once: its sign, the 128 bits below its leading
 * bit, the bit after them and whether any bit below that is set, i.e.
 * |S| = (m + round/2 + sticky-part) · 2^e; zero marks S = 0 (neg its sign).
 * Reading propagates carries but keeps S: adds may go on afterwards. */
typedef struct {
    bool neg, zero;
    ug_u128 m;
    int e;
    bool round, sticky;
} ug_xval;

/* Requires ug_xsum_in_range(a). */
ug_xval ug_xsum_read(ug_xsum *a);

/* v rounded to a double in mode rnd (any but MPFR_RNDF), as mpfr_get_d:
 * +-inf when |v| >= 2^1024 or it rounds up to that. */
double ug_xval_to_double(const ug_xval *v, mpfr_rnd_t rnd);

/* v rounded to a double to nearest, away from zero and up, as
 * ug_xval_to_double gives each (one normalization for the three). */
typedef struct {
    double nearest, away, up;
} ug_xval_doubles;
ug_xval_doubles ug_xval_to_doubles(const ug_xval *v);

/* RN_T(v), T = bf16 (low 16 bits) or f32, as ug_mpfr_to_bf16 /
 * ug_mpfr_to_f32_bits of v. */
uint32_t ug_xval_rn_bits(const ug_xval *v, ug_dtype dtype);

/* v->m as two 64-bit loads, the width its producers store it with: GCC
 * reads a whole ug_u128 through one 16-byte load where it keeps it in
 * memory, and such a load waits until both stores have left (store
 * forwarding fails), as it does after every read that writes m. */
static inline ug_u128 ug_xval_m(const ug_xval *v)
{
    uint64_t lo, hi;
    memcpy(&lo, (const char *)&v->m, sizeof lo);
    memcpy(&hi, (const char *)&v->m + sizeof lo, sizeof hi);
    return (ug_u128)hi << 64 | lo;
}

/* v->m = m as two 64-bit stores (for the loads above). */
static inline void ug_xval_set_m(ug_xval *v, ug_u128 m)
{
    const uint64_t lo = (uint64_t)m, hi = (uint64_t)(m >> 64);
    memcpy((char *)&v->m, &lo, sizeof lo);
    memcpy((char *)&v->m + sizeof lo, &hi, sizeof hi);
}

/* *flag loaded alone: GCC folds loads of adjacent bools (a ug_xval's neg
 * and zero, round and sticky) into one 16-bit load, which waits for the
 * two byte stores that wrote them (store forwarding); the empty asm keeps
 * the loads apart. */
static inline bool ug_bool_alone(const bool *flag)
{
    bool value = *flag;
    __asm__("" : "+r"(value));
    return value;
}

/* v->round || v->sticky, as two byte loads. */
static inline bool ug_xval_inexact(const ug_xval *v) { return ug_bool_alone(&v->round) || v->sticky; }

/* *out = *v field by field: a whole copy goes through wide loads, which
 * wait where v was just written by narrower stores (store forwarding);
 * the fast paths' hot loops store their values with this. */
static inline void ug_xval_set(ug_xval *out, const ug_xval *v)
{
    out->neg = ug_bool_alone(&v->neg);
    out->zero = v->zero;
    out->m = ug_xval_m(v);
    out->e = v->e;
    out->round = ug_bool_alone(&v->round);
    out->sticky = v->sticky;
}

/* ug_xval_round128 of a nonzero v whose m has fewer than 128 bits. */
ug_xval ug_xval_round128_short(const ug_xval *v);

/* RN_128(v), as MPFR rounds v to UG_REF_PREC bits to nearest (ties to
 * even): round and sticky cleared, m below 2^128. Inline: every value of
 * the references' fast paths goes through it, mostly with 128 bits
 * already (the windows' reads). */
static inline ug_xval ug_xval_round128(const ug_xval *v)
{
    ug_xval r;
    ug_xval_set(&r, v); /* v is often just written */
    if (r.zero) return r;
    if (!(r.m >> 127)) return ug_xval_round128_short(v);
    r.m += r.round && (r.sticky || (r.m & 1)); /* ties to even */
    if (r.m == 0) { /* carried out: 2^128 */
        r.m = (ug_u128)1 << 127;
        r.e++;
    }
    r.round = r.sticky = false;
    return r;
}

/* The exact product ±m1·m2·2^e read as a ug_xval, without an accumulator. */
ug_xval ug_xval_product(bool neg, uint64_t m1, ug_u128 m2, int e);

static inline int ug_u128_bit_length(ug_u128 m)
{
    const uint64_t hi = (uint64_t)(m >> 64);
    return hi ? 128 - __builtin_clzll(hi) : (uint64_t)m ? 64 - __builtin_clzll((uint64_t)m) : 0;
}

/* w = m1·m2, the whole 256-bit product as little-endian words. */
static inline void ug_mul128(ug_u128 m1, ug_u128 m2, uint64_t w[4])
{
    const uint64_t a0 = (uint64_t)m1, a1 = (uint64_t)(m1 >> 64), b0 = (uint64_t)m2, b1 = (uint64_t)(m2 >> 64);
    const ug_u128 p00 = (ug_u128)a0 * b0, p01 = (ug_u128)a0 * b1, p10 = (ug_u128)a1 * b0, p11 = (ug_u128)a1 * b1;
    const ug_u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10; /* < 3·2^64 */
    const ug_u128 high = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64); /* the product is below 2^256 */
    w[0] = (uint64_t)p00;
    w[1] = (uint64_t)mid;
    w[2] = (uint64_t)high;
    w[3] = (uint64_t)(high >> 64);
}

/* 64 bits of the four-word integer w from bit `bit` (0 <= bit < 256) up. */
static inline uint64_t ug_words_at(const uint64_t w[4], int bit)
{
    const int k = bit >> 6, shift = bit & 63;
    const uint64_t high = shift && k + 1 < 4 ? w[k + 1] << (64 - shift) : 0;
    return w[k] >> shift | high;
}

/* The same as ug_xval_product for m1 of 128 bits: the 256-bit product's
 * leading bits. Inline: its callers round the result at once, and read
 * from memory its narrow fields' stores would stall them (store
 * forwarding). */
static inline ug_xval ug_xval_product128(bool neg, ug_u128 m1, ug_u128 m2, int e)
{
    uint64_t w[4];
    ug_mul128(m1, m2, w);
    const ug_u128 high = (ug_u128)w[3] << 64 | w[2];
    ug_xval v = {.neg = neg, .e = e};
    if (high == 0) { /* at most 128 bits: all of it */
        v.m = (ug_u128)w[1] << 64 | w[0];
        v.zero = v.m == 0;
        return v;
    }
    const int shift = ug_u128_bit_length(high); /* 1..128: bits beyond the window */
    v.m = (ug_u128)ug_words_at(w, shift + 64) << 64 | ug_words_at(w, shift);
    v.e = e + shift;
    v.round = ug_words_at(w, shift - 1) & 1;
    const int below = shift - 1; /* bits under the round bit */
    v.sticky = below >= 64 ? w[0] != 0 || (below > 64 && (w[1] & ((UINT64_C(1) << (below - 64)) - 1)) != 0)
                           : below > 0 && (w[0] & ((UINT64_C(1) << below) - 1)) != 0;
    return v;
}

/* out = ||v| - |d|| for a finite double d of v's sign, true when out is
 * exact enough to round to a double: d a multiple of v's window unit 2^e
 * below 2^(e+128), and the difference either exact (zero, or v without bits
 * below its window) or at least 2^54 units (else false: the caller reads it
 * from an accumulator). */
bool ug_xval_distance(const ug_xval *v, double d, ug_xval *out);

/* ug_stage_operand(x, radius) without MPFR where its result is certain:
 * x = (-1)^neg m1·m2·2^e exactly, radius = |x|·radius_rel + radius_abs (both
 * >= 0; any radius up to that, rounded up as the caller's MPFR path rounds
 * it). True, with out filled bit for bit as ug_stage_operand fills it, when
 * RN_bf16(x) is a nonzero finite bf16 and the window [x - radius, x + radius]
 * lies inside its rounding interval with margin (2^-20 of the radius and
 * 2^-48 of |x|: both window ends round to it, not flagged); false otherwise
 * (the caller stages through MPFR). scratch: an accumulator for the
 * deviation |x - RN_bf16(x)| when x's leading bits cannot give it. */
bool ug_stage_certified(bool neg, uint64_t m1, ug_u128 m2, int e, double radius_rel, double radius_abs,
                        ug_staged *out, ug_xsum *scratch);

/* The certificate of those stagings: whether every number within the
 * radius (abs_x0 radius_rel + radius_abs) of an x with |x - x0| <= 2^-53
 * |x0| lies strictly inside the rounding interval of the nonzero finite
 * bf16 magnitude mag_bits, abs_x0 = |x0| (the margin, 2^-20 of the radius
 * and 2^-48 of |x0|, covers |x - x0| and the roundings of these doubles;
 * the halfway points are exact). */
static inline bool ug_bf16_window_inside(uint16_t mag_bits, double abs_x0, double radius_rel, double radius_abs)
{
    const double abs_rn = ug_bf16_to_f32(mag_bits), prev = ug_bf16_to_f32((ug_bf16)(mag_bits - 1));
    const double next = mag_bits == 0x7F7F ? 0x1p128 : ug_bf16_to_f32((ug_bf16)(mag_bits + 1));
    const double reach = (abs_x0 * radius_rel + radius_abs) * (1 + 0x1p-20) + abs_x0 * 0x1p-48;
    return abs_x0 - reach > (abs_rn + prev) / 2 && abs_x0 + reach < (abs_rn + next) / 2;
}

/* The same for a staged reference, which takes RN_bf16(x) and needs no
 * deviation from x: every field as ug_stage_certified fills it but dev
 * (not to be read); certified wherever ug_stage_certified is, and also
 * where only a deviation would have needed the caller's MPFR path. */
bool ug_stage_certified_cast(bool neg, uint64_t m1, ug_u128 m2, int e, double radius_rel, double radius_abs,
                             ug_staged *out, ug_xsum *scratch);

/* The same (with_dev: ug_stage_certified, else ug_stage_certified_cast)
 * for x = (-1)^neg m·2^e and radius_rel = 0, where ug_xval_finish has just
 * finished x to bf16 into `finished`: RN_bf16(x) and x's doubles come from
 * its rn_bits, r_hi and r_lo rather than from x again (the fast paths
 * stage the values they emit). */
bool ug_stage_certified_finished(const ug_ref_value *finished, bool neg, ug_u128 m, int e, double radius_abs,
                                 bool with_dev, ug_staged *out, ug_xsum *scratch);

/* ug_ref_finish(out, RN_128(S), ...) without MPFR (see above). Requires
 * ug_xsum_in_range(a). */
void ug_xsum_finish(ug_xsum *a, ug_ref_value *out, double pre_round_bound, double abs_sum,
                    uint32_t flagged, ug_dtype dtype);

/* The same from an exact value already read (an accumulator's or a window's). */
void ug_xval_finish(const ug_xval *exact, ug_ref_value *out, double pre_round_bound, double abs_sum,
                    uint32_t flagged, ug_dtype dtype);

/* ug_ref_finish(out, r, ...) bit for bit, without MPFR calls where r is a
 * regular number of at most 192 bits whose exponent lies in [-1000, 1000]
 * (r_hi normal): r's significand read in place as an exact value, r_lo from
 * the exact r - r_hi. Any other r goes to ug_ref_finish itself. */
void ug_xval_finish_mpfr(mpfr_srcptr r, ug_ref_value *out, double pre_round_bound, double abs_sum, uint32_t flagged,
                         ug_dtype dtype);

/* A fixed-point window: the exact sum of products ±c·s, c a nonnegative
 * integer of nc <= UG_XWIN_MAX_C 64-bit limbs and s one 64-bit limb, where
 * the caller has put every c of the sum on one grid 2^ec and every s on one
 * grid 2^es (ug_xwin_place), so that each product, and the sum, is an
 * integer times 2^(ec + es). The window holds that integer in nc + 2 limbs
 * of two's complement: a product is below 2^(64 nc + 64), so fewer than
 * 2^63 of them cannot overflow it. An add is nc multiplications and nc + 2
 * adds with carry into registers, against the accumulator's 5 or 7 limb
 * updates in memory, with no bookkeeping: the references' inner loops use
 * it wherever the terms' exponents fit the grids, the accumulator for the
 * rest (docs/error-model.md §2.1). */
enum { UG_XWIN_MAX_C = 3, UG_XWIN_LIMBS = UG_XWIN_MAX_C + 2 };

/* acc[0 .. nc + 2) += (-1)^(mask & 1) c·s; mask is 0 (add) or all ones
 * (subtract: the two's complement of c·s is its complement plus one). The
 * definition, in portable C; ug_xwin_add_product is this on every target,
 * and the tests compare the two. */
UG_XSUM_INLINE void ug_xwin_add_product_c(uint64_t *acc, int nc, const uint64_t *c, uint64_t s, uint64_t mask)
{
    uint64_t p[UG_XWIN_MAX_C + 1], carry = 0;
#pragma GCC unroll 4
    for (int k = 0; k < nc; k++) {
        const ug_u128 t = (ug_u128)c[k] * s + carry; /* < 2^128 */
        p[k] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
    p[nc] = carry;
    ug_u128 sum = (ug_u128)acc[0] + (p[0] ^ mask) + (mask & 1);
    acc[0] = (uint64_t)sum;
#pragma GCC unroll 4
    for (int k = 1; k <= nc; k++) {
        sum = (ug_u128)acc[k] + (p[k] ^ mask) + (uint64_t)(sum >> 64);
        acc[k] = (uint64_t)sum;
    }
    acc[nc + 1] += mask + (uint64_t)(sum >> 64);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* x86-64: GCC 12 carries the C version's limbs through memory and setc;
 * here the product's limbs are joined and added in one carry chain of adc in
 * registers (less than half the time a term: docs/performance.md). The
 * sign's carry-in comes from bit 0 of the mask (bt), after the xors that
 * clear CF. */
UG_XSUM_INLINE void ug_xwin_add_product(uint64_t *acc, int nc, const uint64_t *c, uint64_t s, uint64_t mask)
{
    const ug_u128 t0 = (ug_u128)c[0] * s;
    uint64_t p0 = (uint64_t)t0, p1 = (uint64_t)(t0 >> 64);
    if (nc == 1) {
        __asm__("xor %[m], %[p0]\n\txor %[m], %[p1]\n\tbt $0, %[m]\n\t"
                "adc %[p0], %[a0]\n\tadc %[p1], %[a1]\n\tadc %[m], %[a2]"
                : [a0] "+r"(acc[0]), [a1] "+r"(acc[1]), [a2] "+r"(acc[2]), [p0] "+&r"(p0), [p1] "+&r"(p1)
                : [m] "r"(mask)
                : "cc");
        return;
    }
    const ug_u128 t1 = (ug_u128)c[1] * s;
    uint64_t l1 = (uint64_t)t1, p2 = (uint64_t)(t1 >> 64);
    if (nc == 2) {
        __asm__("add %[l1], %[p1]\n\tadc $0, %[p2]\n\t"
                "xor %[m], %[p0]\n\txor %[m], %[p1]\n\txor %[m], %[p2]\n\tbt $0, %[m]\n\t"
                "adc %[p0], %[a0]\n\tadc %[p1], %[a1]\n\tadc %[p2], %[a2]\n\tadc %[m], %[a3]"
                : [a0] "+r"(acc[0]), [a1] "+r"(acc[1]), [a2] "+r"(acc[2]), [a3] "+r"(acc[3]), [p0] "+&r"(p0),
                  [p1] "+&r"(p1), [p2] "+&r"(p2)
                : [m] "r"(mask), [l1] "r"(l1)
                : "cc");
        return;
    }
    const ug_u128 t2 = (ug_u128)c[2] * s;
    uint64_t l2 = (uint64_t)t2, p3 = (uint64_t)(t2 >> 64);
    __asm__("add %[l1], %[p1]\n\tadc %[l2], %[p2]\n\tadc $0, %[p3]\n\t"
            "xor %[m], %[p0]\n\txor %[m], %[p1]\n\txor %[m], %[p2]\n\txor %[m], %[p3]\n\tbt $0, %[m]\n\t"
            "adc %[p0], %[a0]\n\tadc %[p1], %[a1]\n\tadc %[p2], %[a2]\n\tadc %[p3], %[a3]\n\tadc %[m], %[a4]"
            : [a0] "+r"(acc[0]), [a1] "+r"(acc[1]), [a2] "+r"(acc[2]), [a3] "+r"(acc[3]), [a4] "+r"(acc[4]),
              [p0] "+&r"(p0), [p1] "+&r"(p1), [p2] "+&r"(p2), [p3] "+&r"(p3)
            : [m] "r"(mask), [l1] "r"(l1), [l2] "r"(l2)
            : "cc");
}
#else
UG_XSUM_INLINE void ug_xwin_add_product(uint64_t *acc, int nc, const uint64_t *c, uint64_t s, uint64_t mask)
{
    ug_xwin_add_product_c(acc, nc, c, s, mask);
}
#endif

/* The nonnegative m·2^e (m given as n little-endian limbs) on the grid
 * 2^grid: out[0 .. nl) = m·2^(e - grid). False (out zeroed) when bits of m
 * would fall below the grid or the result does not fit nl limbs. */
bool ug_xwin_place(const uint64_t *m, int n, int e, int grid, uint64_t *out, int nl);

/* The bit length of the nonnegative integer m[0 .. n). */
int ug_xwin_bit_length(const uint64_t *m, int n);

/* The window's value acc·2^e (limbs <= UG_XWIN_LIMBS, two's complement)
 * as ug_xsum_read would read the same sum; zero gives zero with neg false
 * (the sign of a zero sum depends on its terms: the caller's rule). */
ug_xval ug_xwin_read(const uint64_t *acc, int limbs, int e);

/* The exact sum of a window acc·2^e (limbs <= UG_XWIN_LIMBS, two's
 * complement) and ±m·2^m_e (m of n <= 4 little-endian limbs) read as
 * ug_xsum_read would read it, without an accumulator: true where each is at
 * most 2^(64 UG_XWIN_LIMBS - 3) in magnitude on the lower one's grid and
 * that window lies inside the accumulator's range [2^EMIN, 2^EMAX); false
 * (out unset) otherwise. A zero sum reads +0 (the caller's rule for its
 * sign). */
bool ug_xwin_read_plus(const uint64_t *acc, int limbs, int e, bool neg, const uint64_t *m, int n, int m_e,
                       ug_xval *out);

/* The same on eight limbs (each of the two at most 2^509 on the lower
 * grid, that window inside the range): for a value far below or above the
 * window, where the five limbs fall short. */
bool ug_xwin_read_plus_wide(const uint64_t *acc, int limbs, int e, bool neg, const uint64_t *m, int n, int m_e,
                            ug_xval *out);

/* mag[0 .. limbs) = |acc| for a two's complement integer acc[0 .. limbs)
 * (any number of limbs); returns whether acc is negative. */
bool ug_xwin_magnitude(const uint64_t *acc, int limbs, uint64_t *mag);

/* S += acc·2^e, a window's value (limbs <= UG_XWIN_LIMBS): an exact
 * continuation of a sum begun in a window (an add outside the range marks
 * the accumulator). */
void ug_xsum_add_xwin(ug_xsum *a, const uint64_t *acc, int limbs, int e);

/* out = S rounded to nearest at out's precision (<= 128 bits), as
 * mpfr_sum(out, ..., MPFR_RNDN) of the same terms; requires
 * ug_xsum_in_range(a). scratch is reused (one allocation per caller). */
void ug_xsum_get_mpfr(ug_xsum *a, mpfr_ptr out, mpz_t scratch);

/* The same at any precision of out (MPFR rounds the exact sum once, as
 * mpfr_sum does at out's precision); requires ug_xsum_in_range(a). */
void ug_xsum_get_mpfr_wide(ug_xsum *a, mpfr_ptr out, mpz_t scratch);

/* An MPFR number (regular, precision <= 128 bits, exponent within int) as
 * ±m·2^e, m the significand as an integer of the precision's bits; false
 * (nothing written) otherwise. Reads the limbs in place (no allocation). */
bool ug_xsum_split_mpfr(mpfr_srcptr x, bool *neg, ug_u128 *m, int *e);

#endif
