#include "head_norm_rope.h"

#include <math.h>
#include <stdlib.h>

#include "round.h"

/* Angles carry ANGLE_PREC bits: an angle below 2^32 is then known to 2^-220
 * absolutely, far below the 2^-128 relative error of its cos and sin.
 * Correctly rounded f32 steps are decided by Ziv's strategy up to
 * ZIV_PREC_MAX bits. */
enum { ANGLE_PREC = 256, ZIV_PREC_MAX = 4096 };

static const double u32 = 0x1p-24; /* f32 unit roundoff */
static const double slack = UG_REF_SUM_SLACK;

static double gamma_n(double n) { return n * u32 / (1 - n * u32); }

/* (1 + a)(1 + b) - 1, rounded up enough for a bound. */
static double compose(double a, double b) { return (a + b + a * b) * slack; }

/* (1 + u)^k - 1 <= k u (1 + k u) for k u <= 1/2. */
static double k_u(double k) { return k * u32 * (1 + k * u32) * slack; }

static double abs_up(mpfr_srcptr x) { return fabs(mpfr_get_d(x, MPFR_RNDA)); }

/* ---- the norm of one head (both variants) ---------------------------------- */

/* y_i = x_i r w_i at UG_REF_PREC, with what the bound needs of the kernel's
 * f32 value of y_i: relative error eps_y, absolute underflow allowance
 * abs_y[i], and |y_i| rounded up. */
typedef struct {
    size_t head_dim;
    mpfr_t *y;
    double *y_mag, *abs_y;
    double eps_y;
    mpfr_ptr *term_ptrs;
    mpfr_t *terms;
    mpfr_t v, r;
} norm_ws;

static void norm_ws_free(norm_ws *ws)
{
    if (ws->y)
        for (size_t i = 0; i < ws->head_dim; i++) mpfr_clear(ws->y[i]);
    if (ws->terms)
        for (size_t i = 0; i < ws->head_dim; i++) mpfr_clear(ws->terms[i]);
    free(ws->y);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->y_mag);
    free(ws->abs_y);
    mpfr_clears(ws->v, ws->r, (mpfr_ptr)0);
}

