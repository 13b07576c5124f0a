/* SPDX-License-Identifier: MIT */
#include "gdn_e2e.h"

#include "exact_sum.h"
#include "gdn_e2e_divide.h"
#include "gdn_e2e_simd.h"
#include "gdn_e2e_wide.h"
#include "rowsimd.h"

#include <gmp.h>
#include <limits.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "limbs256.h"

/* Two forms of the state, chosen per head (docs/error-model-gdn_e2e.md §2).
 *
 * The grid form, for every head whose inputs are finite and moderate
 * (grid_head_ok): S = c · X · 2^E[v], c in [1/2, 1) at prec bits, and column v
 * of X a vector of integers on its own grid 2^E[v]. The decay multiplies c and
 * moves c's exponent into every E[v] (exact); the dot products Xᵀk and Xᵀq
 * are exact integer sums, each rounded once to prec bits; the update adds
 * RNA(k d̂ / 2^E[v]) (one rounding to the grid per entry); a column's grid
 * coarsens or refines (one more rounding, or none) when its magnitude leaves
 * [2^(floor-1), 2^cap) grid units. Integers make the state exact between its
 * deliberate roundings, so two implementations give the same bits: GMP
 * integers (the plain path) and fixed 256-bit two's complement limbs with
 * 128-bit accumulators (the fast path, ug_ref_fast(): columns stored planar,
 * a few 64-bit multiplies per entry and token; on AVX-512, where the CPU has
 * it, one pass per column and token for the update and every read of the
 * updated column, the next token's Xᵀk included, ref/gdn_e2e_simd.h).
 * The scalar work per column and token (d, the output's scaling, every
 * rounding to prec bits) is MPFR's on the plain path; the fast path does it
 * on 192-bit floats of three limbs with MPFR's roundings (ref/gdn_e2e_wide.h,
 * MPFR where those decline), reads |X|ᵀ|q| rounded up from its windows where
 * they decide it (fast_abs_products) and finishes the outputs from the
 * value's limbs (ug_xval_finish_mpfr): the same bits everywhere.
 *
 * The floating form, for any other head (non-finite or huge inputs, gates
 * beyond ±64): S = c · Ŝ, Ŝ at prec bits per entry; c is folded into Ŝ when it
 * leaves [2^-RESCALE_EXP, 2^RESCALE_EXP]. */
enum { RESCALE_EXP = 200, BF16_PREC = 8, F32_PREC = 24 };

/* The grid form's limits: inputs below 2^64 and gates within ±64 keep every
 * exponent far inside MPFR's range for T <= 2^20 tokens (§2). */
#define GRID_INPUT_LIMIT 0x1p64
#define GRID_GATE_LIMIT 64.0
enum { GRID_MAX_T = 1 << 20 };

/* A column's magnitude in grid units, relative to prec: set to 2^target,
 * coarsened when it could pass 2^cap, refined when it falls below 2^floor. */
static long grid_target(mpfr_prec_t p) { return (long)p + 8; }
static long grid_cap(mpfr_prec_t p) { return (long)p + 56; }
static long grid_floor(mpfr_prec_t p) { return (long)p - 40; }

/* The fast path's limits: 4 limbs hold 2^(192 + 56) with the sign; factors
 * (key and query components on their token's grid) below 2^48, K below 2^14,
 * so a 128-term column of 64 x 48-bit products fits a 128-bit accumulator. */
typedef unsigned __int128 u128;
enum { LIMBS = 4, FAST_PREC = 192, FAST_FACTOR_BITS = 48, FAST_MAX_K = 1 << 14 };
_Static_assert(GMP_LIMB_BITS == 64, "the fast path reads GMP limbs as 64-bit words");
_Static_assert((int)LIMBS == (int)UG_LIMBS256, "the fast path multiplies its entries by limbs256.h");

/* One token's key or query on one grid: component = m · 2^lsb, |component|
 * < 2^top; zero vectors have nonzero == false. */
typedef struct {
    long lsb, top;
    bool nonzero;
    int64_t *m;       /* fast path */
    uint32_t *order;  /* fast path: the indices of the positive m, then of the negative ones */
    size_t n_pos, n_neg;
    uint64_t abs_total; /* fast path: sum of |m| (< 2^62) */
    int64_t m_sum;      /* fast path: sum of m */
    bool simd_fits;     /* fast path: every |m| < 2^GDN_E2E_SIMD_FACTOR_BITS (the AVX-512 pass takes it) */
    mpz_t *z;   /* plain path */
} factor_vector;

typedef struct {
    const gdn_e2e_shape *s;
    mpfr_prec_t prec;
    size_t b, h, key_head;
    /* both forms */
    mpfr_t c, gate, acc, abs_acc, wide, scale;
    gdn_e2e_divider divider; /* divides by c */
    mpfr_t beta;            /* the token's beta, exact at 24 bits */
    float beta_value, scale_value; /* the token's beta and the scale (fast path) */
    mpfr_t v_entry;         /* the column's v, exact at 24 bits */
    double c_abs, scale_abs; /* |c| (this token's) and |scale|, rounded away from zero */
    mpfr_t *d;              /* [V]: beta (v - Sᵀk), then d / c */
    double *key_abs;        /* |k_t| */
    double *d_abs;          /* [V]: |beta (v - Sᵀk)| */
    double *decayed_abs;    /* [V][K]: |exp(g_T) S_{T-1}| (last token only) */
    /* floating form */
    mpfr_t *state;          /* Ŝ, [V][K]: column v contiguous over k */
    mpfr_t *key, *query;    /* the token's k_t and q_t, exact at 8 bits */
    mpfr_t *products;       /* [K]: the exact terms of one dot product */
    mpfr_ptr *product_ptrs;
    mpfr_t product;
    /* grid form */
    bool fast, simd;        /* simd: the fast path's dot products on AVX-512 */
    long *grid, *bits;      /* [V]: E[v], and column_bits(v) */
    mpz_t *x;               /* [V][K] X, plain path */
    uint64_t *limbs;        /* [V][LIMBS][K] X, fast path (two's complement, planar: limb i of X[v][k] at
                               limbs[(v LIMBS + i) K + k]) */
    uint64_t (*key_dots)[LIMBS + 2]; /* [V]: Xᵀk of the coming token, fast path (computed after the last update) */
    factor_vector key_f, query_f, next_key_f; /* next_key_f: the next token's key (fast path: its dot products) */
    mpz_t z, z_abs, z_tmp, delta; /* delta: the column's d̂ as an integer */
    gdn_e2e_wide d_wide;            /* fast path: the column's d̂ */
    uint64_t query_dot[LIMBS + 2];  /* fast path: the column's Xᵀq after its update */
    mpfr_t view;                    /* fast path: a gdn_e2e_wide read by MPFR */
    uint64_t view_limbs[GDN_E2E_WIDE_LIMBS];
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

static void init_ints(mpz_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++) mpz_init(a[i]);
}

static void clear_ints(mpz_t *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) mpz_clear(a[i]);
    free(a);
}

static void workspace_free(workspace *w)
{
    free(w->state), free(w->key), free(w->query), free(w->d), free(w->key_abs), free(w->d_abs);
    free(w->decayed_abs), free(w->products), free(w->product_ptrs), free(w->grid), free(w->bits), free(w->x);
    free(w->limbs), free(w->key_dots);
    factor_vector *factors[] = {&w->key_f, &w->query_f, &w->next_key_f};
    for (size_t i = 0; i < 3; i++) free(factors[i]->m), free(factors[i]->z), free(factors[i]->order);
}

