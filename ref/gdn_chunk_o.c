/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_o.h"

#include <limits.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exact_sum.h"
#include "gdn_fast.h"
#include "round.h"
#include "rowsimd.h"

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

/* What gdn_chunk_o_product_error's terms share for one exponential and one
 * length: the same products, computed once (a row's state terms). */
typedef struct {
    double dot_gamma, dot_underflow, exp_err, e_up, u_e_up, underflow_half;
} product_constants;

static product_constants product_constants_of(const ug_f32_model *m, double e_up, ug_f32_error exp, size_t n)
{
    return (product_constants){.dot_gamma = ug_f32_gamma(n) * UG_F32_SLACK,
                               .dot_underflow = (double)n * ug_f32_underflow(m),
                               .exp_err = exp.rel == 0 && exp.abs == 0 ? 0 : e_up * exp.rel + exp.abs,
                               .e_up = e_up,
                               .u_e_up = UG_F32_U * e_up,
                               .underflow_half = ug_f32_underflow_half(m)};
}

/* Eight doubles (GCC's vector extensions): the bounds' arithmetic written
 * once for one element or eight, lane by lane the same products and sums
 * (no contraction: -ffp-contract=off). */
typedef double lanes __attribute__((vector_size(8 * sizeof(double))));

UG_XSUM_INLINE void product_error_lanes(const product_constants *c, const lanes *abs_dot, const lanes *abs_terms,
                                        lanes *error)
{
    /* Dot product: gamma_n relative to the magnitudes, plus one subnormal
     * rounding per term (bf16 x bf16 products are exact in f32 and tf32). */
    const lanes dot_err = c->dot_gamma * *abs_terms + c->dot_underflow;
    /* |e^ D^ - e D| <= |e^ - e| |D^| + e |D^ - D|; the product rounds once. */
    const lanes unrounded = c->exp_err * (*abs_dot + dot_err) + c->e_up * dot_err;
    *error = (unrounded * (1 + UG_F32_U) + c->u_e_up * *abs_dot + c->underflow_half) * UG_F32_SLACK;
}

static double product_error_of(const product_constants *c, double abs_dot, double abs_terms)
{
    const lanes one_dot = {abs_dot}, one_terms = {abs_terms};
    lanes error;
    product_error_lanes(c, &one_dot, &one_terms, &error);
    return error[0];
}

double gdn_chunk_o_product_error(const ug_f32_model *m, double e_up, ug_f32_error exp, double abs_dot,
                                 double abs_terms, size_t n)
{
    const product_constants c = product_constants_of(m, e_up, exp, n);
    return product_error_of(&c, abs_dot, abs_terms);
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

/* Entries [from, n) of x into out, min_e and max_e over them (branch-free:
 * the compares are data). */
static void int_entries(int_vector *out, const ug_bf16 *x, size_t stride, size_t from, size_t n)
{
    int min_e = out->min_e, max_e = out->max_e;
    bool nonfinite = out->nonfinite;
    for (size_t i = from; i < n; i++) {
        const ug_bf16 bits = x[i * stride];
        nonfinite |= (bits & 0x7F80) == 0x7F80;
        const int biased = bits >> 7 & 0xFF, e = (biased ? biased : 1) - 127 - 7;
        const int32_t m = (biased ? 0x80 : 0) | (bits & 0x7F);
        out->m[i] = bits & 0x8000 ? -m : m;
        out->e[i] = e;
        const int lo = m ? e : INT_MAX, hi = m ? e : INT_MIN;
        min_e = lo < min_e ? lo : min_e;
        max_e = hi > max_e ? hi : max_e;
    }
    out->min_e = min_e;
    out->max_e = max_e;
    out->nonfinite = nonfinite;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* int_entries of x[0 .. 16 k) (stride 1), sixteen entries an instruction;
 * returns 16 k, the entries done. */
__attribute__((target("avx512f"))) static size_t int_entries_avx512(int_vector *out, const ug_bf16 *x, size_t n)
{
    const __m512i exp_mask = _mm512_set1_epi32(0xFF), frac_mask = _mm512_set1_epi32(0x7F);
    const __m512i implicit = _mm512_set1_epi32(0x80), inf_bits = _mm512_set1_epi32(0x7F80);
    const __m512i bias = _mm512_set1_epi32(127 + 7), one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();
    __m512i lo = _mm512_set1_epi32(INT_MAX), hi = _mm512_set1_epi32(INT_MIN);
    __mmask16 nonfinite = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i bits = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)));
        const __m512i biased = _mm512_and_si512(_mm512_srli_epi32(bits, 7), exp_mask);
        __m512i m = _mm512_and_si512(bits, frac_mask);
        m = _mm512_mask_or_epi32(m, _mm512_test_epi32_mask(biased, biased), m, implicit);
        const __mmask16 nonzero = _mm512_test_epi32_mask(m, m);
        m = _mm512_mask_sub_epi32(m, _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x8000)), zero, m);
        const __m512i e = _mm512_sub_epi32(_mm512_max_epi32(biased, one), bias);
        _mm512_storeu_si512(out->m + i, m);
        _mm512_storeu_si512(out->e + i, e);
        lo = _mm512_mask_min_epi32(lo, nonzero, lo, e);
        hi = _mm512_mask_max_epi32(hi, nonzero, hi, e);
        nonfinite |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, inf_bits), inf_bits);
    }
    const int min_e = _mm512_reduce_min_epi32(lo), max_e = _mm512_reduce_max_epi32(hi);
    out->min_e = min_e < out->min_e ? min_e : out->min_e;
    out->max_e = max_e > out->max_e ? max_e : out->max_e;
    out->nonfinite |= nonfinite != 0;
    return i;
}
#endif

