/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_o.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "round.h"

/* Precisions (bits). A dot product of bf16 vectors is exact at DOT_PREC_MAX:
 * every product is a multiple of 2^-266 below 2^256, and K <= 2^8 terms add 8
 * bits of carry. g_t - g_s of two floats is exact at DIFF_PREC (their
 * exponents lie in [-149, 127]). A term s*x*v of the exact mode (x of
 * UG_REF_PREC + OPERAND_PREC_EXTRA bits times 32 bits) is exact at TERM_PREC. */
enum {
    DOT_PREC_MAX = 560,
    DIFF_PREC = 320,
    OPERAND_PREC_EXTRA = 64,
    TERM_PREC = UG_REF_PREC + OPERAND_PREC_EXTRA + 64,
    EXP_PREC_MAX = 2048,
    CARRY_BITS = 8,       /* log2 of the largest K a dot product may have */
    PRODUCT_BITS = 16,    /* a product of two bf16 significands */
};

double gdn_chunk_o_exp_up(double x) { return exp(x) * UG_F32_SLACK + 0x1p-1074; }

double gdn_chunk_o_product_error(const ug_f32_model *m, double e_up, ug_f32_error exp, double abs_dot,
                                 double abs_terms, size_t n)
{
    /* Dot product: gamma_n relative to the magnitudes, plus one subnormal
     * rounding per term (bf16 x bf16 products are exact in f32 and tf32). */
    double dot_err = ug_f32_gamma(n) * UG_F32_SLACK * abs_terms + (double)n * ug_f32_underflow(m);
    double exp_err = exp.rel == 0 && exp.abs == 0 ? 0 : e_up * exp.rel + exp.abs;
    /* |e^ D^ - e D| <= |e^ - e| |D^| + e |D^ - D|; the product rounds once. */
    double unrounded = exp_err * (abs_dot + dot_err) + e_up * dot_err;
    return (unrounded * (1 + UG_F32_U) + UG_F32_U * e_up * abs_dot + ug_f32_underflow_half(m)) * UG_F32_SLACK;
}

/* ---- exact dot products of bf16 vectors ---------------------------------- */

/* A bf16 vector as integers: x[i] = m[i] * 2^e[i] with |m[i]| < 2^8 (read
 * from the bits: the implicit bit of a normal value, none for a subnormal).
 * min_e and max_e range over the nonzero entries (min_e > max_e when there
 * are none); zero entries carry e = min_e, so no shift below goes negative. */
typedef struct {
    int32_t *m;
    int *e;
    int min_e, max_e;
    const ug_bf16 *src; /* the bf16 entries, read instead where nonfinite */
    size_t stride;
    bool nonfinite;     /* a NaN or +-inf entry: no integer form */
} int_vector;

static void int_vector_set(int_vector *out, const ug_bf16 *x, size_t stride, size_t n)
{
    out->min_e = INT_MAX;
    out->max_e = INT_MIN;
    out->src = x;
    out->stride = stride;
    out->nonfinite = false;
    for (size_t i = 0; i < n; i++) {
        ug_bf16 bits = x[i * stride];
        out->nonfinite |= (bits & 0x7F80) == 0x7F80;
        int biased = bits >> 7 & 0xFF;
        int32_t m = (biased ? 0x80 : 0) | (bits & 0x7F);
        out->m[i] = bits & 0x8000 ? -m : m;
        out->e[i] = (biased ? biased : 1) - 127 - 7;
        if (m == 0) continue;
        if (out->e[i] < out->min_e) out->min_e = out->e[i];
        if (out->e[i] > out->max_e) out->max_e = out->e[i];
    }
    for (size_t i = 0; i < n; i++)
        if (out->m[i] == 0) out->e[i] = out->min_e;
}

typedef __int128 i128;
typedef unsigned __int128 u128;

typedef struct {
    mpfr_t *terms; /* [n] products (exact doubles), for the wide path */
    mpfr_ptr *term_ptrs;
    mpfr_t result, low;
} dot_workspace;

