/* SPDX-License-Identifier: MIT */
#include "attn_reduce_fwht.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "exact_sum.h"

/* Precisions (bits), see docs/error-model-attn_reduce_fwht.md §4. M_w - M*
 * of two f32 needs at most 277 bits, times (1 +- 2^-24) at most 302: both
 * exact at ARG_PREC. A term P_w[d] * m_w (24 + WEIGHT_PREC bits) is exact at
 * TERM_PREC. Sums, the quotient and the butterflies round to SUM_PREC. */
enum {
    WEIGHT_PREC = UG_REF_PREC,
    ARG_PREC = 400,
    TERM_PREC = UG_REF_PREC + 32,
    SUM_PREC = UG_REF_PREC + 64,
    BOUND_PREC = 64,
    MAX_NWG = 32,
    MAX_DV = 512,
};

/* The bound's magnitudes are doubles built from upward-rounded MPFR values by
 * at most ~600 round-to-nearest operations along any path (relative error
 * < 2^-43); this factor on each finished bound covers them. */
static const double bound_slack = 1 + 0x1p-30;

static double up(double x) { return x * (1 + 0x1p-50); }

/* ---- the transform's fast path -------------------------------------------
 *
 * The MPFR path rounds every butterfly output, the scaling and the sign to
 * SUM_PREC = 192 bits. The fast path holds those 192-bit values as three
 * limbs and rounds each add, subtract and product to nearest even as MPFR
 * does (a guard limb and a sticky bit: an add cancels at most one bit when
 * bits were shifted out), so every value is the MPFR path's; the finish
 * reads r's leading 128 bits, its round and its sticky bit. */
_Static_assert(SUM_PREC == 192 && GMP_NUMB_BITS == 64 && GMP_NAIL_BITS == 0, "three 64-bit limbs");

/* (-1)^neg m 2^e, m of three limbs with its top bit set, or a zero (m = 0)
 * of sign neg. */
typedef struct {
    uint64_t m[3];
    int e;
    bool neg;
} f192;

/* x finite, of SUM_PREC bits: its significand in place (MPFR's custom interface). */
static f192 f192_of_mpfr(mpfr_srcptr x)
{
    f192 v = {.neg = mpfr_signbit(x)};
    if (mpfr_zero_p(x)) return v;
    const mp_limb_t *d = mpfr_custom_get_significand(x);
    for (int k = 0; k < 3; k++) v.m[k] = d[k];
    v.e = (int)mpfr_custom_get_exp(x) - SUM_PREC;
    return v;
}

static void mpfr_of_f192(const f192 *v, mpfr_ptr out, mpz_t scratch)
{
    if (!v->m[2]) {
        mpfr_set_zero(out, v->neg ? -1 : 1);
        return;
    }
    mpz_import(scratch, 3, -1, sizeof v->m[0], 0, 0, v->m);
    mpfr_set_z_2exp(out, scratch, v->e, MPFR_RNDN); /* exact: 192 bits */
    if (v->neg) mpfr_neg(out, out, MPFR_RNDN);
}

/* x (four limbs, the top one nonzero) 2^e rounded to 192 bits to nearest
 * even into *out: x[1..3] kept, x[0] the guard limb, sticky the bits below
 * it. Written field by field: out may be an operand's place. */
static inline void round192(uint64_t x[4], int e, bool sticky, bool neg, f192 *out)
{
    const int lz = __builtin_clzll(x[3]);
    if (lz) {
        for (int k = 3; k > 0; k--) x[k] = x[k] << lz | x[k - 1] >> (64 - lz);
        x[0] <<= lz;
        e -= lz;
    }
    const bool half = x[0] >> 63, rest = (x[0] << 1) != 0 || sticky;
    if (half && (rest || (x[1] & 1)) && ++x[1] == 0 && ++x[2] == 0 && ++x[3] == 0) {
        x[3] = UINT64_C(1) << 63; /* carried to 2^192 */
        e++;
    }
    out->m[0] = x[1];
    out->m[1] = x[2];
    out->m[2] = x[3];
    out->e = e + 64;
    out->neg = neg;
}

static inline void set_zero(f192 *out, bool neg)
{
    out->m[0] = out->m[1] = out->m[2] = 0;
    out->e = 0;
    out->neg = neg;
}