static ug_status workspace_open(workspace *w, const gdn_e2e_shape *s, mpfr_prec_t prec, float scale)
{
    const size_t kv = s->k * s->v;
    *w = (workspace){.s = s, .prec = prec};
    w->state = malloc(kv * sizeof *w->state);
    w->key = malloc(s->k * sizeof *w->key);
    w->query = malloc(s->k * sizeof *w->query);
    w->d = malloc(s->v * sizeof *w->d);
    w->key_abs = malloc(s->k * sizeof *w->key_abs);
    w->d_abs = malloc(s->v * sizeof *w->d_abs);
    w->decayed_abs = malloc(kv * sizeof *w->decayed_abs);
    w->products = malloc(s->k * sizeof *w->products);
    w->product_ptrs = malloc(s->k * sizeof *w->product_ptrs);
    w->grid = malloc(s->v * sizeof *w->grid);
    w->bits = malloc(s->v * sizeof *w->bits);
    w->x = malloc(kv * sizeof *w->x);
    w->limbs = malloc(kv * LIMBS * sizeof *w->limbs);
    w->key_dots = malloc(s->v * sizeof *w->key_dots);
    bool factors_ok = true;
    factor_vector *factors[] = {&w->key_f, &w->query_f, &w->next_key_f};
    for (size_t i = 0; i < 3; i++) {
        factors[i]->m = malloc(s->k * sizeof *factors[i]->m);
        factors[i]->z = malloc(s->k * sizeof *factors[i]->z);
        factors[i]->order = malloc(s->k * sizeof *factors[i]->order);
        factors_ok = factors_ok && factors[i]->m && factors[i]->z && factors[i]->order;
    }
    if (!w->state || !w->key || !w->query || !w->d || !w->key_abs || !w->d_abs || !w->decayed_abs || !w->products ||
        !w->product_ptrs || !w->grid || !w->bits || !w->x || !w->limbs || !w->key_dots || !factors_ok) {
        workspace_free(w);
        return ug_fail(UG_ENOMEM, "gdn_e2e reference: out of memory (K=%zu, V=%zu)", s->k, s->v);
    }
    init_array(w->state, kv, prec);
    init_array(w->key, s->k, BF16_PREC);
    init_array(w->query, s->k, BF16_PREC);
    init_array(w->d, s->v, prec);
    /* a bf16 times a prec-bit value, exactly */
    init_array(w->products, s->k, prec + BF16_PREC);
    for (size_t kk = 0; kk < s->k; kk++) w->product_ptrs[kk] = w->products[kk];
    init_ints(w->x, kv);
    init_ints(w->key_f.z, s->k);
    init_ints(w->query_f.z, s->k);
    init_ints(w->next_key_f.z, s->k);
    mpz_inits(w->z, w->z_abs, w->z_tmp, w->delta, (mpz_ptr)0);
    mpfr_inits2(prec, w->c, w->gate, w->acc, w->abs_acc, w->scale, (mpfr_ptr)0);
    mpfr_init2(w->product, prec + BF16_PREC);
    mpfr_inits2(F32_PREC, w->beta, w->v_entry, (mpfr_ptr)0);
    gdn_e2e_divider_init(&w->divider, prec);
    /* a grid column entry times 2^E exactly: below 2^(cap + 1) grid units */
    mpfr_init2(w->wide, (mpfr_prec_t)grid_cap(prec) + 8);
    mpfr_set_flt(w->scale, scale, MPFR_RNDN);  /* exact */
    w->scale_value = scale;
    w->scale_abs = fabs(mpfr_get_d(w->scale, MPFR_RNDA));
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
    clear_ints(w->x, kv);
    clear_ints(w->key_f.z, w->s->k);
    clear_ints(w->query_f.z, w->s->k);
    clear_ints(w->next_key_f.z, w->s->k);
    w->state = w->key = w->query = w->d = w->products = NULL;
    w->x = w->key_f.z = w->query_f.z = w->next_key_f.z = NULL;
    workspace_free(w);
    mpz_clears(w->z, w->z_abs, w->z_tmp, w->delta, (mpz_ptr)0);
    mpfr_clears(w->c, w->gate, w->product, w->acc, w->abs_acc, w->wide, w->scale, w->beta, w->v_entry, (mpfr_ptr)0);
    gdn_e2e_divider_clear(&w->divider);
}

/* [B,T,heads,width] row start, [B,T,H] element. */
static size_t row4(const gdn_e2e_shape *s, size_t b, size_t t, size_t heads, size_t head, size_t width)
{
    return ((b * s->t + t) * heads + head) * width;
}
static size_t at3(const gdn_e2e_shape *s, size_t b, size_t t, size_t h) { return (b * s->t + t) * s->h + h; }
static size_t h0_at(const workspace *w, size_t kk, size_t vv)
{
    return ((w->b * w->s->h + w->h) * w->s->k + kk) * w->s->v + vv;
}

/* |x| * c as a binary64: through mantissa and exponent, so a huge x times a
 * tiny c does not overflow on the way. */
static double times_c_abs(const workspace *w, mpfr_srcptr x)
{
    if (mpfr_zero_p(x)) return 0.0;
    long ex, ec;
    double mx = mpfr_get_d_2exp(&ex, x, MPFR_RNDA), mc = mpfr_get_d_2exp(&ec, w->c, MPFR_RNDA);
    return ldexp(fabs(mx) * mc, (int)(ex + ec));
}

/* ---- shared by both forms: the column's delta and the output ------------------ */

/* x = v (x of at least 24 bits): a finite nonzero v through its integer
 * significand, cheaper than mpfr_set_flt's way through a double. */
static void set_exact_float(mpfr_ptr x, float v)
{
    if (v == 0.0f || !isfinite(v)) {
        mpfr_set_flt(x, v, MPFR_RNDN); /* keeps the zero's sign */
        return;
    }
    int e = 0;
    const float m = frexpf(v, &e);
    mpfr_set_si_2exp(x, (long)ldexpf(m, F32_PREC), e - F32_PREC, MPFR_RNDN); /* exact: 24 bits */
}

/* The token's beta, set once for its V columns. */
static void load_beta(workspace *w, const float *beta, size_t t)
{
    w->beta_value = beta[at3(w->s, w->b, t, w->h)];
    mpfr_set_flt(w->beta, w->beta_value, MPFR_RNDN); /* exact */
}

/* acc = (Ŝᵀk)_v at prec bits; d[v] = beta (v - c acc), d_abs[v] = |d[v]|,
 * then d[v] /= c (Ŝ moves by k (d / c)ᵀ). */
static void column_delta(workspace *w, size_t vv, float v_value)
{
    mpfr_mul(w->acc, w->acc, w->c, MPFR_RNDN);                       /* (Sᵀk)_v of exp(g) S */
    set_exact_float(w->v_entry, v_value);
    mpfr_sub(w->d[vv], w->v_entry, w->acc, MPFR_RNDN);               /* v - Sᵀk */
    mpfr_mul(w->d[vv], w->d[vv], w->beta, MPFR_RNDN); /* as mpfr_mul_d: one correctly rounded product */
    w->d_abs[vv] = fabs(mpfr_get_d(w->d[vv], MPFR_RNDA));
    gdn_e2e_divide(w->d[vv], w->d[vv], w->c, &w->divider);
}

/* key_abs = |k_t| (for final_state's abs_sum after the last token). */
static void load_key_abs(workspace *w, const ug_bf16 *k_row)
{
    for (size_t kk = 0; kk < w->s->k; kk++) w->key_abs[kk] = fabs(ug_bf16_to_f32(k_row[kk]));
}

/* ug_ref_finish(out, r, +inf, abs_sum, 0, dtype); on the fast path from r's
 * limbs (ug_xval_finish_mpfr: the same fields, bit for bit). */
static void finish(const workspace *w, ug_ref_value *out, mpfr_srcptr r, double abs_sum, ug_dtype dtype)
{
    if (w->fast)
        ug_xval_finish_mpfr(r, out, INFINITY, abs_sum, 0, dtype);
    else
        ug_ref_finish(out, r, INFINITY, abs_sum, 0, dtype);
}

/* o = r (= scale c (Ŝᵀq)_v), abs_sum = scale c abs_products. */
static void output_fill(const workspace *w, ug_ref_value *o, mpfr_srcptr r, double abs_products)
{
    const double abs_sum = abs_products * w->c_abs;
    finish(w, o, r, w->scale_abs * abs_sum, UG_BF16);
    o->no_bound = false; /* +inf by design, not from the profile (see the header) */
}

/* o = scale c acc (acc = (Ŝᵀq)_v at prec bits). */
static void output_finish(workspace *w, ug_ref_value *o, double abs_products)
{
    mpfr_mul(w->acc, w->acc, w->c, MPFR_RNDN);
    mpfr_mul(w->acc, w->acc, w->scale, MPFR_RNDN);
    output_fill(w, o, w->acc, abs_products);
}