/* sum_i a[i] b[i] over n <= 2^CARRY_BITS terms, exactly, and sum |terms|
 * rounded up. Every product is an integer below 2^16 times 2^(e_a + e_b) >=
 * 2^lo, lo = min_e(a) + min_e(b), so the sum is an integer multiple of 2^lo
 * below 2^(hi + 16 + 8), hi = max_e(a) + max_e(b): it is accumulated exactly
 * in 64- or 128-bit integers when that fits, otherwise (exponents spread over
 * more than 100 bits, never for generated inputs) by mpfr_sum at a precision
 * that holds it. The result lives in dw until the next call. */
static mpfr_srcptr exact_dot(dot_workspace *dw, const int_vector *a, const int_vector *b, size_t n,
                             double *abs_terms)
{
    if (a->nonfinite || b->nonfinite) {
        /* MPFR's extended reals: the binary64 products are exact or NaN/inf
         * as MPFR would form them (0 * inf = NaN), and mpfr_sum propagates. */
        for (size_t i = 0; i < n; i++)
            mpfr_set_d(dw->terms[i], (double)ug_bf16_to_f32(a->src[i * a->stride]) *
                                         (double)ug_bf16_to_f32(b->src[i * b->stride]), MPFR_RNDN);
        *abs_terms = INFINITY;
        mpfr_sum(dw->result, dw->term_ptrs, n, MPFR_RNDN);
        return dw->result;
    }
    if (a->min_e > a->max_e || b->min_e > b->max_e) {
        *abs_terms = 0;
        mpfr_set_zero(dw->result, 1);
        return dw->result;
    }
    const int lo = a->min_e + b->min_e, bits = a->max_e + b->max_e - lo + PRODUCT_BITS + CARRY_BITS;
    if (bits <= 63) {
        int64_t sum = 0, magnitude = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t p = (int64_t)(a->m[i] * b->m[i]) * ((int64_t)1 << (a->e[i] + b->e[i] - lo));
            sum += p;
            magnitude += p < 0 ? -p : p;
        }
        *abs_terms = ldexp((double)magnitude, lo) * UG_F32_SLACK;
        mpfr_set_sj_2exp(dw->result, sum, lo, MPFR_RNDN); /* exact: 64 bits */
        return dw->result;
    }
    if (bits <= 127) {
        i128 sum = 0;
        u128 magnitude = 0;
        for (size_t i = 0; i < n; i++) {
            int32_t m = a->m[i] * b->m[i];
            u128 p = (u128)(uint32_t)(m < 0 ? -m : m) << (a->e[i] + b->e[i] - lo);
            sum += m < 0 ? -(i128)p : (i128)p;
            magnitude += p;
        }
        *abs_terms = ldexp((double)magnitude, lo) * UG_F32_SLACK;
        u128 mag = sum < 0 ? -(u128)sum : (u128)sum;
        mpfr_set_uj_2exp(dw->result, (uintmax_t)(mag >> 64), lo + 64, MPFR_RNDN);
        mpfr_set_uj_2exp(dw->low, (uintmax_t)(uint64_t)mag, lo, MPFR_RNDN);
        mpfr_add(dw->result, dw->result, dw->low, MPFR_RNDN); /* exact: 128 bits */
        if (sum < 0) mpfr_neg(dw->result, dw->result, MPFR_RNDN);
        return dw->result;
    }
    double magnitude = 0;
    for (size_t i = 0; i < n; i++) {
        double p = ldexp((double)(a->m[i] * b->m[i]), a->e[i] + b->e[i]); /* exact */
        magnitude += fabs(p);
        mpfr_set_d(dw->terms[i], p, MPFR_RNDN);
    }
    *abs_terms = magnitude * UG_F32_SLACK;
    mpfr_sum(dw->result, dw->term_ptrs, n, MPFR_RNDN); /* exact at DOT_PREC_MAX */
    return dw->result;
}

/* ---- the reference -------------------------------------------------------- */

typedef struct {
    const gdn_chunk_o_shape *s;
    double scale;
    const ug_bf16 *q, *k, *v, *h;
    const float *g;
    const ug_f32_model *model;
    ug_ref_mode mode;
    ug_ref_value *o;
} args;

/* Everything one chunk needs; the mpfr_t arrays are counted as they are
 * initialised, so a failed allocation frees exactly what exists. */
