/* SPDX-License-Identifier: MIT */
#include "gdn_e2e.h"

#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

/* The state is kept as S = c * Ŝ: the decay exp(g_t) multiplies the scalar
 * c (one operation per token) instead of all K*V entries, and the update
 * adds k (d / c)ᵀ to Ŝ. When c leaves [2^-RESCALE_EXP, 2^RESCALE_EXP] (or
 * underflows MPFR's exponent range) it is folded back into Ŝ, so Ŝ stays
 * within a factor 2^RESCALE_EXP of S and its magnitudes convert to binary64. */
enum { RESCALE_EXP = 200, BF16_PREC = 8 };

typedef struct {
    const gdn_e2e_shape *s;
    size_t b, h, key_head;
    mpfr_t *state;          /* Ŝ, [V][K]: column v contiguous over k */
    mpfr_t *key, *query;    /* the token's k_t and q_t, exact at 8 bits */
    double *key_abs;        /* |k_t| */
    mpfr_t *d;              /* [V]: beta (v - Sᵀk), then d / c */
    mpfr_t *products;       /* [K]: the exact terms of one dot product */
    mpfr_ptr *product_ptrs;
    double *d_abs;          /* [V]: |beta (v - Sᵀk)| */
    double *decayed_abs;    /* [V][K]: |exp(g_T) S_{T-1}| (last token only) */
    mpfr_t c, gate, product, acc, abs_acc, scale;
} workspace;

float gdn_e2e_reference_scale(size_t k)
{
    mpfr_t x;
    mpfr_init2(x, 24);
    mpfr_set_ui(x, (unsigned long)k, MPFR_RNDN); /* exact: K < 2^24 */
    mpfr_rec_sqrt(x, x, MPFR_RNDN);              /* correctly rounded to 24 bits: RN_f32 in the normal range */
    float out = mpfr_get_flt(x, MPFR_RNDN);
    mpfr_clear(x);
    return out;
}

static void init_array(mpfr_t *a, size_t n, mpfr_prec_t prec)
{
    for (size_t i = 0; i < n; i++) mpfr_init2(a[i], prec);
}

static void clear_array(mpfr_t *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) mpfr_clear(a[i]);
    free(a);
}

static ug_status workspace_open(workspace *w, const gdn_e2e_shape *s, mpfr_prec_t prec, float scale)
{
    const size_t kv = s->k * s->v;
    *w = (workspace){.s = s};
    w->state = malloc(kv * sizeof *w->state);
    w->key = malloc(s->k * sizeof *w->key);
    w->query = malloc(s->k * sizeof *w->query);
    w->d = malloc(s->v * sizeof *w->d);
    w->key_abs = malloc(s->k * sizeof *w->key_abs);
    w->d_abs = malloc(s->v * sizeof *w->d_abs);
    w->decayed_abs = malloc(kv * sizeof *w->decayed_abs);
    w->products = malloc(s->k * sizeof *w->products);
    w->product_ptrs = malloc(s->k * sizeof *w->product_ptrs);
    if (!w->state || !w->key || !w->query || !w->d || !w->key_abs || !w->d_abs ||
        !w->decayed_abs || !w->products || !w->product_ptrs) {
        free(w->state), free(w->key), free(w->query), free(w->d);
        free(w->key_abs), free(w->d_abs), free(w->decayed_abs);
        free(w->products), free(w->product_ptrs);
        return ug_fail(UG_ENOMEM, "gdn_e2e reference: out of memory (K=%zu, V=%zu)", s->k, s->v);
    }
    init_array(w->state, kv, prec);
    init_array(w->key, s->k, BF16_PREC);
    init_array(w->query, s->k, BF16_PREC);
    init_array(w->d, s->v, prec);
    /* a bf16 times a prec-bit value, exactly */
    init_array(w->products, s->k, prec + BF16_PREC);
    for (size_t kk = 0; kk < s->k; kk++) w->product_ptrs[kk] = w->products[kk];
    mpfr_inits2(prec, w->c, w->gate, w->acc, w->abs_acc, w->scale, (mpfr_ptr)0);
    mpfr_init2(w->product, prec + BF16_PREC);
    mpfr_set_flt(w->scale, scale, MPFR_RNDN);  /* exact */
    return ug_ok();
}

