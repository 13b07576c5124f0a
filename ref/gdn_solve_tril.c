/* SPDX-License-Identifier: MIT */
#include "gdn_solve_tril.h"

#include <math.h>
#include <stdlib.h>

#include "f32_model.h"

enum { START_PREC = 256, MAX_PREC = 4096 };
/* The reference's own deviation must stay below 2^-40 of the f32 subnormal
 * spacing 2^-149 (and so far below every bound). */
#define TAU_LIMIT 0x1p-190
/* Covers the binary64 roundings of the nested magnitude sums (depth < 2^13
 * roundings of nonnegative values, each 2^-53). */
#define NESTED_SLACK (1.0 + 0x1p-36)

typedef struct {
    size_t bt;
    const ug_f32_model *model;
    mpfr_t *x;          /* [BT][BT] the inverse, lower triangle */
    mpfr_t *l_mp;       /* [BT][BT] L's f32 values, exact at 24 bits: the terms multiply them directly */
    mpfr_t *terms;      /* [BT] */
    mpfr_ptr *term_ptrs;
    double *l, *abs_l, *abs_x, *delta, *skeel, *abs_lx; /* [BT][BT] */
    double *rho;                                          /* [BT] */
} workspace;

static void workspace_free(workspace *ws)
{
    const size_t bt = ws->bt;
    if (ws->x)
        for (size_t i = 0; i < bt * bt; i++) mpfr_clear(ws->x[i]);
    if (ws->terms)
        for (size_t i = 0; i < bt; i++) mpfr_clear(ws->terms[i]);
    if (ws->l_mp)
        for (size_t i = 0; i < bt * bt; i++) mpfr_clear(ws->l_mp[i]);
    free(ws->x);
    free(ws->l_mp);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->l);
}

static ug_status workspace_init(workspace *ws, size_t bt)
{
    ws->bt = bt;
    mpfr_t *x = calloc(bt * bt, sizeof *x), *terms = calloc(bt, sizeof *terms), *l_mp = calloc(bt * bt, sizeof *l_mp);
    ws->term_ptrs = calloc(bt, sizeof *ws->term_ptrs);
    ws->l = calloc(6 * bt * bt + bt, sizeof *ws->l);
    if (!x || !terms || !l_mp || !ws->term_ptrs || !ws->l) {
        free(x);
        free(terms);
        free(l_mp);
        ws->x = NULL;
        ws->terms = NULL;
        ws->l_mp = NULL;
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_solve_tril reference: cannot allocate a %zu x %zu workspace", bt, bt);
    }
    ws->x = x;
    ws->terms = terms;
    ws->l_mp = l_mp;
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(ws->l_mp[i], 24);
    ws->abs_l = ws->l + bt * bt;
    ws->abs_x = ws->abs_l + bt * bt;
    ws->delta = ws->abs_x + bt * bt;
    ws->skeel = ws->delta + bt * bt;
    ws->abs_lx = ws->skeel + bt * bt;
    ws->rho = ws->abs_lx + bt * bt;
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(ws->x[i], START_PREC);
    for (size_t i = 0; i < bt; i++) {
        mpfr_init2(ws->terms[i], START_PREC + 64);
        ws->term_ptrs[i] = ws->terms[i];
    }
    return ug_ok();
}

/* X~ at prec bits: X~[i][j] = RN(-sum_{m=j}^{i-1} L[i][m] X~[m][j]), the
 * terms exact (an f32 times a prec-bit value fits in prec + 24 bits). */
static void substitute(workspace *ws, mpfr_prec_t prec)
{
    const size_t bt = ws->bt;
    for (size_t i = 0; i < bt * bt; i++) mpfr_set_prec(ws->x[i], prec);
    for (size_t i = 0; i < bt; i++) mpfr_set_prec(ws->terms[i], prec + 64);
    for (size_t i = 0; i < bt; i++) {
        for (size_t j = i; j < bt; j++) mpfr_set_ui(ws->x[i * bt + j], i == j, MPFR_RNDN);
        for (size_t j = 0; j < i; j++) {
            size_t n = 0;
            for (size_t m = j; m < i; m++) {
                if (ws->l[i * bt + m] == 0) continue; /* a zero term adds nothing */
                mpfr_mul(ws->term_ptrs[n], ws->x[m * bt + j], ws->l_mp[i * bt + m], MPFR_RNDN);
                n++;
            }
            mpfr_sum(ws->x[i * bt + j], ws->term_ptrs, n, MPFR_RNDN);
            mpfr_neg(ws->x[i * bt + j], ws->x[i * bt + j], MPFR_RNDN);
        }
    }
}

double gdn_solve_tril_kappa(size_t bt, const double *abs_l, const double *abs_x)
{
    double norm_t = 0, norm_x = 0;
    for (size_t i = 0; i < bt; i++) {
        double row_t = 1, row_x = 0;
        for (size_t j = 0; j < bt; j++) {
            if (j < i) row_t += abs_l[i * bt + j];
            if (j <= i) row_x += abs_x[i * bt + j];
        }
        norm_t = fmax(norm_t, row_t);
        norm_x = fmax(norm_x, row_x);
    }
    return norm_t * norm_x * UG_F32_SLACK * UG_F32_SLACK;
}

/* delta[i][j] >= |X^ - X| for the kernel's X^ (error model §3): per column j,
 * rho[m] bounds row m's residual, gamma_{m-j} sum_l |L[m][l]| |X^[l][j]| plus
 * underflow, with |X^| <= |X| + delta; then delta[m][j] = sum_p |X[m][p]| rho[p]. */