typedef struct {
    size_t bt, kdim, width;
    /* Integer forms: queries and keys [bt] (K entries), state rows [width]
     * (K entries), the staged attention rows [bt] and the value columns
     * [width] (bt entries each). */
    int_vector *queries, *keys, *state_rows, *attention_rows, *value_cols;
    int32_t *m_store;
    int *e_store;
    ug_bf16 *rounded_row; /* [bt] */
    mpfr_t *x;            /* [bt][bt] attention operands, j <= i */
    ug_staged *staged;    /* [bt][bt] */
    mpfr_t *scaled_v;     /* [bt][width] scale * v (exact) */
    mpfr_t *terms;        /* [bt + 1] */
    mpfr_ptr *term_ptrs;
    mpfr_t *dot_terms; /* [kdim] */
    mpfr_ptr *dot_term_ptrs;
    size_t x_ready, scaled_v_ready, terms_ready, dot_terms_ready;
    mpfr_t diff, e, radius, sum;
    dot_workspace dot;
} workspace;

static void workspace_free(workspace *ws)
{
    for (size_t i = 0; i < ws->x_ready; i++) mpfr_clear(ws->x[i]);
    for (size_t i = 0; i < ws->scaled_v_ready; i++) mpfr_clear(ws->scaled_v[i]);
    for (size_t i = 0; i < ws->terms_ready; i++) mpfr_clear(ws->terms[i]);
    for (size_t i = 0; i < ws->dot_terms_ready; i++) mpfr_clear(ws->dot_terms[i]);
    free(ws->queries);
    free(ws->m_store);
    free(ws->e_store);
    free(ws->rounded_row);
    free(ws->x);
    free(ws->staged);
    free(ws->scaled_v);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->dot_terms);
    free(ws->dot_term_ptrs);
    mpfr_clears(ws->diff, ws->e, ws->radius, ws->sum, ws->dot.result, ws->dot.low, (mpfr_ptr)0);
}

static ug_status workspace_init(workspace *ws, size_t bt, size_t kdim, size_t width)
{
    *ws = (workspace){.bt = bt, .kdim = kdim, .width = width};
    mpfr_inits2(UG_REF_PREC, ws->e, ws->sum, (mpfr_ptr)0);
    mpfr_init2(ws->diff, DIFF_PREC);
    mpfr_init2(ws->radius, 64);
    mpfr_init2(ws->dot.result, DOT_PREC_MAX);
    mpfr_init2(ws->dot.low, 64);
    const size_t long_vectors = 2 * bt + width, short_vectors = bt + width;
    const size_t entries = long_vectors * kdim + short_vectors * bt;
    ws->queries = calloc(long_vectors + short_vectors, sizeof *ws->queries);
    ws->m_store = calloc(entries, sizeof *ws->m_store);
    ws->e_store = calloc(entries, sizeof *ws->e_store);
    ws->rounded_row = calloc(bt, sizeof *ws->rounded_row);
    ws->x = calloc(bt * bt, sizeof *ws->x);
    ws->staged = calloc(bt * bt, sizeof *ws->staged);
    ws->scaled_v = calloc(bt * width, sizeof *ws->scaled_v);
    ws->terms = calloc(bt + 1, sizeof *ws->terms);
    ws->term_ptrs = calloc(bt + 1, sizeof *ws->term_ptrs);
    ws->dot_terms = calloc(kdim, sizeof *ws->dot_terms);
    ws->dot_term_ptrs = calloc(kdim, sizeof *ws->dot_term_ptrs);
    if (!ws->queries || !ws->m_store || !ws->e_store || !ws->rounded_row || !ws->x || !ws->staged ||
        !ws->scaled_v || !ws->terms || !ws->term_ptrs || !ws->dot_terms || !ws->dot_term_ptrs) {
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_chunk_o reference: cannot allocate the workspace of a %zu-row chunk "
                       "(K=%zu, V=%zu)", bt, kdim, width);
    }
    ws->keys = ws->queries + bt;
    ws->state_rows = ws->keys + bt;
    ws->attention_rows = ws->state_rows + width;
    ws->value_cols = ws->attention_rows + bt;
    for (size_t i = 0; i < long_vectors + short_vectors; i++) {
        size_t offset = i < long_vectors ? i * kdim : long_vectors * kdim + (i - long_vectors) * bt;
        ws->queries[i] = (int_vector){ws->m_store + offset, ws->e_store + offset, INT_MAX, INT_MIN, NULL, 0, false};
    }
    for (; ws->x_ready < bt * bt; ws->x_ready++) mpfr_init2(ws->x[ws->x_ready], UG_REF_PREC + OPERAND_PREC_EXTRA);
    for (; ws->scaled_v_ready < bt * width; ws->scaled_v_ready++) mpfr_init2(ws->scaled_v[ws->scaled_v_ready], 53);
    for (; ws->terms_ready <= bt; ws->terms_ready++) {
        mpfr_init2(ws->terms[ws->terms_ready], TERM_PREC);
        ws->term_ptrs[ws->terms_ready] = ws->terms[ws->terms_ready];
    }
    for (; ws->dot_terms_ready < kdim; ws->dot_terms_ready++) {
        mpfr_init2(ws->dot_terms[ws->dot_terms_ready], 53);
        ws->dot_term_ptrs[ws->dot_terms_ready] = ws->dot_terms[ws->dot_terms_ready];
    }
    ws->dot.terms = ws->dot_terms;
    ws->dot.term_ptrs = ws->dot_term_ptrs;
    return ug_ok();
}

