/* SPDX-License-Identifier: MIT */
#include "head_norm_rope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exact_sum.h"

/* Angles carry ANGLE_PREC bits: an angle below 2^32 is then known to 2^-220
 * absolutely, far below the 2^-128 relative error of its cos and sin. */
enum { ANGLE_PREC = 256 };

/* (1 + a)(1 + b) - 1, rounded up enough for a bound. */
static double compose(double a, double b) { return (a + b + a * b) * UG_F32_SLACK; }

/* (1 + u)^k - 1 <= k u (1 + k u) for k u <= 1/2. */
static double k_u(double k) { return k * UG_F32_U * (1 + k * UG_F32_U) * UG_F32_SLACK; }

/* The relative error of a step whose result y has |y| >= y_min > 0. */
static double rel_at_least(ug_f32_error e, double y_min)
{
    if (e.rel == 0 && e.abs == 0) return 0;
    return (e.rel + e.abs / y_min) * UG_F32_SLACK;
}

static double abs_up(mpfr_srcptr x) { return fabs(mpfr_get_d(x, MPFR_RNDA)); }

static bool is_subnormal(double x) { return x != 0 && fabs(x) < UG_F32_MIN_NORMAL; }

/* ---- the norm of one head (both variants) ---------------------------------- */

/* A number of at most 128 bits as the fast path (below) holds it: (-1)^neg m 2^e,
 * m == 0 a zero of sign neg. Every operation on it is inline, so that the
 * compiler keeps it in registers. */
typedef struct fnum {
    ug_u128 m;
    int e;
    bool neg;
} fnum;

/* y_i = x_i r w_i at UG_REF_PREC, with what the bound needs of the kernel's
 * f32 value of y_i: relative error eps_y, absolute allowance abs_y[i], and
 * |y_i| rounded up. */
typedef struct {
    size_t head_dim;
    mpfr_t *y;
    fnum *y_fast;    /* the fast path's y (ug_ref_fast): the same 128-bit values as y */
    double *y_mag, *abs_y;
    double eps_y;
    mpfr_ptr *term_ptrs;
    mpfr_t *terms;
    mpfr_t v, r;
    ug_xsum acc; /* the fast path's exact sums */
    mpz_t scratch;
} norm_ws;

static void norm_ws_free(norm_ws *ws)
{
    if (ws->y)
        for (size_t i = 0; i < ws->head_dim; i++) mpfr_clear(ws->y[i]);
    if (ws->terms)
        for (size_t i = 0; i < ws->head_dim; i++) mpfr_clear(ws->terms[i]);
    free(ws->y);
    free(ws->y_fast);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->y_mag);
    free(ws->abs_y);
    mpfr_clears(ws->v, ws->r, (mpfr_ptr)0);
    mpz_clear(ws->scratch);
}

static ug_status norm_ws_init(norm_ws *ws, size_t head_dim)
{
    *ws = (norm_ws){.head_dim = head_dim};
    mpfr_inits2(UG_REF_PREC, ws->v, ws->r, (mpfr_ptr)0);
    mpz_init(ws->scratch);
    ug_xsum_init(&ws->acc);
    ws->y = calloc(head_dim, sizeof *ws->y);
    ws->y_fast = calloc(head_dim, sizeof *ws->y_fast);
    ws->terms = calloc(head_dim, sizeof *ws->terms);
    ws->term_ptrs = calloc(head_dim, sizeof *ws->term_ptrs);
    ws->y_mag = calloc(head_dim, sizeof *ws->y_mag);
    ws->abs_y = calloc(head_dim, sizeof *ws->abs_y);
    if (!ws->y || !ws->y_fast || !ws->terms || !ws->term_ptrs || !ws->y_mag || !ws->abs_y) {
        free(ws->y);
        free(ws->terms);
        ws->y = NULL;
        ws->terms = NULL;
        norm_ws_free(ws);
        return ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate a head of %zu", head_dim);
    }
    for (size_t i = 0; i < head_dim; i++) {
        mpfr_init2(ws->y[i], UG_REF_PREC);
        mpfr_init2(ws->terms[i], 64); /* x_i^2: at most 48 bits, exact */
        ws->term_ptrs[i] = ws->terms[i];
    }
    return ug_ok();
}

/* ---- the fast path's arithmetic (ref/exact_sum.h) ----------------------------
 *
 * The MPFR path rounds y_i = RN(RN(r x_i) w_i) and each rotated output
 * RN(y_self c +- RN(y_other s)) to UG_REF_PREC = 128 bits. The fast path
 * forms the same exact products and sums in integers (ug_xval_product, the
 * exact accumulator) and rounds them to 128 bits to nearest even, as MPFR
 * does, so every intermediate is the MPFR path's value; signed zeros follow
 * IEEE's rules there as in MPFR. r itself, 1/sqrt, sin and cos stay MPFR. */

static inline fnum fnum_of_double(double x) /* x finite */
{
    fnum v;
    uint64_t m;
    ug_xsum_split(x, &v.neg, &m, &v.e);
    v.m = m;
    return v;
}

/* Without the trailing zero bits of its significand (an f32 cache value
 * then multiplies as 24 bits, not 128); false for an infinity or a NaN. */
