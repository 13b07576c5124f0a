/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_scaled_kkt.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exact_sum.h"
#include "f32_model.h"
#include "gdn_fast.h"
#include "rowsimd.h"

/* An f32 difference of two f32 values is exact at 300 bits. The fast path
 * takes gates with |g| <= GATE_MAX (exp(g) and every L within 2^+-4500, far
 * inside MPFR's exponent range and int's), and key vectors whose entries,
 * as integers on the vector's lowest exponent, keep below 2^VECTOR_BITS. */
enum { DIFF_PREC = 300, GATE_MAX = 1400, VECTOR_BITS = 60 };

/* The fast path's k_i . k_j: RN_128 of the exact dot product, as the MPFR
 * path's mpfr_sum gives it (zero: +0, as mpfr_sum of nonzero terms). */
typedef struct {
    bool on;        /* finite and known: the pair may take the fast path */
    bool in_mpfr;   /* dot[i][j] holds the value (else the MPFR path sets it from here) */
    bool neg, zero;
    ug_u128 m;
    int e;
} fast_dot;

/* Key vector i of a chunk as integers: k_i[d] = k_int[i][d]·2^lo[i]. */
typedef struct {
    bool on;            /* finite, and every entry below 2^VECTOR_BITS */
    int lo, bits;       /* bits: a bound on the entries' bit lengths (0: all zero) */
} int_key;

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
    ug_ref_value zero;  /* the value of every element with j >= i */
    /* The fast path (docs/error-model.md §2.1). */
    bool simd;               /* the integer dot products on AVX-512 */
    size_t mask_words;       /* 64-bit words of a nonzero mask */
    int64_t *k_int;          /* [BT][K] */
    uint64_t *k_nonzero;     /* [BT][mask_words]: bit d set when k_i[d] != 0 */
    int_key *keys;           /* [BT] */
    fast_dot *fdot;          /* [BT][BT], i > j */
    ug_gdn_exp256 *gate_exp; /* [2 BT]: exp(g_t), then exp(-g_t) */
    bool *gate_on;           /* [BT]: |g_t| <= GATE_MAX and both exps regular */
    mpfr_t wide;             /* 256 bits: ug_gdn_exp_wide's */
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
    free(ws->k_int);
    free(ws->k_nonzero);
    free(ws->keys);
    free(ws->fdot);
    free(ws->gate_exp);
    free(ws->gate_on);
    mpz_clear(ws->scratch);
    mpfr_clears(ws->diff, ws->e, ws->l, ws->wide, (mpfr_ptr)0);
}