/* final_state entry = c · value (value exact), with its magnitude sum. */
static void final_finish(workspace *w, ug_ref_value *out, mpfr_srcptr value, size_t kk, size_t vv)
{
    mpfr_mul(w->acc, value, w->c, MPFR_RNDN);
    const double abs_sum = w->decayed_abs[vv * w->s->k + kk] + w->key_abs[kk] * w->d_abs[vv];
    finish(w, out, w->acc, abs_sum, UG_F32);
    out->no_bound = false; /* +inf by design, not from the profile */
}

/* ---- the floating form ------------------------------------------------------------ */

static void float_head_start(workspace *w, const float *h0)
{
    const gdn_e2e_shape *s = w->s;
    mpfr_set_ui(w->c, 1, MPFR_RNDN);
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++)
            mpfr_set_flt(w->state[vv * s->k + kk], h0 ? h0[h0_at(w, kk, vv)] : 0.0f, MPFR_RNDN);
}

/* c <- c exp(g); folded into Ŝ when it leaves [2^-RESCALE_EXP, 2^RESCALE_EXP]. */
static void float_decay(workspace *w, float g)
{
    mpfr_set_flt(w->gate, g, MPFR_RNDN);
    mpfr_exp(w->gate, w->gate, MPFR_RNDN);
    mpfr_mul(w->c, w->c, w->gate, MPFR_RNDN);
    if (mpfr_zero_p(w->c) || labs((long)mpfr_get_exp(w->c)) > RESCALE_EXP) {
        const size_t kv = w->s->k * w->s->v;
        for (size_t i = 0; i < kv; i++) mpfr_mul(w->state[i], w->state[i], w->c, MPFR_RNDN);
        mpfr_set_ui(w->c, 1, MPFR_RNDN);
    }
    w->c_abs = mpfr_get_d(w->c, MPFR_RNDA);
    gdn_e2e_divider_set(&w->divider, w->c);
}

static void float_load_token(workspace *w, const ug_bf16 *q_row, const ug_bf16 *k_row)
{
    for (size_t kk = 0; kk < w->s->k; kk++) {
        mpfr_set_flt(w->key[kk], ug_bf16_to_f32(k_row[kk]), MPFR_RNDN); /* exact: 8 significant bits */
        mpfr_set_flt(w->query[kk], ug_bf16_to_f32(q_row[kk]), MPFR_RNDN);
    }
}

/* acc = sum_k x[k] Ŝ[v][k], correctly rounded: exact products, one mpfr_sum.
 * The products stay in w->products for the magnitude sum. */
static void float_dot_column(workspace *w, const mpfr_t *x, size_t vv)
{
    const mpfr_t *column = w->state + vv * w->s->k;
    for (size_t kk = 0; kk < w->s->k; kk++) mpfr_mul(w->products[kk], x[kk], column[kk], MPFR_RNDN);
    mpfr_sum(w->acc, w->product_ptrs, w->s->k, MPFR_RNDN);
}

/* sum_k |products[k]|, rounded up (after float_dot_column; the products lose their signs). */
static double float_abs_products(workspace *w)
{
    for (size_t kk = 0; kk < w->s->k; kk++) mpfr_abs(w->products[kk], w->products[kk], MPFR_RNDN);
    mpfr_sum(w->abs_acc, w->product_ptrs, w->s->k, MPFR_RNDU);
    return mpfr_get_d(w->abs_acc, MPFR_RNDU);
}

static void float_token(workspace *w, size_t t, const ug_bf16 *q, const ug_bf16 *k, const ug_bf16 *v,
                        const float *beta, const float *g_raw, ug_ref_value *o)
{
    const gdn_e2e_shape *s = w->s;
    const size_t dk = s->k, dv = s->v;
    float_decay(w, g_raw[at3(s, w->b, t, w->h)]);
    float_load_token(w, q + row4(s, w->b, t, s->hg, w->key_head, dk), k + row4(s, w->b, t, s->hg, w->key_head, dk));
    load_key_abs(w, k + row4(s, w->b, t, s->hg, w->key_head, dk));
    load_beta(w, beta, t);
    const ug_bf16 *v_row = v + row4(s, w->b, t, s->h, w->h, dv);
    for (size_t vv = 0; vv < dv; vv++) {
        float_dot_column(w, w->key, vv);
        column_delta(w, vv, ug_bf16_to_f32(v_row[vv]));
        if (t + 1 == s->t)
            for (size_t kk = 0; kk < dk; kk++) w->decayed_abs[vv * dk + kk] = times_c_abs(w, w->state[vv * dk + kk]);
    }
    for (size_t vv = 0; vv < dv; vv++)
        for (size_t kk = 0; kk < dk; kk++) {
            mpfr_mul(w->product, w->key[kk], w->d[vv], MPFR_RNDN);
            mpfr_add(w->state[vv * dk + kk], w->state[vv * dk + kk], w->product, MPFR_RNDN);
        }
    ug_ref_value *o_row = o + row4(s, w->b, t, s->h, w->h, dv);
    for (size_t vv = 0; vv < dv; vv++) {
        float_dot_column(w, w->query, vv);
        output_finish(w, &o_row[vv], float_abs_products(w));
    }
}

static void float_finish_head(workspace *w, ug_ref_value *final_state)
{
    const gdn_e2e_shape *s = w->s;
    ug_ref_value *out = final_state + (w->b * s->h + w->h) * s->k * s->v;
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++) final_finish(w, &out[kk * s->v + vv], w->state[vv * s->k + kk], kk, vv);
}

/* ---- the grid form: integers shared by both paths ------------------------------- */

static bool moderate(double x) { return fabs(x) < GRID_INPUT_LIMIT; } /* false for NaN */

static bool bf16_row_moderate(const ug_bf16 *row, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!moderate(ug_bf16_to_f32(row[i]))) return false;
    return true;
}

/* The bit span top - lsb of a bf16 vector's grid (0 for a zero vector). */
/* A finite bf16 as (-1)^neg mag 2^e, mag < 2^8 an integer (0 for a zero). */
static void bf16_split(ug_bf16 x, bool *neg, uint32_t *mag, int *e)
{
    const int biased = x >> 7 & 0xFF;
    *neg = x >> 15;
    *mag = (uint32_t)(x & 0x7F) | (biased ? 0x80 : 0);
    *e = (biased ? biased : 1) - 127 - (BF16_PREC - 1);
}

static long factor_span(const ug_bf16 *row, size_t n, long *lsb, long *top)
{
    *lsb = LONG_MAX, *top = LONG_MIN;
    for (size_t i = 0; i < n; i++) {
        bool neg;
        uint32_t mag;
        int e;
        bf16_split(row[i], &neg, &mag, &e);
        if (mag == 0) continue;
        e += 32 - __builtin_clz(mag); /* |x| in [2^(e-1), 2^e); bf16 bits at or above 2^(e-8) */
        if (e - BF16_PREC < *lsb) *lsb = e - BF16_PREC;
        if (e > *top) *top = e;
    }
    return *top == LONG_MIN ? 0 : *top - *lsb;
}

/* f = row on its grid; row NULL: the zero vector. */
static void load_factors(workspace *w, factor_vector *f, const ug_bf16 *row)
{
    const size_t n = w->s->k;
    if (row)
        factor_span(row, n, &f->lsb, &f->top);
    else
        f->lsb = LONG_MAX, f->top = LONG_MIN;
    f->nonzero = f->top != LONG_MIN;
    f->n_pos = f->n_neg = 0;
    f->abs_total = 0;
    f->m_sum = 0;
    uint64_t largest = 0;
    for (size_t i = 0; i < n; i++) {
        if (!w->fast) {
            mpz_set_d(f->z[i], f->nonzero ? ldexp(ug_bf16_to_f32(row[i]), (int)-f->lsb) : 0.0); /* exact integer */
            continue;
        }
        /* the component mag 2^e on the grid: e >= lsb (factor_span), mag 2^(e - lsb) below 2^48 */
        bool neg = false;
        uint32_t mag = 0;
        int e = 0;
        if (f->nonzero) bf16_split(row[i], &neg, &mag, &e);
        const uint64_t magnitude = mag == 0 ? 0 : (uint64_t)mag << (e - f->lsb);
        f->m[i] = neg ? -(int64_t)magnitude : (int64_t)magnitude;
        f->abs_total += magnitude;
        f->m_sum += f->m[i];
        if (magnitude > largest) largest = magnitude;
        if (f->m[i] > 0) f->order[f->n_pos++] = (uint32_t)i;
    }
    for (size_t i = 0; w->fast && i < n; i++)
        if (f->m[i] < 0) f->order[f->n_pos + f->n_neg++] = (uint32_t)i;
    f->simd_fits = w->fast && largest >> GDN_E2E_SIMD_FACTOR_BITS == 0;
}