/* RN_192 of X +- Y (X = big, Y = small on one grid 2^e, four limbs each,
 * X > Y; sticky: bits of Y below the grid), of sign neg, into *out. */
static inline void combine(const uint64_t *big, const uint64_t *small, bool sticky, bool subtract, int e, bool neg,
                           f192 *out)
{
    uint64_t x[4];
    bool carry = false;
    if (subtract) { /* X - Y - 1 with sticky, the rest of the unit kept in sticky */
        bool borrow = sticky;
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const bool b1 = __builtin_sub_overflow(big[k], small[k], &x[k]);
            const bool b2 = __builtin_sub_overflow(x[k], (uint64_t)borrow, &x[k]);
            borrow = b1 || b2;
        }
    } else {
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const bool c1 = __builtin_add_overflow(big[k], small[k], &x[k]);
            const bool c2 = __builtin_add_overflow(x[k], (uint64_t)carry, &x[k]);
            carry = c1 || c2;
        }
    }
    if (!subtract && carry) { /* 2^256 and up: one bit right */
        sticky |= x[0] & 1;
        for (int k = 0; k < 3; k++) x[k] = x[k] >> 1 | x[k + 1] << 63;
        x[3] = x[3] >> 1 | UINT64_C(1) << 63;
        e++;
    }
    while (x[3] == 0) { /* whole limbs cancelled (then nothing was shifted out) */
        x[3] = x[2];
        x[2] = x[1];
        x[1] = x[0];
        x[0] = 0;
        e -= 64;
    }
    round192(x, e, sticky, neg, out);
}

/* (a, b) <- (RN_192(a + b), RN_192(a - b)), as mpfr_add and mpfr_sub: one
 * comparison and alignment for both. */
static inline void f192_butterfly(f192 *a, f192 *b)
{
    const bool a_neg = a->neg, b_neg = b->neg, a_zero = !a->m[2], b_zero = !b->m[2];
    if (a_zero || b_zero) { /* a zero: the other operand, or IEEE's zero sums */
        if (a_zero && b_zero) {
            set_zero(a, a_neg && b_neg);
            set_zero(b, a_neg && !b_neg);
        } else if (a_zero) {
            *a = *b;
            b->neg = !b_neg;
        } else {
            *b = *a;
        }
        return;
    }
    int c = a->e > b->e ? 1 : a->e < b->e ? -1 : 0;
    for (int k = 2; c == 0 && k >= 0; k--) c = a->m[k] > b->m[k] ? 1 : a->m[k] < b->m[k] ? -1 : 0;
    const f192 *x = c >= 0 ? a : b, *y = c >= 0 ? b : a;
    /* X = x m 2^64 and Y = y m 2^64 >> d on one grid, the bits shifted out of Y as sticky */
    const unsigned d = (unsigned)(x->e - y->e), q = d / 64, r = d % 64;
    const uint64_t src[4] = {0, y->m[0], y->m[1], y->m[2]}, big[4] = {0, x->m[0], x->m[1], x->m[2]};
    uint64_t small[4] = {0};
    bool sticky = false;
    for (unsigned k = 0; k < 4; k++) {
        if (k < q) sticky |= src[k] != 0;
        if (k + q < 4) small[k] = r ? src[k + q] >> r | (k + q + 1 < 4 ? src[k + q + 1] << (64 - r) : 0) : src[k + q];
    }
    if (q < 4 && r) sticky |= (src[q] & ((UINT64_C(1) << r) - 1)) != 0;
    const int e = x->e - 64;
    /* a + b: magnitudes add where the signs agree; a - b: where they differ.
     * The larger magnitude gives the sign (b's negated in a - b); equal
     * magnitudes that cancel give +0. */
    const bool same = a_neg == b_neg;
    const bool sum_neg = c >= 0 ? a_neg : b_neg, diff_neg = c >= 0 ? a_neg : !b_neg;
    if (c == 0 && !same) set_zero(a, false);
    else combine(big, small, sticky, !same, e, sum_neg, a);
    if (c == 0 && same) set_zero(b, false);
    else combine(big, small, sticky, same, e, diff_neg, b);
}