static bool fnum_of_mpfr(mpfr_srcptr x, fnum *out)
{
    *out = (fnum){.neg = mpfr_signbit(x)};
    if (mpfr_zero_p(x)) return true;
    if (!ug_xsum_split_mpfr(x, &out->neg, &out->m, &out->e)) return false;
    const uint64_t low = (uint64_t)out->m;
    const int zeros = low ? __builtin_ctzll(low) : 64 + __builtin_ctzll((uint64_t)(out->m >> 64));
    out->m >>= zeros;
    out->e += zeros;
    return true;
}

static inline ug_xval xval_of(fnum v, bool round, bool sticky)
{
    return (ug_xval){.neg = v.neg, .zero = v.m == 0, .m = v.m, .e = v.e, .round = round, .sticky = sticky};
}

/* The exact product |a b| as words w[0..4) (w[4] = 0). */
static inline void product_words(ug_u128 a, ug_u128 b, uint64_t w[5])
{
    const uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    w[4] = 0;
    if (b1 == 0) { /* a double or an f32 cache value: two products */
        const ug_u128 low = (ug_u128)a0 * b0, high = (ug_u128)a1 * b0;
        const ug_u128 mid = (low >> 64) + (uint64_t)high;
        w[0] = (uint64_t)low;
        w[1] = (uint64_t)mid;
        w[2] = (uint64_t)(high >> 64) + (uint64_t)(mid >> 64);
        w[3] = 0;
        return;
    }
    const ug_u128 ll = (ug_u128)a0 * b0, lh = (ug_u128)a0 * b1, hl = (ug_u128)a1 * b0, hh = (ug_u128)a1 * b1;
    const ug_u128 mid = (ll >> 64) + (uint64_t)lh + (uint64_t)hl;
    const ug_u128 high = (mid >> 64) + (lh >> 64) + (hl >> 64) + hh; /* < 2^128: the product is < 2^256 */
    w[0] = (uint64_t)ll;
    w[1] = (uint64_t)mid;
    w[2] = (uint64_t)high;
    w[3] = (uint64_t)(high >> 64);
}

/* The nonnegative integer mag[0 .. n) times 2^e as its leading 128 bits
 * (m == 0: zero), the bit after them and whether any bit below that is set,
 * as ug_xwin_read reads a window. */
static inline fnum read_words(const uint64_t *mag, int n, int e, bool *round, bool *sticky)
{
    int top = n - 1;
    while (top > 0 && mag[top] == 0) top--;
    *round = *sticky = false;
    if (mag[top] == 0) return (fnum){0};
    const int z = __builtin_clzll(mag[top]);
    const uint64_t hi = mag[top], mid = top >= 1 ? mag[top - 1] : 0, lo = top >= 2 ? mag[top - 2] : 0;
    const uint64_t w2 = z ? hi << z | mid >> (64 - z) : hi, w1 = z ? mid << z | lo >> (64 - z) : mid, w0 = lo << z;
    *round = w0 >> 63;
    *sticky = (w0 << 1) != 0;
    for (int k = 0; k < top - 2; k++) *sticky |= mag[k] != 0;
    return (fnum){.m = (ug_u128)w2 << 64 | w1, .e = e + 64 * top + 63 - z - 127};
}

/* RN_128 of a value read by read_words (ties to even, as MPFR). */
static inline fnum rn128(fnum v, bool round, bool sticky)
{
    if (v.m >> 127 && round && (sticky || (v.m & 1)) && ++v.m == 0) {
        v.m = (ug_u128)1 << 127;
        v.e++;
    }
    return v;
}

/* |v| rounded away from zero to a double, as fabs(mpfr_get_d(., MPFR_RNDA))
 * of the MPFR path's value: inline where the result is a normal double. */
static inline double abs_away(fnum v)
{
    const int len = v.m >> 64 ? 128 - __builtin_clzll((uint64_t)(v.m >> 64))
                              : v.m ? 64 - __builtin_clzll((uint64_t)v.m) : 0;
    const int cut = len > 53 ? len - 53 : 0, q = v.e + cut;
    if (len == 0 || q < -1000 || q > 900) {
        const ug_xval exact = xval_of(v, false, false);
        return fabs(ug_xval_to_double(&exact, MPFR_RNDA));
    }
    const uint64_t n = (uint64_t)(v.m >> cut) + (cut && (v.m & (((ug_u128)1 << cut) - 1)) != 0); /* <= 2^53 */
    double scale;
    const uint64_t bits = (uint64_t)(q + 1023) << 52;
    memcpy(&scale, &bits, sizeof scale);
    return (double)n * scale; /* exact: n has at most 53 bits */
}

/* RN_128(a b) for b of at most 64 bits (a double), as mpfr_mul_d. */
static inline fnum mul_rn128(fnum a, fnum b)
{
    const bool neg = a.neg != b.neg;
    if (a.m == 0 || b.m == 0) return (fnum){.neg = neg};
    uint64_t words[5];
    product_words(a.m, b.m, words);
    bool round, sticky;
    fnum p = read_words(words, 4, a.e + b.e, &round, &sticky);
    p = rn128(p, round, sticky);
    p.neg = neg;
    return p;
}