/* Every input of head (b, h) finite and below 2^64, every gate within ±64,
 * T <= 2^20: the grid form applies. */
static bool grid_head_ok(const workspace *w, const ug_bf16 *q, const ug_bf16 *k, const ug_bf16 *v,
                         const float *beta, const float *g_raw, const float *h0)
{
    const gdn_e2e_shape *s = w->s;
    if (s->t > GRID_MAX_T) return false;
    for (size_t t = 0; t < s->t; t++) {
        const size_t tok = at3(s, w->b, t, w->h);
        if (!(fabsf(g_raw[tok]) <= GRID_GATE_LIMIT) || !moderate(beta[tok]) ||
            !bf16_row_moderate(q + row4(s, w->b, t, s->hg, w->key_head, s->k), s->k) ||
            !bf16_row_moderate(k + row4(s, w->b, t, s->hg, w->key_head, s->k), s->k) ||
            !bf16_row_moderate(v + row4(s, w->b, t, s->h, w->h, s->v), s->v))
            return false;
    }
    for (size_t i = 0; h0 && i < s->k * s->v; i++)
        if (!moderate(h0[(w->b * s->h + w->h) * s->k * s->v + i])) return false;
    return true;
}

/* The fast path fits the head: prec 192, K < 2^14, every key and query
 * component below 2^48 on its token's grid. */
static bool fast_head_ok(const workspace *w, const ug_bf16 *q, const ug_bf16 *k)
{
    const gdn_e2e_shape *s = w->s;
    if (!ug_ref_fast() || w->prec != FAST_PREC || s->k >= FAST_MAX_K) return false;
    for (size_t t = 0; t < s->t; t++) {
        long lsb, top;
        const size_t row = row4(s, w->b, t, s->hg, w->key_head, s->k);
        if (factor_span(q + row, s->k, &lsb, &top) > FAST_FACTOR_BITS ||
            factor_span(k + row, s->k, &lsb, &top) > FAST_FACTOR_BITS)
            return false;
    }
    return true;
}

/* out = RNA(in · 2^sh) (to nearest integer, ties away from zero), in any sign. */
static void rna_scale(mpz_ptr out, mpz_srcptr in, long sh, mpz_ptr tmp)
{
    if (sh >= 0) {
        mpz_mul_2exp(out, in, (mp_bitcnt_t)sh);
        return;
    }
    const int sign = mpz_sgn(in);
    mpz_abs(out, in);
    mpz_set_ui(tmp, 0);
    mpz_setbit(tmp, (mp_bitcnt_t)(-sh - 1));
    mpz_add(out, out, tmp);
    mpz_fdiv_q_2exp(out, out, (mp_bitcnt_t)-sh);
    if (sign < 0) mpz_neg(out, out);
}

/* ---- the fast path's limbs -------------------------------------------------------- */

static void limbs_from_mpz(uint64_t x[LIMBS], mpz_srcptr z)
{
    uint64_t borrow = mpz_sgn(z) < 0;
    const uint64_t flip = borrow ? ~UINT64_C(0) : 0;
    for (int i = 0; i < LIMBS; i++) { /* two's complement: ~|z| + 1 when negative */
        const u128 t = (u128)(mpz_getlimbn(z, i) ^ flip) + borrow;
        x[i] = (uint64_t)t;
        borrow = (uint64_t)(t >> 64);
    }
}

/* z = the two's complement integer r[0 .. n). */
static void mpz_from_limbs(mpz_ptr z, const uint64_t *r, int n)
{
    const uint64_t flip = (uint64_t)((int64_t)r[n - 1] >> 63);
    mp_limb_t *d = mpz_limbs_write(z, n);
    uint64_t carry = flip & 1;
    for (int i = 0; i < n; i++) {
        const u128 t = (u128)(r[i] ^ flip) + carry;
        d[i] = (mp_limb_t)t;
        carry = (uint64_t)(t >> 64);
    }
    mpz_limbs_finish(z, flip ? -n : n); /* strips high zero limbs */
}

/* r = sum_j acc[j] 2^(64 j) (384-bit two's complement), each acc[j] a signed 128-bit value. */
static void limbs_from_accumulators(uint64_t r[LIMBS + 2], const u128 acc[LIMBS])
{
    memset(r, 0, (LIMBS + 2) * sizeof *r);
    for (int j = 0; j < LIMBS; j++) {
        const uint64_t lo = (uint64_t)acc[j], hi = (uint64_t)(acc[j] >> 64), ext = (uint64_t)((int64_t)hi >> 63);
        u128 t = (u128)r[j] + lo;
        r[j] = (uint64_t)t;
        t = (u128)r[j + 1] + hi + (uint64_t)(t >> 64);
        r[j + 1] = (uint64_t)t;
        for (int i = j + 2; i < LIMBS + 2; i++) {
            t = (u128)r[i] + ext + (uint64_t)(t >> 64);
            r[i] = (uint64_t)t;
        }
    }
}

static void mpz_from_accumulators(mpz_ptr z, const u128 acc[LIMBS])
{
    uint64_t r[LIMBS + 2];
    limbs_from_accumulators(r, acc);
    mpz_from_limbs(z, r, LIMBS + 2);
}

/* Entry k of a planar column of n entries (limb i at col[i n + k]), and back. */
__attribute__((always_inline)) static inline void entry_load(const uint64_t *col, size_t n, size_t k,
                                                             uint64_t x[LIMBS])
{
#pragma GCC unroll 4
    for (int i = 0; i < LIMBS; i++) x[i] = col[i * n + k];
}

__attribute__((always_inline)) static inline void entry_store(uint64_t *col, size_t n, size_t k,
                                                              const uint64_t x[LIMBS])
{
#pragma GCC unroll 4
    for (int i = 0; i < LIMBS; i++) col[i * n + k] = x[i];
}