/* RN_192(a b), as mpfr_mul; b nonzero and positive (1/sqrt(DV)). */
static f192 f192_mul(const f192 *a, const f192 *b)
{
    if (!a->m[2]) return *a;
    uint64_t p[6] = {0};
    for (int i = 0; i < 3; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < 3; j++) {
            const ug_u128 t = (ug_u128)a->m[i] * b->m[j] + p[i + j] + carry;
            p[i + j] = (uint64_t)t;
            carry = (uint64_t)(t >> 64);
        }
        p[i + 3] = carry;
    }
    uint64_t top[4] = {p[2], p[3], p[4], p[5]};
    f192 v;
    round192(top, a->e + b->e + 128, p[0] != 0 || p[1] != 0, a->neg, &v);
    return v;
}

/* ug_ref_finish(out, r) for r = v, without MPFR where r's roundings are
 * normal numbers (ug_xval_distance tells: else false, nothing written);
 * *magnitude = |RA_53(r)|, as mpfr_get_d(r, MPFR_RNDA). */
static bool finish_f192(const f192 *v, double *magnitude, double relative, double constant, double abs_sum,
                        ug_ref_value *out)
{
    if (!v->m[2]) return false;
    const ug_xval x = {.neg = v->neg, .m = (ug_u128)v->m[2] << 64 | v->m[1], .e = v->e + 64,
                       .round = v->m[0] >> 63, .sticky = (v->m[0] << 1) != 0};
    const ug_xval_doubles d = ug_xval_to_doubles(&x);
    ug_xval rest;
    if (!isfinite(d.nearest) || !ug_xval_distance(&x, d.nearest, &rest)) return false;
    double r_lo = 0.0;
    if (!rest.zero) { /* r - r_hi has r's sign where r_hi is r truncated */
        const bool truncated = ug_xval_to_double(&x, MPFR_RNDZ) == d.nearest;
        r_lo = ug_xval_to_double(&rest, MPFR_RNDN);
        if (truncated == x.neg) r_lo = -r_lo;
    }
    *magnitude = fabs(d.away);
    const double pre_round = (relative * *magnitude + constant) * bound_slack;
    ug_ref_fill(out, d.nearest, r_lo, ug_xval_rn_bits(&x, UG_F32), pre_round, abs_sum, 0, UG_F32);
    return true;
}

/* ---- workspace -------------------------------------------------------- */

typedef struct {
    const ug_f32_model *model;
    size_t dv, nwg;
    double scale;        /* c = RN_f32(1/sqrt(DV)), the kernel's factor */
    double kappa;        /* >= |c sqrt(DV) - 1| */
    mpfr_t inv_sqrt_dv;  /* 1/sqrt(DV) at SUM_PREC */
    mpfr_t t[MAX_DV];    /* the row being transformed */
    mpfr_t m[MAX_NWG];   /* weights exp(M_w - M*) */
    double m_up[MAX_NWG], m_dev[MAX_NWG], m_mag[MAX_NWG];
    mpfr_t terms[MAX_NWG];
    mpfr_ptr term_ptrs[MAX_NWG];
    /* the fast path (ug_ref_fast): the weights as ±m 2^e (m_zero: exactly
     * 0), and the exact sum of a row entry's terms */
    ug_u128 m_sig[MAX_NWG];
    int m_exp[MAX_NWG];
    bool m_neg[MAX_NWG], m_zero[MAX_NWG];
    ug_xsum acc;
    mpz_t scratch;
    /* the transform's fast path: t and 1/sqrt(DV) as f192 */
    f192 t_fast[MAX_DV], inv_sqrt_dv_fast;
    bool t_is_fast; /* t_fast holds the row (undo_in_place took the fast path) */
    mpfr_t s, a, butterfly, arg, scaled_arg, edge, diff;
} workspace;