static size_t at4(const gdn_chunk_o_shape *s, size_t b, size_t t, size_t heads, size_t head, size_t width)
{
    return ((b * s->t + t) * heads + head) * width;
}

static float gate(const args *a, size_t b, size_t t, size_t head)
{
    return a->g[(b * a->s->t + t) * a->s->h + head];
}

/* The attention operand x = exp(g_t - g_s) * (q_t . k_s) of chunk rows
 * i >= j, its correct rounding made certain despite exp's rounding (Ziv:
 * retry with more bits), and its staged analysis with the kernel's pre-cast
 * window. */
static ug_status attention_operand(workspace *ws, const args *a, size_t b, size_t head, size_t t0,
                                   size_t i, size_t j)
{
    double abs_terms;
    mpfr_srcptr dot = exact_dot(&ws->dot, &ws->queries[i], &ws->keys[j], ws->kdim, &abs_terms);
    mpfr_ptr x = ws->x[i * ws->bt + j];
    const float g_t = gate(a, b, t0 + i, head), g_s = gate(a, b, t0 + j, head);
    mpfr_set_flt(ws->diff, g_t, MPFR_RNDN);
    mpfr_sub_d(ws->diff, ws->diff, (double)g_s, MPFR_RNDN); /* exact at DIFF_PREC */
    /* Equal gates: exp(0) = 1 and x = q.k exactly; a zero dot: x = 0. A
     * non-finite gate makes exp(g_t - g_s) 0, inf or NaN, exact in MPFR's
     * extended reals, and so x (inf * 0 = NaN included). */
    const bool finite_gates = isfinite(g_t) && isfinite(g_s);
    const bool unit_decay = finite_gates && g_t == g_s, exact = unit_decay || (finite_gates && mpfr_zero_p(dot));
    for (mpfr_prec_t prec = UG_REF_PREC;; prec *= 4) {
        if (exact) {
            mpfr_set_prec(x, mpfr_get_prec(dot));
            mpfr_set(x, dot, MPFR_RNDN);
            break;
        }
        mpfr_set_prec(x, prec + OPERAND_PREC_EXTRA);
        mpfr_set_prec(ws->e, prec);
        mpfr_clear_underflow();
        mpfr_exp(ws->e, ws->diff, MPFR_RNDN);
        mpfr_mul(x, ws->e, dot, MPFR_RNDN); /* within 2^(1-prec) relative of the true x */
        /* Below MPFR's exponent range (|x| < 2^-2^30) x is 0 to any format;
         * beyond it, +inf: both exact for the cast, as a non-finite gate's x. */
        if (mpfr_underflow_p()) mpfr_set_zero(x, mpfr_sgn(dot));
        if (!finite_gates || !mpfr_regular_p(x)) break;
        mpfr_abs(ws->radius, x, MPFR_RNDU);
        mpfr_mul_2si(ws->radius, ws->radius, 1 - (long)prec, MPFR_RNDU);
        uint16_t lo, hi;
        ug_mpfr_bf16_window(x, ws->radius, &lo, &hi);
        if (lo == hi) break;
        if (prec >= EXP_PREC_MAX)
            return ug_fail(UG_EREF, "gdn_chunk_o reference: cannot round exp(%a - %a) * q.k to bf16 with %d bits",
                           (double)g_t, (double)g_s, EXP_PREC_MAX);
    }
    double e_up = unit_decay ? 1.0 : gdn_chunk_o_exp_up(mpfr_get_d(ws->diff, MPFR_RNDU));
    double abs_dot = fabs(mpfr_get_d(dot, MPFR_RNDA));
    mpfr_set_d(ws->radius,
               finite_gates ? gdn_chunk_o_product_error(a->model, e_up, ug_f32_exp_of_rounded(a->model, mpfr_get_d(ws->diff, MPFR_RNDA)),
                                                        abs_dot, abs_terms, ws->kdim)
                            : 0.0, /* x is 0, +-inf or NaN: its own cast */
               MPFR_RNDU);
    ug_staged *st = &ws->staged[i * ws->bt + j];
    ug_stage_operand(x, ws->radius, st);
    if (!exact && mpfr_number_p(x)) st->dev += fabs(mpfr_get_d(x, MPFR_RNDA)) * 0x1p-126; /* x's own rounding */
    return ug_ok();
}