/* |x| and its sign mask (all ones when x < 0). */
__attribute__((always_inline)) static inline uint64_t limbs_abs(const uint64_t x[LIMBS], uint64_t mag[LIMBS])
{
    const uint64_t neg = (uint64_t)((int64_t)x[LIMBS - 1] >> 63);
    uint64_t carry = neg & 1;
#pragma GCC unroll 4
    for (int i = 0; i < LIMBS; i++) {
        const u128 t = (u128)(x[i] ^ neg) + carry;
        mag[i] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
    return neg;
}

/* x += (neg ? -1 : 1) · q, mod 2^256. */
__attribute__((always_inline)) static inline void limbs_add_signed(uint64_t x[LIMBS], const uint64_t q[LIMBS],
                                                                   uint64_t neg)
{
    uint64_t carry = neg & 1;
#pragma GCC unroll 4
    for (int i = 0; i < LIMBS; i++) {
        const u128 t = (u128)x[i] + (q[i] ^ neg) + carry;
        x[i] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
}

/* mag = RNA(mag / 2^s), mag < 2^255. */
static void limbs_rna_shift_right(uint64_t mag[LIMBS], long s)
{
    if (s > 64 * LIMBS) {
        memset(mag, 0, LIMBS * sizeof *mag);
        return;
    }
    uint64_t half[LIMBS] = {0};
    half[(s - 1) / 64] = UINT64_C(1) << ((s - 1) % 64);
    limbs_add_signed(mag, half, 0);
    const int whole = (int)(s / 64), part = (int)(s % 64);
#pragma GCC unroll 4
    for (int i = 0; i < LIMBS; i++) {
        const uint64_t lo = i + whole < LIMBS ? mag[i + whole] : 0, hi = i + whole + 1 < LIMBS ? mag[i + whole + 1] : 0;
        mag[i] = part ? lo >> part | hi << (64 - part) : lo;
    }
}

static void limbs_shift_left(uint64_t x[LIMBS], long s)
{
    const int whole = (int)(s / 64), part = (int)(s % 64);
    for (int i = LIMBS - 1; i >= 0; i--) {
        const uint64_t hi = i - whole >= 0 ? x[i - whole] : 0, lo = i - whole - 1 >= 0 ? x[i - whole - 1] : 0;
        x[i] = part ? hi << part | lo >> (64 - part) : hi;
    }
}

/* A column's update d̂ scaled for the limbs: the entry moves by
 * RNA(m_k · dm / 2^(64 L)), dm = |D| 2^(sh + 64 L) < 2^256 exactly. */
typedef struct {
    uint64_t dm[LIMBS], neg;
    int round_limbs; /* L; > LIMBS: every product rounds to 0 */
} limb_delta;

/* x += (neg ? -1 : 1) · (q + round), round in {0, 1}, mod 2^256: one carry
 * chain, x + (q xor neg) + (round xor neg), since -(q + round) = ~q + 1 -
 * round. */
__attribute__((always_inline)) static inline void add_rounded(uint64_t x[LIMBS], uint64_t q0, uint64_t q1, uint64_t q2,
                                                              uint64_t q3, uint64_t round, uint64_t neg)
{
    const uint64_t carry_in = (round ^ neg) & 1;
#if defined(__x86_64__) && defined(__GNUC__)
    __asm__("xorq %[n], %[q0]\n\txorq %[n], %[q1]\n\txorq %[n], %[q2]\n\txorq %[n], %[q3]\n\tbtq $0, %[c]\n\t"
            "adcq %[q0], %[x0]\n\tadcq %[q1], %[x1]\n\tadcq %[q2], %[x2]\n\tadcq %[q3], %[x3]"
            : [q0] "+&r"(q0), [q1] "+&r"(q1), [q2] "+&r"(q2), [q3] "+&r"(q3), [x0] "+m"(x[0]), [x1] "+m"(x[1]),
              [x2] "+m"(x[2]), [x3] "+m"(x[3])
            : [c] "r"(carry_in), [n] "r"(neg)
            : "cc");
#else
    const uint64_t q[LIMBS] = {q0, q1, q2, q3};
    uint64_t carry = carry_in;
    for (int i = 0; i < LIMBS; i++) {
        const u128 sum = (u128)x[i] + (q[i] ^ neg) + carry;
        x[i] = (uint64_t)sum;
        carry = (uint64_t)(sum >> 64);
    }
#endif
}

/* Limb i of (p0, ..., p4), 0 beyond: a constant choice once i is. */
__attribute__((always_inline)) static inline uint64_t limb_at(int i, uint64_t p0, uint64_t p1, uint64_t p2,
                                                              uint64_t p3, uint64_t p4)
{
    return i == 0 ? p0 : i == 1 ? p1 : i == 2 ? p2 : i == 3 ? p3 : i == 4 ? p4 : 0;
}

/* Column update: x += RNA(m_k dm / 2^(64 L)) with m_k's sign times the
 * delta's (round_limbs == L as a constant in each copy): the product's five
 * limbs, then limbs L and up plus the rounding carry out of limb L - 1 (the
 * + 2^(64 L - 1)), added with their sign. */
__attribute__((always_inline)) static inline void fast_update(uint64_t *col, size_t n, const int64_t *km,
                                                              const limb_delta *dl, int round_limbs)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t x[LIMBS];
        entry_load(col, n, k, x);
        const uint64_t kneg = (uint64_t)(km[k] >> 63), ku = ((uint64_t)km[k] ^ kneg) - kneg;
        uint64_t p[LIMBS + 1];
        ug_limbs256_mul_1(ku, dl->dm, p);
        const uint64_t round = round_limbs ? limb_at(round_limbs - 1, p[0], p[1], p[2], p[3], p[4]) >> 63 : 0;
        add_rounded(x, limb_at(round_limbs, p[0], p[1], p[2], p[3], p[4]),
                    limb_at(round_limbs + 1, p[0], p[1], p[2], p[3], p[4]),
                    limb_at(round_limbs + 2, p[0], p[1], p[2], p[3], p[4]),
                    limb_at(round_limbs + 3, p[0], p[1], p[2], p[3], p[4]), round, kneg ^ dl->neg);
        entry_store(col, n, k, x);
    }
}

/* The update with its rounding limb as a constant: one copy per limb, each
 * on its own registers (noinline). */
__attribute__((noinline)) static void fast_update_column(uint64_t *col, size_t n, const int64_t *km,
                                                         const limb_delta *dl)
{
    switch (dl->round_limbs) {
    case 0: fast_update(col, n, km, dl, 0); break;
    case 1: fast_update(col, n, km, dl, 1); break;
    case 2: fast_update(col, n, km, dl, 2); break;
    case 3: fast_update(col, n, km, dl, 3); break;
    case 4: fast_update(col, n, km, dl, 4); break;
    default: break; /* every product rounds to 0 */
    }
}

/* (hi:lo) += a · b, the 128-bit product of unsigned words, mod 2^128. GCC 12 keeps 128-bit sums of this loop in memory; here they
 * stay in two registers (one mul, one add, one adc). */
__attribute__((always_inline)) static inline void mac_unsigned(uint64_t *lo, uint64_t *hi, uint64_t a, uint64_t b)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t rdx;
    __asm__("mulq %[b]\n\taddq %%rax, %[lo]\n\tadcq %%rdx, %[hi]"
            : [lo] "+r"(*lo), [hi] "+r"(*hi), "+a"(a), "=&d"(rdx)
            : [b] "r"(b)
            : "cc");
#else
    const u128 s = ((u128)*hi << 64 | *lo) + (u128)a * b;
    *lo = (uint64_t)s, *hi = (uint64_t)(s >> 64);
#endif
}

/* abs_dot = |X|ᵀ|q| (unsigned, each limb's sum below 2^127), with |X| =
 * (X xor sign) + [X < 0]: no carry chain per entry. */
__attribute__((noinline)) static void fast_abs_dot(const uint64_t *col, size_t n, const int64_t *qm,
                                                   u128 abs_dot[LIMBS])
{
    uint64_t l0 = 0, h0 = 0, l1 = 0, h1 = 0, l2 = 0, h2 = 0, l3 = 0, h3 = 0; /* scalars: kept in registers */
    for (size_t k = 0; k < n; k++) {
        uint64_t x[LIMBS];
        entry_load(col, n, k, x);
        const uint64_t neg = (uint64_t)((int64_t)x[LIMBS - 1] >> 63);
        const uint64_t qu = (uint64_t)(qm[k] < 0 ? -qm[k] : qm[k]);
        mac_unsigned(&l0, &h0, qu, x[0] ^ neg);
        mac_unsigned(&l1, &h1, qu, x[1] ^ neg);
        mac_unsigned(&l2, &h2, qu, x[2] ^ neg);
        mac_unsigned(&l3, &h3, qu, x[3] ^ neg);
        l0 += qu & neg; /* the + 1 of |X|, times |q| */
        h0 += l0 < (qu & neg);
    }
    abs_dot[0] = (u128)h0 << 64 | l0, abs_dot[1] = (u128)h1 << 64 | l1, abs_dot[2] = (u128)h2 << 64 | l2;
    abs_dot[3] = (u128)h3 << 64 | l3;
}

/* sum_k |q_k| floor(M_k / 2^sh), M = X xor its sign (|X| less [X < 0]):
 * the 64 bits of each M at and above 2^sh, sh <= 191 (M < 2^255), so the
 * sum stays below 2^(48 + 64 + 14). One multiply per entry against
 * fast_abs_dot's four. */
__attribute__((noinline)) static u128 fast_abs_window(const uint64_t *col, size_t n, const int64_t *qm, long sh)
{
    const int j = (int)(sh / 64), s = (int)(sh % 64);
    uint64_t lo = 0, hi = 0;
    for (size_t k = 0; k < n; k++) {
        const uint64_t neg = (uint64_t)((int64_t)col[(LIMBS - 1) * n + k] >> 63);
        const uint64_t qu = (uint64_t)(qm[k] < 0 ? -qm[k] : qm[k]);
        const uint64_t window = (col[j * n + k] ^ neg) >> s | ((col[(j + 1) * n + k] ^ neg) << 1) << (63 - s); /* j + 1 < LIMBS */
        mac_unsigned(&lo, &hi, qu, window);
    }
    return (u128)hi << 64 | lo;
}

/* The column's bits: the largest bit length of X xor its sign (ones'
 * complement magnitude, see column_bits). */