/* x and w as doubles (exact: bf16 or f32); w NULL without a weight. The
 * kernel's y_i under the profile m (docs/error-model-head_norm_rope.md §2):
 *   ss^ within gamma_d ss + d mu of ss (any order, FMA or not),
 *   v^ = v (1 + t), |t| <= (1 + gamma_d)(1 + eps_div)(1 + u)^2 - 1 + (mu + div_abs + mu/2)/v,
 *   r^ = 1/sqrt(v^) as fl(1 / sqrtf) or rsqrtf:
 *        |r^/r - 1| <= (1 - |t|)^-1/2 max((1 + eps_div')/(1 - eps_sqrt), 1 + eps_rsqrt) - 1,
 *   y^ = fl(fl(x r^) w): relative (1 + eps_r)(1 + u)^k - 1, absolute (mu/2)(1 + |w|)(1 + 2u),
 *        or all of |y| where the profile flushes a subnormal x_i or w_i.
 * With fast (every x_i and w_i finite) the sum of squares and the y_i take
 * the fast path, y_i into y_fast; returns whether they did (false: r is
 * infinite, y in MPFR). */
static bool norm_head(const ug_f32_model *m, norm_ws *ws, const double *x, const double *w, float eps, bool fast)
{
    const size_t d = ws->head_dim;
    if (fast) {
        /* squares of bf16 or f32 values lie far inside the accumulator's range */
        ug_xsum_clear(&ws->acc);
        for (size_t i = 0; i < d; i++) ug_xsum_add_double(&ws->acc, x[i] * x[i]);
        ug_xsum_get_mpfr(&ws->acc, ws->v, ws->scratch);
    } else {
        for (size_t i = 0; i < d; i++) mpfr_set_d(ws->terms[i], x[i] * x[i], MPFR_RNDN); /* exact */
        mpfr_sum(ws->v, ws->term_ptrs, d, MPFR_RNDN);
    }
    mpfr_div_ui(ws->v, ws->v, d, MPFR_RNDN);
    mpfr_add_d(ws->v, ws->v, eps, MPFR_RNDN);
    mpfr_rec_sqrt(ws->r, ws->v, MPFR_RNDN);
    fnum r;
    fast = fast && fnum_of_mpfr(ws->r, &r);

    const double mu = ug_f32_underflow(m), mu_half = ug_f32_underflow_half(m);
    const double v_low = mpfr_get_d(ws->v, MPFR_RNDD), v_high = mpfr_get_d(ws->v, MPFR_RNDU);
    const ug_f32_error div_d = ug_f32_op_error(m, UG_F32_DIV, (double)d, (double)d);
    const double t = (compose(compose(ug_f32_gamma(d), div_d.rel), k_u(2)) + (mu + div_d.abs + mu_half) / v_low) *
                     UG_F32_SLACK;
    /* v^ in [v_low (1 - t), v_high (1 + t)]; sqrt(v^) and r^ within a factor
     * 2 of sqrt(v), 1/sqrt(v) (every allowance is far below 1/2). */
    const double v_lo = v_low * (1 - t), v_hi = v_high * (1 + t) * UG_F32_SLACK;
    const double s_lo = sqrt(v_lo) / 2, s_hi = sqrt(v_hi) * 2;
    const double eps_sqrt = rel_at_least(ug_f32_op_error(m, UG_F32_SQRT, v_lo, v_hi), s_lo);
    const double eps_div = rel_at_least(ug_f32_op_error(m, UG_F32_DIV, s_lo, s_hi), 1 / s_hi);
    const double eps_rsqrt = rel_at_least(ug_f32_op_error(m, UG_F32_RSQRT, v_lo, v_hi), 1 / s_hi);
    const double via_sqrt = (eps_div + eps_sqrt) / (1 - eps_sqrt) * UG_F32_SLACK; /* (1 + a)/(1 - b) - 1 */
    /* (1 - t)^-1/2 - 1 <= (t/2) (1 - t)^-3/2 (mean value), free of cancellation. */
    const double eps_r =
        t < 0.5 ? compose(0.5 * t * pow(1 - t, -1.5) * UG_F32_SLACK, fmax(via_sqrt, eps_rsqrt)) : INFINITY;
    ws->eps_y = compose(eps_r, k_u(w ? 2 : 1));
    const bool flushes = ug_f32_flushes(m);
    for (size_t i = 0; i < d; i++) {
        if (fast) {
            fnum y = mul_rn128(r, fnum_of_double(x[i]));
            if (w) y = mul_rn128(y, fnum_of_double(w[i]));
            ws->y_fast[i] = y;
            ws->y_mag[i] = abs_away(y) * UG_F32_SLACK;
        } else {
            mpfr_mul_d(ws->y[i], ws->r, x[i], MPFR_RNDN);
            if (w) mpfr_mul_d(ws->y[i], ws->y[i], w[i], MPFR_RNDN);
            ws->y_mag[i] = abs_up(ws->y[i]) * UG_F32_SLACK;
        }
        ws->abs_y[i] = mu_half * (1 + (w ? fabs(w[i]) : 0)) * (1 + 2 * UG_F32_U);
        if (flushes && (is_subnormal(x[i]) || (w && is_subnormal(w[i]))))
            ws->abs_y[i] = (ws->abs_y[i] + ws->y_mag[i]) * UG_F32_SLACK; /* the kernel's y_i may be 0 */
    }
    return fast;
}