static void workspace_init(workspace *ws, size_t dv, size_t nwg)
{
    ws->dv = dv;
    ws->nwg = nwg;
    for (size_t j = 0; j < dv; j++) mpfr_init2(ws->t[j], SUM_PREC);
    for (size_t w = 0; w < MAX_NWG; w++) {
        mpfr_init2(ws->m[w], WEIGHT_PREC);
        mpfr_init2(ws->terms[w], TERM_PREC);
        ws->term_ptrs[w] = ws->terms[w];
    }
    mpfr_inits2(SUM_PREC, ws->inv_sqrt_dv, ws->s, ws->a, ws->butterfly, (mpfr_ptr)0);
    mpfr_inits2(ARG_PREC, ws->arg, ws->scaled_arg, (mpfr_ptr)0);
    mpfr_inits2(BOUND_PREC, ws->edge, ws->diff, (mpfr_ptr)0);
    ug_xsum_init(&ws->acc);
    ws->t_is_fast = false;
    mpz_init(ws->scratch);

    mpfr_set_ui(ws->inv_sqrt_dv, (unsigned long)dv, MPFR_RNDN);
    mpfr_rec_sqrt(ws->inv_sqrt_dv, ws->inv_sqrt_dv, MPFR_RNDN);
    ws->inv_sqrt_dv_fast = f192_of_mpfr(ws->inv_sqrt_dv);
    mpfr_t c;
    mpfr_init2(c, 24);
    mpfr_set(c, ws->inv_sqrt_dv, MPFR_RNDN); /* f32 has 24 bits; DV's range is normal */
    ws->scale = mpfr_get_d(c, MPFR_RNDN);
    mpfr_t product;
    mpfr_init2(product, 256);
    mpfr_set_ui(product, (unsigned long)dv, MPFR_RNDN);
    mpfr_sqrt(product, product, MPFR_RNDN);
    mpfr_mul(product, product, c, MPFR_RNDN);
    mpfr_sub_ui(product, product, 1, MPFR_RNDN);
    mpfr_abs(product, product, MPFR_RNDN);
    /* |c sqrt(DV) - 1| to 256 bits: zero for DV = 256, ~0.29 * 2^-24 for 512. */
    ws->kappa = mpfr_zero_p(product) ? 0.0 : mpfr_get_d(product, MPFR_RNDU) * UG_F32_SLACK;
    mpfr_clears(c, product, (mpfr_ptr)0);
}

static void workspace_clear(workspace *ws)
{
    for (size_t j = 0; j < ws->dv; j++) mpfr_clear(ws->t[j]);
    for (size_t w = 0; w < MAX_NWG; w++) mpfr_clears(ws->m[w], ws->terms[w], (mpfr_ptr)0);
    mpfr_clears(ws->inv_sqrt_dv, ws->s, ws->a, ws->butterfly, ws->arg, ws->scaled_arg, ws->edge, ws->diff,
                (mpfr_ptr)0);
    mpz_clear(ws->scratch);
}

static workspace *workspace_new(const ug_f32_model *model, size_t dv, size_t nwg)
{
    workspace *ws = malloc(sizeof *ws);
    if (ws) workspace_init(ws, dv, nwg);
    if (ws) ws->model = model;
    return ws;
}

static void workspace_free(workspace *ws)
{
    workspace_clear(ws);
    free(ws);
}

/* ---- the transform ------------------------------------------------------ */

/* The reference's own copy of the sign table (docs/spec.md §1.4), kept as the
 * spec's hex digits rather than as the kernel's byte array, so that a typo in
 * one is not a typo in the other; tests/test_ref_attn_reduce_fwht.c checks both
 * against the upstream bytes. DV = 256 reads the first 64 digits. */
static const char signs_hex[] = "a73b91f46dc2580eb37f24d68945ea1c63afd852970be13d76c419fe4a852cdb"
                                "d34ea8179c5be63172b90df5438a6ec7582f94e1b63d0a7cc561d84fa3971e85";

static unsigned hex_digit(char c) { return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10); }

int attn_reduce_fwht_reference_sign(size_t j)
{
    const unsigned byte = hex_digit(signs_hex[2 * (j >> 3)]) << 4 | hex_digit(signs_hex[2 * (j >> 3) + 1]);
    return (byte >> (j & 7)) & 1u ? -1 : 1;
}

/* t <- s * (H t) / sqrt(DV): H by butterflies at SUM_PREC (each output of a
 * stage rounded once; docs §4 bounds the accumulated error), then the exact
 * 1/sqrt(DV) to SUM_PREC and the sign. */