static ug_status workspace_init(workspace *ws, const gdn_chunk_scaled_kkt_shape *s)
{
    const size_t bt = s->bt;
    ws->s = s;
    ws->bt = bt;
    mpfr_init2(ws->diff, DIFF_PREC);
    mpfr_inits2(UG_REF_PREC, ws->e, ws->l, (mpfr_ptr)0);
    mpfr_init2(ws->wide, 4 * 64);
    ws->mask_words = (s->k + 63) / 64;
    ws->k_int = calloc(bt * s->k, sizeof *ws->k_int);
    ws->k_nonzero = calloc(bt * ws->mask_words, sizeof *ws->k_nonzero);
    ws->keys = calloc(bt, sizeof *ws->keys);
    ws->fdot = calloc(bt * bt, sizeof *ws->fdot);
    ws->gate_exp = calloc(2 * bt, sizeof *ws->gate_exp);
    ws->gate_on = calloc(bt, sizeof *ws->gate_on);
    mpfr_t *dot = calloc(bt * bt, sizeof *dot), *terms = calloc(s->k, sizeof *terms);
    ws->abs_dot = calloc(bt * bt, sizeof *ws->abs_dot);
    ws->nonzero = calloc(bt * bt, sizeof *ws->nonzero);
    ws->term_ptrs = calloc(s->k, sizeof *ws->term_ptrs);
    ws->products = calloc(s->k, sizeof *ws->products);
    mpz_init(ws->scratch);
    ug_xsum_init(&ws->acc);
    if (!dot || !terms || !ws->abs_dot || !ws->nonzero || !ws->term_ptrs || !ws->products || !ws->k_int ||
        !ws->k_nonzero || !ws->keys || !ws->fdot || !ws->gate_exp || !ws->gate_on) {
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
    mpfr_set_zero(ws->l, 1);
    ug_ref_finish(&ws->zero, ws->l, 0, 0, 0, UG_F32);
    ws->simd = ug_ref_simd_available() && __builtin_cpu_supports("avx512dq");
    return ug_ok();
}

/* The nonzero products k_i[d] k_j[d] (exact doubles) into ws->products,
 * their count, and sum |k_i[d] k_j[d]| in binary64 in the order of d. */
static size_t gather_products(workspace *ws, const ug_bf16 *ki, const ug_bf16 *kj, double *abs_dot, bool *finite)
{
    size_t n = 0;
    double sum = 0;
    *finite = true;
    for (size_t d = 0; d < ws->s->k; d++) {
        double product = (double)ug_bf16_to_f32(ki[d]) * ug_bf16_to_f32(kj[d]); /* exact */
        if (product == 0) continue;
        ws->products[n++] = product;
        sum += fabs(product);
        *finite &= isfinite(product) != 0;
    }
    *abs_dot = sum;
    return n;
}

/* Key vector x (K entries) on the fast path's integer grid, as row i. */
static void int_key_set(workspace *ws, size_t i, const ug_bf16 *x)
{
    const size_t dim = ws->s->k;
    int_key *key = &ws->keys[i];
    int64_t *out = ws->k_int + i * dim;
    uint64_t *mask = ws->k_nonzero + i * ws->mask_words;
    int lo = INT_MAX, hi = INT_MIN;
    bool finite = true;
    memset(mask, 0, ws->mask_words * sizeof *mask);
    for (size_t d = 0; d < dim; d++) {
        const int biased = x[d] >> 7 & 0xFF, e = (biased ? biased : 1) - 127 - 7;
        finite &= biased != 0xFF;
        if ((x[d] & 0x7FFF) == 0) continue;
        mask[d / 64] |= UINT64_C(1) << (d % 64);
        lo = e < lo ? e : lo;
        hi = e > hi ? e : hi;
    }
    key->on = finite && (lo > hi || hi - lo <= VECTOR_BITS - 8); /* |significand| < 2^8 */
    key->lo = lo > hi ? 0 : lo;
    key->bits = lo > hi ? 0 : hi - lo + 8;
    if (!key->on) return;
    for (size_t d = 0; d < dim; d++) {
        const int biased = x[d] >> 7 & 0xFF, e = (biased ? biased : 1) - 127 - 7;
        const int64_t m = (biased ? 0x80 : 0) | (x[d] & 0x7F);
        out[d] = m == 0 ? 0 : (x[d] & 0x8000 ? -m : m) * ((int64_t)1 << (e - key->lo));
    }
}

/* k_i . k_j as an integer dot product where both keys are on the grid and
 * the sum of magnitudes stays below 2^62 (exact), and their magnitudes
 * below 2^53 (then the MPFR path's binary64 sum of |products| is exact:
 * every partial sum is an integer below 2^53 times 2^(lo_i + lo_j)). */
static bool int_pair(workspace *ws, size_t i, size_t j)
{
    const int_key *a = &ws->keys[i], *b = &ws->keys[j];
    const size_t dim = ws->s->k, at = i * ws->bt + j;
    const int carry = dim > 1 ? 64 - __builtin_clzll(dim - 1) : 0; /* ceil(log2 K) */
    if (!a->on || !b->on || a->bits + b->bits + carry > 62) return false;
    int64_t magnitude;
    const int64_t dot = ug_gdn_int_dot(ws->k_int + i * dim, ws->k_int + j * dim, dim, &magnitude, ws->simd);
    if (magnitude >= INT64_C(1) << 53) return false;
    const int lo = a->lo + b->lo;
    size_t n = 0;
    for (size_t w = 0; w < ws->mask_words; w++)
        n += (size_t)__builtin_popcountll(ws->k_nonzero[i * ws->mask_words + w] & ws->k_nonzero[j * ws->mask_words + w]);
    ws->nonzero[at] = n;
    ws->abs_dot[at] = ldexp((double)magnitude, lo) * UG_F32_SLACK;
    ws->fdot[at] = (fast_dot){.on = true, .neg = dot < 0, .zero = dot == 0,
                              .m = dot < 0 ? -(ug_u128)dot : (ug_u128)dot, .e = lo};
    return true;
}

/* The Gram matrix of key head kh's chunk starting at t0 (below the diagonal). */
static void chunk_dots(workspace *ws, const ug_bf16 *k, size_t b, size_t kh, size_t t0)
{
    const gdn_chunk_scaled_kkt_shape *s = ws->s;
    const size_t bt = ws->bt, dim = s->k;
    const bool fast = ug_ref_fast();
    if (fast)
        for (size_t i = 0; i < bt; i++) int_key_set(ws, i, k + ((b * s->t + t0 + i) * s->hg + kh) * dim);
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < i; j++) {
            if (fast && int_pair(ws, i, j)) continue;
            const ug_bf16 *ki = k + ((b * s->t + t0 + i) * s->hg + kh) * dim;
            const ug_bf16 *kj = k + ((b * s->t + t0 + j) * s->hg + kh) * dim;
            double abs_dot;
            bool finite;
            const size_t n = gather_products(ws, ki, kj, &abs_dot, &finite);
            mpfr_ptr dot = ws->dot[i * bt + j];
            /* Both paths round the exact sum once to UG_REF_PREC bits (the
             * fast one: bf16 products lie far inside the accumulator's range). */
            if (fast && finite) {
                ug_xsum_clear(&ws->acc);
                for (size_t m = 0; m < n; m++) ug_xsum_add_double(&ws->acc, ws->products[m]);
                ug_xsum_get_mpfr(&ws->acc, dot, ws->scratch);
            } else {
                for (size_t m = 0; m < n; m++) mpfr_set_d(ws->terms[m], ws->products[m], MPFR_RNDN);
                mpfr_sum(dot, ws->term_ptrs, n, MPFR_RNDN);
            }
            fast_dot *f = &ws->fdot[i * bt + j];
            *f = (fast_dot){.on = fast && finite, .in_mpfr = true, .neg = mpfr_signbit(dot), .zero = mpfr_zero_p(dot)};
            if (f->on && !f->zero) f->on = ug_xsum_split_mpfr(dot, &f->neg, &f->m, &f->e);
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

/* The element's bound and magnitude sum from e = RN_128(exp(g_t - g_s))
 * rounded up to a double, as both paths give them. */
static void finish_element(workspace *ws, const ug_f32_model *model, float beta, float g_t, float g_s, double e,
                           size_t at, const ug_xval *fast_value, ug_ref_value *o)
{
    const double abs_beta = fabs((double)beta), abs_dot = ws->abs_dot[at];
    const ug_f32_error exp = ug_f32_exp_of_difference(model, g_t, g_s);
    const double bound = pre_round_bound(model, abs_beta, e, exp, abs_dot, ws->nonzero[at]);
    const double abs_sum = abs_beta * e * abs_dot * UG_F32_SLACK;
    if (fast_value)
        ug_xval_finish(fast_value, o, bound, abs_sum, 0, UG_F32);
    else
        ug_ref_finish(o, ws->l, bound, abs_sum, 0, UG_F32);
}

/* Element (i, j) through MPFR: L = RN_128(RN_128(RN_128(exp(g_t - g_s)) dot) beta). */
static void mpfr_element(workspace *ws, const ug_f32_model *model, float beta, float g_t, float g_s, size_t i,
                         size_t j, ug_ref_value *o)
{
    const size_t at = i * ws->bt + j;
    fast_dot *f = &ws->fdot[at];
    if (!f->in_mpfr) { /* the fast path's exact integer dot product: exact at 64 bits */
        mpfr_set_uj_2exp(ws->dot[at], (uintmax_t)f->m, f->e, MPFR_RNDN);
        if (f->neg) mpfr_neg(ws->dot[at], ws->dot[at], MPFR_RNDN);
        f->in_mpfr = true;
    }
    mpfr_set_flt(ws->diff, g_t, MPFR_RNDN);
    mpfr_sub_d(ws->diff, ws->diff, g_s, MPFR_RNDN); /* exact */
    mpfr_exp(ws->e, ws->diff, MPFR_RNDN);
    mpfr_mul(ws->l, ws->e, ws->dot[at], MPFR_RNDN);
    mpfr_mul_d(ws->l, ws->l, beta, MPFR_RNDN);
    finish_element(ws, model, beta, g_t, g_s, mpfr_get_d(ws->e, MPFR_RNDU), at, NULL, o);
}

/* Element (i, j) without MPFR: the same three roundings on integers (exp
 * certified by ug_gdn_pair_exp, the products by ug_xval_product128 and
 * ug_xval_product rounded to nearest even as mpfr_mul). False where the
 * exp cannot be certified or an input is outside the fast path's domain. */
static bool fast_element(workspace *ws, const ug_f32_model *model, float beta, float g_t, float g_s, size_t i,
                         size_t j, ug_ref_value *o)
{
    const size_t at = i * ws->bt + j;
    const fast_dot *f = &ws->fdot[at];
    if (!f->on || !isfinite(beta) || !ws->gate_on[i] || !ws->gate_on[j]) return false;
    ug_gdn_fx e = {(ug_u128)1 << 127, -127}; /* exp(0) */
    if (g_t != g_s && !ug_gdn_pair_exp(&ws->gate_exp[i], &ws->gate_exp[ws->bt + j], &e)) return false;
    const ug_xval e_value = {.m = e.m, .e = e.e};
    bool beta_neg;
    uint64_t beta_m;
    int beta_e;
    ug_xsum_split(beta, &beta_neg, &beta_m, &beta_e);
    /* e > 0: e·dot has dot's sign; a zero product is +0 or -0 by the signs. */
    ug_xval l = {.neg = f->neg != beta_neg, .zero = true};
    if (!f->zero && beta_m != 0) {
        const ug_xval scaled = ug_xval_product128(f->neg, e.m, f->m, e.e + f->e);
        const ug_xval rounded = ug_xval_round128(&scaled);
        l = ug_xval_product(rounded.neg != beta_neg, beta_m, rounded.m, rounded.e + beta_e);
    }
    finish_element(ws, model, beta, g_t, g_s, ug_xval_to_double(&e_value, MPFR_RNDU), at, &l, o);
    return true;
}

static void scale_chunk(workspace *ws, const ug_f32_model *model, const float *beta, const float *g, size_t b,
                        size_t h, size_t t0, ug_ref_value *out)
{
    const gdn_chunk_scaled_kkt_shape *s = ws->s;
    const size_t bt = ws->bt;
    const bool fast = ug_ref_fast();
    if (fast)
        for (size_t i = 0; i < bt; i++) {
            const float g_t = g[(b * s->t + t0 + i) * s->h + h];
            ws->gate_on[i] = fabsf(g_t) <= GATE_MAX && ug_gdn_exp_wide(ws->wide, g_t, &ws->gate_exp[i],
                                                                       &ws->gate_exp[bt + i]);
        }
    for (size_t i = 0; i < bt; i++) {
        const size_t row = (b * s->t + t0 + i) * s->h + h;
        for (size_t j = 0; j < bt; j++) {
            ug_ref_value *o = &out[row * bt + j];
            if (j >= i) {
                *o = ws->zero;
                continue;
            }
            const size_t col = (b * s->t + t0 + j) * s->h + h;
            if (!fast || !fast_element(ws, model, beta[row], g[row], g[col], i, j, o))
                mpfr_element(ws, model, beta[row], g[row], g[col], i, j, o);
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
