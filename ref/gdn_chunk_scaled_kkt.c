/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_scaled_kkt.h"

#include <math.h>
#include <stdlib.h>

#include "exact_sum.h"
#include "f32_model.h"

/* An f32 difference of two f32 values is exact at 300 bits. */
enum { DIFF_PREC = 300 };

typedef struct {
    const gdn_chunk_scaled_kkt_shape *s;
    size_t bt;
    mpfr_t *dot;        /* [BT][BT], i > j: k_i . k_j correctly rounded to UG_REF_PREC */
    double *abs_dot;    /* [BT][BT]: sum |k_i[d] k_j[d]|, rounded up */
    size_t *nonzero;    /* [BT][BT]: nonzero products (zero ones add exactly nothing) */
    mpfr_t *terms;      /* [K] */
    mpfr_ptr *term_ptrs;
    double *products;   /* [K] one dot product's nonzero terms */
    ug_xsum acc;        /* their exact sum (fast path) */
    mpz_t scratch;
    mpfr_t diff, e, l;
} workspace;

static void workspace_free(workspace *ws)
{
    const size_t bt = ws->bt;
    if (ws->dot)
        for (size_t i = 0; i < bt * bt; i++) mpfr_clear(ws->dot[i]);
    if (ws->terms)
        for (size_t d = 0; d < ws->s->k; d++) mpfr_clear(ws->terms[d]);
    free(ws->dot);
    free(ws->abs_dot);
    free(ws->nonzero);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->products);
    mpz_clear(ws->scratch);
    mpfr_clears(ws->diff, ws->e, ws->l, (mpfr_ptr)0);
}

static ug_status workspace_init(workspace *ws, const gdn_chunk_scaled_kkt_shape *s)
{
    const size_t bt = s->bt;
    ws->s = s;
    ws->bt = bt;
    mpfr_init2(ws->diff, DIFF_PREC);
    mpfr_inits2(UG_REF_PREC, ws->e, ws->l, (mpfr_ptr)0);
    mpfr_t *dot = calloc(bt * bt, sizeof *dot), *terms = calloc(s->k, sizeof *terms);
    ws->abs_dot = calloc(bt * bt, sizeof *ws->abs_dot);
    ws->nonzero = calloc(bt * bt, sizeof *ws->nonzero);
    ws->term_ptrs = calloc(s->k, sizeof *ws->term_ptrs);
    ws->products = calloc(s->k, sizeof *ws->products);
    mpz_init(ws->scratch);
    ug_xsum_init(&ws->acc);
    if (!dot || !terms || !ws->abs_dot || !ws->nonzero || !ws->term_ptrs || !ws->products) {
        free(dot);
        free(terms);
        ws->dot = NULL;
        ws->terms = NULL;
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_chunk_scaled_kkt reference: cannot allocate a %zu x %zu workspace", bt, bt);
    }
    ws->dot = dot;
    ws->terms = terms;
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(ws->dot[i], UG_REF_PREC);
    for (size_t d = 0; d < s->k; d++) {
        mpfr_init2(ws->terms[d], 53); /* a product of two bf16 is exact in 16 bits */
        ws->term_ptrs[d] = ws->terms[d];
    }
    return ug_ok();
}

/* The Gram matrix of key head kh's chunk starting at t0 (below the diagonal). */
static void chunk_dots(workspace *ws, const ug_bf16 *k, size_t b, size_t kh, size_t t0)
{
    const gdn_chunk_scaled_kkt_shape *s = ws->s;
    const size_t bt = ws->bt, dim = s->k;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < i; j++) {
            const ug_bf16 *ki = k + ((b * s->t + t0 + i) * s->hg + kh) * dim;
            const ug_bf16 *kj = k + ((b * s->t + t0 + j) * s->hg + kh) * dim;
            double abs_dot = 0;
            size_t n = 0;
            bool finite = true;
            for (size_t d = 0; d < dim; d++) {
                double product = (double)ug_bf16_to_f32(ki[d]) * ug_bf16_to_f32(kj[d]); /* exact */
                if (product == 0) continue;
                ws->products[n++] = product;
                abs_dot += fabs(product);
                finite &= isfinite(product) != 0;
            }
            /* Both paths round the exact sum once to UG_REF_PREC bits (the
             * fast one: bf16 products lie far inside the accumulator's range). */
            if (ug_ref_fast() && finite) {
                ug_xsum_clear(&ws->acc);
                for (size_t m = 0; m < n; m++) ug_xsum_add_double(&ws->acc, ws->products[m]);
                ug_xsum_get_mpfr(&ws->acc, ws->dot[i * bt + j], ws->scratch);
            } else {
                for (size_t m = 0; m < n; m++) mpfr_set_d(ws->terms[m], ws->products[m], MPFR_RNDN);
                mpfr_sum(ws->dot[i * bt + j], ws->term_ptrs, n, MPFR_RNDN);
            }
            ws->nonzero[i * bt + j] = n;
            /* <= 256 nonnegative terms in binary64: relative error < 2^-44. */
            ws->abs_dot[i * bt + j] = abs_dot * UG_F32_SLACK;
        }
}