/* ---- the rotation of one element -------------------------------------------- */

/* cos and sin of a pair as the reference uses them (and as the fast path
 * holds them, where `fast`: both finite), the kernel's error in them for
 * the angle it holds (relative eps_cs, absolute zeta, both infinite where
 * the profile states nothing) and that angle's deviation d_angle from the
 * reference's angle. */
typedef struct {
    mpfr_t c, s;
    fnum c_fast, s_fast;
    bool fast;
    double c_mag, s_mag;
    double eps_cs, zeta, d_angle;
} pair_trig;

/* Nothing is rounded on purpose before the output: no flags. An allowance
 * the profile does not state (inf) times a zero magnitude is no bound
 * either: NaN becomes inf. r is the MPFR value, or with r_fast the fast
 * path's exact value before its rounding to 128 bits (ug_xval_finish rounds
 * it as the MPFR path's last operation did). */
static void finish(ug_ref_value *out, mpfr_srcptr r, const ug_xval *r_fast, double e, double abs_sum, ug_dtype dtype)
{
    if (isnan(e)) e = INFINITY;
    if (r_fast) ug_xval_finish(r_fast, out, e, abs_sum, 0, dtype);
    else ug_ref_finish(out, r, e, abs_sum, 0, dtype);
}

/* A rotated output's exact sum: two's complement limbs on one grid, room
 * for a 256-bit product and a 128-bit term up to 192 bits apart. */
enum { WIDE_LIMBS = 8 };

/* window += (neg ? -1 : 1) m 2^e, m of n words on the window's grid
 * 2^grid; false when m does not fit the limbs below the top one (which
 * keeps the sign: two such terms cannot overflow). */
static inline bool window_add(uint64_t *window, const uint64_t *m, int n, int e, int grid, bool neg)
{
    const int d = e - grid, q = d >> 6, r = d & 63;
    int len = n;
    while (len > 0 && m[len - 1] == 0) len--;
    if (len == 0) return true;
    if (64 * (q + len) - __builtin_clzll(m[len - 1]) + r > 64 * (WIDE_LIMBS - 1)) return false;
    const uint64_t flip = neg ? ~UINT64_C(0) : 0;
    uint64_t carry = neg;
    for (int k = 0; k < WIDE_LIMBS; k++) {
        const int j = k - q; /* the word of m whose low bits land in limb k */
        const uint64_t cur = j >= 0 && j < len ? m[j] : 0, prev = j >= 1 && j - 1 < len ? m[j - 1] : 0;
        const uint64_t word = (r ? cur << r | prev >> (64 - r) : cur) ^ flip;
        const ug_u128 sum = (ug_u128)window[k] + word + carry;
        window[k] = (uint64_t)sum;
        carry = (uint64_t)(sum >> 64);
    }
    return true;
}

/* The fast path of a rotated output: y_self c + sign RN_128(y_other s)
 * exactly, as read before the MPFR path's last rounding (the fma's); false
 * when its terms do not fit one window. */
static bool rotated_fast(fnum y_self, fnum y_other, const pair_trig *pt, int sign, ug_xval *out)
{
    fnum t = {.neg = (y_other.neg != pt->s_fast.neg) != (sign < 0)};
    uint64_t words[5];
    bool round, sticky;
    if (y_other.m && pt->s_fast.m) {
        product_words(y_other.m, pt->s_fast.m, words);
        const bool neg = t.neg;
        t = read_words(words, 4, y_other.e + pt->s_fast.e, &round, &sticky);
        t = rn128(t, round, sticky);
        t.neg = neg;
    }
    const bool p_neg = y_self.neg != pt->c_fast.neg;
    if (y_self.m == 0 || pt->c_fast.m == 0) { /* the sum is t, or a zero of IEEE's sign */
        if (t.m == 0) t.neg = p_neg && t.neg;
        *out = xval_of(t, false, false);
        return true;
    }
    const int p_e = y_self.e + pt->c_fast.e;
    product_words(y_self.m, pt->c_fast.m, words);
    const uint64_t t_words[2] = {(uint64_t)t.m, (uint64_t)(t.m >> 64)};
    const int grid = t.m == 0 || p_e < t.e ? p_e : t.e;
    uint64_t window[WIDE_LIMBS] = {0};
    if (!window_add(window, words, 4, p_e, grid, p_neg) || !window_add(window, t_words, 2, t.e, grid, t.neg))
        return false;
    /* the magnitude; an exact cancellation reads +0, as under RNDN */
    const bool neg = window[WIDE_LIMBS - 1] >> 63;
    uint64_t carry = neg;
    for (int k = 0; k < WIDE_LIMBS; k++) {
        window[k] = (neg ? ~window[k] : window[k]) + carry;
        carry = carry && window[k] == 0;
    }
    fnum sum = read_words(window, WIDE_LIMBS, grid, &round, &sticky);
    sum.neg = neg;
    *out = xval_of(sum, round, sticky);
    return true;
}