/* simd: the CPU has AVX-512 (ug_ref_simd_available). */
static void int_vector_set(int_vector *out, const ug_bf16 *x, size_t stride, size_t n, bool simd)
{
    out->min_e = INT_MAX;
    out->max_e = INT_MIN;
    out->src = x;
    out->stride = stride;
    out->nonfinite = false;
    size_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (simd && stride == 1) done = int_entries_avx512(out, x, n);
#endif
    (void)simd;
    int_entries(out, x, stride, done, n);
    for (size_t i = 0; i < n; i++) out->e[i] = out->m[i] == 0 ? out->min_e : out->e[i];
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

/* ---- the fast path's pieces (docs/error-model.md §2.1) ---------------------- */

/* An attention operand x = dot·e·2^exp on the fast path: dot the exact q.k
 * as an integer (unit 2^(q_lo[i] + k_lo[j])), e = RN_128(exp(g_t - g_s)) (1 when
 * the gates are equal), exactly the MPFR path's x. */
typedef struct {
    int64_t dot;
    ug_gdn_fx e;
} pair_operand;

/* Operand factors [begin, end) of a row on one grid 2^grid, nc limbs each
 * (with rowsimd.h's windows: nc digits of 52 bits). Up to 16 groups a row:
 * under strong decay a 64-row chunk's exact factors span ~13 groups of
 * about five, and a window per group costs an element less than its terms
 * added one by one (4 groups left 24 terms a row: 15 % slower). */
enum { ROW_GROUPS = 16 };
typedef struct {
    size_t begin, end;
    int grid, nc;
} row_group;

/* One chunk's fast-path state. The entries of the queries, keys and state
 * rows as integers, each vector on its own grid (q_int[i][d] 2^q_lo[i] =
 * q_i[d]), so a dot product is a plain integer dot product. */
typedef struct {
    int64_t *q_int, *k_int, *h_int; /* [bt][kdim], [bt][kdim], [width][kdim] */
    int *q_lo, *k_lo, *h_lo;        /* [bt], [bt], [width] */
    ug_gdn_exp256 *gate_exp, *gate_inv; /* [bt]: exp(g_t), exp(-g_t) */
    pair_operand *pair;             /* [bt][bt], j <= i */
    bool *row_mpfr;                 /* [bt]: the row goes through the MPFR path */
    bool *exp_failed;               /* [bt]: exp(g_t) or exp(-g_t) not a regular number */
    int *q_spread, *k_spread, *h_spread; /* [bt], [bt], [width]: max_e - min_e of each vector */
    int h_widest;                   /* the largest h_spread */
    /* The state dot products: in doubles (simd) the state rows' entries
     * and magnitudes by entry ([kdim][width] each) and the queries' ([bt][kdim]
     * each); each row's dot products and magnitude sums ([bt][width] each),
     * dots_done [bt] where they are already there. */
    double *h_dbl, *h_abs, *q_dbl, *q_abs;
    int64_t *state_dot, *state_mag;
    bool *dots_done;
    size_t *dot_rows; /* [bt] */
    bool scaled_v_done;             /* the MPFR path's scaled_v is filled for this chunk */
    bool simd;                      /* AVX-512 (ug_ref_simd_available): the inputs' integer forms, dot products */
    bool simd_windows;              /* the attention windows from ug_xwin52_windows (bt terms at most) */
    /* The attention sums' windows (exact_sum.h): each column's values on the
     * column's grid ([width][bt], v_on false off it), and one row's operand
     * factors (|q.k|·e in exact mode, RN_bf16 in staged mode) in groups,
     * each on its own grid, by group ([bt]; those past the last group in
     * row_rest). */
    uint64_t *v_s, *v_mask;
    bool *v_on;
    int *v_grid;
    size_t *v_off;
    uint64_t (*row_c)[UG_XWIN_MAX_C], *row_mask;
    size_t *row_j, *row_rest, n_rest;
    int *row_top, *row_e; /* [bt]: by j, the row's factors' top bits and exponents */
    row_group group[ROW_GROUPS];
    size_t n_groups;
    /* The same in rowsimd.h's digits (simd_windows): the values by token
     * ([bt][width], signs [bt][(width + 7) / 8]), the row's factors ([bt]
     * in group order), and each group's windows of every column
     * ([ROW_GROUPS][width]). */
    uint64_t *col_digit, *row_digits;
    uint8_t *col_neg, *row_neg;
    uint64_t (*win)[UG_XWIN_LIMBS];
    /* One row's attention magnitudes, by column ([width] each). */
    double *row_abs, *row_mag, *row_err;
    double *row_bound, *row_abs_sum; /* one row's elements' ([width] each) */
    double *weight_abs, *weight_err, *weight_mag; /* one row's attention terms' ([bt] each) */
    uint32_t *weight_flag;
    uint32_t *row_flagged;
    mpfr_t wide;
    mpz_t scratch;
    ug_xsum acc, operand;
} fast_chunk;

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
    mpfr_t *dot_terms; /* [max(kdim, bt)]: a state or attention dot product's terms */
    mpfr_ptr *dot_term_ptrs;
    size_t x_ready, scaled_v_ready, terms_ready, dot_terms_ready;
    mpfr_t diff, e, radius, sum;
    dot_workspace dot;
    double *abs_v; /* [bt][width] |v| as the bound reads it */
    fast_chunk fast;
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
    free(ws->abs_v);
    free(ws->fast.q_int);
    free(ws->fast.q_lo);
    free(ws->fast.gate_exp);
    free(ws->fast.pair);
    free(ws->fast.row_mpfr);
    free(ws->fast.q_spread);
    free(ws->fast.h_dbl);
    free(ws->fast.state_dot);
    free(ws->fast.dots_done);
    free(ws->fast.dot_rows);
    free(ws->fast.weight_abs);
    free(ws->fast.weight_flag);
    free(ws->fast.v_s);
    free(ws->fast.v_on);
    free(ws->fast.v_grid);
    free(ws->fast.v_off);
    free(ws->fast.row_c);
    free(ws->fast.row_j);
    free(ws->fast.row_top);
    free(ws->fast.row_abs);
    free(ws->fast.row_flagged);
    free(ws->fast.col_digit);
    free(ws->fast.col_neg);
    free(ws->fast.win);
    mpfr_clears(ws->diff, ws->e, ws->radius, ws->sum, ws->dot.result, ws->dot.low, ws->fast.wide, (mpfr_ptr)0);
    mpz_clear(ws->fast.scratch);
}