static void workspace_close(workspace *w)
{
    const size_t kv = w->s->k * w->s->v;
    clear_array(w->state, kv);
    clear_array(w->key, w->s->k);
    clear_array(w->query, w->s->k);
    clear_array(w->d, w->s->v);
    clear_array(w->products, w->s->k);
    free(w->product_ptrs);
    free(w->key_abs), free(w->d_abs), free(w->decayed_abs);
    mpfr_clears(w->c, w->gate, w->product, w->acc, w->abs_acc, w->scale, (mpfr_ptr)0);
}

/* [B,T,heads,width] row start, [B,T,H] element. */
static size_t row4(const gdn_e2e_shape *s, size_t b, size_t t, size_t heads, size_t head, size_t width)
{
    return ((b * s->t + t) * heads + head) * width;
}
static size_t at3(const gdn_e2e_shape *s, size_t b, size_t t, size_t h) { return (b * s->t + t) * s->h + h; }

/* |x| * c as a binary64 (x an entry of Ŝ): through mantissa and exponent,
 * so a huge Ŝ times a tiny c does not overflow on the way. */
static double times_c_abs(const workspace *w, mpfr_srcptr x)
{
    if (mpfr_zero_p(x)) return 0.0;
    long ex, ec;
    double mx = mpfr_get_d_2exp(&ex, x, MPFR_RNDA), mc = mpfr_get_d_2exp(&ec, w->c, MPFR_RNDA);
    return ldexp(fabs(mx) * mc, (int)(ex + ec));
}

static void head_start(workspace *w, const float *h0)
{
    const gdn_e2e_shape *s = w->s;
    mpfr_set_ui(w->c, 1, MPFR_RNDN);
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++) {
            mpfr_ptr x = w->state[vv * s->k + kk];
            if (h0)
                mpfr_set_flt(x, h0[((w->b * s->h + w->h) * s->k + kk) * s->v + vv], MPFR_RNDN);
            else
                mpfr_set_zero(x, 1);
        }
}

/* c <- c exp(g); folded into Ŝ when it leaves [2^-RESCALE_EXP, 2^RESCALE_EXP]. */
static void decay(workspace *w, float g)
{
    mpfr_set_flt(w->gate, g, MPFR_RNDN);
    mpfr_exp(w->gate, w->gate, MPFR_RNDN);
    mpfr_mul(w->c, w->c, w->gate, MPFR_RNDN);
    if (!mpfr_zero_p(w->c) && labs((long)mpfr_get_exp(w->c)) <= RESCALE_EXP) return;
    const size_t kv = w->s->k * w->s->v;
    for (size_t i = 0; i < kv; i++) mpfr_mul(w->state[i], w->state[i], w->c, MPFR_RNDN);
    mpfr_set_ui(w->c, 1, MPFR_RNDN);
}

static void load_token_vectors(workspace *w, const ug_bf16 *q_row, const ug_bf16 *k_row)
{
    for (size_t kk = 0; kk < w->s->k; kk++) {
        const float kx = ug_bf16_to_f32(k_row[kk]), qx = ug_bf16_to_f32(q_row[kk]);
        mpfr_set_flt(w->key[kk], kx, MPFR_RNDN); /* exact: 8 significant bits */
        mpfr_set_flt(w->query[kk], qx, MPFR_RNDN);
        w->key_abs[kk] = fabs(kx);
    }
}

/* acc = sum_k x[k] Ŝ[v][k], correctly rounded: exact products, one mpfr_sum.
 * The products stay in w->products for the magnitude sum. */
static void dot_column(workspace *w, const mpfr_t *x, size_t vv)
{
    const mpfr_t *column = w->state + vv * w->s->k;
    for (size_t kk = 0; kk < w->s->k; kk++) mpfr_mul(w->products[kk], x[kk], column[kk], MPFR_RNDN);
    mpfr_sum(w->acc, w->product_ptrs, w->s->k, MPFR_RNDN);
}

/* sum_k |products[k]|, rounded up (after dot_column; the products lose their signs). */
static double abs_products(workspace *w)
{
    for (size_t kk = 0; kk < w->s->k; kk++) mpfr_abs(w->products[kk], w->products[kk], MPFR_RNDN);
    mpfr_sum(w->abs_acc, w->product_ptrs, w->s->k, MPFR_RNDU);
    return mpfr_get_d(w->abs_acc, MPFR_RNDU);
}

/* One token: decay, delta-rule update, output; the last token also records
 * the magnitude of its decayed state for final_state's abs_sum. */