static void undo_in_place(workspace *ws)
{
    const size_t dv = ws->dv;
    ws->t_is_fast = ug_ref_fast();
    for (size_t j = 0; ws->t_is_fast && j < dv; j++) ws->t_is_fast = mpfr_number_p(ws->t[j]);
    if (ws->t_is_fast) {
        f192 *t = ws->t_fast;
        for (size_t j = 0; j < dv; j++) t[j] = f192_of_mpfr(ws->t[j]);
        for (size_t h = 1; h < dv; h *= 2)
            for (size_t base = 0; base < dv; base += 2 * h)
                for (size_t j = base; j < base + h; j++) f192_butterfly(&t[j], &t[j + h]);
        for (size_t j = 0; j < dv; j++) {
            t[j] = f192_mul(&t[j], &ws->inv_sqrt_dv_fast);
            t[j].neg ^= attn_reduce_fwht_reference_sign(j) < 0;
        }
        return;
    }
    for (size_t h = 1; h < dv; h *= 2)
        for (size_t base = 0; base < dv; base += 2 * h)
            for (size_t j = base; j < base + h; j++) {
                mpfr_add(ws->butterfly, ws->t[j], ws->t[j + h], MPFR_RNDN);
                mpfr_sub(ws->t[j + h], ws->t[j], ws->t[j + h], MPFR_RNDN);
                mpfr_swap(ws->t[j], ws->butterfly);
            }
    for (size_t j = 0; j < dv; j++) {
        mpfr_mul(ws->t[j], ws->t[j], ws->inv_sqrt_dv, MPFR_RNDN);
        if (attn_reduce_fwht_reference_sign(j) < 0) mpfr_neg(ws->t[j], ws->t[j], MPFR_RNDN);
    }
}

/* Finishes row r's outputs from t = the reference values: the pre-rounding
 * bound is relative * |r_j| + the row's constant part (both before slack). */
static void finish_row(workspace *ws, double relative, double constant, double abs_sum, ug_ref_value *out_row)
{
    for (size_t j = 0; j < ws->dv; j++) {
        double magnitude;
        if (ws->t_is_fast) {
            if (finish_f192(&ws->t_fast[j], &magnitude, relative, constant, abs_sum, &out_row[j])) continue;
            mpfr_of_f192(&ws->t_fast[j], ws->t[j], ws->scratch);
        }
        magnitude = fabs(mpfr_get_d(ws->t[j], MPFR_RNDA));
        double pre_round = (relative * magnitude + constant) * bound_slack;
        ug_ref_finish(&out_row[j], ws->t[j], pre_round, abs_sum, 0, UG_F32);
    }
}

/* ---- the merge weights -------------------------------------------------- */

/* exp(x) rounded in direction rnd to BOUND_PREC, into ws->edge. */
static void exp_directed(workspace *ws, double factor, mpfr_rnd_t rnd)
{
    mpfr_mul_d(ws->scaled_arg, ws->arg, factor, MPFR_RNDN); /* exact, see ARG_PREC */
    mpfr_exp(ws->edge, ws->scaled_arg, rnd);
}

/* m_w = exp(M_w - M*) and the window of the kernel's expf(fl(M_w - M*)):
 * the difference errs by <= u |d| (d <= 0), expf by the profile's {rel, abs}
 * over the argument's reach, so the kernel's weight and m_w both lie in
 * [lo, hi] with lo = exp(d (1 + u)) (1 - rel) - abs, hi = exp(d (1 - u)) (1 + rel) + abs. */