static long fast_column_bits(const uint64_t *col, size_t n)
{
    uint64_t or_mag[LIMBS] = {0};
    for (size_t k = 0; k < n; k++) {
        const uint64_t neg = (uint64_t)((int64_t)col[(LIMBS - 1) * n + k] >> 63);
#pragma GCC unroll 4
        for (int i = 0; i < LIMBS; i++) or_mag[i] |= col[i * n + k] ^ neg;
    }
    for (int i = LIMBS - 1; i >= 0; i--)
        if (or_mag[i]) return 64 * i + 64 - __builtin_clzll(or_mag[i]);
    return 0;
}

/* acc = sum of |m_k| X_k over the indices given, limb by limb mod 2^128
 * (each limb's true sum stays below 2^127 in magnitude). */
__attribute__((noinline)) static void fast_dot_part(const uint64_t *col, size_t n, const uint32_t *order,
                                                    size_t count, const int64_t *m, u128 acc[LIMBS])
{
    uint64_t l0 = 0, h0 = 0, l1 = 0, h1 = 0, l2 = 0, h2 = 0, l3 = 0, h3 = 0; /* scalars: kept in registers */
    for (size_t j = 0; j < count; j++) {
        uint64_t x[LIMBS];
        entry_load(col, n, order[j], x);
        const uint64_t mu = (uint64_t)(m[order[j]] < 0 ? -m[order[j]] : m[order[j]]);
        mac_unsigned(&l0, &h0, mu, x[0]);
        mac_unsigned(&l1, &h1, mu, x[1]);
        mac_unsigned(&l2, &h2, mu, x[2]);
        mac_unsigned(&l3, &h3, mu, x[3]);
        h3 -= mu & (uint64_t)((int64_t)x[3] >> 63); /* the top limb is signed: x3 - 2^64 when negative */
    }
    acc[0] = (u128)h0 << 64 | l0, acc[1] = (u128)h1 << 64 | l1, acc[2] = (u128)h2 << 64 | l2;
    acc[3] = (u128)h3 << 64 | l3;
}

/* out = Xᵀm (384-bit two's complement): the positive components' sum less the negative ones'. */
static void fast_dot(const uint64_t *col, size_t n, const factor_vector *f, uint64_t out[LIMBS + 2])
{
    u128 dot[LIMBS], neg[LIMBS];
    fast_dot_part(col, n, f->order, f->n_pos, f->m, dot);
    fast_dot_part(col, n, f->order + f->n_pos, f->n_neg, f->m, neg);
    for (int i = 0; i < LIMBS; i++) dot[i] -= neg[i];
    limbs_from_accumulators(out, dot);
}

/* ---- the fast path's column scalars (gdn_e2e_wide.h) ------------------------------ */

/* c's significand: c = c_limbs 2^-FAST_PREC in the grid form (c in [1/2, 1)). */
static const uint64_t *c_limbs(const workspace *w) { return mpfr_custom_get_significand(w->c); }

/* column_delta on the fast path: acc = RN(Xᵀk 2^(lsb + E[v])) from key_dots
 * (0 for a zero column or key), then d̂ (d_wide) and d_abs[v] as
 * column_delta gives them. */
static void fast_column_delta(workspace *w, size_t vv, float v_value)
{
    gdn_e2e_wide acc = {.neg = false}, *d = &w->d_wide;
    if (w->bits[vv] && w->key_f.nonzero)
        gdn_e2e_wide_from_twos(&acc, w->key_dots[vv], LIMBS + 2, w->key_f.lsb + w->grid[vv]);
    gdn_e2e_wide_mul(&acc, c_limbs(w), -FAST_PREC);
    if (!gdn_e2e_wide_float_minus(d, v_value, &acc)) {
        mpfr_set_flt(w->d[vv], v_value, MPFR_RNDN); /* exact */
        mpfr_sub(w->d[vv], w->d[vv], gdn_e2e_wide_view(w->view, w->view_limbs, &acc), MPFR_RNDN);
        gdn_e2e_wide_from_mpfr(d, w->d[vv]);
    }
    gdn_e2e_wide_mul_double(d, w->beta_value);
    if (!gdn_e2e_wide_abs_up(d, &w->d_abs[vv]))
        w->d_abs[vv] = fabs(mpfr_get_d(gdn_e2e_wide_view(w->view, w->view_limbs, d), MPFR_RNDA));
    mpfr_srcptr inverse = w->divider.inverse;
    if (!gdn_e2e_wide_divide(d, mpfr_custom_get_significand(inverse), mpfr_get_exp(inverse))) {
        mpfr_div(w->acc, gdn_e2e_wide_view(w->view, w->view_limbs, d), w->c, MPFR_RNDN);
        gdn_e2e_wide_from_mpfr(d, w->acc);
    }
}

/* output_finish on the fast path, from the column's Xᵀq (query_dot). */
static void fast_output_finish(workspace *w, size_t vv, ug_ref_value *o, double abs_products)
{
    gdn_e2e_wide acc = {.neg = false};
    if (w->query_f.nonzero) gdn_e2e_wide_from_twos(&acc, w->query_dot, LIMBS + 2, w->query_f.lsb + w->grid[vv]);
    gdn_e2e_wide_mul(&acc, c_limbs(w), -FAST_PREC);
    gdn_e2e_wide_mul_double(&acc, w->scale_value);
    output_fill(w, o, gdn_e2e_wide_view(w->view, w->view_limbs, &acc), abs_products);
}

/* ---- the grid form's state, on either path ---------------------------------------- */

/* Column v's limbs, planar (fast path). */
static uint64_t *column_limbs(const workspace *w, size_t vv) { return w->limbs + vv * LIMBS * w->s->k; }

static void state_set(workspace *w, size_t vv, size_t kk, mpz_srcptr value)
{
    if (!w->fast) {
        mpz_set(w->x[vv * w->s->k + kk], value);
        return;
    }
    uint64_t x[LIMBS];
    limbs_from_mpz(x, value);
    entry_store(column_limbs(w, vv), w->s->k, kk, x);
}

static void state_get(workspace *w, size_t vv, size_t kk, mpz_ptr out)
{
    if (!w->fast) {
        mpz_set(out, w->x[vv * w->s->k + kk]);
        return;
    }
    uint64_t x[LIMBS];
    entry_load(column_limbs(w, vv), w->s->k, kk, x);
    mpz_from_limbs(out, x, LIMBS);
}

/* The bits of x as a two's complement number less its sign: the bit length
 * of x, or of -x - 1 when x < 0 (its ones' complement). */
static long ones_complement_bits(mpz_srcptr x, mpz_ptr tmp)
{
    mpz_srcptr m = x;
    if (mpz_sgn(x) < 0) mpz_com(tmp, x), m = tmp;
    return mpz_sgn(m) ? (long)mpz_sizeinbase(m, 2) : 0; /* exact in base 2 */
}

/* bits[v]: the largest ones_complement_bits of column v. */
static long column_bits(workspace *w, size_t vv)
{
    const size_t n = w->s->k;
    if (w->fast) return fast_column_bits(column_limbs(w, vv), n);
    long bits = 0;
    for (size_t kk = 0; kk < n; kk++) {
        const long len = ones_complement_bits(w->x[vv * n + kk], w->z_tmp);
        if (len > bits) bits = len;
    }
    return bits;
}

/* z = Xᵀk of column v (exact), plain path (the fast path reads key_dots). */
static void state_key_dot(workspace *w, size_t vv)
{
    const size_t n = w->s->k;
    mpz_set_ui(w->z, 0);
    for (size_t kk = 0; kk < n; kk++) mpz_addmul(w->z, w->key_f.z[kk], w->x[vv * n + kk]);
}

/* Column v's grid moves by s > 0 (coarser: X = RNA(X / 2^s)) or s < 0 (finer: exact). */
static void state_regrid(workspace *w, size_t vv, long s)
{
    const size_t n = w->s->k;
    if (w->simd) {
        gdn_e2e_simd_regrid(column_limbs(w, vv), n, s);
        return;
    }
    for (size_t kk = 0; kk < n; kk++) {
        if (!w->fast) {
            rna_scale(w->x[vv * n + kk], w->x[vv * n + kk], -s, w->z_tmp);
            continue;
        }
        uint64_t x[LIMBS];
        entry_load(column_limbs(w, vv), n, kk, x);
        if (s < 0) {
            limbs_shift_left(x, -s);
        } else {
            uint64_t mag[LIMBS];
            const uint64_t neg = limbs_abs(x, mag);
            limbs_rna_shift_right(mag, s);
            memset(x, 0, LIMBS * sizeof *x);
            limbs_add_signed(x, mag, neg);
        }
        entry_store(column_limbs(w, vv), n, kk, x);
    }
}