/* Magnitudes of one element's attention terms j <= i (for the bound and the
 * condition number), in the mode's operands. */
typedef struct {
    double abs_sum, acc_mag, cast_err;
    uint32_t flagged;
} attention_magnitudes;

static attention_magnitudes attention_sums(const workspace *ws, ug_ref_mode mode, size_t i, size_t col)
{
    attention_magnitudes m = {0, 0, 0, 0};
    for (size_t j = 0; j <= i; j++) {
        const ug_staged *st = &ws->staged[i * ws->bt + j];
        double abs_v = fabs(ldexp((double)ws->value_cols[col].m[j], ws->value_cols[col].e[j]));
        if (mode == UG_REF_EXACT) {
            m.abs_sum += st->abs_x * abs_v;
            m.cast_err += st->dev * abs_v;
        } else {
            m.abs_sum += fabs((double)ug_bf16_to_f32(st->rn)) * abs_v;
            m.cast_err += st->gap * abs_v;
        }
        m.acc_mag += st->mag * abs_v;
        m.flagged += st->flagged;
    }
    return m;
}

/* Every output element of chunk row i (token t0 + i):
 * r = scale * (exp(g_t) q_t.h[v] + sum_{j<=i} Q_ij v_j), Q_ij the exact
 * operand (exact mode) or its RN_bf16 (staged mode: then the attention sum is
 * an exact bf16 dot product). */
static void output_row(workspace *ws, const args *a, size_t b, size_t head, size_t t0, size_t i)
{
    const gdn_chunk_o_shape *s = a->s;
    const size_t bt = ws->bt, n_terms = i + 2; /* the state term and the attention terms j <= i */
    const double abs_scale = fabs(a->scale), gamma = ug_f32_gamma(n_terms) * UG_F32_SLACK;
    /* exp(g_t) is exact (1) at g_t == 0, where the profile may declare expf
     * exact too. */
    const float g_t = gate(a, b, t0 + i, head);
    mpfr_set_prec(ws->e, UG_REF_PREC);
    mpfr_set_flt(ws->e, g_t, MPFR_RNDN);
    mpfr_exp(ws->e, ws->e, MPFR_RNDN);
    const double e_up = g_t == 0 ? 1.0 : gdn_chunk_o_exp_up((double)g_t);
    const ug_f32_error exp_err = ug_f32_op_error(a->model, UG_F32_EXP, g_t, g_t);
    if (a->mode == UG_REF_STAGED) {
        for (size_t j = 0; j < bt; j++) ws->rounded_row[j] = j <= i ? ws->staged[i * bt + j].rn : 0;
        int_vector_set(&ws->attention_rows[i], ws->rounded_row, 1, bt);
    }
    for (size_t col = 0; col < s->v; col++) {
        double abs_state_terms;
        mpfr_srcptr dot = exact_dot(&ws->dot, &ws->queries[i], &ws->state_rows[col], ws->kdim, &abs_state_terms);
        mpfr_mul(ws->terms[0], ws->e, dot, MPFR_RNDN);
        mpfr_mul_d(ws->terms[0], ws->terms[0], a->scale, MPFR_RNDN);
        double abs_dot = fabs(mpfr_get_d(dot, MPFR_RNDA));
        double err_p = gdn_chunk_o_product_error(a->model, e_up, exp_err, abs_dot, abs_state_terms, ws->kdim);
        attention_magnitudes m = attention_sums(ws, a->mode, i, col);
        size_t summed = n_terms;
        if (a->mode == UG_REF_EXACT) {
            for (size_t j = 0; j <= i; j++)
                mpfr_mul(ws->terms[j + 1], ws->x[i * bt + j], ws->scaled_v[j * ws->width + col], MPFR_RNDN);
        } else {
            double abs_terms;
            mpfr_srcptr attention = exact_dot(&ws->dot, &ws->attention_rows[i], &ws->value_cols[col], bt, &abs_terms);
            mpfr_mul_d(ws->terms[1], attention, a->scale, MPFR_RNDN);
            summed = 2;
        }
        mpfr_sum(ws->sum, ws->term_ptrs, summed, MPFR_RNDN);
        double abs_sum = e_up * abs_state_terms + m.abs_sum, acc_mag = e_up * abs_dot + err_p + m.acc_mag;
        double bound = abs_scale * (gamma * acc_mag + err_p + m.cast_err) * UG_F32_SLACK +
                       (double)(n_terms + 2) * ug_f32_underflow(a->model);
        ug_ref_finish(&a->o[at4(s, b, t0 + i, s->h, head, s->v) + col], ws->sum, bound,
                      abs_scale * abs_sum * UG_F32_SLACK, m.flagged, UG_BF16);
    }
}