static void weight(workspace *ws, size_t w, float m_w, float m_star)
{
    if (m_w == -INFINITY) { /* expf(-inf) = 0 = exp(-inf): no error */
        mpfr_set_zero(ws->m[w], 1);
        ws->m_up[w] = ws->m_dev[w] = ws->m_mag[w] = 0;
        return;
    }
    mpfr_set_flt(ws->arg, m_w, MPFR_RNDN);
    mpfr_sub_d(ws->arg, ws->arg, m_star, MPFR_RNDN); /* exact */
    mpfr_exp(ws->m[w], ws->arg, MPFR_RNDN);
    ws->m_mag[w] = mpfr_get_d(ws->m[w], MPFR_RNDU);
    /* The argument's reach, widened below to -2^-149 so that the maximal
     * workgroup's weight (d == 0) keeps expf's allowance too: this bound
     * does not use expf(0) == 1 (doing so would change fixtures/baseline.json's
     * figures; docs/error-model-attn_reduce_fwht.md). */
    const double d = mpfr_get_d(ws->arg, MPFR_RNDD);
    const ug_f32_error exp =
        ug_f32_op_error(ws->model, UG_F32_EXP, fmin(d * (1 + 2 * UG_F32_U), -0x1p-149), fmin(d * (1 - UG_F32_U), 0));

    exp_directed(ws, 1 - UG_F32_U, MPFR_RNDU);
    mpfr_mul_d(ws->edge, ws->edge, 1 + exp.rel, MPFR_RNDU);
    mpfr_add_d(ws->edge, ws->edge, exp.abs, MPFR_RNDU);
    ws->m_up[w] = mpfr_get_d(ws->edge, MPFR_RNDU);
    mpfr_sub(ws->diff, ws->edge, ws->m[w], MPFR_RNDU);
    double dev_above = mpfr_get_d(ws->diff, MPFR_RNDU);

    exp_directed(ws, 1 + UG_F32_U, MPFR_RNDD);
    mpfr_mul_d(ws->edge, ws->edge, 1 - exp.rel, MPFR_RNDD);
    mpfr_sub_d(ws->edge, ws->edge, exp.abs, MPFR_RNDD);
    if (mpfr_sgn(ws->edge) < 0) mpfr_set_zero(ws->edge, 1);
    mpfr_sub(ws->diff, ws->m[w], ws->edge, MPFR_RNDU);
    double dev_below = mpfr_get_d(ws->diff, MPFR_RNDU);
    /* 2^-120 m_up covers m_w's own rounding to WEIGHT_PREC bits. */
    ws->m_dev[w] = fmax(dev_above, dev_below) + 0x1p-120 * ws->m_up[w];
}

/* ---- the reduce + undo reference of one row ----------------------------- */

typedef struct {
    const float *partials; /* the row's nwg * DV partials */
    const float *stats;    /* the row's (S_w, M_w) pairs */
    size_t row;
} row_input;

static ug_status check_stats(const row_input *in, size_t nwg, float *m_star)
{
    *m_star = -INFINITY;
    for (size_t w = 0; w < nwg; w++) {
        float s_w = in->stats[2 * w], m_w = in->stats[2 * w + 1];
        if (!isfinite(s_w) || s_w < 0 || isnan(m_w) || m_w == INFINITY)
            return ug_fail(UG_EREF,
                           "attn_reduce_fwht reference: row %zu, workgroup %zu has S = %g, M = %g (outside the "
                           "contract: S finite and >= 0, M finite or -inf)",
                           in->row, w, (double)s_w, (double)m_w);
        if (m_w > *m_star) *m_star = m_w;
    }
    if (*m_star == -INFINITY)
        return ug_fail(UG_EREF,
                       "attn_reduce_fwht reference: row %zu has every M_w = -inf (outside the contract: a fully "
                       "masked row carries M = -FLT_MAX/2)",
                       in->row);
    return ug_ok();
}

/* S = 0 exactly iff every workgroup has S_w = 0 or a weight of exactly 0;
 * then the kernel's S is 0 too and its row is exactly zero. */
static bool softmax_sum_is_zero(const row_input *in, size_t nwg)
{
    for (size_t w = 0; w < nwg; w++)
        if (in->stats[2 * w] != 0 && in->stats[2 * w + 1] != -INFINITY) return false;
    return true;
}

/* S, and the relative error bound eps_tau of the kernel's S / S~ * (1 + eps1). */
static ug_status softmax_sum(workspace *ws, const row_input *in, double *s_down, double *eps_tau, double *div_abs)
{
    const size_t nwg = ws->nwg;
    double dev_sum = 0, up_sum = 0;
    for (size_t w = 0; w < nwg; w++) {
        double s_w = in->stats[2 * w];
        mpfr_mul_d(ws->terms[w], ws->m[w], s_w, MPFR_RNDN); /* exact */
        dev_sum += s_w * ws->m_dev[w];
        up_sum += s_w * ws->m_up[w];
    }
    mpfr_sum(ws->s, ws->term_ptrs, nwg, MPFR_RNDN);
    const double e_s = up(dev_sum + ug_f32_gamma(nwg) * up_sum + (double)nwg * ug_f32_underflow(ws->model));
    *s_down = mpfr_get_d(ws->s, MPFR_RNDD) * (1 - 0x1p-60);
    if (!(*s_down >= 0x1p-100 && mpfr_get_d(ws->s, MPFR_RNDU) <= 0x1p100 && e_s <= *s_down / 2))
        return ug_fail(UG_EREF,
                       "attn_reduce_fwht reference: row %zu has S = %g with the kernel's error bound %g on it "
                       "(outside the contract: a live workgroup has S_w >= 1)",
                       in->row, mpfr_get_d(ws->s, MPFR_RNDN), e_s);
    const double s_lo = (*s_down - e_s) * (1 - 0x1p-50);
    const double eps_s = up(e_s / s_lo);
    /* the kernel's division by its S~ in [s_lo, S + e_s]: the profile's div */
    const ug_f32_error div = ug_f32_op_error(ws->model, UG_F32_DIV, s_lo, up(mpfr_get_d(ws->s, MPFR_RNDU) + e_s));
    *eps_tau = up(eps_s + div.rel + eps_s * div.rel);
    *div_abs = div.abs;
    return ug_ok();
}