/* out_lo = y_lo c - y_hi s (sign = -1) or out_hi = y_hi c + y_lo s (sign = +1),
 * with the bound (docs/error-model-head_norm_rope.md §3):
 *   E = k1 T' + min(da, 2) |y|_2 + (1+gamma_2)[(a_lo+a_hi)(C (1+eps_cs) + zeta) + Y (1+eps_y) zeta] + mu,
 *   k1 = (1+eps_y)(1+eps_cs)(1+gamma_2) - 1, T' = |y_self| C_c + |y_other| C_s,
 *   C_c = min(|c| + da, 1), C_s = min(|s| + da, 1), C = max(C_c, C_s),
 *   Y = |y_lo| + |y_hi|, |y|_2 = hypot(y_lo, y_hi). With fast, y and the
 * trig are the fast path's; false (nothing written) when it cannot hold
 * the element. */
static bool rotated_element(const ug_f32_model *m, norm_ws *ws, const pair_trig *pt, size_t self, size_t other,
                            int sign, bool fast, mpfr_ptr acc, ug_dtype dtype, ug_ref_value *out)
{
    ug_xval r_fast;
    if (fast && !rotated_fast(ws->y_fast[self], ws->y_fast[other], pt, sign, &r_fast)) return false;
    if (!fast) {
        mpfr_mul(acc, ws->y[other], pt->s, MPFR_RNDN);
        if (sign < 0) mpfr_fms(acc, ws->y[self], pt->c, acc, MPFR_RNDN);
        else mpfr_fma(acc, ws->y[self], pt->c, acc, MPFR_RNDN);
    }

    const double slack = UG_F32_SLACK, gamma2 = ug_f32_gamma(2), da = pt->d_angle;
    const double big_t = (ws->y_mag[self] * pt->c_mag + ws->y_mag[other] * pt->s_mag) * slack;
    const double c_c = fmin(pt->c_mag + da, 1), c_s = fmin(pt->s_mag + da, 1);
    const double t_kernel = (ws->y_mag[self] * c_c + ws->y_mag[other] * c_s) * slack;
    const double big_y = (ws->y_mag[self] + ws->y_mag[other]) * slack;
    const double norm2 = hypot(ws->y_mag[self], ws->y_mag[other]) * slack;
    const double k1 = compose(compose(ws->eps_y, pt->eps_cs), gamma2);
    const double big_c = compose(fmax(c_c, c_s), pt->eps_cs);
    const double tiny = (1 + gamma2) * ((ws->abs_y[self] + ws->abs_y[other]) * (big_c + pt->zeta) +
                                        big_y * (1 + ws->eps_y) * pt->zeta) +
                        2 * ug_f32_underflow_half(m);
    const double e = (k1 * t_kernel + fmin(da, 2) * norm2 + tiny) * slack * slack;
    finish(out, acc, fast ? &r_fast : NULL, e, big_t, dtype);
    return true;
}

static void passed_element(const norm_ws *ws, size_t i, bool fast, ug_dtype dtype, ug_ref_value *out)
{
    const ug_xval exact = fast ? xval_of(ws->y_fast[i], false, false) : (ug_xval){0};
    finish(out, ws->y[i], fast ? &exact : NULL, (ws->eps_y * ws->y_mag[i] + ws->abs_y[i]) * UG_F32_SLACK,
           ws->y_mag[i], dtype);
}

/* One head's outputs: pairs (i, i + span) for i < pairs rotated with trig[i],
 * the rest passed through; with fast, from the fast path's y (and trig
 * where it holds them). False when the fast path cannot finish the head
 * (then its outputs are to be redone on the MPFR path). */
static bool finish_head(const ug_f32_model *m, norm_ws *ws, const pair_trig *trig, size_t pairs, size_t span,
                        bool fast, mpfr_ptr acc, ug_dtype dtype, ug_ref_value *out)
{
    for (size_t i = 0; i < ws->head_dim; i++) {
        bool lo = i < pairs, hi = i >= span && i < span + pairs;
        const pair_trig *pt = lo ? &trig[i] : hi ? &trig[i - span] : NULL;
        if (pt && fast && !pt->fast) return false;
        if (lo && !rotated_element(m, ws, pt, i, i + span, -1, fast, acc, dtype, &out[i])) return false;
        if (hi && !rotated_element(m, ws, pt, i, i - span, +1, fast, acc, dtype, &out[i])) return false;
        if (!pt) passed_element(ws, i, fast, dtype, &out[i]);
    }
    return true;
}

/* One head: the fast path where it holds (finite x and w, a finite r, terms
 * in the accumulator's range), else the MPFR path. */
static void reference_head(const ug_f32_model *m, norm_ws *ws, const double *x, const double *w, float eps,
                           const pair_trig *trig, size_t pairs, size_t span, mpfr_ptr acc, ug_dtype dtype,
                           ug_ref_value *out)
{
    bool fast = ug_ref_fast();
    for (size_t i = 0; fast && i < ws->head_dim; i++) fast = isfinite(x[i]) && (!w || isfinite(w[i]));
    if (fast && norm_head(m, ws, x, w, eps, true) && finish_head(m, ws, trig, pairs, span, true, acc, dtype, out))
        return;
    (void)norm_head(m, ws, x, w, eps, false);
    (void)finish_head(m, ws, trig, pairs, span, false, acc, dtype, out);
}