/* |X|ᵀ|q| 2^e rounded up to a double, from z_abs = |X|ᵀ|q| (exact): at prec
 * bits rounded up, then to a double rounded up. */
static double abs_products_exact(workspace *w, long e)
{
    mpfr_set_z_2exp(w->abs_acc, w->z_abs, e, MPFR_RNDU);
    return mpfr_get_d(w->abs_acc, MPFR_RNDU);
}

/* abs_products_exact without the exact sum, where the column's windows
 * decide it: with every M_k < 2^(sh + width) and low = sum |q_k| W_k for the
 * windows W_k = floor(M_k / 2^sh) (M = X xor its sign, |X| - [X < 0]),
 * |X_k| lies in [W_k, W_k + 1] 2^sh, so |X|ᵀ|q| lies in [low, low + sum |q|]
 * 2^sh. Rounding up is monotone, so where both ends round up to the same
 * double the sum does too; and the least double at or above a prec-bit
 * rounding up is the least double at or above the sum (doubles have fewer
 * than prec bits), as abs_products_exact gives. False (nothing written)
 * where the ends round apart or the result would not be a normal double. */
static bool fast_abs_products(u128 low, long sh, uint64_t abs_total, long e, double *out)
{
    const u128 high = low + abs_total; /* no wrap: low <= abs_total (2^width - 1) < 2^128 - abs_total */
    /* the least double at or above L 2^(e + sh), where it is normal: L's 53
     * leading bits, one unit more when bits below them are set; the sum
     * rounds up to it iff the upper end does not pass it (a top << cut
     * that wraps to 0 reads as passed). Elsewhere (L shorter than 54 bits,
     * a result outside the normal range) the exact sum decides. */
    const int length = ug_u128_bit_length(low);
    const long exponent = e + sh + length - 53;
    if (length <= 53 || exponent < -1074 || exponent > 1023 - 53) return false;
    const int cut = length - 53;
    const u128 top = (low >> cut) + ((low & (((u128)1 << cut) - 1)) != 0); /* <= 2^53 */
    if (high > top << cut) return false;
    *out = gdn_e2e_normal_double(top, exponent); /* normal */
    return true;
}

/* The AVX-512 pass's window width and the window shift from a guess of the
 * column's bits after its update: sh = guess - (width - WINDOW_HEADROOM),
 * so the window holds the column when the guess is at most WINDOW_HEADROOM
 * bits low and keeps 64 bits of it when at most width - 64 -
 * WINDOW_HEADROOM bits high. */
enum { SIMD_WINDOW_BITS = 96, WINDOW_HEADROOM = 16 };

static long window_shift(long bits, long width)
{
    const long sh = bits - width;
    return sh < 0 ? 0 : sh > 64 * (LIMBS - 1) - 1 ? 64 * (LIMBS - 1) - 1 : sh;
}

/* The fast path's pass over column v: X += RNA(k delta 2^sh) for every k
 * when update, then bits[v], z = Xᵀq, key_dots[v] = Xᵀk of the next token,
 * and |X|ᵀ|q| 2^e rounded up to a double (0 for a zero query); on AVX-512
 * one pass for all of it where every factor fits (gdn_e2e_simd.h), with the
 * window shift from expected_bits (a guess of bits[v] after the update). */
static double fast_update_and_query(workspace *w, size_t vv, bool update, long sh, long expected_bits, long e)
{
    const size_t n = w->s->k;
    limb_delta dl = {.neg = w->d_wide.neg ? ~UINT64_C(0) : 0};
    if (update) {
        const long round_limbs = sh >= 0 ? 0 : (-sh + 63) / 64; /* ceil(-sh / 64) */
        dl.round_limbs = round_limbs > LIMBS ? LIMBS + 1 : (int)round_limbs;
        if (dl.round_limbs <= LIMBS) /* |d̂| 2^(sh + 64 L) below 2^256 (§2) */
            gdn_e2e_wide_limbs(&w->d_wide, sh + 64 * dl.round_limbs, dl.dm, LIMBS);
    }
    uint64_t *col = column_limbs(w, vv), *query_dot = w->query_dot;
    long wsh = 0;
    u128 window = 0;
    bool have_window = false;
    if (w->simd && (!update || w->key_f.simd_fits) && w->query_f.simd_fits && w->next_key_f.simd_fits) {
        gdn_e2e_simd_pass_in in = {.key = update ? w->key_f.m : NULL, .neg = dl.neg, .round_limbs = dl.round_limbs,
                                   .query = w->query_f.m, .next = w->next_key_f.m, .query_sum = w->query_f.m_sum,
                                   .next_sum = w->next_key_f.m_sum};
        memcpy(in.dm, dl.dm, sizeof in.dm);
        wsh = window_shift(expected_bits, SIMD_WINDOW_BITS - WINDOW_HEADROOM);
        in.window_shift = (int)wsh;
        gdn_e2e_simd_pass_out out;
        gdn_e2e_simd_column_pass(col, n, &in, &out);
        w->bits[vv] = out.bits;
        memcpy(query_dot, out.query_dot, sizeof out.query_dot);
        memcpy(w->key_dots[vv], out.next_dot, sizeof out.next_dot);
        window = out.window;
        /* the window holds the column, and 64 bits of it (or all of it) */
        have_window = out.bits <= wsh + SIMD_WINDOW_BITS && (wsh == 0 || out.bits >= wsh + 64);
    } else {
        if (update) fast_update_column(col, n, w->key_f.m, &dl);
        w->bits[vv] = fast_column_bits(col, n);
        fast_dot(col, n, &w->query_f, query_dot);
        fast_dot(col, n, &w->next_key_f, w->key_dots[vv]);
    }
    if (!w->query_f.nonzero || w->bits[vv] == 0) return 0.0; /* a zero query, or X = 0: the exact sum is 0 */
    if (!have_window) {
        wsh = window_shift(w->bits[vv], 64);
        window = fast_abs_window(col, n, w->query_f.m, wsh);
    }
    double abs_products;
    if (fast_abs_products(window, wsh, w->query_f.abs_total, e, &abs_products)) return abs_products;
    u128 abs_dot[LIMBS];
    fast_abs_dot(col, n, w->query_f.m, abs_dot);
    mpz_from_accumulators(w->z_abs, abs_dot);
    return abs_products_exact(w, e);
}

/* Column v: X += RNA(k delta 2^sh) for every k when update, then bits[v],
 * z = Xᵀq and the result: |X|ᵀ|q| 2^e rounded up to a double, e = the
 * query's lsb + E[v] (for a zero query: z = 0 and 0). The fast path also
 * leaves the next token's Xᵀk in key_dots[v]. */
static double state_update_and_query(workspace *w, size_t vv, bool update, long sh, long expected_bits)
{
    const size_t n = w->s->k;
    const long e = w->query_f.nonzero ? w->query_f.lsb + w->grid[vv] : 0;
    if (w->fast) return fast_update_and_query(w, vv, update, sh, expected_bits, e);
    mpz_srcptr dz = w->delta;
    mpz_set_ui(w->z, 0);
    mpz_set_ui(w->z_abs, 0);
    for (size_t kk = 0; kk < n; kk++) {
        mpz_ptr x = w->x[vv * n + kk];
        if (update) {
            mpz_mul(w->z_tmp, w->key_f.z[kk], dz);
            rna_scale(w->z_tmp, w->z_tmp, sh, w->z_abs);
            mpz_add(x, x, w->z_tmp);
        }
        mpz_addmul(w->z, w->query_f.z[kk], x);
    }
    mpz_set_ui(w->z_abs, 0);
    for (size_t kk = 0; kk < n; kk++) {
        mpz_abs(w->z_tmp, w->x[vv * n + kk]);
        if (mpz_sgn(w->query_f.z[kk]) < 0)
            mpz_submul(w->z_abs, w->query_f.z[kk], w->z_tmp);
        else
            mpz_addmul(w->z_abs, w->query_f.z[kk], w->z_tmp);
    }
    w->bits[vv] = column_bits(w, vv);
    return w->query_f.nonzero ? abs_products_exact(w, e) : 0.0;
}