/* The fast path of the row's a_d: every partial finite and every weight a
 * regular number or zero, so that each term m_w P_w[d] is an exact product
 * (a 128-bit weight times an f32). */
static bool fast_weights(workspace *ws, const row_input *in, size_t dv)
{
    for (size_t k = 0; k < dv * ws->nwg; k++)
        if (!isfinite(in->partials[k])) return false;
    for (size_t w = 0; w < ws->nwg; w++) {
        ws->m_zero[w] = mpfr_zero_p(ws->m[w]);
        ws->m_neg[w] = mpfr_signbit(ws->m[w]);
        if (!ws->m_zero[w] && !ug_xsum_split_mpfr(ws->m[w], &ws->m_neg[w], &ws->m_sig[w], &ws->m_exp[w]))
            return false;
    }
    return true;
}

/* acc += m_w p exactly (p an f32 value); a zero term keeps its sign, as
 * mpfr_mul_d's and mpfr_sum's do. */
static void add_term(workspace *ws, size_t w, double p)
{
    bool neg;
    uint64_t m;
    int e;
    ug_xsum_split(p, &neg, &m, &e);
    neg = neg != ws->m_neg[w];
    if (ws->m_zero[w]) ug_xsum_add_zero(&ws->acc, neg);
    else ug_xsum_add_mul(&ws->acc, neg, m, ws->m_sig[w], ws->m_exp[w] + e);
}