static ug_status norm_ws_init(norm_ws *ws, size_t head_dim)
{
    *ws = (norm_ws){.head_dim = head_dim};
    mpfr_inits2(UG_REF_PREC, ws->v, ws->r, (mpfr_ptr)0);
    ws->y = calloc(head_dim, sizeof *ws->y);
    ws->terms = calloc(head_dim, sizeof *ws->terms);
    ws->term_ptrs = calloc(head_dim, sizeof *ws->term_ptrs);
    ws->y_mag = calloc(head_dim, sizeof *ws->y_mag);
    ws->abs_y = calloc(head_dim, sizeof *ws->abs_y);
    if (!ws->y || !ws->terms || !ws->term_ptrs || !ws->y_mag || !ws->abs_y) {
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

/* x and w as doubles (exact: bf16 or f32); w NULL without a weight. The
 * kernel's y_i (docs/error-model-head_norm_rope.md §2):
 *   ss^ within gamma_d ss + d 2^-150 of ss (any order, FMA or not),
 *   v^ = fl(fl(ss^ / fl(d)) + eps) = v (1 + t), |t| <= (1+gamma_d)(1+u)^3 - 1 + 2^-148/v,
 *   r^ = fl(1 / fl(sqrt(v^))): |r^/r - 1| <= (1 - |t|)^-1/2 (1+u)/(1-u) - 1,
 *   y^ = fl(fl(x r^) w): relative (1+eps_r)(1+u)^2 - 1, absolute 2^-150 (1 + |w|)(1+u). */
static void norm_head(norm_ws *ws, const double *x, const double *w, float eps)
{
    const size_t d = ws->head_dim;
    for (size_t i = 0; i < d; i++) mpfr_set_d(ws->terms[i], x[i] * x[i], MPFR_RNDN); /* exact */
    mpfr_sum(ws->v, ws->term_ptrs, d, MPFR_RNDN);
    mpfr_div_ui(ws->v, ws->v, d, MPFR_RNDN);
    mpfr_add_d(ws->v, ws->v, eps, MPFR_RNDN);
    mpfr_rec_sqrt(ws->r, ws->v, MPFR_RNDN);

    double v_low = mpfr_get_d(ws->v, MPFR_RNDD);
    double t = (compose(gamma_n((double)d), k_u(3)) + 0x1p-148 / v_low) * slack;
    /* (1 - t)^-1/2 - 1 <= (t/2) (1 - t)^-3/2 (mean value), free of cancellation;
     * (1 + u)/(1 - u) = 1 + 2u/(1 - u). */
    double eps_r = compose(0.5 * t * pow(1 - t, -1.5) * slack, 2 * u32 / (1 - u32));
    ws->eps_y = compose(eps_r, k_u(w ? 2 : 1));
    for (size_t i = 0; i < d; i++) {
        mpfr_mul_d(ws->y[i], ws->r, x[i], MPFR_RNDN);
        if (w) mpfr_mul_d(ws->y[i], ws->y[i], w[i], MPFR_RNDN);
        ws->y_mag[i] = abs_up(ws->y[i]) * slack;
        ws->abs_y[i] = 0x1p-150 * (1 + (w ? fabs(w[i]) : 0)) * (1 + 2 * u32);
    }
}

/* ---- the rotation of one element -------------------------------------------- */

/* cos and sin of a pair as the reference uses them, the kernel's error in
 * them (relative eps_cs, absolute zeta) and its angle's deviation d_angle
 * from the reference's angle. */
typedef struct {
    mpfr_t c, s;
    double c_mag, s_mag;
    double eps_cs, zeta, d_angle;
    uint32_t flagged;
} pair_trig;

/* out_lo = y_lo c - y_hi s (sign = -1) or out_hi = y_hi c + y_lo s (sign = +1),
 * with the bound (docs/error-model-head_norm_rope.md §3):
 *   E = k1 (T + da Y) + da Y + (1+gamma_2)[(a_lo+a_hi)(C + zeta) + Y(1+eps_y) zeta] + 2^-149,
 *   k1 = (1+eps_y)(1+eps_cs)(1+gamma_2) - 1, T = |y_self c| + |y_other s|,
 *   Y = |y_lo| + |y_hi|, C = (max(|c|,|s|) + da)(1+eps_cs). */
static void rotated_element(const norm_ws *ws, const pair_trig *pt, size_t self, size_t other, int sign,
                            mpfr_ptr acc, ug_dtype dtype, ug_ref_value *out)
{
    mpfr_mul(acc, ws->y[other], pt->s, MPFR_RNDN);
    if (sign < 0) mpfr_fms(acc, ws->y[self], pt->c, acc, MPFR_RNDN);
    else mpfr_fma(acc, ws->y[self], pt->c, acc, MPFR_RNDN);

    const double gamma2 = gamma_n(2), da = pt->d_angle;
    const double big_t = (ws->y_mag[self] * pt->c_mag + ws->y_mag[other] * pt->s_mag) * slack;
    const double big_y = (ws->y_mag[self] + ws->y_mag[other]) * slack;
    const double k1 = compose(compose(ws->eps_y, pt->eps_cs), gamma2);
    const double big_c = compose((fmax(pt->c_mag, pt->s_mag) + da), pt->eps_cs);
    const double tiny = (1 + gamma2) * ((ws->abs_y[self] + ws->abs_y[other]) * (big_c + pt->zeta) +
                                        big_y * (1 + ws->eps_y) * pt->zeta) + 0x1p-149;
    const double e = (k1 * (big_t + da * big_y) + da * big_y + tiny) * slack * slack;
    ug_ref_finish(out, acc, e, big_t, pt->flagged, dtype);
}

static void passed_element(const norm_ws *ws, size_t i, ug_dtype dtype, ug_ref_value *out)
{
    double e = (ws->eps_y * ws->y_mag[i] + ws->abs_y[i]) * slack;
    ug_ref_finish(out, ws->y[i], e, ws->y_mag[i], 0, dtype);
}

/* One head's outputs: pairs (i, i + span) for i < pairs rotated with trig[i],
 * the rest passed through. */
static void finish_head(const norm_ws *ws, const pair_trig *trig, size_t pairs, size_t span, mpfr_ptr acc,
                        ug_dtype dtype, ug_ref_value *out)
{
    for (size_t i = 0; i < ws->head_dim; i++) {
        bool lo = i < pairs, hi = i >= span && i < span + pairs;
        if (lo) rotated_element(ws, &trig[i], i, i + span, -1, acc, dtype, &out[i]);
        else if (hi) rotated_element(ws, &trig[i - span], i, i - span, +1, acc, dtype, &out[i]);
        else passed_element(ws, i, dtype, &out[i]);
    }
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

static void trig_magnitudes(pair_trig *t)
{
    t->c_mag = abs_up(t->c);
    t->s_mag = abs_up(t->s);
}

/* ---- bf16 variant -------------------------------------------------------------- */

ug_status head_norm_rope_bf16_reference(const head_norm_rope_shape *s, const ug_bf16 *x, const ug_bf16 *w,
                                        const float *cos_cache, const float *sin_cache, ug_ref_value *out)
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
        norm_head(&ws, xd, w ? wd : NULL, s->eps);
        finish_head(&ws, trig, pairs, pairs, acc, UG_BF16, out + h * d);
    }
    mpfr_clear(acc);
    free(xd);
    free(wd);
    trig_free(trig, pairs);
    norm_ws_free(&ws);
    return st;
}

/* ---- f32 variant: the angles ----------------------------------------------------- */

typedef int mpfr_fn(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

/* A correctly rounded f32 step of the staged formula, f(arg) rounded to f32
 * (Ziv: f in both directions at growing precision until both round alike),
 * and whether a libm result that is the correct rounding of some value within
 * relative rho of f(arg) could be the other neighbour (flagged). */
static ug_status staged_f32_step(mpfr_fn *f, mpfr_srcptr arg, double rho, const char *what, float *value,
                                 bool *flagged)
{
    for (mpfr_prec_t prec = 2 * ANGLE_PREC; prec <= ZIV_PREC_MAX; prec *= 2) {
        mpfr_t lo, hi, radius;
        mpfr_inits2(prec, lo, hi, radius, (mpfr_ptr)0);
        f(lo, arg, MPFR_RNDD);
        f(hi, arg, MPFR_RNDU);
        uint32_t bits = ug_mpfr_to_f32_bits(lo);
        bool decided = bits == ug_mpfr_to_f32_bits(hi);
        if (decided) {
            *value = ug_f32_from_bits(bits);
            mpfr_abs(radius, fabs(mpfr_get_d(lo, MPFR_RNDA)) > fabs(mpfr_get_d(hi, MPFR_RNDA)) ? lo : hi, MPFR_RNDU);
            mpfr_mul_d(radius, radius, rho, MPFR_RNDU);
            mpfr_sub(lo, lo, radius, MPFR_RNDD);
            mpfr_add(hi, hi, radius, MPFR_RNDU);
            *flagged = ug_mpfr_to_f32_bits(lo) != ug_mpfr_to_f32_bits(hi);
        }
        mpfr_clears(lo, hi, radius, (mpfr_ptr)0);
        if (decided) return ug_ok();
    }
    return ug_fail(UG_EREF, "head_norm_rope reference: cannot round %s to f32 with %d bits", what, ZIV_PREC_MAX);
}

/* RN_f32 of an exact rational held at ANGLE_PREC bits: a quotient of f32 or
 * small integers lies either on an f32 rounding boundary or 2^-80 relative
 * away from it, so rounding the 256-bit value cannot double-round. */
static float rn_f32(mpfr_srcptr x) { return ug_f32_from_bits(ug_mpfr_to_f32_bits(x)); }

/* Everything about the angles that does not depend on the position. */
typedef struct {
    size_t head_dim, pairs;
    float theta;
    bool log2_flagged;
    mpfr_t log2_theta;           /* l = log2(theta), ANGLE_PREC bits */
    float *f_staged;             /* RN(RN(2^-RN(e_i L)) / ff_i) */
    bool *flagged;
    double *kappa;               /* the relative factor of the generic bound G */
    double *ff;
    mpfr_t *inv_exact;           /* theta^(-2i/d) / ff_i */
    mpfr_t *inv_rounded;         /* theta^(-e_i) / ff_i, e_i = RN(2i/d) */
} angle_table;

static void angle_table_free(angle_table *t)
{
    for (size_t i = 0; t->inv_exact && i < t->pairs; i++) mpfr_clears(t->inv_exact[i], t->inv_rounded[i], (mpfr_ptr)0);
    mpfr_clear(t->log2_theta);
    free(t->f_staged);
    free(t->flagged);
    free(t->kappa);
    free(t->ff);
    free(t->inv_exact);
    free(t->inv_rounded);
}

static int exp2_of_negated(mpfr_ptr out, mpfr_srcptr t, mpfr_rnd_t rnd)
{
    mpfr_t neg;
    mpfr_init2(neg, mpfr_get_prec(t));
    mpfr_neg(neg, t, MPFR_RNDN); /* exact */
    int inexact = mpfr_exp2(out, neg, rnd);
    mpfr_clear(neg);
    return inexact;
}

/* Pair i of the table (docs/error-model-head_norm_rope.md §4). */
static ug_status angle_table_pair(angle_table *t, size_t i, float log2_staged, mpfr_ptr ln_theta, mpfr_ptr tmp)
{
    const double eps_l = compose(HEAD_NORM_ROPE_LOG2_REL, u32), eps_t = compose(eps_l, u32);
    /* e_i = RN(RN(2i) / RN(d)) (the conversions are exact below 2^24);
     * t_i = RN(e_i L) (an exact double product, rounded once). */
    mpfr_set_ui(tmp, t->head_dim, MPFR_RNDN);
    const float d_f32 = rn_f32(tmp);
    mpfr_set_ui(tmp, 2 * i, MPFR_RNDN);
    mpfr_set_flt(tmp, rn_f32(tmp), MPFR_RNDN);
    mpfr_div_d(tmp, tmp, d_f32, MPFR_RNDN);
    const float e = rn_f32(tmp);
    const float t_i = (float)((double)e * (double)log2_staged);
    mpfr_set_flt(tmp, t_i, MPFR_RNDN);
    float w;
    bool w_flagged;
    UG_TRY(staged_f32_step(exp2_of_negated, tmp, HEAD_NORM_ROPE_EXP2F_REL, "2^-t", &w, &w_flagged));
    mpfr_set_flt(tmp, w, MPFR_RNDN);
    mpfr_div_d(tmp, tmp, t->ff[i], MPFR_RNDN);
    t->f_staged[i] = rn_f32(tmp);
    t->flagged[i] = t->log2_flagged || w_flagged;
    /* |t' eps_t| with t' = e_i l: the exponent's relative error moves 2^-t. */
    double t_exact = fabs((double)e * mpfr_get_d(t->log2_theta, MPFR_RNDA)) * slack;
    double shift = expm1(t_exact * eps_t * M_LN2 * slack) * slack; /* 2^(|t'| eps_t) - 1 */
    t->kappa[i] = compose(compose(k_u(4), HEAD_NORM_ROPE_EXP2F_REL), shift);
    /* theta^(-2i/d) / ff = exp(-(2i/d) ln theta) / ff, and theta^(-e_i) / ff. */
    mpfr_mul_ui(t->inv_exact[i], ln_theta, 2 * i, MPFR_RNDN);
    mpfr_div_ui(t->inv_exact[i], t->inv_exact[i], t->head_dim, MPFR_RNDN);
    mpfr_neg(t->inv_exact[i], t->inv_exact[i], MPFR_RNDN);
    mpfr_exp(t->inv_exact[i], t->inv_exact[i], MPFR_RNDN);
    mpfr_div_d(t->inv_exact[i], t->inv_exact[i], t->ff[i], MPFR_RNDN);
    mpfr_mul_d(t->inv_rounded[i], ln_theta, -(double)e, MPFR_RNDN);
    mpfr_exp(t->inv_rounded[i], t->inv_rounded[i], MPFR_RNDN);
    mpfr_div_d(t->inv_rounded[i], t->inv_rounded[i], t->ff[i], MPFR_RNDN);
    return ug_ok();
}

/* Pairs [first, pairs) of the table; ff NULL: no freq_factors (the same as
 * factors of 1: the division is exact). */
static ug_status angle_table_init(angle_table *t, float theta, size_t head_dim, size_t first, size_t pairs,
                                  const float *ff)
{
    *t = (angle_table){.head_dim = head_dim, .pairs = pairs, .theta = theta};
    mpfr_init2(t->log2_theta, ANGLE_PREC);
    size_t n = pairs ? pairs : 1;
    t->f_staged = calloc(n, sizeof *t->f_staged);
    t->flagged = calloc(n, sizeof *t->flagged);
    t->kappa = calloc(n, sizeof *t->kappa);
    t->ff = calloc(n, sizeof *t->ff);
    mpfr_t *inv_exact = calloc(n, sizeof *inv_exact), *inv_rounded = calloc(n, sizeof *inv_rounded);
    if (!t->f_staged || !t->flagged || !t->kappa || !t->ff || !inv_exact || !inv_rounded) {
        free(inv_exact);
        free(inv_rounded);
        angle_table_free(t);
        return ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate %zu pairs", pairs);
    }
    for (size_t i = 0; i < pairs; i++) {
        mpfr_inits2(ANGLE_PREC, inv_exact[i], inv_rounded[i], (mpfr_ptr)0);
        t->ff[i] = ff ? ff[i] : 1.0;
    }
    t->inv_exact = inv_exact;
    t->inv_rounded = inv_rounded;

    mpfr_t theta_m, ln_theta, tmp;
    mpfr_inits2(ANGLE_PREC + 64, theta_m, ln_theta, tmp, (mpfr_ptr)0);
    mpfr_set_flt(theta_m, theta, MPFR_RNDN);
    mpfr_log(ln_theta, theta_m, MPFR_RNDN);
    mpfr_log2(t->log2_theta, theta_m, MPFR_RNDN);
    float log2_staged;
    ug_status st = staged_f32_step(mpfr_log2, theta_m, HEAD_NORM_ROPE_LOG2_REL, "log2(theta)", &log2_staged,
                                   &t->log2_flagged);
    for (size_t i = first; i < pairs && ug_is_ok(&st); i++) st = angle_table_pair(t, i, log2_staged, ln_theta, tmp);
    mpfr_clears(theta_m, ln_theta, tmp, (mpfr_ptr)0);
    if (!ug_is_ok(&st)) angle_table_free(t);
    return st;
}

/* The angle of pair i at pos: exact (MPFR, into `exact`), staged, and the
 * kernel's deviation from each (docs/error-model-head_norm_rope.md §4):
 * unflagged, the kernel's angle is the staged one bit for bit; flagged, it
 * lies within G = a' kappa_i + P 2^-149 (1/ff + 1) + 2^-149 of
 * a' = pos theta^(-e_i) / ff. */
static void angle_at(const angle_table *t, size_t i, uint32_t pos, mpfr_ptr exact, mpfr_ptr tmp,
                     head_norm_rope_angle *out)
{
    mpfr_set_ui(tmp, pos, MPFR_RNDN);
    const float p_staged = rn_f32(tmp);
    out->staged = (float)((double)p_staged * (double)t->f_staged[i]); /* exact product, one rounding */
    out->flagged = t->flagged[i];
    mpfr_mul_ui(exact, t->inv_exact[i], pos, MPFR_RNDN);
    out->exact = mpfr_get_d(exact, MPFR_RNDN);
    mpfr_sub_d(tmp, exact, out->staged, MPFR_RNDN);
    out->staged_error = abs_up(tmp) * slack;
    out->kernel_vs_exact = out->staged_error;
    out->kernel_vs_staged = 0;
    if (out->flagged) {
        mpfr_mul_ui(tmp, t->inv_rounded[i], pos, MPFR_RNDN); /* a' */
        double a_prime = abs_up(tmp) * slack;
        double g = (a_prime * t->kappa[i] + (double)p_staged * 0x1p-149 * (1 / t->ff[i] + 1) + 0x1p-149) * slack;
        mpfr_sub(exact, tmp, exact, MPFR_RNDN);
        out->kernel_vs_exact = (g + abs_up(exact)) * slack;
        mpfr_sub_d(tmp, tmp, out->staged, MPFR_RNDN);
        out->kernel_vs_staged = (g + abs_up(tmp)) * slack;
        mpfr_mul_ui(exact, t->inv_exact[i], pos, MPFR_RNDN);
    }
}

ug_status head_norm_rope_angle_of(uint32_t position, size_t i, size_t head_dim, float theta, float freq_factor,
                                  head_norm_rope_angle *out)
{
    float *ff = malloc((i + 1) * sizeof *ff);
    if (!ff) return ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate %zu pairs", i + 1);
    for (size_t k = 0; k <= i; k++) ff[k] = freq_factor;
    angle_table t;
    ug_status st = angle_table_init(&t, theta, head_dim, i, i + 1, ff);
    free(ff);
    UG_TRY(st);
    mpfr_t exact, tmp;
    mpfr_inits2(ANGLE_PREC, exact, tmp, (mpfr_ptr)0);
    angle_at(&t, i, position, exact, tmp, out);
    mpfr_clears(exact, tmp, (mpfr_ptr)0);
    angle_table_free(&t);
    return ug_ok();
}

/* ---- f32 variant ----------------------------------------------------------------- */

ug_status head_norm_rope_f32_reference(const head_norm_rope_shape *s, size_t seq_len, float theta, const float *x,
                                       const float *w, const uint32_t *positions, const float *freq_factors,
                                       ug_ref_mode mode, ug_ref_value *out)
{
    const size_t d = s->head_dim, pairs = s->half_rope_dim;
    angle_table table;
    UG_TRY(angle_table_init(&table, theta, d, 0, pairs, freq_factors));
    norm_ws ws;
    ug_status st = norm_ws_init(&ws, d);
    if (!ug_is_ok(&st)) {
        angle_table_free(&table);
        return st;
    }
    pair_trig *trig = trig_alloc(pairs);
    double *xd = malloc(d * sizeof *xd), *wd = malloc(d * sizeof *wd);
    mpfr_t acc, angle, tmp;
    mpfr_init2(acc, UG_REF_PREC);
    mpfr_inits2(ANGLE_PREC, angle, tmp, (mpfr_ptr)0);
    if (!trig || !xd || !wd) st = ug_fail(UG_ENOMEM, "head_norm_rope reference: cannot allocate a head of %zu", d);
    for (size_t i = 0; w && wd && i < d; i++) wd[i] = w[i];
    for (size_t t = 0; t < seq_len && ug_is_ok(&st); t++) {
        for (size_t i = 0; i < pairs; i++) {
            head_norm_rope_angle a;
            angle_at(&table, i, positions[t], angle, tmp, &a);
            if (mode == UG_REF_STAGED) mpfr_set_flt(angle, a.staged, MPFR_RNDN);
            mpfr_sin_cos(trig[i].s, trig[i].c, angle, MPFR_RNDN);
            trig_magnitudes(&trig[i]);
            trig[i].eps_cs = HEAD_NORM_ROPE_TRIG_REL;
            trig[i].zeta = 0x1p-149;
            trig[i].d_angle = mode == UG_REF_STAGED ? a.kernel_vs_staged : a.kernel_vs_exact;
            trig[i].flagged = a.flagged;
        }
        for (size_t h = 0; h < s->n_heads; h++) {
            const size_t offset = (t * s->n_heads + h) * d;
            for (size_t i = 0; i < d; i++) xd[i] = x[offset + i];
            norm_head(&ws, xd, w ? wd : NULL, s->eps);
            finish_head(&ws, trig, pairs, d / 2, acc, UG_F32, out + offset);
        }
    }
    mpfr_clears(acc, angle, tmp, (mpfr_ptr)0);
    free(xd);
    free(wd);
    trig_free(trig, pairs);
    norm_ws_free(&ws);
    angle_table_free(&table);
    return st;
}