/* Bound on |y - L| before the kernel's last rounding (see the error model):
 * y = fl(a b) c for {a, b, c} = {beta, e_hat, dot_hat} in any order; the dot
 * product has n nonzero terms, so n - 1 roundings after its first product. */
static double pre_round_bound(const ug_f32_model *m, double beta, double e, ug_f32_error exp, double abs_dot,
                              size_t n)
{
    const double gamma = ug_f32_gamma(n ? n - 1 : 0) * UG_F32_SLACK; /* bf16 x bf16 products: exact, tf32 or not */
    const double dot_err = gamma * abs_dot + n * ug_f32_underflow(m);   /* |dot_hat - dot| */
    const double dot_up = abs_dot + dot_err;                           /* >= |dot_hat| */
    const double e_err = ug_f32_error_at(exp, e);                      /* |e_hat - e| */
    const double e_up = e + e_err;                                     /* >= e_hat */
    const double first_rounding =
        UG_F32_U * beta * e_up * dot_up + ug_f32_underflow_half(m) * (beta + e_up + dot_up);
    return (first_rounding + beta * (e_err * dot_up + e * dot_err)) * UG_F32_SLACK;
}

static void scale_chunk(workspace *ws, const ug_f32_model *model, const float *beta, const float *g, size_t b, size_t h, size_t t0,
                        ug_ref_value *out)
{
    const gdn_chunk_scaled_kkt_shape *s = ws->s;
    const size_t bt = ws->bt;
    for (size_t i = 0; i < bt; i++) {
        const size_t row = (b * s->t + t0 + i) * s->h + h;
        for (size_t j = 0; j < bt; j++) {
            ug_ref_value *o = &out[row * bt + j];
            if (j >= i) {
                mpfr_set_zero(ws->l, 1);
                ug_ref_finish(o, ws->l, 0, 0, 0, UG_F32);
                continue;
            }
            const size_t col = (b * s->t + t0 + j) * s->h + h;
            mpfr_set_flt(ws->diff, g[row], MPFR_RNDN);
            mpfr_sub_d(ws->diff, ws->diff, g[col], MPFR_RNDN); /* exact */
            mpfr_exp(ws->e, ws->diff, MPFR_RNDN);
            mpfr_mul(ws->l, ws->e, ws->dot[i * bt + j], MPFR_RNDN);
            mpfr_mul_d(ws->l, ws->l, beta[row], MPFR_RNDN);
            const double abs_beta = fabs((double)beta[row]), e = mpfr_get_d(ws->e, MPFR_RNDU);
            const ug_f32_error exp = ug_f32_exp_of_difference(model, g[row], g[col]);
            const double abs_dot = ws->abs_dot[i * bt + j];
            ug_ref_finish(o, ws->l, pre_round_bound(model, abs_beta, e, exp, abs_dot, ws->nonzero[i * bt + j]),
                          abs_beta * e * abs_dot * UG_F32_SLACK, 0, UG_F32);
        }
    }
}

ug_status gdn_chunk_scaled_kkt_reference(const gdn_chunk_scaled_kkt_shape *s, const ug_bf16 *k,
                                         const float *beta, const float *g, const ug_f32_model *model,
                                         ug_ref_mode mode, ug_ref_value *l)
{
    (void)mode; /* no staged cast: both modes are the exact function */
    workspace ws = {0};
    UG_TRY(workspace_init(&ws, s));
    const size_t group = s->h / s->hg;
    for (size_t b = 0; b < s->b; b++)
        for (size_t kh = 0; kh < s->hg; kh++)
            for (size_t t0 = 0; t0 < s->t; t0 += s->bt) {
                chunk_dots(&ws, k, b, kh, t0);
                for (size_t h = kh * group; h < (kh + 1) * group; h++) scale_chunk(&ws, model, beta, g, b, h, t0, l);
            }
    workspace_free(&ws);
    return ug_ok();
}