static ug_status reference_row(workspace *ws, const row_input *in, ug_ref_value *out_row)
{
    const size_t dv = ws->dv, nwg = ws->nwg;
    float m_star;
    UG_TRY(check_stats(in, nwg, &m_star));
    for (size_t w = 0; w < nwg; w++) weight(ws, w, in->stats[2 * w + 1], m_star);

    if (softmax_sum_is_zero(in, nwg)) { /* y = 0: the spec's S == 0 case */
        for (size_t j = 0; j < dv; j++) mpfr_set_zero(ws->t[j], 1);
        ws->t_is_fast = false;
        finish_row(ws, 0, 0, 0, out_row);
        return ug_ok();
    }
    double s_down = 0, eps_tau = 0, div_abs = 0;
    UG_TRY(softmax_sum(ws, in, &s_down, &eps_tau, &div_abs));

    /* a_d = sum_w P_w[d] m_w and y_d = a_d / S; E_a[d] and A_d (docs §3). */
    const double gamma = ug_f32_gamma(nwg), underflow = ug_f32_underflow(ws->model);
    double sum_e_a = 0, sum_a = 0, sum_mag = 0;
    bool finite_partials = true;
    const bool fast = ug_ref_fast() && fast_weights(ws, in, dv);
    for (size_t d = 0; d < dv; d++) {
        double dev = 0, mag_up = 0, mag = 0;
        if (fast) ug_xsum_clear(&ws->acc);
        for (size_t w = 0; w < nwg; w++) {
            double p = in->partials[(d / 4 * nwg + w) * 4 + d % 4];
            /* A NaN or +-inf partial is carried in MPFR's extended reals (a
             * weight 0 times inf is NaN) through the quotient and the
             * transform, which spreads it over the whole row; no bound. */
            finite_partials &= isfinite(p);
            if (fast) add_term(ws, w, p);
            else mpfr_mul_d(ws->terms[w], ws->m[w], p, MPFR_RNDN); /* exact */
            dev += fabs(p) * ws->m_dev[w];
            mag_up += fabs(p) * ws->m_up[w];
            mag += fabs(p) * ws->m_mag[w];
        }
        /* both: the exact sum rounded once to SUM_PREC; a term beyond the
         * accumulator's range (a weight below about 2^-2000) sends the
         * entry back to MPFR */
        if (fast && ug_xsum_in_range(&ws->acc)) {
            ug_xsum_get_mpfr_wide(&ws->acc, ws->a, ws->scratch);
        } else {
            for (size_t w = 0; fast && w < nwg; w++)
                mpfr_mul_d(ws->terms[w], ws->m[w], in->partials[(d / 4 * nwg + w) * 4 + d % 4], MPFR_RNDN);
            mpfr_sum(ws->a, ws->term_ptrs, nwg, MPFR_RNDN);
        }
        mpfr_div(ws->t[d], ws->a, ws->s, MPFR_RNDN);
        sum_e_a += dev + gamma * mag_up + (double)nwg * underflow;
        sum_a += (1 + gamma) * mag_up + (double)nwg * underflow;
        sum_mag += mag;
    }
    undo_in_place(ws);
    if (!finite_partials) {
        finish_row(ws, INFINITY, INFINITY, INFINITY, out_row);
        return ug_ok();
    }

    /* docs §3: E_t = eps_tau |t_j| + (1 + eps_tau)(sum E_a + u sum A)/S + DV 2^-150
     *              + gamma_L ((1 + eps_tau)(1 + u) sum A / S + DV 2^-150);
     * E_j = c E_t + kappa |r_j| with |t_j| c <= (1 + kappa) |r_j|. */
    /* an underflowing f32 product or quotient: the profile's half subnormal
     * rounding, or its division's absolute floor */
    const double stages = log2((double)dv);
    const double dv_underflow = (double)dv * fmax(ug_f32_underflow_half(ws->model), div_abs);
    const double ydiff = (1 + eps_tau) * (sum_e_a + UG_F32_U * sum_a) / s_down + dv_underflow;
    const double ymag = (1 + eps_tau) * (1 + UG_F32_U) * sum_a / s_down + dv_underflow;
    const double constant = up(ws->scale * up(ydiff + ug_f32_gamma((size_t)stages) * ymag));
    const double relative = up(eps_tau * (1 + ws->kappa) + ws->kappa);
    finish_row(ws, relative, constant, up(sum_mag / s_down / sqrt((double)dv)), out_row);
    return ug_ok();
}

ug_status attn_reduce_fwht_reference(const attn_reduce_fwht_shape *s, const float *htmp,
                                     const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *out)
{
    (void)mode; /* no deliberate intermediate rounding: staged == exact */
    workspace *ws = workspace_new(model, s->head_dim, s->nwg);
    if (!ws) return ug_fail(UG_ENOMEM, "attn_reduce_fwht reference: cannot allocate a workspace");
    ug_status st = ug_ok();
    const float *stats = htmp + s->nrows * s->head_dim * s->nwg;
    for (size_t r = 0; r < s->nrows && ug_is_ok(&st); r++) {
        row_input in = {htmp + r * s->head_dim * s->nwg, stats + r * 2 * s->nwg, r};
        st = reference_row(ws, &in, out + r * s->head_dim);
    }
    workspace_free(ws);
    return st;
}

/* ---- the standalone sign-undo ------------------------------------------- */

ug_status attn_fwht_undo_reference(size_t nrows, size_t head_dim, const float *x, const ug_f32_model *model,
                                   ug_ref_value *out)
{
    workspace *ws = workspace_new(model, head_dim, 1);
    if (!ws) return ug_fail(UG_ENOMEM, "attn_fwht_undo reference: cannot allocate a workspace");
    const double gamma_stages = ug_f32_gamma((size_t)log2((double)head_dim));
    for (size_t r = 0; r < nrows; r++) {
        const float *row = x + r * head_dim;
        double sum_abs = 0;
        for (size_t d = 0; d < head_dim; d++) {
            mpfr_set_flt(ws->t[d], row[d], MPFR_RNDN);
            sum_abs += fabs((double)row[d]);
        }
        undo_in_place(ws);
        finish_row(ws, up(ws->kappa), up(ws->scale * up(gamma_stages * sum_abs)),
                   up(sum_abs / sqrt((double)head_dim)), out + r * head_dim);
    }
    workspace_free(ws);
    return ug_ok();
}