static ug_status workspace_init(workspace *ws, size_t bt, size_t kdim, size_t width)
{
    *ws = (workspace){.bt = bt, .kdim = kdim, .width = width};
    mpfr_inits2(UG_REF_PREC, ws->e, ws->sum, (mpfr_ptr)0);
    mpfr_init2(ws->diff, DIFF_PREC);
    mpfr_init2(ws->radius, 64);
    mpfr_init2(ws->dot.result, DOT_PREC_MAX);
    mpfr_init2(ws->dot.low, 64);
    mpfr_init2(ws->fast.wide, 4 * 64);
    mpz_init(ws->fast.scratch);
    ug_xsum_init(&ws->fast.acc);
    ug_xsum_init(&ws->fast.operand);
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
    const size_t dot_len = kdim > bt ? kdim : bt; /* the staged attention dot products have bt terms */
    ws->dot_terms = calloc(dot_len, sizeof *ws->dot_terms);
    ws->dot_term_ptrs = calloc(dot_len, sizeof *ws->dot_term_ptrs);
    ws->abs_v = calloc(bt * width, sizeof *ws->abs_v);
    ws->fast.q_int = calloc((2 * bt + width) * kdim, sizeof *ws->fast.q_int);
    ws->fast.q_lo = calloc(2 * bt + width, sizeof *ws->fast.q_lo);
    ws->fast.gate_exp = calloc(2 * bt, sizeof *ws->fast.gate_exp);
    ws->fast.pair = calloc(bt * bt, sizeof *ws->fast.pair);
    ws->fast.row_mpfr = calloc(2 * bt, sizeof *ws->fast.row_mpfr);
    ws->fast.q_spread = calloc(2 * bt + width, sizeof *ws->fast.q_spread);
    ws->fast.h_dbl = calloc(2 * kdim * width + 2 * bt * kdim, sizeof *ws->fast.h_dbl);
    ws->fast.state_dot = calloc(2 * bt * width, sizeof *ws->fast.state_dot);
    ws->fast.dots_done = calloc(bt, sizeof *ws->fast.dots_done);
    ws->fast.dot_rows = calloc(bt, sizeof *ws->fast.dot_rows);
    ws->fast.weight_abs = calloc(3 * bt, sizeof *ws->fast.weight_abs);
    ws->fast.weight_flag = calloc(bt, sizeof *ws->fast.weight_flag);
    ws->fast.v_s = calloc(2 * width * bt + bt, sizeof *ws->fast.v_s);
    ws->fast.v_on = calloc(width * bt, sizeof *ws->fast.v_on);
    ws->fast.v_grid = calloc(width, sizeof *ws->fast.v_grid);
    ws->fast.v_off = calloc(width, sizeof *ws->fast.v_off);
    ws->fast.row_c = calloc(bt, sizeof *ws->fast.row_c);
    ws->fast.row_j = calloc(2 * bt, sizeof *ws->fast.row_j);
    ws->fast.row_top = calloc(2 * bt, sizeof *ws->fast.row_top);
    ws->fast.row_abs = calloc(5 * width, sizeof *ws->fast.row_abs);
    ws->fast.row_flagged = calloc(width, sizeof *ws->fast.row_flagged);
    ws->fast.col_digit = calloc(bt * width + bt * UG_XWIN52_DIGITS, sizeof *ws->fast.col_digit);
    ws->fast.col_neg = calloc(bt * ((width + 7) / 8) + bt, sizeof *ws->fast.col_neg);
    ws->fast.win = calloc(ROW_GROUPS * width, sizeof *ws->fast.win);
    if (!ws->fast.v_s || !ws->fast.v_on || !ws->fast.v_grid || !ws->fast.v_off || !ws->fast.row_c ||
        !ws->fast.row_j || !ws->fast.row_top || !ws->fast.row_abs || !ws->fast.row_flagged ||
        !ws->fast.col_digit || !ws->fast.col_neg || !ws->fast.win || !ws->abs_v || !ws->fast.q_int || !ws->fast.q_lo ||
        !ws->fast.gate_exp || !ws->fast.pair || !ws->fast.row_mpfr || !ws->fast.q_spread ||
        !ws->fast.h_dbl || !ws->fast.state_dot || !ws->fast.dots_done || !ws->fast.dot_rows ||
        !ws->fast.weight_abs || !ws->fast.weight_flag ||
        !ws->queries || !ws->m_store || !ws->e_store || !ws->rounded_row || !ws->x || !ws->staged ||
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
    for (; ws->dot_terms_ready < dot_len; ws->dot_terms_ready++) {
        mpfr_init2(ws->dot_terms[ws->dot_terms_ready], 53);
        ws->dot_term_ptrs[ws->dot_terms_ready] = ws->dot_terms[ws->dot_terms_ready];
    }
    ws->dot.terms = ws->dot_terms;
    ws->dot.term_ptrs = ws->dot_term_ptrs;
    ws->fast.k_int = ws->fast.q_int + bt * kdim;
    ws->fast.h_int = ws->fast.k_int + bt * kdim;
    ws->fast.k_lo = ws->fast.q_lo + bt;
    ws->fast.h_lo = ws->fast.k_lo + bt;
    ws->fast.gate_inv = ws->fast.gate_exp + bt;
    ws->fast.exp_failed = ws->fast.row_mpfr + bt;
    ws->fast.k_spread = ws->fast.q_spread + bt;
    ws->fast.h_spread = ws->fast.k_spread + bt;
    ws->fast.h_abs = ws->fast.h_dbl + kdim * width;
    ws->fast.q_dbl = ws->fast.h_abs + kdim * width;
    ws->fast.q_abs = ws->fast.q_dbl + bt * kdim;
    ws->fast.state_mag = ws->fast.state_dot + bt * width;
    ws->fast.v_mask = ws->fast.v_s + width * bt;
    ws->fast.row_mask = ws->fast.v_mask + width * bt;
    ws->fast.row_rest = ws->fast.row_j + bt;
    ws->fast.row_e = ws->fast.row_top + bt;
    ws->fast.row_mag = ws->fast.row_abs + width;
    ws->fast.row_digits = ws->fast.col_digit + bt * width;
    ws->fast.row_neg = ws->fast.col_neg + bt * ((width + 7) / 8);
    ws->fast.row_err = ws->fast.row_mag + width;
    ws->fast.row_bound = ws->fast.row_err + width;
    ws->fast.row_abs_sum = ws->fast.row_bound + width;
    ws->fast.weight_err = ws->fast.weight_abs + bt;
    ws->fast.weight_mag = ws->fast.weight_err + bt;
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

/* The kernel's pre-cast error of an attention operand with finite gates:
 * g_t - g_s rounded up and away, |q.k| rounded away, sum |q_d k_d|. */
static double operand_radius(const workspace *ws, const args *a, bool unit_decay, double diff_up, double diff_away,
                             double abs_dot, double abs_terms)
{
    const double e_up = unit_decay ? 1.0 : gdn_chunk_o_exp_up(diff_up);
    return gdn_chunk_o_product_error(a->model, e_up, ug_f32_exp_of_rounded(a->model, diff_away), abs_dot, abs_terms,
                                     ws->kdim);
}

/* The staged analysis of operand x (exact: x carries no exp rounding). */
static void stage_attention(workspace *ws, mpfr_srcptr x, double radius, bool exact, ug_staged *st)
{
    mpfr_set_d(ws->radius, radius, MPFR_RNDU);
    ug_stage_operand(x, ws->radius, st);
    if (!exact && mpfr_number_p(x)) st->dev += fabs(mpfr_get_d(x, MPFR_RNDA)) * 0x1p-126; /* x's own rounding */
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
    const double radius = finite_gates ? operand_radius(ws, a, unit_decay, mpfr_get_d(ws->diff, MPFR_RNDU),
                                                        mpfr_get_d(ws->diff, MPFR_RNDA),
                                                        fabs(mpfr_get_d(dot, MPFR_RNDA)), abs_terms)
                                       : 0.0; /* x is 0, +-inf or NaN: its own cast */
    stage_attention(ws, x, radius, exact, &ws->staged[i * ws->bt + j]);
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
        const double abs_v = ws->abs_v[j * ws->width + col];
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

/* What every element of chunk row i shares: its gate, the bound's
 * constants, and (staged mode) the row's operands RN_bf16(Q_ij) as integers. */
typedef struct {
    float g_t;
    size_t n_terms; /* the state term and the attention terms j <= i */
    double abs_scale, gamma, underflow;
    product_constants state; /* the state term's product error */
} row_constants;

static row_constants row_constants_of(workspace *ws, const args *a, float g_t, size_t i)
{
    row_constants r = {.g_t = g_t, .n_terms = i + 2, .abs_scale = fabs(a->scale)};
    r.gamma = ug_f32_gamma(r.n_terms) * UG_F32_SLACK;
    r.underflow = (double)(r.n_terms + 2) * ug_f32_underflow(a->model);
    /* exp(g_t) is exact (1) at g_t == 0, where the profile may declare expf
     * exact too. */
    const double e_up = g_t == 0 ? 1.0 : gdn_chunk_o_exp_up((double)g_t);
    r.state = product_constants_of(a->model, e_up, ug_f32_op_error(a->model, UG_F32_EXP, g_t, g_t), ws->kdim);
    if (a->mode == UG_REF_STAGED) {
        for (size_t j = 0; j < ws->bt; j++) ws->rounded_row[j] = j <= i ? ws->staged[i * ws->bt + j].rn : 0;
        int_vector_set(&ws->attention_rows[i], ws->rounded_row, 1, ws->bt, ws->fast.simd);
    }
    return r;
}

typedef struct {
    double bound, abs_sum;
} element_bound;

/* Elements' bounds and magnitude sums from their state dot products' |q.h|
 * (rounded away) and sum |q_d h_d|, and their attention terms' magnitudes,
 * eight at a time. */
typedef struct {
    lanes abs_dot, abs_state_terms, m_abs, m_mag, m_err;
} bound_inputs;

UG_XSUM_INLINE void bound_lanes(const row_constants *row, const bound_inputs *in, lanes *bound, lanes *abs_sum)
{
    lanes err_p;
    product_error_lanes(&row->state, &in->abs_dot, &in->abs_state_terms, &err_p);
    const double e_up = row->state.e_up;
    const lanes sum = e_up * in->abs_state_terms + in->m_abs, acc_mag = e_up * in->abs_dot + err_p + in->m_mag;
    *bound = row->abs_scale * (row->gamma * acc_mag + err_p + in->m_err) * UG_F32_SLACK + row->underflow;
    *abs_sum = row->abs_scale * sum * UG_F32_SLACK;
}

/* One element's. */
static element_bound bound_of(const row_constants *row, double abs_dot, double abs_state_terms,
                              const attention_magnitudes *m)
{
    const bound_inputs in = {{abs_dot}, {abs_state_terms}, {m->abs_sum}, {m->acc_mag}, {m->cast_err}};
    lanes bound, abs_sum;
    bound_lanes(row, &in, &bound, &abs_sum);
    return (element_bound){bound[0], abs_sum[0]};
}

/* Every output element of chunk row i (token t0 + i):
 * r = scale * (exp(g_t) q_t.h[v] + sum_{j<=i} Q_ij v_j), Q_ij the exact
 * operand (exact mode) or its RN_bf16 (staged mode: then the attention sum is
 * an exact bf16 dot product). */
static void output_row(workspace *ws, const args *a, size_t b, size_t head, size_t t0, size_t i)
{
    const gdn_chunk_o_shape *s = a->s;
    const size_t bt = ws->bt;
    const row_constants row = row_constants_of(ws, a, gate(a, b, t0 + i, head), i);
    mpfr_set_prec(ws->e, UG_REF_PREC);
    mpfr_set_flt(ws->e, row.g_t, MPFR_RNDN);
    mpfr_exp(ws->e, ws->e, MPFR_RNDN);
    for (size_t col = 0; col < s->v; col++) {
        double abs_state_terms;
        mpfr_srcptr dot = exact_dot(&ws->dot, &ws->queries[i], &ws->state_rows[col], ws->kdim, &abs_state_terms);
        mpfr_mul(ws->terms[0], ws->e, dot, MPFR_RNDN);
        mpfr_mul_d(ws->terms[0], ws->terms[0], a->scale, MPFR_RNDN);
        const double abs_dot = fabs(mpfr_get_d(dot, MPFR_RNDA));
        attention_magnitudes m = attention_sums(ws, a->mode, i, col);
        size_t summed = row.n_terms;
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
        const element_bound eb = bound_of(&row, abs_dot, abs_state_terms, &m);
        ug_ref_finish(&a->o[at4(s, b, t0 + i, s->h, head, s->v) + col], ws->sum, eb.bound, eb.abs_sum, m.flagged,
                      UG_BF16);
    }
}

/* ---- the fast path ------------------------------------------------------------ */

/* Whether the chunk lies in the fast path's domain: every input finite, the
 * scale nonzero, gates small enough that their exponentials keep to the
 * accumulator's range; the MPFR path takes the rest. Sets the grids: each
 * vector's own (its least nonzero entry's), and marks the rows whose dot
 * products would not be an int64 on those grids (a product below 2^16 and
 * K <= 2^8 terms over the two vectors' exponent spreads, with a key j <= i
 * or any state row) for the MPFR path: a tiny entry in one vector sends
 * only the rows that meet it there (one grid per kind sent 4 % of a
 * realistic production case's chunks, per-vector grids with a whole chunk
 * to MPFR 1.6 %). */
static bool chunk_in_fast_domain(workspace *ws, const args *a, size_t b, size_t head, size_t t0)
{
    /* e^1400 < 2^2020: the accumulator checks the rest */
    enum { GATE_MAX = 1400, BUDGET = 63 - PRODUCT_BITS - CARRY_BITS };
    if (!isfinite(a->scale) || a->scale == 0) return false;
    const int_vector *sets[3] = {ws->queries, ws->keys, ws->state_rows};
    const size_t counts[3] = {ws->bt, ws->bt, ws->width};
    fast_chunk *f = &ws->fast;
    int *lo[3] = {f->q_lo, f->k_lo, f->h_lo}, *spread[3] = {f->q_spread, f->k_spread, f->h_spread};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < counts[k]; i++) {
            const int_vector *x = &sets[k][i];
            if (x->nonfinite) return false;
            const bool zero = x->min_e > x->max_e; /* every dot product with it is 0 */
            lo[k][i] = zero ? 0 : x->min_e;
            spread[k][i] = zero ? 0 : x->max_e - x->min_e;
        }
    for (size_t col = 0; col < ws->width; col++)
        if (ws->value_cols[col].nonfinite) return false;
    for (size_t i = 0; i < ws->bt; i++)
        if (!(fabsf(gate(a, b, t0 + i, head)) <= GATE_MAX)) return false;
    int widest = 0; /* the widest state row, then key so far */
    for (size_t col = 0; col < ws->width; col++) widest = f->h_spread[col] > widest ? f->h_spread[col] : widest;
    f->h_widest = widest;
    for (size_t i = 0; i < ws->bt; i++) {
        widest = f->k_spread[i] > widest ? f->k_spread[i] : widest;
        f->row_mpfr[i] = f->q_spread[i] + widest > BUDGET;
    }
    /* a zero has no exponent on the grid; a vector too wide is never read */
    int64_t *dst[3] = {f->q_int, f->k_int, f->h_int};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < counts[k]; i++)
            for (size_t d = 0; d < ws->kdim; d++)
                dst[k][i * ws->kdim + d] = sets[k][i].m[d] == 0 || spread[k][i] > BUDGET ? 0
                                           : (int64_t)sets[k][i].m[d] * ((int64_t)1 << (sets[k][i].e[d] - lo[k][i]));
    return true;
}

/* 2^k, -1022 <= k <= 1023. */
static double pow2(int k)
{
    const uint64_t bits = (uint64_t)(k + 1023) << 52;
    double p;
    memcpy(&p, &bits, sizeof p);
    return p;
}

/* x·2^k for an integer x (|x| < 2^64), as ldexp gives it: where the result
 * is normal, the product by 2^k (exact) instead of a libm call. */
static double times_pow2(double x, int k)
{
    return k >= -1022 && k <= 1023 - 64 ? x * pow2(k) : ldexp(x, k);
}

/* |dot|·2^lo rounded away from zero to a double, as mpfr_get_d(RNDA): its
 * leading 53 bits rounded up where the result is normal, else MPFR's
 * rounding through ug_xval_to_double. */
static double abs_away(int64_t dot, int lo)
{
    const uint64_t a = dot < 0 ? -(uint64_t)dot : (uint64_t)dot;
    const int drop = a >> 53 ? 11 - __builtin_clzll(a) : 0; /* bits below the leading 53 */
    if (a != 0 && lo + drop >= -1022 && lo + drop <= 1023 - 64)
        return (double)((a >> drop) + ((a & ((UINT64_C(1) << drop) - 1)) != 0)) * pow2(lo + drop);
    const ug_xval v = {.zero = a == 0, .m = a, .e = lo};
    return a == 0 ? 0.0 : ug_xval_to_double(&v, MPFR_RNDA);
}

/* y = a - b of two finite floats rounded up and away from zero to a double,
 * as mpfr_get_d gives the exact difference (TwoSum's error term is exact). */
static void difference_directed(float a, float b, double *up, double *away)
{
    const double x = a, y = -(double)b, sum = x + y, yv = sum - x, xv = sum - yv;
    const double err = (x - xv) + (y - yv); /* a - b = sum + err exactly */
    *up = err > 0 ? nextafter(sum, INFINITY) : sum;
    *away = err != 0 && (err > 0) == (sum > 0) ? nextafter(sum, sum > 0 ? INFINITY : -INFINITY) : sum;
}

/* The MPFR value of a fast-path operand (exact at 192 bits). */
static void operand_to_mpfr(workspace *ws, const pair_operand *p, int lo, mpfr_ptr x)
{
    mpfr_set_prec(x, UG_REF_PREC + OPERAND_PREC_EXTRA);
    const uint64_t words[2] = {(uint64_t)p->e.m, (uint64_t)(p->e.m >> 64)};
    mpz_import(ws->fast.scratch, 2, -1, sizeof words[0], 0, 0, words);
    mpfr_set_z_2exp(ws->e, ws->fast.scratch, p->e.e, MPFR_RNDN); /* exact: 128 bits */
    mpfr_set_sj_2exp(x, p->dot, lo, MPFR_RNDN);
    mpfr_mul(x, x, ws->e, MPFR_RNDN); /* exact: 63 + 128 bits */
}

/* Attention operand (i, j) on the fast path: its value, and its staging
 * certified without MPFR or else from its exact MPFR value. False when the
 * exponential could not be rounded with certainty (the row takes the MPFR
 * path). */
static bool fast_operand(workspace *ws, const args *a, size_t b, size_t head, size_t t0, size_t i, size_t j)
{
    fast_chunk *f = &ws->fast;
    pair_operand *p = &f->pair[i * ws->bt + j];
    int64_t magnitude;
    p->dot = ug_gdn_int_dot(f->q_int + i * ws->kdim, f->k_int + j * ws->kdim, ws->kdim, &magnitude, f->simd);
    const int lo = f->q_lo[i] + f->k_lo[j];
    const float g_t = gate(a, b, t0 + i, head), g_s = gate(a, b, t0 + j, head);
    const bool unit_decay = g_t == g_s, exact = unit_decay || p->dot == 0;
    p->e = (ug_gdn_fx){1, 0};
    if (!unit_decay && !ug_gdn_pair_exp(&f->gate_exp[i], &f->gate_inv[j], &p->e)) return false;
    double diff_up, diff_away;
    difference_directed(g_t, g_s, &diff_up, &diff_away);
    const double abs_terms = times_pow2((double)magnitude, lo) * UG_F32_SLACK; /* as exact_dot's */
    const double radius = operand_radius(ws, a, unit_decay, diff_up, diff_away, abs_away(p->dot, lo), abs_terms);
    ug_staged *st = &ws->staged[i * ws->bt + j];
    const uint64_t abs_dot = p->dot < 0 ? -(uint64_t)p->dot : (uint64_t)p->dot;
    if (ug_stage_certified(p->dot < 0, abs_dot, p->e.m, lo + p->e.e, 0, radius, st, &f->operand)) {
        if (!exact) {
            const ug_xval x = ug_xval_product(p->dot < 0, abs_dot, p->e.m, lo + p->e.e);
            st->dev += fabs(ug_xval_to_double(&x, MPFR_RNDA)) * 0x1p-126;
        }
        return true;
    }
    mpfr_ptr x = ws->x[i * ws->bt + j];
    operand_to_mpfr(ws, p, lo, x);
    if (!exact) { /* the MPFR path's check of exp's rounding (Ziv): where it retries, so does the row */
        uint16_t lo_bits, hi_bits;
        mpfr_abs(ws->radius, x, MPFR_RNDU);
        mpfr_mul_2si(ws->radius, ws->radius, 1 - UG_REF_PREC, MPFR_RNDU);
        ug_mpfr_bf16_window(x, ws->radius, &lo_bits, &hi_bits);
        if (lo_bits != hi_bits) return false;
    }
    stage_attention(ws, x, radius, exact, st);
    return true;
}

/* Adds ±a·m·2^e (a < 2^128, m < 2^128) to the accumulator exactly. */
static void add_wide(ug_xsum *acc, bool neg, ug_u128 a, ug_u128 m, int e)
{
    ug_xsum_add_mul(acc, neg, (uint64_t)a, m, e);
    if (a >> 64) ug_xsum_add_mul(acc, neg, (uint64_t)(a >> 64), m, e + 64);
}

/* The sign of an exactly zero element, as mpfr_sum gives it: -0 when every
 * term is -0. A term's zero has the sign of its factors' product: the state
 * term's +0 dot times the scale; in exact mode x_ij (+0 when q.k = 0) times
 * scale·v_j; in staged mode the attention dot product's +0 times the scale. */
static bool zero_element_negative(const workspace *ws, ug_ref_mode mode, size_t i, size_t col, int64_t state_dot,
                                  bool scale_neg)
{
    if (state_dot != 0 || !scale_neg) return false;
    if (mode == UG_REF_STAGED) return true;
    const int_vector *v = &ws->value_cols[col];
    for (size_t j = 0; j <= i; j++) {
        const int64_t dot = ws->fast.pair[i * ws->bt + j].dot;
        const bool v_neg = (v->src[j * v->stride] & 0x8000) != 0;
        if ((dot != 0 && v->m[j] != 0) || !((dot < 0) ^ scale_neg ^ v_neg)) return false;
    }
    return true;
}

/* Every column's values on the column's grid: its top bit less 64 (a bf16
 * significand has 8 bits: values within 56 binades of the largest fit), or
 * less 52 for rowsimd.h's digits (within 44). */
static void place_values(workspace *ws)
{
    fast_chunk *f = &ws->fast;
    const size_t bt = ws->bt, blocks = (ws->width + 7) / 8;
    const int digit_bits = f->simd_windows ? 52 : 64;
    if (f->simd_windows) memset(f->col_neg, 0, bt * blocks);
    for (size_t col = 0; col < ws->width; col++) {
        const int_vector *v = &ws->value_cols[col];
        const int grid = v->min_e <= v->max_e ? v->max_e + 8 - digit_bits : 0;
        size_t off = 0;
        for (size_t j = 0; j < bt; j++) {
            const size_t at = col * bt + j;
            const uint64_t m = (uint64_t)(v->m[j] < 0 ? -v->m[j] : v->m[j]);
            f->v_on[at] = ug_xwin_place(&m, 1, v->e[j], grid, &f->v_s[at], 1);
            f->v_mask[at] = v->m[j] < 0 ? ~UINT64_C(0) : 0;
            off += !f->v_on[at];
            if (!f->simd_windows) continue;
            f->col_digit[j * ws->width + col] = f->v_s[at];
            f->col_neg[j * blocks + col / 8] |= (uint8_t)((v->m[j] < 0) << (col % 8));
        }
        f->v_grid[col] = grid;
        f->v_off[col] = off;
    }
}

/* Operand factor c_ij of row i as three limbs times 2^e (exact mode:
 * |q.k|·e, staged mode: |RN_bf16|), its sign as a mask; false for a zero. */
static bool row_factor(const workspace *ws, ug_ref_mode mode, size_t i, size_t j, uint64_t c[3], int *e,
                       uint64_t *mask)
{
    const fast_chunk *f = &ws->fast;
    if (mode == UG_REF_STAGED) {
        const int_vector *rn = &ws->attention_rows[i];
        c[0] = (uint64_t)(rn->m[j] < 0 ? -rn->m[j] : rn->m[j]);
        c[1] = c[2] = 0;
        *e = rn->e[j];
        *mask = rn->m[j] < 0 ? ~UINT64_C(0) : 0;
        return c[0] != 0;
    }
    const pair_operand *p = &f->pair[i * ws->bt + j];
    const uint64_t d = p->dot < 0 ? -(uint64_t)p->dot : (uint64_t)p->dot;
    const ug_u128 low = (ug_u128)d * (uint64_t)p->e.m, high = (ug_u128)d * (uint64_t)(p->e.m >> 64);
    const ug_u128 mid = (low >> 64) + (uint64_t)high;
    c[0] = (uint64_t)low;
    c[1] = (uint64_t)mid;
    c[2] = (uint64_t)(high >> 64) + (uint64_t)(mid >> 64);
    *e = f->q_lo[i] + f->k_lo[j] + p->e.e;
    *mask = p->dot < 0 ? ~UINT64_C(0) : 0;
    return d != 0;
}

/* Row i's nonzero operand factors in groups: each group takes the largest
 * factor left and every factor left that fits below it in nc limbs (3 in
 * exact mode, 1 in staged mode; with rowsimd.h's windows nc digits of 52
 * bits, 4 and 2: as many bits or more); what is left after ROW_GROUPS
 * groups is added term by term (row_rest). */
static void place_row_factors(workspace *ws, ug_ref_mode mode, size_t i)
{
    fast_chunk *f = &ws->fast;
    const int nc = mode == UG_REF_EXACT ? (f->simd_windows ? 4 : 3) : (f->simd_windows ? 2 : 1);
    const int digit_bits = f->simd_windows ? 52 : 64;
    size_t *left = f->row_rest, n_left = 0;
    int *tops = f->row_top;
    for (size_t j = 0; j <= i; j++) {
        uint64_t c[3], mask;
        if (!row_factor(ws, mode, i, j, c, &f->row_e[j], &mask)) continue;
        tops[j] = f->row_e[j] + ug_xwin_bit_length(c, 3);
        left[n_left++] = j;
    }
    size_t placed = 0;
    f->n_groups = 0;
    while (n_left && f->n_groups < ROW_GROUPS) {
        int top = INT_MIN;
        for (size_t k = 0; k < n_left; k++) top = tops[left[k]] > top ? tops[left[k]] : top;
        row_group *g = &f->group[f->n_groups++];
        *g = (row_group){.begin = placed, .grid = top - digit_bits * nc, .nc = nc};
        size_t kept = 0;
        for (size_t k = 0; k < n_left; k++) {
            const size_t j = left[k];
            uint64_t c[3], mask, on_grid[UG_XWIN52_DIGITS];
            int e;
            (void)row_factor(ws, mode, i, j, c, &e, &mask);
            if (ug_xwin_place(c, 3, e, g->grid, f->simd_windows ? on_grid : f->row_c[placed],
                              f->simd_windows ? UG_XWIN52_DIGITS : nc)) {
                if (f->simd_windows) {
                    ug_xwin52_digits(on_grid, f->row_digits + placed * UG_XWIN52_DIGITS);
                    f->row_neg[placed] = mask ? 0xFF : 0;
                }
                f->row_mask[placed] = mask;
                f->row_j[placed++] = j;
            } else {
                left[kept++] = j;
            }
        }
        n_left = kept;
        g->end = placed;
    }
    f->n_rest = n_left; /* left is row_rest */
}

/* One row's attention terms' weights by j (abs, err, mag, flag: the
 * mode's |operand|, its cast error, its accumulated magnitude, whether it
 * is flagged), and the row's sums by column (attention_sums of each). */
typedef struct {
    const double *abs_x, *err, *mag;
    const uint32_t *flag;
    size_t n;          /* terms j < n */
    const double *v;   /* |v| [n][width] */
    size_t width;
    double *abs_sum, *cast_err, *acc_mag;
    uint32_t *flagged;
} magnitude_row;

/* Columns [from, width): each sum over j = 0, 1, ... in order, one
 * product and one sum a term. */
static void magnitudes_portable(const magnitude_row *m, size_t from)
{
    for (size_t col = from; col < m->width; col++) {
        double abs_sum = 0, cast_err = 0, acc_mag = 0;
        uint32_t flagged = 0;
        for (size_t j = 0; j < m->n; j++) {
            const double v = m->v[j * m->width + col];
            abs_sum += m->abs_x[j] * v;
            cast_err += m->err[j] * v;
            acc_mag += m->mag[j] * v;
            flagged += m->flag[j];
        }
        m->abs_sum[col] = abs_sum;
        m->cast_err[col] = cast_err;
        m->acc_mag[col] = acc_mag;
        m->flagged[col] = flagged;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same 32 columns at a time, the sums in registers across the terms
 * (four vectors of eight columns: twelve independent chains of adds; no
 * fused multiply-add: the same two roundings a term); returns the columns
 * done. */
__attribute__((target("avx512f"))) static size_t magnitudes_avx512(const magnitude_row *m)
{
    enum { BLOCKS = 4 };
    size_t col = 0;
    for (; col + 8 * BLOCKS <= m->width; col += 8 * BLOCKS) {
        __m512d abs_sum[BLOCKS], cast_err[BLOCKS], acc_mag[BLOCKS];
        for (int k = 0; k < BLOCKS; k++) abs_sum[k] = cast_err[k] = acc_mag[k] = _mm512_setzero_pd();
        __m256i flagged = _mm256_setzero_si256();
        for (size_t j = 0; j < m->n; j++) {
            const __m512d a = _mm512_set1_pd(m->abs_x[j]), e = _mm512_set1_pd(m->err[j]), g = _mm512_set1_pd(m->mag[j]);
            const double *v = m->v + j * m->width + col;
#pragma GCC unroll 4
            for (int k = 0; k < BLOCKS; k++) {
                const __m512d x = _mm512_loadu_pd(v + 8 * k);
                abs_sum[k] = _mm512_add_pd(abs_sum[k], _mm512_mul_pd(a, x));
                cast_err[k] = _mm512_add_pd(cast_err[k], _mm512_mul_pd(e, x));
                acc_mag[k] = _mm512_add_pd(acc_mag[k], _mm512_mul_pd(g, x));
            }
            flagged = _mm256_add_epi32(flagged, _mm256_set1_epi32((int)m->flag[j]));
        }
        for (int k = 0; k < BLOCKS; k++) {
            _mm512_storeu_pd(m->abs_sum + col + 8 * k, abs_sum[k]);
            _mm512_storeu_pd(m->cast_err + col + 8 * k, cast_err[k]);
            _mm512_storeu_pd(m->acc_mag + col + 8 * k, acc_mag[k]);
            _mm256_storeu_si256((__m256i *)(void *)(m->flagged + col + 8 * k), flagged);
        }
    }
    return col;
}
#endif

/* Row i's attention magnitudes, every column: attention_sums of each, in
 * its order j = 0, 1, ... */
static void row_magnitudes(workspace *ws, ug_ref_mode mode, size_t i)
{
    fast_chunk *f = &ws->fast;
    for (size_t j = 0; j <= i; j++) {
        const ug_staged *st = &ws->staged[i * ws->bt + j];
        f->weight_abs[j] = mode == UG_REF_EXACT ? st->abs_x : fabs((double)ug_bf16_to_f32(st->rn));
        f->weight_err[j] = mode == UG_REF_EXACT ? st->dev : st->gap;
        f->weight_mag[j] = st->mag;
        f->weight_flag[j] = st->flagged;
    }
    const magnitude_row m = {f->weight_abs, f->weight_err, f->weight_mag, f->weight_flag, i + 1, ws->abs_v,
                             ws->width, f->row_abs, f->row_err, f->row_mag, f->row_flagged};
    size_t col = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (f->simd) col = magnitudes_avx512(&m);
#endif
    magnitudes_portable(&m, col);
}

/* The window of group g with column col's values. The limb count is a
 * literal at each call, so each instance is unrolled. */
UG_XSUM_INLINE void group_dot(const fast_chunk *f, size_t bt, int nc, const row_group *g, size_t col,
                              uint64_t acc[UG_XWIN_LIMBS])
{
    const uint64_t *s = f->v_s + col * bt, *s_mask = f->v_mask + col * bt;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0;
    for (size_t k = g->begin; k < g->end; k++) {
        const size_t j = f->row_j[k];
        uint64_t sum[UG_XWIN_LIMBS] = {a0, a1, a2, a3, a4};
        ug_xwin_add_product(sum, nc, f->row_c[k], s[j], f->row_mask[k] ^ s_mask[j]);
        a0 = sum[0], a1 = sum[1], a2 = sum[2], a3 = sum[3], a4 = sum[4];
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4;
}

/* Attention term (i, j) of column col (unscaled) added to the accumulator. */
static void add_attention_term(workspace *ws, ug_ref_mode mode, size_t i, size_t j, size_t col, ug_xsum *acc)
{
    const fast_chunk *f = &ws->fast;
    const int_vector *v = &ws->value_cols[col];
    if (mode == UG_REF_STAGED) {
        const int_vector *rn = &ws->attention_rows[i];
        const int32_t product = rn->m[j] * v->m[j];
        if (product != 0) ug_xsum_add(acc, product < 0, (ug_u128)(product < 0 ? -product : product), rn->e[j] + v->e[j]);
        return;
    }
    const pair_operand *p = &f->pair[i * ws->bt + j];
    if (p->dot == 0 || v->m[j] == 0) return;
    const int64_t factor = p->dot * v->m[j]; /* |dot| < 2^55, |v| < 2^8 */
    add_wide(acc, factor < 0, factor < 0 ? -(ug_u128)factor : (ug_u128)factor, p->e.m,
             f->q_lo[i] + f->k_lo[j] + p->e.e + v->e[j]);
}

/* Group g's window of column col: rowsimd.h's (simd_windows), else summed
 * here into scalar; its limb count in *limbs. */
static const uint64_t *group_window(const fast_chunk *f, size_t bt, size_t width, size_t g, size_t col,
                                    uint64_t scalar[UG_XWIN_LIMBS], int *limbs)
{
    const row_group *grp = &f->group[g];
    if (f->simd_windows) {
        *limbs = UG_XWIN_LIMBS;
        return f->win[g * width + col];
    }
    if (grp->nc == 1)
        group_dot(f, bt, 1, grp, col, scalar);
    else
        group_dot(f, bt, 3, grp, col, scalar);
    *limbs = grp->nc + 2;
    return scalar;
}

/* Column col's element of row i, unscaled but for the factor scale_m,
 * summed in the accumulator: the state term (dot·e_t at 2^state_e), the
 * groups' windows and the terms off them. False when a term leaves the
 * accumulator's range. */
static bool accumulate_element(workspace *ws, ug_ref_mode mode, size_t i, size_t col, int64_t dot, ug_gdn_fx e_t,
                               int state_e, uint32_t scale_m)
{
    fast_chunk *f = &ws->fast;
    ug_xsum *acc = &f->acc;
    ug_xsum_clear(acc);
    if (dot != 0) add_wide(acc, dot < 0, dot < 0 ? -(ug_u128)dot : (ug_u128)dot, e_t.m, state_e);
    for (size_t g = 0; g < f->n_groups; g++) {
        const row_group *grp = &f->group[g];
        uint64_t scalar[UG_XWIN_LIMBS];
        int limbs;
        const uint64_t *window = group_window(f, ws->bt, ws->width, g, col, scalar, &limbs);
        ug_xsum_add_xwin(acc, window, limbs, grp->grid + f->v_grid[col]);
        if (f->v_off[col]) /* values off the column's grid: their window products were 0 */
            for (size_t k = grp->begin; k < grp->end; k++)
                if (!f->v_on[col * ws->bt + f->row_j[k]]) add_attention_term(ws, mode, i, f->row_j[k], col, acc);
    }
    for (size_t k = 0; k < f->n_rest; k++) add_attention_term(ws, mode, i, f->row_rest[k], col, acc);
    ug_xsum_mul_small(acc, scale_m);
    return ug_xsum_in_range(acc);
}

/* The same sum times scale_m read without the accumulator, where the row's
 * attention terms all lie in one group (or none) on column col's grid: the
 * window times scale_m plus the state term times scale_m, read as one by
 * ug_xwin_read_plus (as ug_xsum_read reads the accumulator's). False where
 * that does not hold them (the caller accumulates). */
static bool read_one_window(const workspace *ws, size_t col, int64_t dot, ug_gdn_fx e_t,
                            int state_e, uint32_t scale_m, ug_xval *out)
{
    enum { SCALE_BITS = 24, TOP_BITS = 64 - SCALE_BITS - 2 }; /* a top limb of TOP_BITS: the product fits */
    const fast_chunk *f = &ws->fast;
    uint64_t scratch[UG_XWIN_LIMBS] = {0}, scaled[UG_XWIN_LIMBS];
    int limbs = UG_XWIN_LIMBS, e = state_e;
    const uint64_t *window = scratch;
    if (f->n_groups == 1) {
        window = group_window(f, ws->bt, ws->width, 0, col, scratch, &limbs);
        e = f->group[0].grid + f->v_grid[col];
    }
    const uint64_t sign = (uint64_t)((int64_t)window[limbs - 1] >> 63);
    const int64_t top = (int64_t)(limbs == UG_XWIN_LIMBS ? window[limbs - 1] : sign);
    if (top >> TOP_BITS != 0 && top >> TOP_BITS != -1) return false;
    uint64_t carry = 0; /* two's complement times scale_m: exact, |window|·2^SCALE_BITS < 2^(64 LIMBS - 2) */
    for (int k = 0; k < UG_XWIN_LIMBS; k++) {
        const ug_u128 t = (ug_u128)(k < limbs ? window[k] : sign) * scale_m + carry;
        scaled[k] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
    uint64_t state[4] = {0, 0, 0, 0};
    if (dot != 0) ug_mul128((ug_u128)(dot < 0 ? -(uint64_t)dot : (uint64_t)dot) * scale_m, e_t.m, state);
    const int m_e = dot != 0 ? state_e : e;
    return ug_xwin_read_plus(scaled, UG_XWIN_LIMBS, e, dot < 0, state, 4, m_e, out) ||
           ug_xwin_read_plus_wide(scaled, UG_XWIN_LIMBS, e, dot < 0, state, 4, m_e, out);
}

enum { DOUBLE_BUDGET = 53 - PRODUCT_BITS - CARRY_BITS }; /* spreads whose dot products keep to 53 bits */

#if defined(__x86_64__) && defined(__GNUC__)
enum { DOT_ROWS = 4 }; /* queries per pass of state_dots_avx512 */

/* dot[r][col] = sum_d q[r][d] h[d][col] and mag[r][col] = sum_d
 * q_abs[r][d] h_abs[d][col] for DOT_ROWS queries (h and h_abs
 * [kdim][width]), integers whose every partial sum lies below 2^53: exact
 * in any order, so fused multiply-adds over 16 columns of four queries at
 * a time give the integers ug_gdn_int_dot gives, each state entry loaded
 * once for the four. */
__attribute__((target("avx512f,avx512dq"))) static void state_dots_avx512(const double *const q[DOT_ROWS],
                                                                          const double *const q_abs[DOT_ROWS],
                                                                          const double *h, const double *h_abs,
                                                                          size_t kdim, size_t width,
                                                                          int64_t *const dot[DOT_ROWS],
                                                                          int64_t *const mag[DOT_ROWS])
{
    size_t col = 0;
    for (; col + 16 <= width; col += 16) {
        __m512d sum[DOT_ROWS][2], abs_sum[DOT_ROWS][2];
        for (int r = 0; r < DOT_ROWS; r++) sum[r][0] = sum[r][1] = abs_sum[r][0] = abs_sum[r][1] = _mm512_setzero_pd();
        for (size_t d = 0; d < kdim; d++) {
            const double *row = h + d * width + col, *row_abs = h_abs + d * width + col;
            const __m512d h0 = _mm512_loadu_pd(row), h1 = _mm512_loadu_pd(row + 8);
            const __m512d a0 = _mm512_loadu_pd(row_abs), a1 = _mm512_loadu_pd(row_abs + 8);
#pragma GCC unroll 4
            for (int r = 0; r < DOT_ROWS; r++) {
                const __m512d x = _mm512_set1_pd(q[r][d]), x_abs = _mm512_set1_pd(q_abs[r][d]);
                sum[r][0] = _mm512_fmadd_pd(x, h0, sum[r][0]);
                sum[r][1] = _mm512_fmadd_pd(x, h1, sum[r][1]);
                abs_sum[r][0] = _mm512_fmadd_pd(x_abs, a0, abs_sum[r][0]);
                abs_sum[r][1] = _mm512_fmadd_pd(x_abs, a1, abs_sum[r][1]);
            }
        }
        for (int r = 0; r < DOT_ROWS; r++)
            for (int k = 0; k < 2; k++) {
                _mm512_storeu_si512(dot[r] + col + 8 * k, _mm512_cvtpd_epi64(sum[r][k]));
                _mm512_storeu_si512(mag[r] + col + 8 * k, _mm512_cvtpd_epi64(abs_sum[r][k]));
            }
    }
    for (; col < width; col++)
        for (int r = 0; r < DOT_ROWS; r++) {
            double sum = 0, abs_sum = 0;
            for (size_t d = 0; d < kdim; d++) {
                sum += q[r][d] * h[d * width + col];
                abs_sum += q_abs[r][d] * h_abs[d * width + col];
            }
            dot[r][col] = (int64_t)sum;
            mag[r][col] = (int64_t)abs_sum;
        }
}

/* The chunk's state dot products of the fast rows whose spreads keep every
 * sum below 2^53, four queries at a time (the last four repeat a row);
 * false for the rest (state_dots does them). */
static void state_dots_in_doubles(workspace *ws)
{
    fast_chunk *f = &ws->fast;
    const size_t kdim = ws->kdim, width = ws->width;
    for (size_t first = 0; first < width; first += 8) { /* eight rows at a time: whole cache lines written */
        const size_t end = first + 8 < width ? first + 8 : width;
        for (size_t d = 0; d < kdim; d++)
            for (size_t col = first; col < end; col++) {
                f->h_dbl[d * width + col] = (double)f->h_int[col * kdim + d];
                f->h_abs[d * width + col] = fabs(f->h_dbl[d * width + col]);
            }
    }
    size_t *rows = f->dot_rows, n = 0;
    for (size_t i = 0; i < ws->bt; i++) {
        f->dots_done[i] = !f->row_mpfr[i] && f->q_spread[i] + f->h_widest <= DOUBLE_BUDGET;
        if (!f->dots_done[i]) continue;
        for (size_t d = 0; d < kdim; d++) {
            f->q_dbl[i * kdim + d] = (double)f->q_int[i * kdim + d];
            f->q_abs[i * kdim + d] = fabs(f->q_dbl[i * kdim + d]);
        }
        rows[n++] = i;
    }
    for (size_t first = 0; first < n; first += DOT_ROWS) {
        const double *q[DOT_ROWS], *q_abs[DOT_ROWS];
        int64_t *dot[DOT_ROWS], *mag[DOT_ROWS];
        for (size_t r = 0; r < DOT_ROWS; r++) {
            const size_t i = rows[first + r < n ? first + r : n - 1];
            q[r] = f->q_dbl + i * kdim;
            q_abs[r] = f->q_abs + i * kdim;
            dot[r] = f->state_dot + i * width;
            mag[r] = f->state_mag + i * width;
        }
        state_dots_avx512(q, q_abs, f->h_dbl, f->h_abs, kdim, width, dot, mag);
    }
}
#endif

/* Row i's state dot products q_i.h[col] and their magnitudes sum |q_d h_d|
 * in state_dot and state_mag ([bt][width]): on AVX-512 in doubles for the
 * whole chunk at once where the spreads keep every sum below 2^53
 * (state_dots_in_doubles), else here by ug_gdn_int_dot. */
static void state_dots(workspace *ws, size_t i)
{
    fast_chunk *f = &ws->fast;
    if (f->dots_done[i]) return;
    const int64_t *q = f->q_int + i * ws->kdim;
    int64_t *dot = f->state_dot + i * ws->width, *mag = f->state_mag + i * ws->width;
    for (size_t col = 0; col < ws->width; col++)
        dot[col] = ug_gdn_int_dot(q, f->h_int + col * ws->kdim, ws->kdim, &mag[col], f->simd);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* row_bounds for blocks of eight columns while their grids 2^lo are normal
 * with room for a 64-bit integer (then |q.h| rounded up and the magnitude
 * rounded to nearest, times 2^lo, are abs_away's and times_pow2's, the
 * conversions with the rounding in the instruction); returns the columns
 * done. */
__attribute__((target("avx512f,avx512dq"))) static size_t row_bounds_avx512(const row_constants *row, fast_chunk *f,
                                                                            size_t i, size_t width)
{
    const int64_t *dot = f->state_dot + i * width, *mag = f->state_mag + i * width;
    const __m512i q_lo = _mm512_set1_epi64(f->q_lo[i]), lowest = _mm512_set1_epi64(-1022);
    const __m512i highest = _mm512_set1_epi64(1023 - 64), bias = _mm512_set1_epi64(1023);
    size_t col = 0;
    for (; col + 8 <= width; col += 8) {
        const __m256i h_lo = _mm256_loadu_si256((const __m256i *)(const void *)(f->h_lo + col));
        const __m512i lo = _mm512_add_epi64(q_lo, _mm512_cvtepi32_epi64(h_lo));
        if (_mm512_cmplt_epi64_mask(lo, lowest) | _mm512_cmpgt_epi64_mask(lo, highest)) break;
        const __m512d grid = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(lo, bias), 52));
        const __m512i abs_dot = _mm512_abs_epi64(_mm512_loadu_si512(dot + col));
        const __m512d magnitude = _mm512_cvtepi64_pd(_mm512_loadu_si512(mag + col));
        const bound_inputs in = {
            (lanes)_mm512_mul_pd(_mm512_cvt_roundepu64_pd(abs_dot, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC), grid),
            (lanes)_mm512_mul_pd(_mm512_mul_pd(magnitude, grid), _mm512_set1_pd(UG_F32_SLACK)),
            (lanes)_mm512_loadu_pd(f->row_abs + col), (lanes)_mm512_loadu_pd(f->row_mag + col),
            (lanes)_mm512_loadu_pd(f->row_err + col)};
        lanes bound, abs_sum;
        bound_lanes(row, &in, &bound, &abs_sum);
        _mm512_storeu_pd(f->row_bound + col, (__m512d)bound);
        _mm512_storeu_pd(f->row_abs_sum + col, (__m512d)abs_sum);
    }
    return col;
}
#endif

/* Row i's elements' bounds and magnitude sums (row_bound, row_abs_sum)
 * from its state dot products and attention magnitudes. */
static void row_bounds(workspace *ws, const row_constants *row, size_t i)
{
    fast_chunk *f = &ws->fast;
    const int64_t *dot = f->state_dot + i * ws->width, *mag = f->state_mag + i * ws->width;
    size_t col = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (f->simd) col = row_bounds_avx512(row, f, i, ws->width);
#endif
    for (; col < ws->width; col++) {
        const int lo = f->q_lo[i] + f->h_lo[col];
        const attention_magnitudes m = {f->row_abs[col], f->row_mag[col], f->row_err[col], f->row_flagged[col]};
        const element_bound eb =
            bound_of(row, abs_away(dot[col], lo), times_pow2((double)mag[col], lo) * UG_F32_SLACK, &m);
        f->row_bound[col] = eb.bound;
        f->row_abs_sum[col] = eb.abs_sum;
    }
}

/* Chunk row i on the fast path: every term exact (the state term and the
 * terms off the windows' grids in the accumulator), the scale (common to
 * all terms) applied once to the sum. False when a sum leaves the
 * accumulator's range, the staged attention product would not be exact at
 * the MPFR path's precision, or exp(g_t) could not be rounded with
 * certainty: the row then takes the MPFR path. */
static bool fast_row(workspace *ws, const args *a, size_t b, size_t head, size_t t0, size_t i)
{
    const gdn_chunk_o_shape *s = a->s;
    fast_chunk *f = &ws->fast;
    const row_constants row = row_constants_of(ws, a, gate(a, b, t0 + i, head), i);
    ug_gdn_fx e_t;
    if (!ug_gdn_round_certified(f->gate_exp[i].d, 4, f->gate_exp[i].e, &e_t)) return false;
    bool scale_neg;
    uint64_t scale_m;
    int scale_e;
    ug_xsum_split(a->scale, &scale_neg, &scale_m, &scale_e);
    const int zeros = __builtin_ctzll(scale_m);
    scale_m >>= zeros;
    scale_e += zeros;
    const int_vector *rn = &ws->attention_rows[i];
    place_row_factors(ws, a->mode, i);
    row_magnitudes(ws, a->mode, i);
    state_dots(ws, i);
    row_bounds(ws, &row, i);
    for (size_t g = 0; g < f->n_groups && f->simd_windows; g++) {
        const row_group *grp = &f->group[g];
        const ug_xwin52_row r = {grp->end - grp->begin, s->v, grp->nc, f->row_digits + grp->begin * UG_XWIN52_DIGITS,
                                 f->row_neg + grp->begin, f->row_j + grp->begin, f->col_digit, f->col_neg};
        ug_xwin52_windows(&r, f->win + g * s->v);
    }
    for (size_t col = 0; col < s->v; col++) {
        const int_vector *v = &ws->value_cols[col];
        /* RN_256(attention dot * scale) is exact when the dot has at most 232 bits */
        if (a->mode == UG_REF_STAGED && rn->min_e <= rn->max_e && v->min_e <= v->max_e &&
            rn->max_e + v->max_e - rn->min_e - v->min_e + PRODUCT_BITS + CARRY_BITS > TERM_PREC - 24)
            return false;
        const int64_t dot = f->state_dot[i * s->v + col];
        const int state_lo = f->q_lo[i] + f->h_lo[col];
        ug_xval exact;
        if (!(f->n_groups <= 1 && f->n_rest == 0 && !f->v_off[col] &&
              read_one_window(ws, col, dot, e_t, state_lo + e_t.e, (uint32_t)scale_m, &exact))) {
            if (!accumulate_element(ws, a->mode, i, col, dot, e_t, state_lo + e_t.e, (uint32_t)scale_m)) return false;
            exact = ug_xsum_read(&f->acc);
        }
        exact.e += scale_e;
        exact.neg = exact.zero ? zero_element_negative(ws, a->mode, i, col, dot, scale_neg) : exact.neg != scale_neg;
        ug_xval_finish(&exact, &a->o[at4(s, b, t0 + i, s->h, head, s->v) + col], f->row_bound[col],
                       f->row_abs_sum[col], f->row_flagged[col], UG_BF16);
    }
    return true;
}

/* The exact mode's operands scale·v_j of the MPFR path (once per chunk). */
static void scale_values(workspace *ws, const args *a, size_t b, size_t head, size_t t0)
{
    const gdn_chunk_o_shape *s = a->s;
    if (a->mode != UG_REF_EXACT || ws->fast.scaled_v_done) return;
    for (size_t j = 0; j < ws->bt; j++)
        for (size_t col = 0; col < s->v; col++) /* f32 x bf16: exact */
            mpfr_set_d(ws->scaled_v[j * s->v + col],
                       a->scale * ug_bf16_to_f32(a->v[at4(s, b, t0 + j, s->h, head, s->v) + col]), MPFR_RNDN);
    ws->fast.scaled_v_done = true;
}

/* Chunk row i through MPFR: its operands, then its elements. */
static ug_status mpfr_row(workspace *ws, const args *a, size_t b, size_t head, size_t t0, size_t i)
{
    scale_values(ws, a, b, head, t0);
    for (size_t j = 0; j <= i; j++) UG_TRY(attention_operand(ws, a, b, head, t0, i, j));
    output_row(ws, a, b, head, t0, i);
    return ug_ok();
}

/* The chunk's operands and rows on the fast path, row by row through MPFR
 * where it cannot certify them. */
static ug_status fast_chunk_rows(workspace *ws, const args *a, size_t b, size_t head, size_t t0)
{
    fast_chunk *f = &ws->fast;
    const size_t bt = ws->bt;
    for (size_t i = 0; i < bt; i++) {
        const float g = gate(a, b, t0 + i, head);
        f->exp_failed[i] = !ug_gdn_exp_wide(f->wide, g, &f->gate_exp[i], &f->gate_inv[i]);
    }
    /* a row goes through MPFR where its own operands cannot be certified;
     * an exponential that failed fails every row that needs it */
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j <= i && !f->row_mpfr[i]; j++)
            f->row_mpfr[i] = f->exp_failed[i] || f->exp_failed[j] || !fast_operand(ws, a, b, head, t0, i, j);
    place_values(ws);
    memset(f->dots_done, 0, bt * sizeof *f->dots_done);
#if defined(__x86_64__) && defined(__GNUC__)
    if (f->simd) state_dots_in_doubles(ws);
#endif
    for (size_t i = 0; i < bt; i++)
        if (f->row_mpfr[i] || !fast_row(ws, a, b, head, t0, i)) UG_TRY(mpfr_row(ws, a, b, head, t0, i));
    return ug_ok();
}

static ug_status reference_chunk(workspace *ws, const args *a, size_t b, size_t head, size_t c)
{
    const gdn_chunk_o_shape *s = a->s;
    const size_t bt = ws->bt, t0 = c * bt, kh = head / (s->h / s->hg);
    const ug_bf16 *state = a->h + ((b * (s->t / bt) + c) * s->h + head) * s->v * s->k;
    const bool simd = ws->fast.simd;
    for (size_t i = 0; i < bt; i++) {
        int_vector_set(&ws->queries[i], a->q + at4(s, b, t0 + i, s->hg, kh, s->k), 1, s->k, simd);
        int_vector_set(&ws->keys[i], a->k + at4(s, b, t0 + i, s->hg, kh, s->k), 1, s->k, simd);
    }
    for (size_t col = 0; col < s->v; col++) {
        int_vector_set(&ws->state_rows[col], state + col * s->k, 1, s->k, simd);
        int_vector_set(&ws->value_cols[col], a->v + at4(s, b, t0, s->h, head, s->v) + col, s->h * s->v, bt, simd);
    }
    for (size_t first = 0; first < s->v; first += 8) { /* eight columns at a time: whole cache lines written */
        const size_t end = first + 8 < s->v ? first + 8 : s->v;
        for (size_t j = 0; j < bt; j++)
            for (size_t col = first; col < end; col++)
                ws->abs_v[j * s->v + col] = fabs(times_pow2(ws->value_cols[col].m[j], ws->value_cols[col].e[j]));
    }
    ws->fast.scaled_v_done = false;
    if (ug_ref_fast() && chunk_in_fast_domain(ws, a, b, head, t0)) return fast_chunk_rows(ws, a, b, head, t0);
    scale_values(ws, a, b, head, t0);
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
    ws.fast.simd = ug_ref_simd_available() && __builtin_cpu_supports("avx512dq");
    ws.fast.simd_windows = ws.fast.simd && s->bt <= UG_XWIN52_MAX_TERMS;
    ug_status st = ug_ok();
    for (size_t b = 0; b < s->b && ug_is_ok(&st); b++)
        for (size_t head = 0; head < s->h && ug_is_ok(&st); head++)
            for (size_t c = 0; c < s->t / s->bt && ug_is_ok(&st); c++) st = reference_chunk(&ws, &a, b, head, c);
    workspace_free(&ws);
    return st;
}