static pair_trig *trig_alloc(size_t pairs)
{
    pair_trig *t = calloc(pairs ? pairs : 1, sizeof *t);
    for (size_t i = 0; t && i < pairs; i++) mpfr_inits2(UG_REF_PREC, t[i].c, t[i].s, (mpfr_ptr)0);
    return t;
}

static void trig_free(pair_trig *t, size_t pairs)
{
    for (size_t i = 0; t && i < pairs; i++) mpfr_clears(t[i].c, t[i].s, (mpfr_ptr)0);
    free(t);
}

/* The magnitudes, and the fast path's copies of c and s. */
static void trig_magnitudes(pair_trig *t)
{
    t->c_mag = abs_up(t->c);
    t->s_mag = abs_up(t->s);
    t->fast = fnum_of_mpfr(t->c, &t->c_fast) && fnum_of_mpfr(t->s, &t->s_fast);
}

/* ---- bf16 variant -------------------------------------------------------------- */

ug_status head_norm_rope_bf16_reference(const ug_f32_model *model, const head_norm_rope_shape *s, const ug_bf16 *x,
                                        const ug_bf16 *w, const float *cos_cache, const float *sin_cache,
                                        ug_ref_value *out)
{
    const size_t d = s->head_dim, pairs = s->half_rope_dim;
    norm_ws ws;
    UG_TRY(norm_ws_init(&ws, d));
    pair_trig *trig = trig_alloc(pairs);
    double *xd = malloc(d * sizeof *xd), *wd = malloc(d * sizeof *wd);
    mpfr_t acc;
    mpfr_init2(acc, UG_REF_PREC);
    ug_status st = ug_ok();
    if (!trig || !xd || !wd) st = ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate a head of %zu", d);
    for (size_t i = 0; i < pairs && ug_is_ok(&st); i++) {
        /* The caches are inputs, used as given: no error of the kernel's in them. */
        mpfr_set_flt(trig[i].c, cos_cache[i], MPFR_RNDN);
        mpfr_set_flt(trig[i].s, sin_cache[i], MPFR_RNDN);
        trig_magnitudes(&trig[i]);
    }
    for (size_t i = 0; w && wd && i < d; i++) wd[i] = ug_bf16_to_f32(w[i]);
    for (size_t h = 0; h < s->n_heads && ug_is_ok(&st); h++) {
        for (size_t i = 0; i < d; i++) xd[i] = ug_bf16_to_f32(x[h * d + i]);
        reference_head(model, &ws, xd, w ? wd : NULL, s->eps, trig, pairs, pairs, acc, UG_BF16, out + h * d);
    }
    mpfr_clear(acc);
    free(xd);
    free(wd);
    trig_free(trig, pairs);
    norm_ws_free(&ws);
    return st;
}

/* ---- f32 variant: the angles ----------------------------------------------------- */

/* The exponent t = e L (e = 2i/d, L the log of theta in the formula's base)
 * as a kernel forms it: e^ from at most one division and one more rounding,
 * L^ within lambda of L, t^ = fl(e^ L^). A bound on |t^ - t| (§4). */
static double exponent_deviation(double t, double e, double eps_e, double lambda, double mu_half)
{
    if (e == 0) return 0; /* e^ = 0 and t^ = 0 exactly, whatever the formula */
    return ((fabs(t) * eps_e + e * (1 + eps_e) * lambda) * (1 + UG_F32_U) + UG_F32_U * fabs(t) + mu_half) *
           UG_F32_SLACK * UG_F32_SLACK;
}

/* exp2f or expf (op) of -t^: the relative error of w^ against w = base^-t,
 * dev = |t^ - t| in the formula's base (ln_base: its natural log). */
static double via_exp(const ug_f32_model *m, ug_f32_op op, double t, double dev, double ln_base, double w)
{
    const double shift = expm1(dev * ln_base * UG_F32_SLACK) * UG_F32_SLACK; /* base^dev - 1 */
    const ug_f32_error e = ug_f32_op_error(m, op, -t - dev, -t + dev);
    return compose(shift, rel_at_least(e, w / (1 + shift) / UG_F32_SLACK));
}

/* The relative error of the kernel's theta^-e (w), over every admitted
 * formula (docs/error-model-head_norm_rope.md §4): the maximum of
 *   pow:  1/powf(theta, e^) or powf(theta, -e^): exp(tau eps_e)(1 + eps_pow/(1 - eps_pow))(1 + eps_div) - 1,
 *   exp2f(-(e^ log2^ theta)) and expf(-(e^ ln^ theta)): via_exp,
 *   an f64 formula (f64 libm within 4 ulps), rounded to f32: (1 + (2 tau + 16) 2^-52)(1 + u + nu/w) - 1,
 * with tau = |e ln theta|, log2^ / ln^ theta from the profile's log2 (assumed
 * of logf too) or an f64 log rounded once to f32. */