/* ---- the grid form's recurrence -------------------------------------------------- */

static void grid_head_start(workspace *w, const float *h0)
{
    const gdn_e2e_shape *s = w->s;
    mpfr_set_ui(w->c, 1, MPFR_RNDN);
    for (size_t vv = 0; vv < s->v; vv++) {
        long top = LONG_MIN;
        for (size_t kk = 0; h0 && kk < s->k; kk++) {
            int e = 0;
            frexpf(h0[h0_at(w, kk, vv)], &e);
            if (h0[h0_at(w, kk, vv)] != 0 && e > top) top = e;
        }
        w->grid[vv] = top == LONG_MIN ? 0 : top - grid_target(w->prec);
        for (size_t kk = 0; kk < s->k; kk++) {
            int e = 0;
            const float x = h0 ? h0[h0_at(w, kk, vv)] : 0.0f;
            mpz_set_d(w->z, ldexp(frexpf(x, &e), F32_PREC)); /* x = m 2^(e - 24), m an integer */
            rna_scale(w->z, w->z, e - F32_PREC - w->grid[vv], w->z_tmp);
            state_set(w, vv, kk, w->z);
        }
        w->bits[vv] = column_bits(w, vv);
        if (w->fast) fast_dot(column_limbs(w, vv), s->k, &w->key_f, w->key_dots[vv]);
    }
}

/* c <- c exp(g), then c's exponent moves into every grid: c stays in [1/2, 1). */
static void grid_decay(workspace *w, float g)
{
    mpfr_set_flt(w->gate, g, MPFR_RNDN);
    mpfr_exp(w->gate, w->gate, MPFR_RNDN);
    mpfr_mul(w->c, w->c, w->gate, MPFR_RNDN);
    const long e = mpfr_get_exp(w->c); /* c > 0: |g| <= 64 */
    mpfr_set_exp(w->c, 0);
    w->c_abs = mpfr_get_d(w->c, MPFR_RNDA);
    gdn_e2e_divider_set(&w->divider, w->c);
    for (size_t vv = 0; vv < w->s->v; vv++) w->grid[vv] += e;
}

/* Before column v's update: a grid on which X and the update fit below
 * 2^cap and the larger of them is at least 2^(floor - 1). Returns the
 * bits the column will have after the update, about (a guess for the
 * windows of fast_update_and_query). */
static long grid_fit(workspace *w, size_t vv, long d_exp)
{
    const long u = w->key_f.top + d_exp - w->grid[vv]; /* |k d̂| < 2^u grid units, |d̂| < 2^d_exp */
    const long target = grid_target(w->prec);
    if (w->bits[vv] == 0) { /* a zero column takes any grid: the update's */
        w->grid[vv] += u + 1 - target;
        return target;
    }
    const long need = (w->bits[vv] > u ? w->bits[vv] : u) + 1, shift = need - target;
    if (need > grid_cap(w->prec) || need < grid_floor(w->prec)) {
        state_regrid(w, vv, shift);
        w->grid[vv] += shift;
        return target;
    }
    return need;
}

static void grid_token(workspace *w, size_t t, const ug_bf16 *q, const ug_bf16 *k, const ug_bf16 *v,
                       const float *beta, const float *g_raw, ug_ref_value *o)
{
    const gdn_e2e_shape *s = w->s;
    const size_t dk = s->k, dv = s->v;
    grid_decay(w, g_raw[at3(s, w->b, t, w->h)]);
    /* key_f holds this token's key (the previous token, or the head's start, loaded it) */
    load_key_abs(w, k + row4(s, w->b, t, s->hg, w->key_head, dk));
    load_beta(w, beta, t);
    load_factors(w, &w->query_f, q + row4(s, w->b, t, s->hg, w->key_head, dk));
    load_factors(w, &w->next_key_f, t + 1 < s->t ? k + row4(s, w->b, t + 1, s->hg, w->key_head, dk) : NULL);
    const ug_bf16 *v_row = v + row4(s, w->b, t, s->h, w->h, dv);
    ug_ref_value *o_row = o + row4(s, w->b, t, s->h, w->h, dv);
    for (size_t vv = 0; vv < dv; vv++) {
        if (w->fast) {
            fast_column_delta(w, vv, ug_bf16_to_f32(v_row[vv]));
        } else {
            if (w->bits[vv] && w->key_f.nonzero) {
                state_key_dot(w, vv);
                mpfr_set_z_2exp(w->acc, w->z, w->key_f.lsb + w->grid[vv], MPFR_RNDN);
            } else {
                mpfr_set_zero(w->acc, 1);
            }
            column_delta(w, vv, ug_bf16_to_f32(v_row[vv]));
        }
        if (t + 1 == s->t)
            for (size_t kk = 0; kk < dk; kk++) {
                state_get(w, vv, kk, w->z);
                mpfr_set_z_2exp(w->wide, w->z, w->grid[vv], MPFR_RNDN); /* exact */
                w->decayed_abs[vv * dk + kk] = times_c_abs(w, w->wide);
            }
        const bool d_zero = w->fast ? gdn_e2e_wide_zero(&w->d_wide) : mpfr_zero_p(w->d[vv]);
        const bool update = w->key_f.nonzero && !d_zero;
        long sh = 0, expected_bits = w->bits[vv];
        if (update) {
            /* d̂ = delta 2^e, delta the prec-bit significand as an integer (fast path: d_wide's) */
            const long e = w->fast ? w->d_wide.e : mpfr_get_z_2exp(w->delta, w->d[vv]);
            expected_bits = grid_fit(w, vv, e + w->prec);
            sh = w->key_f.lsb + e - w->grid[vv];
        }
        const double abs_products = state_update_and_query(w, vv, update, sh, expected_bits);
        if (w->fast) {
            fast_output_finish(w, vv, &o_row[vv], abs_products);
            continue;
        }
        if (w->query_f.nonzero)
            mpfr_set_z_2exp(w->acc, w->z, w->query_f.lsb + w->grid[vv], MPFR_RNDN);
        else
            mpfr_set_zero(w->acc, 1);
        output_finish(w, &o_row[vv], abs_products);
    }
    const factor_vector next = w->next_key_f; /* the next token's key becomes key_f (swapping the buffers) */
    w->next_key_f = w->key_f;
    w->key_f = next;
}

static void grid_finish_head(workspace *w, ug_ref_value *final_state)
{
    const gdn_e2e_shape *s = w->s;
    ug_ref_value *out = final_state + (w->b * s->h + w->h) * s->k * s->v;
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++) {
            state_get(w, vv, kk, w->z);
            mpfr_set_z_2exp(w->wide, w->z, w->grid[vv], MPFR_RNDN); /* exact */
            final_finish(w, &out[kk * s->v + vv], w->wide, kk, vv);
        }
}

ug_status gdn_e2e_reference(const gdn_e2e_shape *s, mpfr_prec_t prec, float scale, const ug_bf16 *q,
                            const ug_bf16 *k, const ug_bf16 *v, const float *beta, const float *g_raw,
                            const float *h0, ug_ref_value *o, ug_ref_value *final_state)
{
    workspace w;
    UG_TRY(workspace_open(&w, s, prec, scale));
    const float *head_h0 = s->has_h0 ? h0 : NULL;
    for (w.b = 0; w.b < s->b; w.b++)
        for (w.h = 0; w.h < s->h; w.h++) {
            w.key_head = w.h / (s->h / s->hg);
            if (grid_head_ok(&w, q, k, v, beta, g_raw, head_h0)) {
                w.fast = fast_head_ok(&w, q, k);
                w.simd = w.fast && s->k % GDN_E2E_SIMD_STEP == 0 && s->k <= GDN_E2E_SIMD_MAX_N &&
                         ug_ref_simd_available();
                load_factors(&w, &w.key_f, k + row4(s, w.b, 0, s->hg, w.key_head, s->k));
                grid_head_start(&w, head_h0);
                for (size_t t = 0; t < s->t; t++) grid_token(&w, t, q, k, v, beta, g_raw, o);
                grid_finish_head(&w, final_state);
            } else {
                w.fast = w.simd = false;
                float_head_start(&w, head_h0);
                for (size_t t = 0; t < s->t; t++) float_token(&w, t, q, k, v, beta, g_raw, o);
                float_finish_head(&w, final_state);
            }
        }
    workspace_close(&w);
    return ug_ok();
}