static void token(workspace *w, size_t t, const ug_bf16 *q, const ug_bf16 *k, const ug_bf16 *v, const float *beta,
                  const float *g_raw, ug_ref_value *o)
{
    const gdn_e2e_shape *s = w->s;
    const size_t dk = s->k, dv = s->v;
    const bool last = t + 1 == s->t;
    decay(w, g_raw[at3(s, w->b, t, w->h)]);
    load_token_vectors(w, q + row4(s, w->b, t, s->hg, w->key_head, dk), k + row4(s, w->b, t, s->hg, w->key_head, dk));
    const ug_bf16 *v_row = v + row4(s, w->b, t, s->h, w->h, dv);
    const double beta_t = beta[at3(s, w->b, t, w->h)];
    for (size_t vv = 0; vv < dv; vv++) {
        dot_column(w, w->key, vv);
        mpfr_mul(w->acc, w->acc, w->c, MPFR_RNDN);                              /* (Sᵀk)_v of exp(g) S */
        mpfr_d_sub(w->d[vv], (double)ug_bf16_to_f32(v_row[vv]), w->acc, MPFR_RNDN); /* v - Sᵀk */
        mpfr_mul_d(w->d[vv], w->d[vv], beta_t, MPFR_RNDN);
        w->d_abs[vv] = fabs(mpfr_get_d(w->d[vv], MPFR_RNDA));
        mpfr_div(w->d[vv], w->d[vv], w->c, MPFR_RNDN);                          /* Ŝ moves by k (d / c)ᵀ */
        if (last)
            for (size_t kk = 0; kk < dk; kk++) w->decayed_abs[vv * dk + kk] = times_c_abs(w, w->state[vv * dk + kk]);
    }
    for (size_t vv = 0; vv < dv; vv++)
        for (size_t kk = 0; kk < dk; kk++) {
            mpfr_mul(w->product, w->key[kk], w->d[vv], MPFR_RNDN);
            mpfr_add(w->state[vv * dk + kk], w->state[vv * dk + kk], w->product, MPFR_RNDN);
        }
    ug_ref_value *o_row = o + row4(s, w->b, t, s->h, w->h, dv);
    const double scale_abs = fabs(mpfr_get_d(w->scale, MPFR_RNDA)), c_abs = mpfr_get_d(w->c, MPFR_RNDA);
    for (size_t vv = 0; vv < dv; vv++) {
        dot_column(w, w->query, vv);
        const double abs_sum = abs_products(w) * c_abs;
        mpfr_mul(w->acc, w->acc, w->c, MPFR_RNDN);
        mpfr_mul(w->acc, w->acc, w->scale, MPFR_RNDN);
        ug_ref_finish(&o_row[vv], w->acc, INFINITY, scale_abs * abs_sum, 0, UG_BF16);
        o_row[vv].no_bound = false; /* +inf by design, not from the profile (see the header) */
    }
}

/* final_state[b,h] = c Ŝ, [K][V]. */
static void finish_head(workspace *w, ug_ref_value *final_state)
{
    const gdn_e2e_shape *s = w->s;
    ug_ref_value *out = final_state + (w->b * s->h + w->h) * s->k * s->v;
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++) {
            mpfr_mul(w->acc, w->state[vv * s->k + kk], w->c, MPFR_RNDN);
            double abs_sum = w->decayed_abs[vv * s->k + kk] + w->key_abs[kk] * w->d_abs[vv];
            ug_ref_finish(&out[kk * s->v + vv], w->acc, INFINITY, abs_sum, 0, UG_F32);
            out[kk * s->v + vv].no_bound = false; /* +inf by design, not from the profile */
        }
}

ug_status gdn_e2e_reference(const gdn_e2e_shape *s, mpfr_prec_t prec, float scale, const ug_bf16 *q,
                            const ug_bf16 *k, const ug_bf16 *v, const float *beta, const float *g_raw,
                            const float *h0, ug_ref_value *o, ug_ref_value *final_state)
{
    workspace w;
    UG_TRY(workspace_open(&w, s, prec, scale));
    for (w.b = 0; w.b < s->b; w.b++)
        for (w.h = 0; w.h < s->h; w.h++) {
            w.key_head = w.h / (s->h / s->hg);
            head_start(&w, s->has_h0 ? h0 : NULL);
            for (size_t t = 0; t < s->t; t++) token(&w, t, q, k, v, beta, g_raw, o);
            finish_head(&w, final_state);
        }
    workspace_close(&w);
    return ug_ok();
}