static double frequency_rel_error(const ug_f32_model *m, size_t i, size_t d, float theta, double ln_theta,
                                  double log2_theta)
{
    const double e = 2.0 * (double)i / (double)d, tau = fabs(e * ln_theta) * UG_F32_SLACK;
    const double w = exp(-e * ln_theta) / UG_F32_SLACK, mu_half = ug_f32_underflow_half(m);
    const double eps_e =
        i == 0 ? 0 : compose(rel_at_least(ug_f32_op_error(m, UG_F32_DIV, (double)d, (double)d), e / 2), UG_F32_U);
    /* pow: the exponent's error moves theta^e by exp(+-tau eps_e). */
    const double e_hi = e * (1 + eps_e) * UG_F32_SLACK, p_lo = exp(-tau * (1 + eps_e)) / 2;
    const double eps_pow = rel_at_least(ug_f32_op_error(m, UG_F32_POW, -e_hi, e_hi), p_lo);
    const double eps_recip = rel_at_least(ug_f32_op_error(m, UG_F32_DIV, p_lo, 1 / p_lo), p_lo);
    double worst = compose(compose(expm1(tau * eps_e) * UG_F32_SLACK, eps_pow / (1 - eps_pow) * UG_F32_SLACK),
                           eps_recip);
    /* exp2 and exp of the exponent formed with log2 or ln of theta. */
    const ug_f32_error log_error = ug_f32_op_error(m, UG_F32_LOG2, theta, theta);
    const double f64_log = compose(0x1p-52, UG_F32_U);
    for (int base2 = 0; base2 < 2; base2++) {
        const double l = base2 ? log2_theta : ln_theta;
        const double lambda = fmax(ug_f32_error_at(log_error, fabs(l)), fabs(l) * f64_log);
        const double dev = exponent_deviation(e * l, e, eps_e, lambda, mu_half);
        worst = fmax(worst, via_exp(m, base2 ? UG_F32_EXP2 : UG_F32_EXP, e * l, dev, base2 ? M_LN2 : 1, w));
    }
    const ug_f32_error to_f32 = {UG_F32_U, mu_half}; /* the table's rounding, w possibly subnormal */
    return fmax(worst, compose((2 * tau + 16) * 0x1p-52, rel_at_least(to_f32, w)));
}

/* Everything about the angles that does not depend on the position. */
typedef struct {
    size_t pairs;
    double *freq_rel;   /* frequency_rel_error of the pair, times the division by ff_i */
    double *freq_abs;   /* absolute error of the kernel's frequency (a subnormal w/ff_i) */
    mpfr_t *inv_exact;  /* theta^(-2i/d) / ff_i, ANGLE_PREC bits */
} angle_table;

static void angle_table_free(angle_table *t)
{
    for (size_t i = 0; t->inv_exact && i < t->pairs; i++) mpfr_clear(t->inv_exact[i]);
    free(t->freq_rel);
    free(t->freq_abs);
    free(t->inv_exact);
}

/* Pairs [first, pairs) of the table; ff NULL: no freq_factors (then no
 * division by them in any formula). */
static ug_status angle_table_init(const ug_f32_model *m, angle_table *t, float theta, size_t head_dim, size_t first,
                                  size_t pairs, const float *ff)
{
    *t = (angle_table){.pairs = pairs};
    size_t n = pairs ? pairs : 1;
    t->freq_rel = calloc(n, sizeof *t->freq_rel);
    t->freq_abs = calloc(n, sizeof *t->freq_abs);
    mpfr_t *inv_exact = calloc(n, sizeof *inv_exact);
    if (!t->freq_rel || !t->freq_abs || !inv_exact) {
        free(inv_exact);
        angle_table_free(t);
        return ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate %zu pairs", pairs);
    }
    for (size_t i = 0; i < pairs; i++) mpfr_init2(inv_exact[i], ANGLE_PREC);
    t->inv_exact = inv_exact;

    mpfr_t theta_m, ln_theta;
    mpfr_inits2(ANGLE_PREC + 64, theta_m, ln_theta, (mpfr_ptr)0);
    mpfr_set_flt(theta_m, theta, MPFR_RNDN);
    mpfr_log(ln_theta, theta_m, MPFR_RNDN);
    const double ln_d = mpfr_get_d(ln_theta, MPFR_RNDN), log2_d = ln_d / M_LN2;
    for (size_t i = first; i < pairs; i++) {
        /* theta^(-2i/d) / ff = exp(-(2i/d) ln theta) / ff */
        mpfr_mul_ui(inv_exact[i], ln_theta, 2 * i, MPFR_RNDN);
        mpfr_div_ui(inv_exact[i], inv_exact[i], head_dim, MPFR_RNDN);
        mpfr_neg(inv_exact[i], inv_exact[i], MPFR_RNDN);
        mpfr_exp(inv_exact[i], inv_exact[i], MPFR_RNDN);
        t->freq_rel[i] = frequency_rel_error(m, i, head_dim, theta, ln_d, log2_d);
        if (ff) {
            mpfr_div_d(inv_exact[i], inv_exact[i], ff[i], MPFR_RNDN);
            const ug_f32_error by_ff = ug_f32_op_error(m, UG_F32_DIV, ff[i], ff[i]);
            t->freq_rel[i] = compose(t->freq_rel[i], by_ff.rel);
            t->freq_abs[i] = by_ff.abs;
        }
    }
    mpfr_clears(theta_m, ln_theta, (mpfr_ptr)0);
    return ug_ok();
}