static void propagate_bound(workspace *ws)
{
    const size_t bt = ws->bt;
    const double *al = ws->abs_l, *ax = ws->abs_x;
    double *delta = ws->delta, *rho = ws->rho;
    for (size_t k = 0; k < bt * bt; k++) delta[k] = 0;
    for (size_t j = 0; j < bt; j++)
        for (size_t m = j + 1; m < bt; m++) {
            double s = 0;
            for (size_t l = j; l < m; l++) s += al[m * bt + l] * (ax[l * bt + j] + delta[l * bt + j]);
            /* L X^ multiplies f32 by f32: a tf32 profile rounds both operands */
            rho[m] = ug_f32_dot_gamma(ws->model, ug_f32_gamma(m - j) * UG_F32_SLACK) * s + (double)(m - j) * ug_f32_underflow(ws->model);
            double d = 0;
            for (size_t p = j + 1; p <= m; p++) d += ax[m * bt + p] * rho[p];
            delta[m * bt + j] = d;
        }
}

/* skeel = |X| |L| |X| (the first-order magnitude of the inverse's error). */
static void skeel_magnitudes(workspace *ws)
{
    const size_t bt = ws->bt;
    double *lx = ws->abs_lx;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            double s = 0;
            for (size_t m = j; m < i; m++) s += ws->abs_l[i * bt + m] * ws->abs_x[m * bt + j];
            lx[i * bt + j] = s;
        }
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            double s = 0;
            for (size_t m = j; m <= i; m++) s += ws->abs_x[i * bt + m] * lx[m * bt + j];
            ws->skeel[i * bt + j] = s;
        }
}

static ug_status reference_chunk(workspace *ws, const gdn_solve_tril_shape *s, const float *l, size_t b,
                                 size_t h, size_t t0, ug_ref_value *out)
{
    const size_t bt = ws->bt;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++)
            ws->l[i * bt + j] = j < i ? (double)l[((b * s->t + t0 + i) * s->h + h) * bt + j] : 0.0;
    for (size_t k = 0; k < bt * bt; k++) mpfr_set_d(ws->l_mp[k], ws->l[k], MPFR_RNDN); /* exact: an f32 */
    double tau = INFINITY;
    for (mpfr_prec_t prec = START_PREC; prec <= MAX_PREC && !(tau <= TAU_LIMIT); prec *= 2) {
        substitute(ws, prec);
        /* Non-finite L entries give non-finite entries of X (MPFR's extended
         * reals: inf * 0 and inf - inf are NaN); they are exact, and only the
         * finite ones need the precision. */
        double max_x = 0;
        for (size_t k = 0; k < bt * bt; k++)
            if (mpfr_number_p(ws->x[k])) max_x = fmax(max_x, fabs(mpfr_get_d(ws->x[k], MPFR_RNDA)));
        const double n_max = ldexp((double)bt * max_x, 1 - (int)prec);
        tau = n_max <= 0.5 ? 2 * n_max * max_x * UG_F32_SLACK : INFINITY;
    }
    if (!(tau <= TAU_LIMIT))
        return ug_fail(UG_EREF, "gdn_solve_tril reference: the inverse of chunk t0=%zu (b=%zu, h=%zu) needs "
                       "more than %d bits", t0, b, h, MAX_PREC);
    for (size_t k = 0; k < bt * bt; k++) {
        ws->abs_l[k] = fabs(ws->l[k]);
        ws->abs_x[k] = k / bt < k % bt ? 0.0 : mpfr_number_p(ws->x[k]) ? fabs(mpfr_get_d(ws->x[k], MPFR_RNDA)) + tau
                                                                        : INFINITY;
    }
    propagate_bound(ws);
    const double kappa = gdn_solve_tril_kappa(bt, ws->abs_l, ws->abs_x);
    skeel_magnitudes(ws);
    mpfr_t zero;
    mpfr_init2(zero, 2);
    mpfr_set_zero(zero, 1);
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            ug_ref_value *o = &out[((b * s->t + t0 + i) * s->h + h) * bt + j];
            if (j > i) {
                ug_ref_finish(o, zero, 0, 0, 0, UG_F32);
                continue;
            }
            const mpfr_ptr x = ws->x[i * bt + j];
            double bound = (ws->delta[i * bt + j] * NESTED_SLACK + tau) * UG_F32_SLACK;
            /* condition max(kappa, 1 + (|X||L||X|)_ij / |X_ij|): see the header */
            const double abs_x = fabs(mpfr_get_d(x, MPFR_RNDA));
            double abs_sum = fmax(kappa * abs_x, abs_x + ws->skeel[i * bt + j] * NESTED_SLACK);
            /* a non-finite L makes 0 * inf in these magnitudes: no bound */
            if (isnan(bound)) bound = INFINITY;
            if (isnan(abs_sum)) abs_sum = INFINITY;
            ug_ref_finish(o, x, bound, abs_sum, 0, UG_F32);
        }
    mpfr_clear(zero);
    return ug_ok();
}

ug_status gdn_solve_tril_reference(const gdn_solve_tril_shape *s, const float *l, const ug_f32_model *model,
                                   ug_ref_mode mode, ug_ref_value *a)
{
    (void)mode; /* no staged cast: both modes are the exact inverse */
    workspace ws = {.model = model};
    UG_TRY(workspace_init(&ws, s->bt));
    ug_status st = ug_ok();
    for (size_t b = 0; b < s->b && ug_is_ok(&st); b++)
        for (size_t h = 0; h < s->h && ug_is_ok(&st); h++)
            for (size_t t0 = 0; t0 < s->t && ug_is_ok(&st); t0 += s->bt)
                st = reference_chunk(&ws, s, l, b, h, t0, a);
    workspace_free(&ws);
    return st;
}