static ug_status reference_chunk(workspace *ws, const args *a, size_t b, size_t head, size_t c)
{
    const gdn_chunk_o_shape *s = a->s;
    const size_t bt = ws->bt, t0 = c * bt, kh = head / (s->h / s->hg);
    const ug_bf16 *state = a->h + ((b * (s->t / bt) + c) * s->h + head) * s->v * s->k;
    for (size_t i = 0; i < bt; i++) {
        int_vector_set(&ws->queries[i], a->q + at4(s, b, t0 + i, s->hg, kh, s->k), 1, s->k);
        int_vector_set(&ws->keys[i], a->k + at4(s, b, t0 + i, s->hg, kh, s->k), 1, s->k);
    }
    for (size_t col = 0; col < s->v; col++) {
        int_vector_set(&ws->state_rows[col], state + col * s->k, 1, s->k);
        int_vector_set(&ws->value_cols[col], a->v + at4(s, b, t0, s->h, head, s->v) + col, s->h * s->v, bt);
    }
    if (a->mode == UG_REF_EXACT)
        for (size_t j = 0; j < bt; j++)
            for (size_t col = 0; col < s->v; col++) /* f32 x bf16: exact */
                mpfr_set_d(ws->scaled_v[j * s->v + col],
                           a->scale * ug_bf16_to_f32(a->v[at4(s, b, t0 + j, s->h, head, s->v) + col]), MPFR_RNDN);
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j <= i; j++) UG_TRY(attention_operand(ws, a, b, head, t0, i, j));
    for (size_t i = 0; i < bt; i++) output_row(ws, a, b, head, t0, i);
    return ug_ok();
}

ug_status gdn_chunk_o_reference(const gdn_chunk_o_shape *s, float scale, const ug_bf16 *q,
                                const ug_bf16 *k, const ug_bf16 *v, const ug_bf16 *h,
                                const float *g, const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *o)
{
    if (s->k > (size_t)1 << CARRY_BITS)
        return ug_fail(UG_EREF, "gdn_chunk_o reference: K (%zu) exceeds the %d terms an exact dot product "
                       "is sized for", s->k, 1 << CARRY_BITS);
    const args a = {s, scale, q, k, v, h, g, model, mode, o};
    workspace ws;
    UG_TRY(workspace_init(&ws, s->bt, s->k, s->v));
    ug_status st = ug_ok();
    for (size_t b = 0; b < s->b && ug_is_ok(&st); b++)
        for (size_t head = 0; head < s->h && ug_is_ok(&st); head++)
            for (size_t c = 0; c < s->t / s->bt && ug_is_ok(&st); c++) st = reference_chunk(&ws, &a, b, head, c);
    workspace_free(&ws);
    return st;
}