/* The exact angle of pair i at pos (MPFR, into `exact`) and the admitted
 * deviation of a kernel's (docs/error-model-head_norm_rope.md §4):
 *   |a^ - a| <= a ((1 + rho_f)(1 + eps_pos)(1 + u) - 1) + P^ (1 + u) alpha_f + mu/2,
 * eps_pos = u where pos is no f32 (beyond 2^24), else 0; 0 at pos 0. */
static void angle_at(const ug_f32_model *m, const angle_table *t, size_t i, uint32_t pos, mpfr_ptr exact,
                     head_norm_rope_angle *out)
{
    mpfr_mul_ui(exact, t->inv_exact[i], pos, MPFR_RNDN);
    out->exact = mpfr_get_d(exact, MPFR_RNDN);
    out->deviation = 0;
    if (pos == 0) return; /* 0 times any frequency is 0 */
    const bool pos_exact = (double)(float)pos == (double)pos;
    const double rho = compose(compose(t->freq_rel[i], pos_exact ? 0 : UG_F32_U), UG_F32_U);
    const double p_hat = (double)pos * (1 + UG_F32_U);
    out->deviation = (abs_up(exact) * rho + p_hat * (1 + UG_F32_U) * t->freq_abs[i] + ug_f32_underflow_half(m)) *
                     UG_F32_SLACK * UG_F32_SLACK;
}

ug_status head_norm_rope_angle_of(const ug_f32_model *model, uint32_t position, size_t i, size_t head_dim, float theta,
                                  const float *freq_factor, head_norm_rope_angle *out)
{
    float *ff = NULL;
    if (freq_factor) {
        ff = malloc((i + 1) * sizeof *ff);
        if (!ff) return ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate %zu pairs", i + 1);
        for (size_t k = 0; k <= i; k++) ff[k] = *freq_factor;
    }
    angle_table t;
    ug_status st = angle_table_init(model, &t, theta, head_dim, i, i + 1, ff);
    free(ff);
    UG_TRY(st);
    mpfr_t exact;
    mpfr_init2(exact, ANGLE_PREC);
    angle_at(model, &t, i, position, exact, out);
    mpfr_clear(exact);
    angle_table_free(&t);
    return ug_ok();
}

/* cos and sin of the exact angle, and the kernel's errors in them for an
 * angle within `deviation` of it: the profile's sin and cos allowances over
 * that range (infinite where it leaves the range they are stated for). */
static void pair_trig_at(const ug_f32_model *m, mpfr_srcptr angle, double deviation, pair_trig *out)
{
    mpfr_sin_cos(out->s, out->c, angle, MPFR_RNDN);
    trig_magnitudes(out);
    const double a = mpfr_get_d(angle, MPFR_RNDN), reach = deviation + fabs(a) * 0x1p-52;
    const double lo = deviation == 0 ? a : a - reach, hi = deviation == 0 ? a : a + reach;
    const ug_f32_error ec = ug_f32_op_error(m, UG_F32_COS, lo, hi), es = ug_f32_op_error(m, UG_F32_SIN, lo, hi);
    out->eps_cs = fmax(ec.rel, es.rel);
    out->zeta = fmax(ec.abs, es.abs);
    out->d_angle = deviation;
}

/* ---- f32 variant ----------------------------------------------------------------- */

ug_status head_norm_rope_f32_reference(const ug_f32_model *model, const head_norm_rope_shape *s, size_t seq_len,
                                       float theta, const float *x, const float *w, const uint32_t *positions,
                                       const float *freq_factors, ug_ref_value *out)
{
    const size_t d = s->head_dim, pairs = s->half_rope_dim;
    angle_table table;
    UG_TRY(angle_table_init(model, &table, theta, d, 0, pairs, freq_factors));
    norm_ws ws;
    ug_status st = norm_ws_init(&ws, d);
    if (!ug_is_ok(&st)) {
        angle_table_free(&table);
        return st;
    }
    pair_trig *trig = trig_alloc(pairs);
    double *xd = malloc(d * sizeof *xd), *wd = malloc(d * sizeof *wd);
    mpfr_t acc, angle;
    mpfr_init2(acc, UG_REF_PREC);
    mpfr_init2(angle, ANGLE_PREC);
    if (!trig || !xd || !wd) st = ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate a head of %zu", d);
    for (size_t i = 0; w && wd && i < d; i++) wd[i] = w[i];
    for (size_t t = 0; t < seq_len && ug_is_ok(&st); t++) {
        for (size_t i = 0; i < pairs; i++) {
            head_norm_rope_angle a;
            angle_at(model, &table, i, positions[t], angle, &a);
            pair_trig_at(model, angle, a.deviation, &trig[i]);
        }
        for (size_t h = 0; h < s->n_heads; h++) {
            const size_t offset = (t * s->n_heads + h) * d;
            for (size_t i = 0; i < d; i++) xd[i] = x[offset + i];
            reference_head(model, &ws, xd, w ? wd : NULL, s->eps, trig, pairs, d / 2, acc, UG_F32, out + offset);
        }
    }
    mpfr_clears(acc, angle, (mpfr_ptr)0);
    free(xd);
    free(wd);
    trig_free(trig, pairs);
    norm_ws_free(&ws);
    angle_table_free(&table);
    return st;
}
