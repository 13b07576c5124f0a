/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_state.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exact_sum.h"
#include "f32_model.h"
#include "rowsimd.h"
#include "spectral_norm.h"

/* Every term of every sum is exact: e^{G_last} S (two 128-bit values) fits
 * in 256 bits, a bf16 (8 bits) times a 128-bit value in 136. */
enum { PREC = UG_REF_PREC, BF16_PREC = 8, LEAD_TERM_PREC = 2 * PREC, TERM_PREC = PREC + BF16_PREC,
       DIFF_PREC = 300 };

/* What the bound knows of one staged operand (an entry of bf16(S) or of the
 * decayed v): the kernel's operand is within dev of the reference's operand
 * and at most mag in magnitude; abs is |reference operand|. */
typedef struct {
    double mag, dev, abs;
    uint32_t flagged;
} operand_bound;

/* A weighted sum's bound parts: sum |weight| mag, sum |weight| dev,
 * sum |weight| |operand| and the flagged operands it read. */
typedef struct {
    double mag, dev, abs;
    uint32_t flagged;
} sum_bound;

/* Weights (bf16 values of w or k) exact in 8-bit MPFR, with their magnitudes. */
typedef struct {
    mpfr_t *value;
    double *abs;
} weights;

/* Operands stored so that each weighted sum reads them contiguously. */
typedef struct {
    mpfr_t *value;
    operand_bound *bound;
} operands;

/* A bf16 weight as ±m·2^e (m < 2^53, as ug_xsum_split gives it; 0 for a zero). */
typedef struct {
    bool neg;
    uint64_t m;
    int e;
} small_factor;

/* The fast path's copies of the MPFR path's values (docs/error-model.md
 * §2.1): each a 128-bit number read exactly (ug_xval without round or
 * sticky bits), in the layouts of their MPFR counterparts. */
typedef struct {
    ug_xval *values;         /* the allocation that holds the five arrays below */
    ug_xval *state, *next;   /* [K][V] */
    ug_xval *state_ops;      /* [V][K] */
    ug_xval *v;              /* [BT][V] */
    ug_xval *decayed_ops;    /* [V][BT] */
    small_factor *neg_w;     /* [BT][K] */
    small_factor *keys;      /* [K][BT] */
    /* The operands' bound parts by term, column innermost ([K][V] for
     * bf16(S), [BT][V] for the decayed values), so that a row of sums
     * accumulates them a column vector at a time. */
    double *op_mag, *op_dev, *op_abs;
    uint32_t *op_flagged;
    /* The windows' factors (exact_sum.h): the operands of each column on
     * the column's grid ([V][n], n = max(K, BT)), each row's weights on the
     * row's ([rows][n]). */
    uint64_t (*op_c)[UG_XWIN_MAX_C], *op_mask, *w_s, *w_mask;
    bool *op_on, *w_on;
    int *col_grid, *col_nc, *row_grid;
    size_t *col_off, *row_off;
    /* The terms off the grids: each column's operands ([V][n]) and each row's
     * weights ([rows][n]) that missed their grid, col_off / row_off of them. */
    size_t *col_off_j, *row_off_j;
    /* The same in rowsimd.h's 52-bit digits, where ug_xwin52_windows gives
     * a column's windows for every row at once: the sum transposed, the
     * column's operands its row factors (op_digit, op_neg, op_j: [n]), the
     * weights of term j its column digits (w_digit [n][rows], w_neg
     * [n][(rows + 7) / 8]); win [rows][V]. */
    uint64_t *w_digit, (*op_digit)[UG_XWIN52_DIGITS], (*win)[UG_XWIN_LIMBS];
    /* The windows of the operands below a column's grid, on the column's
     * second grid (col_low_grid) where col_low: [rows][V]. */
    uint64_t (*win_low)[UG_XWIN_LIMBS];
    int *col_low_grid;
    bool *col_low;
    uint8_t *w_neg, *op_neg;
    size_t *op_j;
    /* The weights' digits as a positive ([0]) or negative ([1]) operand's
     * terms add them (ug_xwin52_sign_columns), in w_digit's and w_neg's
     * layouts. */
    uint64_t *w_signed[2];
    uint8_t *w_signed_neg[2];
    /* UG_REF_BOUND_ROWS rows' sums' bound parts ([rows][V] each), as
     * sum_bound's fields. */
    double *row_mag, *row_dev, *row_abs;
    uint32_t *row_flagged;
    ug_xsum acc, scratch;
    mpfr_t operand;          /* an operand staged through MPFR */
    mpz_t words;
} fast_head;

/* The norm bound (docs/error-model-gdn_stages.md §4, "The norm bound"): per
 * value column the kernel's state error obeys e_{c+1} = M_c e_c + l_c, M_c =
 * e^{G_last} I - K^T diag(e^{G_last - G_i}) W the chunk's exact transition,
 * and ||l_c||_2 <= L_c + kappa_c ||e_c||_2; so N_{c+1} = (||M_c||_2 + kappa_c)
 * N_c + L_c bounds every entry where the magnitude recursion (through |M_c|)
 * grows without limit. Both paths record the chunk's reference magnitudes
 * here, and one function turns them into the bound. */
typedef struct {
    double *s_abs;        /* [K][V] |S_c|, the chunk's reference state */
    double *op_abs_state; /* [K][V] |reference operand| of bf16(S_c) */
    double *op_abs_dec;   /* [BT][V] |reference operand| of the decayed values */
    double *cast, *local; /* [K][V]: cast allowances of the state operands; L_c's entries */
    double *v_dev, *dec_dev; /* [BT][V]: the v errors' and the decayed operands' parts independent of e_c */
    double *scratch;      /* [K][V] + [BT][V] */
    double *e_dec, *e_dec_err; /* [BT] e^{G_last - G_i} rounded up, its f32 error */
    double *col_norm;     /* [V] N_c >= ||S^_c - S_c||_2, +inf when unknown */
    double *local_norm;   /* [V] >= ||L_c[:, v]||_2 */
    double *m, *work;     /* the transition or a chunk's rows; the norm's scratch */
    double e_lead, e_lead_err; /* e^{G_last} rounded up, its f32 error */
} norm_bound;

typedef struct {
    const gdn_chunk_state_shape *s;
    const ug_f32_model *model;
    ug_ref_mode mode;
    size_t b, h, key_head;
    /* state, [K][V] */
    mpfr_t *state, *next;
    double *state_mag, *state_err, *state_abs;
    uint32_t *state_flagged;
    /* per chunk */
    operands state_ops;   /* [V][K]: bf16(S) as the reference takes it */
    weights neg_w;        /* [BT][K]: -w */
    mpfr_t *v;            /* [BT][V] */
    double *v_mag, *v_err;
    operands decayed_ops; /* [V][BT]: bf16(e^{G_last - G_i} v_i) as the reference takes it */
    weights keys;         /* [K][BT] */
    /* scratch */
    size_t n_terms;
    mpfr_t *terms;        /* terms[0] is the leading term (u or e^{G_last} S) */
    mpfr_ptr *term_ptrs;
    mpfr_t e, diff, radius, decayed;
    fast_head fast;
    norm_bound norm;
} workspace;

/* ---- workspace ------------------------------------------------------------------ */

static mpfr_t *init_all(size_t n, mpfr_prec_t prec)
{
    mpfr_t *a = malloc(n * sizeof *a);
    if (a)
        for (size_t i = 0; i < n; i++) mpfr_init2(a[i], prec);
    return a;
}

static void clear_all(mpfr_t *a, size_t n)
{
    if (!a) return;
    for (size_t i = 0; i < n; i++) mpfr_clear(a[i]);
    free(a);
}

static void workspace_free(workspace *ws)
{
    const gdn_chunk_state_shape *s = ws->s;
    const size_t kv = s->k * s->v, btv = s->bt * s->v, btk = s->bt * s->k;
    clear_all(ws->state, kv);
    clear_all(ws->next, kv);
    clear_all(ws->state_ops.value, kv);
    clear_all(ws->neg_w.value, btk);
    clear_all(ws->v, btv);
    clear_all(ws->decayed_ops.value, btv);
    clear_all(ws->keys.value, btk);
    clear_all(ws->terms, ws->n_terms);
    free(ws->state_mag);
    free(ws->state_flagged);
    free(ws->state_ops.bound);
    free(ws->neg_w.abs);
    free(ws->v_mag);
    free(ws->decayed_ops.bound);
    free(ws->keys.abs);
    free(ws->term_ptrs);
    free(ws->fast.values);
    free(ws->fast.neg_w);
    free(ws->fast.op_mag);
    free(ws->fast.op_flagged);
    free(ws->fast.op_c);
    free(ws->fast.op_mask);
    free(ws->fast.op_on);
    free(ws->fast.col_grid);
    free(ws->fast.col_off);
    free(ws->fast.col_off_j);
    free(ws->fast.w_digit);
    free(ws->fast.op_digit);
    free(ws->fast.win);
    free(ws->fast.col_low);
    free(ws->fast.w_neg);
    free(ws->fast.w_signed[0]);
    free(ws->fast.w_signed_neg[0]);
    free(ws->fast.op_j);
    free(ws->fast.row_mag);
    free(ws->fast.row_flagged);
    free(ws->norm.s_abs);
    free(ws->norm.m);
    mpfr_clears(ws->e, ws->diff, ws->radius, ws->decayed, ws->fast.operand, (mpfr_ptr)0);
    mpz_clear(ws->fast.words);
}

static ug_status workspace_init(workspace *ws, const gdn_chunk_state_shape *s, ug_ref_mode mode)
{
    const size_t kv = s->k * s->v, btv = s->bt * s->v, btk = s->bt * s->k;
    ws->s = s;
    ws->mode = mode;
    ws->n_terms = (s->k > s->bt ? s->k : s->bt) + 1;
    mpfr_inits2(PREC, ws->e, ws->decayed, ws->fast.operand, (mpfr_ptr)0);
    mpz_init(ws->fast.words);
    ug_xsum_init(&ws->fast.acc);
    ug_xsum_init(&ws->fast.scratch);
    mpfr_init2(ws->diff, DIFF_PREC);
    mpfr_init2(ws->radius, 64);
    ws->state = init_all(kv, PREC);
    ws->next = init_all(kv, PREC);
    ws->state_ops.value = init_all(kv, PREC);
    ws->neg_w.value = init_all(btk, BF16_PREC);
    ws->v = init_all(btv, PREC);
    ws->decayed_ops.value = init_all(btv, PREC);
    ws->keys.value = init_all(btk, BF16_PREC);
    ws->terms = init_all(ws->n_terms, TERM_PREC);
    ws->state_mag = malloc(3 * kv * sizeof *ws->state_mag);
    ws->state_flagged = malloc(kv * sizeof *ws->state_flagged);
    ws->state_ops.bound = malloc(kv * sizeof *ws->state_ops.bound);
    ws->neg_w.abs = malloc(btk * sizeof *ws->neg_w.abs);
    ws->v_mag = malloc(2 * btv * sizeof *ws->v_mag);
    ws->decayed_ops.bound = malloc(btv * sizeof *ws->decayed_ops.bound);
    ws->keys.abs = malloc(btk * sizeof *ws->keys.abs);
    ws->term_ptrs = malloc(ws->n_terms * sizeof *ws->term_ptrs);
    ws->fast.values = malloc((3 * kv + 2 * btv) * sizeof *ws->fast.values);
    ws->fast.neg_w = malloc(2 * btk * sizeof *ws->fast.neg_w);
    const size_t n_max = s->k > s->bt ? s->k : s->bt, ops = (s->k + s->bt) * s->v;
    ws->fast.op_mag = malloc(3 * ops * sizeof *ws->fast.op_mag);
    ws->fast.op_flagged = malloc(ops * sizeof *ws->fast.op_flagged);
    ws->fast.op_c = malloc(s->v * n_max * sizeof *ws->fast.op_c);
    ws->fast.op_mask = malloc((s->v + 2 * n_max) * n_max * sizeof *ws->fast.op_mask);
    ws->fast.op_on = malloc((s->v + n_max) * n_max * sizeof *ws->fast.op_on);
    ws->fast.col_grid = malloc((3 * s->v + n_max) * sizeof *ws->fast.col_grid);
    ws->fast.col_off = malloc((s->v + n_max) * sizeof *ws->fast.col_off);
    ws->fast.col_off_j = malloc((s->v + n_max) * n_max * sizeof *ws->fast.col_off_j);
    ws->fast.w_digit = malloc(n_max * n_max * sizeof *ws->fast.w_digit);
    ws->fast.op_digit = malloc(n_max * sizeof *ws->fast.op_digit);
    ws->fast.win = malloc(2 * s->v * n_max * sizeof *ws->fast.win);
    ws->fast.col_low = malloc(s->v * sizeof *ws->fast.col_low);
    ws->fast.w_neg = malloc(n_max * ((n_max + 7) / 8 + 1) * sizeof *ws->fast.w_neg);
    ws->fast.w_signed[0] = malloc(2 * n_max * n_max * sizeof *ws->fast.w_signed[0]);
    ws->fast.w_signed_neg[0] = malloc(2 * n_max * ((n_max + 7) / 8) * sizeof *ws->fast.w_signed_neg[0]);
    ws->fast.op_j = malloc(n_max * sizeof *ws->fast.op_j);
    ws->fast.row_mag = malloc(3 * UG_REF_BOUND_ROWS * s->v * sizeof *ws->fast.row_mag);
    ws->fast.row_flagged = malloc(UG_REF_BOUND_ROWS * s->v * sizeof *ws->fast.row_flagged);
    const size_t kk_work = s->k * (s->k > s->bt ? s->k : s->bt) + ug_spectral_norm_work(s->k);
    ws->norm.s_abs = malloc((5 * kv + 4 * btv + 2 * s->bt + 2 * s->v) * sizeof *ws->norm.s_abs);
    ws->norm.m = malloc(kk_work * sizeof *ws->norm.m);
    if (!ws->norm.s_abs || !ws->norm.m || !ws->fast.values || !ws->fast.neg_w || !ws->fast.op_mag || !ws->fast.op_flagged || !ws->fast.op_c ||
        !ws->fast.op_mask || !ws->fast.op_on || !ws->fast.col_grid || !ws->fast.col_off || !ws->fast.col_off_j || !ws->fast.row_mag ||
        !ws->fast.row_flagged || !ws->fast.w_digit || !ws->fast.op_digit || !ws->fast.win || !ws->fast.col_low || !ws->fast.w_neg || !ws->fast.w_signed[0] || !ws->fast.w_signed_neg[0] ||
        !ws->fast.op_j ||
        !ws->state || !ws->next || !ws->state_ops.value || !ws->neg_w.value || !ws->v ||
        !ws->decayed_ops.value || !ws->keys.value || !ws->terms || !ws->state_mag || !ws->state_flagged ||
        !ws->state_ops.bound || !ws->neg_w.abs || !ws->v_mag || !ws->decayed_ops.bound || !ws->keys.abs ||
        !ws->term_ptrs) {
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_chunk_state reference: cannot allocate the workspace (K=%zu, V=%zu)",
                       s->k, s->v);
    }
    mpfr_set_prec(ws->terms[0], LEAD_TERM_PREC);
    ws->state_err = ws->state_mag + kv;
    ws->state_abs = ws->state_err + kv;
    ws->v_err = ws->v_mag + btv;
    ws->fast.state = ws->fast.values;
    ws->fast.next = ws->fast.state + kv;
    ws->fast.state_ops = ws->fast.next + kv;
    ws->fast.v = ws->fast.state_ops + kv;
    ws->fast.decayed_ops = ws->fast.v + btv;
    ws->fast.keys = ws->fast.neg_w + btk;
    ws->fast.op_dev = ws->fast.op_mag + ops;
    ws->fast.op_abs = ws->fast.op_dev + ops;
    ws->fast.w_s = ws->fast.op_mask + s->v * n_max;
    ws->fast.w_mask = ws->fast.w_s + n_max * n_max;
    ws->fast.w_on = ws->fast.op_on + s->v * n_max;
    ws->fast.col_nc = ws->fast.col_grid + s->v;
    ws->fast.row_grid = ws->fast.col_nc + s->v;
    ws->fast.col_low_grid = ws->fast.row_grid + n_max;
    ws->fast.win_low = ws->fast.win + s->v * n_max;
    ws->fast.row_off = ws->fast.col_off + s->v;
    ws->fast.row_off_j = ws->fast.col_off_j + s->v * n_max;
    ws->fast.op_neg = ws->fast.w_neg + n_max * ((n_max + 7) / 8);
    ws->fast.w_signed[1] = ws->fast.w_signed[0] + n_max * n_max;
    ws->fast.w_signed_neg[1] = ws->fast.w_signed_neg[0] + n_max * ((n_max + 7) / 8);
    ws->fast.row_dev = ws->fast.row_mag + UG_REF_BOUND_ROWS * s->v;
    ws->fast.row_abs = ws->fast.row_dev + UG_REF_BOUND_ROWS * s->v;
    norm_bound *n = &ws->norm;
    n->op_abs_state = n->s_abs + kv;
    n->cast = n->op_abs_state + kv;
    n->local = n->cast + kv;
    n->scratch = n->local + kv;               /* kv + btv */
    n->op_abs_dec = n->scratch + kv + btv;
    n->v_dev = n->op_abs_dec + btv;
    n->dec_dev = n->v_dev + btv;
    n->e_dec = n->dec_dev + btv;
    n->e_dec_err = n->e_dec + s->bt;
    n->col_norm = n->e_dec_err + s->bt;
    n->local_norm = n->col_norm + s->v;
    n->work = n->m + s->k * (s->k > s->bt ? s->k : s->bt);
    return ug_ok();
}

/* ---- building blocks --------------------------------------------------------------- */

static double abs_up(mpfr_srcptr x) { return fabs(mpfr_get_d(x, MPFR_RNDA)); }

/* What the error of an f32 sum of n terms takes from n and the model,
 * worked out once for the many sums of one length (gamma_n carries a
 * division). */
typedef struct {
    double gamma;     /* gamma_n, with its slack */
    double underflow; /* n times the model's underflow */
} f32_sum_model;

static f32_sum_model f32_sum_of(const ug_f32_model *m, size_t n)
{
    return (f32_sum_model){ug_f32_gamma(n) * UG_F32_SLACK, (double)n * ug_f32_underflow(m)};
}

/* Bound parts of an f32 sum of n terms whose own parts are b: gamma_n sum|terms|
 * plus the deviations of the operands plus underflow (error model §4). */
static double f32_sum_error(f32_sum_model sum, const sum_bound *b)
{
    return (sum.gamma * b->mag * UG_F32_SLACK + b->dev * UG_F32_SLACK) * UG_F32_SLACK + sum.underflow;
}

/* out = terms[0] + sum_j weight_j op_j, one correct rounding of exact terms;
 * acc receives the weighted bound parts of the n operands. */
static void weighted_sum(workspace *ws, size_t n, const weights *w, const operands *ops, mpfr_ptr out,
                         sum_bound *acc)
{
    size_t used = 1;
    ws->term_ptrs[0] = ws->terms[0];
    for (size_t j = 0; j < n; j++) {
        const double a = w->abs[j];
        if (a == 0) continue;
        const operand_bound *ob = &ops->bound[j];
        if (!mpfr_zero_p(ops->value[j])) {
            mpfr_mul(ws->terms[used], ops->value[j], w->value[j], MPFR_RNDN); /* exact */
            ws->term_ptrs[used] = ws->terms[used];
            used++;
        }
        acc->mag += a * ob->mag;
        acc->dev += a * ob->dev;
        acc->abs += a * ob->abs;
        acc->flagged += ob->flagged;
    }
    mpfr_sum(out, ws->term_ptrs, used, MPFR_RNDN);
}

static void set_weight(weights *w, size_t at, ug_bf16 x, bool negate)
{
    const float f = ug_bf16_to_f32(x);
    mpfr_set_flt(w->value[at], negate ? -f : f, MPFR_RNDN); /* exact in 8 bits */
    w->abs[at] = fabs((double)f);
}

/* One staged operand x whose kernel counterpart lies within radius of it
 * before its bf16 cast: the reference operand (x itself in exact mode,
 * RN_bf16(x) in staged mode) and what the bound needs. */
static void stage(workspace *ws, mpfr_srcptr x, double radius, mpfr_ptr op, operand_bound *ob)
{
    mpfr_set_d(ws->radius, radius, MPFR_RNDU);
    ug_staged st;
    ug_stage_operand(x, ws->radius, &st);
    if (ws->mode == UG_REF_EXACT) {
        mpfr_set(op, x, MPFR_RNDN); /* same precision: exact */
        ob->dev = st.dev;
    } else {
        mpfr_set_flt(op, ug_bf16_to_f32(st.rn), MPFR_RNDN);
        ob->dev = st.gap;
    }
    ob->mag = st.mag;
    ob->abs = abs_up(op);
    ob->flagged = st.flagged;
}

static size_t token(const workspace *ws, size_t t, size_t heads, size_t head, size_t width)
{
    return ((ws->b * ws->s->t + t) * heads + head) * width;
}

typedef struct {
    const ug_bf16 *k, *w, *u;
    const float *g, *h0;
    ug_ref_value *h, *v_new, *final_state;
} io;

/* ---- the norm bound ---------------------------------------------------------------- */

/* out[v] >= ||a[:, v]||_2 for the rows x width array a. */
static void column_norms_up(const double *a, size_t rows, size_t width, double *out)
{
    for (size_t col = 0; col < width; col++) out[col] = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t col = 0; col < width; col++) out[col] += a[r * width + col] * a[r * width + col];
    for (size_t col = 0; col < width; col++)
        out[col] = sqrt(out[col] * (1 + (double)(rows + 1) * 0x1p-52)) * (1 + 0x1p-52) * UG_F32_SLACK;
}

static void norm_start_head(workspace *ws)
{
    for (size_t col = 0; col < ws->s->v; col++) ws->norm.col_norm[col] = INFINITY;
}

/* Before a chunk: N_c = min(N_c, ||D_c[:, v]||_2), D_c the entrywise bound;
 * and |S_c|, which the chunk's advance replaces. */
static void norm_begin_chunk(workspace *ws)
{
    norm_bound *n = &ws->norm;
    column_norms_up(ws->state_err, ws->s->k, ws->s->v, n->local_norm);
    for (size_t col = 0; col < ws->s->v; col++) n->col_norm[col] = fmin(n->col_norm[col], n->local_norm[col]);
    for (size_t x = 0; x < ws->s->k * ws->s->v; x++) n->s_abs[x] = ws->state_mag[x];
}

/* y[i] += a x[i] for i < n, eight at a time where rowsimd.h is available. */
static void axpy(size_t n, double a, const double *x, double *y)
{
    if (ug_ref_simd_available()) {
        ug_ref_simd_axpy(n, a, x, y);
        return;
    }
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* b[r][col] = sum_j |weight[r][j]| a[j][col] (nonnegative terms, any order:
 * the bound needs it only within the slack). */
static void magnitude_product(size_t rows, size_t inner, size_t width, const double *weight, const double *a,
                              double *b)
{
    for (size_t x = 0; x < rows * width; x++) b[x] = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < inner; j++) {
            const double w = weight[r * inner + j];
            if (w == 0) continue;
            axpy(width, w, a + j * width, b + r * width);
        }
}

/* >= ||X||_2 for X the chunk's BT rows of width K from base (w or k), and
 * *fro >= ||X||_F. */
static double chunk_rows_norm(workspace *ws, const ug_bf16 *base, size_t heads, size_t head, size_t t0, double *fro)
{
    const gdn_chunk_state_shape *s = ws->s;
    const bool transpose = s->bt <= s->k; /* the narrower Gram matrix */
    double *m = ws->norm.m, sq = 0;
    for (size_t i = 0; i < s->bt; i++) {
        const ug_bf16 *row = base + token(ws, t0 + i, heads, head, s->k);
        for (size_t d = 0; d < s->k; d++) {
            const double x = ug_bf16_to_f32(row[d]);
            m[transpose ? d * s->bt + i : i * s->k + d] = x;
            sq += x * x;
        }
    }
    *fro = sqrt(sq * (1 + (double)(s->bt * s->k + 1) * 0x1p-52)) * (1 + 0x1p-52) * UG_F32_SLACK;
    return transpose ? ug_spectral_norm_up(m, s->k, s->bt, 0, ws->norm.work)
                     : ug_spectral_norm_up(m, s->bt, s->k, 0, ws->norm.work);
}

/* >= ||M_c||_2, M_c = e^{G_last} I - sum_i k_i e^{G_last - G_i} w_i^T (the
 * chunk's exact transition of a state column), through ug_spectral_norm_up
 * on its binary64 evaluation. */
static double transition_norm(workspace *ws, const io *a, size_t t0)
{
    const gdn_chunk_state_shape *s = ws->s;
    norm_bound *n = &ws->norm;
    const size_t dim = s->k;
    double *m = n->m, *w_row = n->work;
    for (size_t p = 0; p < dim; p++)
        for (size_t q = 0; q < dim; q++) m[p * dim + q] = p == q ? n->e_lead : 0.0;
    double k_fro = 0, w_fro = 0, e_max = 0;
    for (size_t i = 0; i < s->bt; i++) {
        const ug_bf16 *k = a->k + token(ws, t0 + i, s->hg, ws->key_head, dim), *w = a->w + token(ws, t0 + i, s->h, ws->h, dim);
        const double e = n->e_dec[i];
        e_max = fmax(e_max, e);
        for (size_t q = 0; q < dim; q++) {
            w_row[q] = ug_bf16_to_f32(w[q]);
            w_fro += w_row[q] * w_row[q];
        }
        for (size_t p = 0; p < dim; p++) {
            const double kp = ug_bf16_to_f32(k[p]);
            k_fro += kp * kp;
            if (kp == 0) continue;
            axpy(dim, -(kp * e), w_row, m + p * dim); /* m -= (kp e) w: the same roundings */
        }
    }
    /* Each entry: BT + 1 terms, two roundings in a term, binary64; the
     * exponentials rounded up from 128 bits (within 2^-51 relative);
     * ||aI + |K|^T E |W|||_F <= a sqrt(K) + e_max ||K||_F ||W||_F. */
    const double gamma = (double)(s->bt + 2) * 0x1p-53 / (1 - (double)(s->bt + 2) * 0x1p-53);
    const double scale = n->e_lead * sqrt((double)dim) + e_max * sqrt(k_fro * w_fro);
    const double err_f = ((gamma + 0x1p-50) * scale * (1 + 0x1p-30) +
                          (double)dim * (double)dim * (double)(s->bt + 2) * 0x1p-1070) * UG_F32_SLACK;
    return ug_spectral_norm_up(m, dim, dim, err_f, n->work);
}

/* After a chunk, where the magnitude recursion has left the bf16 scale of
 * some column: the local error's norm L_c (the chunk's roundings at the
 * reference's magnitudes; its casts, 2^-8 of each operand, through ||W||_2
 * and ||K||_2 rather than entry by entry), kappa_c (what the state error
 * adds to the local errors), then D_{c+1} = min(D_{c+1}, (||M_c||_2 +
 * kappa_c) N_c + L_c) per column. */
static void norm_end_chunk(workspace *ws, const io *a, size_t t0)
{
    const gdn_chunk_state_shape *s = ws->s;
    norm_bound *n = &ws->norm;
    const size_t dim_k = s->k, dim_v = s->v, bt = s->bt, kv = dim_k * dim_v;
    /* loose: some column's bound, in norm, beyond 2^-6 of its state's norm
     * (a few bf16 ulps): only there can the norm bound be the smaller */
    double *err_norm = n->local_norm, *state_norm = n->scratch;
    column_norms_up(ws->state_err, dim_k, dim_v, err_norm);
    column_norms_up(ws->state_mag, dim_k, dim_v, state_norm);
    bool loose = false;
    for (size_t col = 0; col < dim_v && !loose; col++) loose = !(err_norm[col] <= 0x1p-6 * state_norm[col] + 0x1p-126);
    for (size_t col = 0; col < dim_v && !loose; col++) n->col_norm[col] = INFINITY;
    if (!loose) return;
    double fro_w, fro_k, e_max = 0, e_rel_max = 0;
    const double sigma_w = chunk_rows_norm(ws, a->w, s->h, ws->h, t0, &fro_w);
    const double sigma_k = chunk_rows_norm(ws, a->k, s->hg, ws->key_head, t0, &fro_k);
    for (size_t i = 0; i < bt; i++) {
        e_max = fmax(e_max, n->e_dec[i]);
        e_rel_max = fmax(e_rel_max, n->e_dec_err[i] + UG_F32_U * (n->e_dec[i] + n->e_dec_err[i]));
    }
    /* A cast to bf16 moves |y| by at most 2^-8 |y| + 2^-134; the staged
     * reference's own cast as much again. */
    const double casts = ws->mode == UG_REF_EXACT ? 1.0 : 2.0;
    double *mag = n->scratch, *wide = n->scratch + kv, *cast_norm = n->local_norm, *v_norm = n->local;
    for (size_t x = 0; x < kv; x++) {
        n->cast[x] = casts * (0x1p-8 * n->s_abs[x] + 0x1p-134);
        mag[x] = n->op_abs_state[x] + n->cast[x];
    }
    column_norms_up(n->cast, dim_k, dim_v, cast_norm);
    /* v: W times the state operands' casts, plus the f32 sum's own error */
    magnitude_product(bt, dim_k, dim_v, ws->neg_w.abs, mag, wide);
    const f32_sum_model v_model = f32_sum_of(ws->model, dim_k + 1), state_model = f32_sum_of(ws->model, bt + 1);
    for (size_t i = 0; i < bt; i++) {
        const ug_bf16 *u = a->u + token(ws, t0 + i, s->h, ws->h, dim_v);
        for (size_t col = 0; col < dim_v; col++) {
            const sum_bound v_sum = {fabs((double)ug_bf16_to_f32(u[col])) + wide[i * dim_v + col], 0, 0, 0};
            n->v_dev[i * dim_v + col] = f32_sum_error(v_model, &v_sum);
        }
    }
    column_norms_up(n->v_dev, bt, dim_v, v_norm);
    for (size_t col = 0; col < dim_v; col++) v_norm[col] = (sigma_w * cast_norm[col] + v_norm[col]) * UG_F32_SLACK;
    /* the decayed operands: the exp's and product's roundings, then their casts */
    for (size_t i = 0; i < bt; i++) {
        const double e_rel = n->e_dec_err[i] + UG_F32_U * (n->e_dec[i] + n->e_dec_err[i]);
        for (size_t col = 0; col < dim_v; col++) {
            const size_t x = i * dim_v + col;
            const double x_abs = (n->op_abs_dec[x] + 0x1p-134) * (1 + 0x1p-7); /* >= |e_i v_i| */
            /* plus the reference operand's own 2^-127 relative rounding, as decayed_values adds it */
            n->dec_dev[x] = (e_rel * (ws->v_mag[x] + v_norm[col]) + ug_f32_underflow_half(ws->model)) * UG_F32_SLACK +
                            x_abs * 0x1p-100;
            n->v_dev[x] = casts * (0x1p-8 * x_abs + 0x1p-134);
        }
    }
    double *eta = mag; /* [V]: >= ||eta_c[:, v]||_2, the decayed operands' local deviations */
    column_norms_up(n->dec_dev, bt, dim_v, eta);
    column_norms_up(n->v_dev, bt, dim_v, cast_norm);
    for (size_t col = 0; col < dim_v; col++)
        eta[col] = ((1 + 0x1p-8) * (e_max * v_norm[col] + eta[col]) + cast_norm[col]) * UG_F32_SLACK;
    /* the state: the decayed state's exp and the f32 sum's roundings entry by entry */
    double *key_sum = wide; /* [K]: sum_i |k_i| */
    magnitude_product(dim_k, bt, dim_v, ws->keys.abs, n->op_abs_dec, n->local);
    for (size_t kk = 0; kk < dim_k; kk++) {
        key_sum[kk] = 0;
        for (size_t i = 0; i < bt; i++) key_sum[kk] += ws->keys.abs[kk * bt + i];
    }
    const double e_up = n->e_lead + n->e_lead_err;
    for (size_t x = 0; x < kv; x++) {
        const double terms = e_up * n->s_abs[x] + n->local[x] + key_sum[x / dim_v] * eta[x % dim_v];
        const sum_bound state_sum = {terms * UG_F32_SLACK, n->e_lead_err * n->s_abs[x], 0, 0};
        n->local[x] = f32_sum_error(state_model, &state_sum);
    }
    column_norms_up(n->local, dim_k, dim_v, n->local_norm);
    for (size_t col = 0; col < dim_v; col++)
        n->local_norm[col] = (n->local_norm[col] + sigma_k * eta[col]) * UG_F32_SLACK;
    bool could_tighten = false;
    for (size_t x = 0; x < kv && !could_tighten; x++) could_tighten = ws->state_err[x] > n->local_norm[x % dim_v];
    double growth = INFINITY;
    if (could_tighten) {
        const double gamma_v = ug_f32_gamma(dim_k + 1) * UG_F32_SLACK, gamma_s = ug_f32_gamma(bt + 1) * UG_F32_SLACK;
        const double kappa_v = 0x1p-8 * sigma_w + gamma_v * (1 + 0x1p-8) * fro_w;
        const double kappa_s = (1 + 0x1p-8) * (e_max * kappa_v + e_rel_max * (sigma_w + kappa_v)) + 0x1p-8 * e_max * sigma_w;
        const double kappa = n->e_lead_err + sigma_k * kappa_s + gamma_s * (e_up + fro_k * (e_max * sigma_w + kappa_s));
        growth = (transition_norm(ws, a, t0) + kappa * UG_F32_SLACK) * UG_F32_SLACK;
    }
    for (size_t col = 0; col < dim_v; col++) {
        const double bound = (growth * n->col_norm[col] + n->local_norm[col]) * UG_F32_SLACK;
        n->col_norm[col] = isfinite(bound) ? bound : INFINITY;
        for (size_t kk = 0; kk < dim_k; kk++)
            if (bound < ws->state_err[kk * dim_v + col]) ws->state_err[kk * dim_v + col] = bound;
    }
}

/* ws->e = RN_128(e^{G_last - G_i}) for token i of the chunk; returns it
 * rounded up and its f32 error in *e_err, recorded for the norm bound. */
static double token_decay(workspace *ws, float g_last, float g_i, size_t i, double *e_err)
{
    mpfr_set_flt(ws->diff, g_last, MPFR_RNDN);
    mpfr_sub_d(ws->diff, ws->diff, g_i, MPFR_RNDN); /* exact */
    mpfr_exp(ws->e, ws->diff, MPFR_RNDN);
    const double e = mpfr_get_d(ws->e, MPFR_RNDU);
    *e_err = ug_f32_error_at(ug_f32_exp_of_difference(ws->model, g_last, g_i), e);
    ws->norm.e_dec[i] = e;
    ws->norm.e_dec_err[i] = *e_err;
    return e;
}

/* ws->e = RN_128(e^{G_last}), the state's decay over the chunk; as
 * token_decay. */
static double chunk_decay(workspace *ws, float g_last, double *e_err)
{
    mpfr_set_flt(ws->e, g_last, MPFR_RNDN);
    mpfr_exp(ws->e, ws->e, MPFR_RNDN);
    const double e = mpfr_get_d(ws->e, MPFR_RNDU);
    *e_err = ug_f32_error_at(ug_f32_op_error(ws->model, UG_F32_EXP, g_last, g_last), e);
    ws->norm.e_lead = e;
    ws->norm.e_lead_err = *e_err;
    return e;
}

/* Entry x of the head's prior state h0 (0 without one). */
static double h0_at(const workspace *ws, const io *a, size_t x)
{
    const size_t kv = ws->s->k * ws->s->v;
    return a->h0 ? a->h0[(ws->b * ws->s->h + ws->h) * kv + x] : 0.0;
}

/* The bound parts at the head's start, for either path: the kernel starts
 * from the same f32 h0, so without error. */
static void start_head(workspace *ws, const io *a)
{
    for (size_t x = 0; x < ws->s->k * ws->s->v; x++) {
        ws->state_mag[x] = ws->state_abs[x] = fabs(h0_at(ws, a, x));
        ws->state_err[x] = 0;
        ws->state_flagged[x] = 0;
    }
    norm_start_head(ws);
}

/* ---- one chunk ---------------------------------------------------------------------- */

/* h[c] = S_c, and the operands bf16(S_c) of the w·S product, within the
 * kernel's state error of S_c. */
/* Chunk c's block of h ([V][K]) for the current head. */
static ug_ref_value *chunk_states(const workspace *ws, size_t c, ug_ref_value *h)
{
    const gdn_chunk_state_shape *s = ws->s;
    return h + ((ws->b * (s->t / s->bt) + c) * s->h + ws->h) * s->v * s->k;
}

static void emit_state(workspace *ws, size_t c, ug_ref_value *h)
{
    const gdn_chunk_state_shape *s = ws->s;
    ug_ref_value *out = chunk_states(ws, c, h);
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++) {
            const size_t x = kk * s->v + vv, op = vv * s->k + kk;
            ug_ref_finish(&out[op], ws->state[x], ws->state_err[x], ws->state_abs[x], ws->state_flagged[x],
                          UG_BF16);
            stage(ws, ws->state[x], ws->state_err[x], ws->state_ops.value[op], &ws->state_ops.bound[op]);
            ws->norm.op_abs_state[x] = ws->state_ops.bound[op].abs;
        }
}

/* v = u - w·op(S), bounded as an f32 sum of K + 1 terms, and v_new = v. */
static void corrected_values(workspace *ws, size_t t0, const ug_bf16 *w, const ug_bf16 *u, ug_ref_value *v_new)
{
    const gdn_chunk_state_shape *s = ws->s;
    for (size_t i = 0; i < s->bt; i++)
        for (size_t kk = 0; kk < s->k; kk++)
            set_weight(&ws->neg_w, i * s->k + kk, w[token(ws, t0 + i, s->h, ws->h, s->k) + kk], true);
    const f32_sum_model v_model = f32_sum_of(ws->model, s->k + 1);
    for (size_t i = 0; i < s->bt; i++) {
        const size_t row = token(ws, t0 + i, s->h, ws->h, s->v);
        const weights w_row = {ws->neg_w.value + i * s->k, ws->neg_w.abs + i * s->k};
        for (size_t vv = 0; vv < s->v; vv++) {
            const double u_val = ug_bf16_to_f32(u[row + vv]);
            const operands column = {ws->state_ops.value + vv * s->k, ws->state_ops.bound + vv * s->k};
            mpfr_set_d(ws->terms[0], u_val, MPFR_RNDN);
            sum_bound acc = {fabs(u_val), 0, fabs(u_val), 0};
            mpfr_ptr v = ws->v[i * s->v + vv];
            weighted_sum(ws, s->k, &w_row, &column, v, &acc);
            const double err = f32_sum_error(v_model, &acc);
            ws->v_err[i * s->v + vv] = err;
            ws->v_mag[i * s->v + vv] = abs_up(v);
            ug_ref_finish(&v_new[row + vv], v, err, acc.abs * UG_F32_SLACK, acc.flagged, UG_BF16);
        }
    }
}

/* e^{G_last - G_i} v_i, staged within the kernel's pre-cast error of
 * fl(expf(fl(G_last - G_i)) v^_i). */
static void decayed_values(workspace *ws, size_t t0, const float *g, float g_last)
{
    const gdn_chunk_state_shape *s = ws->s;
    for (size_t i = 0; i < s->bt; i++) {
        double e_err;
        const double e = token_decay(ws, g_last, g[(ws->b * s->t + t0 + i) * s->h + ws->h], i, &e_err);
        const double e_up = e + e_err;
        for (size_t vv = 0; vv < s->v; vv++) {
            const size_t x = i * s->v + vv, op = vv * s->bt + i;
            mpfr_mul(ws->decayed, ws->e, ws->v[x], MPFR_RNDN);
            const double v_abs = ws->v_mag[x] + ws->v_err[x]; /* >= |v^| */
            double radius = e_err * v_abs + e * ws->v_err[x] + UG_F32_U * e_up * v_abs + ug_f32_underflow_half(ws->model);
            /* plus the reference's own 2^-126 relative error, far below the rest */
            radius = radius * UG_F32_SLACK + abs_up(ws->decayed) * 0x1p-100;
            stage(ws, ws->decayed, radius, ws->decayed_ops.value[op], &ws->decayed_ops.bound[op]);
            ws->norm.op_abs_dec[x] = ws->decayed_ops.bound[op].abs;
        }
    }
}

/* S_{c+1} = e^{G_last} S_c + sum_i k_i op_i, bounded as an f32 sum of BT + 1
 * terms whose first is the kernel's decayed state. */
static void advance_state(workspace *ws, size_t t0, const ug_bf16 *k, float g_last)
{
    const gdn_chunk_state_shape *s = ws->s;
    double e_err;
    const double e = chunk_decay(ws, g_last, &e_err);
    const f32_sum_model state_model = f32_sum_of(ws->model, s->bt + 1);
    for (size_t i = 0; i < s->bt; i++)
        for (size_t kk = 0; kk < s->k; kk++)
            set_weight(&ws->keys, kk * s->bt + i, k[token(ws, t0 + i, s->hg, ws->key_head, s->k) + kk], false);
    for (size_t kk = 0; kk < s->k; kk++) {
        const weights key_column = {ws->keys.value + kk * s->bt, ws->keys.abs + kk * s->bt};
        for (size_t vv = 0; vv < s->v; vv++) {
            const size_t x = kk * s->v + vv;
            const operands column = {ws->decayed_ops.value + vv * s->bt, ws->decayed_ops.bound + vv * s->bt};
            const double s_abs = ws->state_mag[x] + ws->state_err[x]; /* >= |S^| */
            mpfr_mul(ws->terms[0], ws->e, ws->state[x], MPFR_RNDN);   /* exact */
            sum_bound acc = {(e + e_err) * s_abs, e_err * s_abs + e * ws->state_err[x], e * ws->state_mag[x], 0};
            weighted_sum(ws, s->bt, &key_column, &column, ws->next[x], &acc);
            ws->state_err[x] = f32_sum_error(state_model, &acc);
            ws->state_abs[x] = acc.abs * UG_F32_SLACK;
            ws->state_flagged[x] = acc.flagged;
        }
    }
    for (size_t x = 0; x < s->k * s->v; x++) {
        mpfr_swap(ws->state[x], ws->next[x]);
        ws->state_mag[x] = abs_up(ws->state[x]);
    }
}

static void reference_head(workspace *ws, const io *a)
{
    const gdn_chunk_state_shape *s = ws->s;
    const size_t kv = s->k * s->v;
    for (size_t x = 0; x < kv; x++) mpfr_set_d(ws->state[x], h0_at(ws, a, x), MPFR_RNDN);
    start_head(ws, a);
    for (size_t t0 = 0, c = 0; t0 < s->t; t0 += s->bt, c++) {
        const float g_last = a->g[(ws->b * s->t + t0 + s->bt - 1) * s->h + ws->h];
        norm_begin_chunk(ws);
        emit_state(ws, c, a->h);
        corrected_values(ws, t0, a->w, a->u, a->v_new);
        decayed_values(ws, t0, a->g, g_last);
        advance_state(ws, t0, a->k, g_last);
        norm_end_chunk(ws, a, t0);
    }
    ug_ref_value *out = a->final_state + (ws->b * s->h + ws->h) * kv;
    for (size_t x = 0; x < kv; x++)
        ug_ref_finish(&out[x], ws->state[x], ws->state_err[x], ws->state_abs[x], ws->state_flagged[x], UG_F32);
}

/* ---- the fast path ---------------------------------------------------------------- */

/* Whether head ws->h lies in the fast path's domain: finite inputs and
 * gates whose exponentials keep to the accumulator's range. The MPFR path
 * takes the rest (it propagates NaN and inf). */
static bool head_in_fast_domain(const workspace *ws, const io *a)
{
    enum { GATE_MAX = 1400 }; /* e^1400 < 2^2020: the accumulator checks the rest */
    const gdn_chunk_state_shape *s = ws->s;
    for (size_t t = 0; t < s->t; t++) {
        if (!(fabsf(a->g[(ws->b * s->t + t) * s->h + ws->h]) <= GATE_MAX)) return false;
        const ug_bf16 *rows[3] = {a->k + token(ws, t, s->hg, ws->key_head, s->k), a->w + token(ws, t, s->h, ws->h, s->k),
                                  a->u + token(ws, t, s->h, ws->h, s->v)};
        const size_t widths[3] = {s->k, s->k, s->v};
        for (int r = 0; r < 3; r++)
            for (size_t d = 0; d < widths[r]; d++)
                if ((rows[r][d] & 0x7F80) == 0x7F80) return false;
    }
    if (a->h0)
        for (size_t x = 0; x < s->k * s->v; x++)
            if (!isfinite(a->h0[(ws->b * s->h + ws->h) * s->k * s->v + x])) return false;
    return true;
}

static ug_xval xval_of_double(double d)
{
    ug_xval x = {0};
    uint64_t m;
    ug_xsum_split(d, &x.neg, &m, &x.e);
    if (m) {
        const int zeros = __builtin_ctzll(m);
        m >>= zeros;
        x.e += zeros;
    }
    x.m = m;
    x.zero = m == 0;
    return x;
}

/* |x| rounded up to a double, as fabs(ug_xval_to_double(x, MPFR_RNDA));
 * inline for the fast path's values, 128 bits read exactly (m's leading
 * bit at 2^127, no round or sticky bit), where the result is normal: its
 * leading 53 bits plus one where any of the 75 below them is set. */
static double xval_abs_up(const ug_xval *x)
{
    if (x->zero) return 0.0;
    const int top = x->e + 127; /* |x| in [2^top, 2^(top+1)) */
    if (!(x->m >> 127) || x->round || x->sticky || top < -970 || top > 1022)
        return fabs(ug_xval_to_double(x, MPFR_RNDA));
    const uint64_t n = (uint64_t)(x->m >> 75) + ((x->m & (((ug_u128)1 << 75) - 1)) != 0); /* <= 2^53: exact */
    const uint64_t unit_bits = (uint64_t)(top - 52 + 1023) << 52;
    double unit;
    memcpy(&unit, &unit_bits, sizeof unit);
    return (double)n * unit;
}

static void set_factor(small_factor *f, double *abs, ug_bf16 x, bool negate)
{
    bool neg;
    ug_xsum_split(ug_bf16_to_f32(x), &neg, &f->m, &f->e);
    if (f->m) { /* 8 bits at most: one window limb holds it with room to spare */
        const int zeros = __builtin_ctzll(f->m);
        f->m >>= zeros;
        f->e += zeros;
    }
    f->neg = neg != negate;
    *abs = fabs((double)ug_bf16_to_f32(x));
}

/* stage() of the exact 128-bit x: certified without MPFR, or else through
 * ug_stage_operand on x's MPFR value; its bound parts go to index `part`
 * of the fast path's arrays. finished: x as ug_xval_finish has just
 * finished it to bf16, or NULL. False when the staged operand is infinite
 * (the fast path has no infinite operands). */
static bool fast_stage(workspace *ws, const ug_xval *x, const ug_ref_value *finished, double radius, ug_xval *op,
                       size_t part)
{
    fast_head *f = &ws->fast;
    ug_staged st;
    const bool with_dev = ws->mode == UG_REF_EXACT;
    const bool certified =
        finished ? ug_stage_certified_finished(finished, x->neg, x->m, x->e, radius, with_dev, &st, &f->scratch)
        : with_dev ? ug_stage_certified(x->neg, 1, x->m, x->e, 0, radius, &st, &f->scratch)
                   : ug_stage_certified_cast(x->neg, 1, x->m, x->e, 0, radius, &st, &f->scratch);
    if (!certified) {
        if (x->zero) {
            mpfr_set_zero(f->operand, x->neg ? -1 : 1);
        } else {
            const uint64_t words[2] = {(uint64_t)x->m, (uint64_t)(x->m >> 64)};
            mpz_import(f->words, 2, -1, sizeof words[0], 0, 0, words);
            if (x->neg) mpz_neg(f->words, f->words);
            mpfr_set_z_2exp(f->operand, f->words, x->e, MPFR_RNDN); /* exact: 128 bits */
        }
        mpfr_set_d(ws->radius, radius, MPFR_RNDU);
        ug_stage_operand(f->operand, ws->radius, &st);
    }
    if (ws->mode == UG_REF_EXACT) {
        ug_xval_set(op, x);
        f->op_dev[part] = st.dev;
        f->op_abs[part] = st.abs_x; /* |x| rounded up, as xval_abs_up(x) */
    } else {
        const float rn = ug_bf16_to_f32(st.rn);
        if (!isfinite(rn)) return false;
        *op = xval_of_double(rn);
        f->op_dev[part] = st.gap;
        f->op_abs[part] = fabs(rn); /* exact */
    }
    f->op_mag[part] = st.mag;
    f->op_flagged[part] = st.flagged;
    return true;
}

/* The fast path's weighted sums out[r][col] = lead + sum_j w[r][j] op[col][j]
 * of a row r of weights and a column col of operands (docs/error-model.md
 * §2.1): the operands go on their column's grid once (its top bit less
 * 64·nc, nc <= 3 limbs; with rowsimd.h, 52·nd, nd <= 4 digits), each row's
 * weights on the row's (its top bit less 64, or 52), every sum in a window
 * of exact_sum.h; the leading term joins the window where it fits on the
 * grid, and the terms off the grids go to the accumulator with it. */
typedef struct {
    size_t n, width, rows;  /* terms per sum, columns, rows */
    const small_factor *w;  /* [rows][n] */
    const double *w_abs;    /* [rows][n] */
    const ug_xval *ops;     /* [width][n] */
    size_t parts;           /* the operands' bound parts: fast_head's op_* from index parts, [n][width] */
    bool simd;              /* the windows from ug_xwin52_windows */
} weighted_sums;

static int trailing_zeros128(ug_u128 m)
{
    return (uint64_t)m ? __builtin_ctzll((uint64_t)m) : 64 + __builtin_ctzll((uint64_t)(m >> 64));
}

/* Every row's weights on the row's grid; the count off it. */
static void place_rows(fast_head *f, const weighted_sums *d)
{
    const int digit_bits = d->simd ? 52 : 64;
    const size_t blocks = (d->rows + 7) / 8;
    if (d->simd) memset(f->w_neg, 0, d->n * blocks);
    for (size_t r = 0; r < d->rows; r++) {
        const small_factor *w = d->w + r * d->n;
        int top = INT_MIN;
        for (size_t j = 0; j < d->n; j++)
            if (w[j].m && w[j].e + 64 - __builtin_clzll(w[j].m) > top) top = w[j].e + 64 - __builtin_clzll(w[j].m);
        const int grid = top == INT_MIN ? 0 : top - digit_bits;
        size_t off = 0;
        for (size_t j = 0; j < d->n; j++) {
            const size_t at = r * d->n + j;
            /* ug_xwin_place of one limb, inline: every weight's bits lie below its row's grid top */
            f->w_on[at] = !w[j].m || w[j].e >= grid;
            f->w_s[at] = w[j].m && f->w_on[at] ? w[j].m << (w[j].e - grid) : 0;
            f->w_mask[at] = w[j].neg ? ~UINT64_C(0) : 0;
            if (!f->w_on[at]) f->row_off_j[r * d->n + off++] = j; /* a nonzero weight: zeros are placed */
            if (!d->simd) continue;
            f->w_digit[j * d->rows + r] = f->w_s[at];
            f->w_neg[j * blocks + r / 8] |= (uint8_t)(w[j].neg << (r % 8));
        }
        f->row_grid[r] = grid;
        f->row_off[r] = off;
    }
    if (d->simd) /* every term of every column's windows reads them: signed once here */
        ug_xwin52_sign_columns(d->n, d->rows, f->w_digit, f->w_neg, f->w_signed, f->w_signed_neg);
}

/* The grid of the nonzero operands op[js[k]], k < count (js NULL: op[k]):
 * their top bit less digit_bits·nc, nc <= max_digits digits, the fewest
 * that reach their lowest bit where that many exist. */
static int operands_grid(const ug_xval *op, const size_t *js, size_t count, int digit_bits, int max_digits, int *nc)
{
    int top = INT_MIN, bottom = INT_MAX;
    for (size_t k = 0; k < count; k++) {
        const ug_xval *x = &op[js ? js[k] : k];
        if (x->zero) continue;
        const int t = x->e + ug_u128_bit_length(x->m), b = x->e + trailing_zeros128(x->m);
        top = t > top ? t : top;
        bottom = b < bottom ? b : bottom;
    }
    const int digits = top == INT_MIN ? 1 : (top - bottom + digit_bits - 1) / digit_bits;
    *nc = digits < 1 ? 1 : digits > max_digits ? max_digits : digits;
    return top == INT_MIN ? 0 : top - digit_bits * *nc;
}

/* The nonzero x as m·2^e with m odd: on a grid wherever its lowest set
 * bit is, as operands_grid counts it (a 128-bit value read from a window
 * may end in zeros below its grid). */
static ug_u128 odd_significand(const ug_xval *x, int *e)
{
    const int zeros = x->zero ? 0 : trailing_zeros128(x->m);
    *e = x->e + zeros;
    return x->m >> zeros;
}

/* The 52-bit digits of m·2^d (d >= 0, below 2^(52 UG_XWIN52_DIGITS)): as
 * ug_xwin52_digits of ug_xwin_place's limbs, without them. */
static void digits_at(ug_u128 m, int d, uint64_t digit[UG_XWIN52_DIGITS])
{
    for (int k = 0; k < UG_XWIN52_DIGITS; k++) {
        const int shift = 52 * k - d; /* digit k holds bits shift .. shift + 51 of m */
        const ug_u128 part = shift >= 128 ? 0 : shift >= 0 ? m >> shift : shift > -52 ? m << -shift : 0;
        digit[k] = (uint64_t)part & ((UINT64_C(1) << 52) - 1);
    }
}

/* With rowsimd.h: column col's operands op[js[k]] (js NULL: every one) on
 * the 52-bit grid `grid` of nd digits, and their windows with every row
 * at win[row · width] (read a row at a time); the operands off the grid
 * go to off_j (which may be js itself), their count returned. */
static size_t place_band(fast_head *f, const weighted_sums *d, size_t col, const size_t *js, size_t count, int grid,
                         int nd, uint64_t (*win)[UG_XWIN_LIMBS], size_t *off_j)
{
    const ug_xval *op = d->ops + col * d->n;
    size_t off = 0, terms = 0;
    for (size_t k = 0; k < count; k++) {
        const size_t j = js ? js[k] : k, at = col * d->n + j;
        int e;
        const ug_u128 m = odd_significand(&op[j], &e);
        /* the grid lies 52 nd below the top bit of every operand it takes */
        f->op_on[at] = op[j].zero || e >= grid;
        if (!f->op_on[at]) {
            off_j[off++] = j;
        } else if (!op[j].zero) {
            digits_at(m, e - grid, f->op_digit[terms]);
            f->op_neg[terms] = op[j].neg ? 0xFF : 0;
            f->op_j[terms++] = j;
        }
    }
    const ug_xwin52_row r = {terms, d->rows, nd, (const uint64_t *)f->op_digit, f->op_neg, f->op_j, f->w_digit, f->w_neg};
    const ug_xwin52_signed signed_weights = {{f->w_signed[0], f->w_signed[1]}, {f->w_signed_neg[0], f->w_signed_neg[1]}};
    ug_xwin52_windows_signed(&r, &signed_weights, win, d->width);
    return off;
}

/* Every column's operands on the column's grid, and with rowsimd.h the
 * column's windows for every row (the rows placed first). There, the
 * operands below the grid (a column of decayed values whose gates span
 * more than the digits) go on a second grid of their own, with windows
 * of their own (win_low): the accumulator then adds one window for them
 * rather than a product for each. */
static void place_columns(fast_head *f, const weighted_sums *d)
{
    const int digit_bits = d->simd ? 52 : 64, max_digits = d->simd ? UG_XWIN52_DIGITS : UG_XWIN_MAX_C;
    for (size_t col = 0; col < d->width; col++) {
        const ug_xval *op = d->ops + col * d->n;
        size_t *off_j = f->col_off_j + col * d->n, off = 0;
        int nc;
        const int grid = operands_grid(op, NULL, d->n, digit_bits, max_digits, &nc);
        f->col_grid[col] = grid;
        f->col_nc[col] = nc;
        f->col_low[col] = false;
        if (d->simd) {
            off = place_band(f, d, col, NULL, d->n, grid, nc, f->win + col, off_j);
            if (off) {
                int low_nc;
                const int low_grid = operands_grid(op, off_j, off, digit_bits, max_digits, &low_nc);
                off = place_band(f, d, col, off_j, off, low_grid, low_nc, f->win_low + col, off_j);
                f->col_low[col] = true;
                f->col_low_grid[col] = low_grid;
            }
        } else {
            for (size_t j = 0; j < d->n; j++) {
                const size_t at = col * d->n + j;
                int e;
                const ug_u128 odd = odd_significand(&op[j], &e);
                const uint64_t m[2] = {(uint64_t)odd, (uint64_t)(odd >> 64)};
                f->op_on[at] = ug_xwin_place(m, 2, e, grid, f->op_c[at], nc);
                f->op_mask[at] = op[j].neg ? ~UINT64_C(0) : 0;
                if (!f->op_on[at]) off_j[off++] = j; /* a nonzero operand */
            }
        }
        f->col_off[col] = off;
    }
}

/* The bound parts of rows r0 .. r0 + rows - 1 (rows <= UG_REF_BOUND_ROWS; row r0 + p's
 * sums at p·width in fast_head's row_* arrays, holding the leading
 * terms'): += |w_j| times operand j's parts, over the nonzero weights in
 * the order j = 0, 1, ...: weighted_sum's sums, a column vector at a
 * time. */
static void row_bounds(fast_head *f, const weighted_sums *d, size_t r0, size_t rows, bool simd)
{
    const double *mag = f->op_mag + d->parts, *dev = f->op_dev + d->parts, *abs = f->op_abs + d->parts;
    const uint32_t *flagged = f->op_flagged + d->parts;
    if (simd) { /* the same products and sums, eight columns an instruction, in registers across the terms */
        const double *weight[UG_REF_BOUND_ROWS];
        ug_ref_bound_row sums[UG_REF_BOUND_ROWS];
        for (size_t p = 0; p < rows; p++) {
            const size_t at = p * d->width;
            weight[p] = d->w_abs + (r0 + p) * d->n;
            sums[p] = (ug_ref_bound_row){f->row_abs + at, f->row_dev + at, f->row_mag + at, f->row_flagged + at};
        }
        ug_ref_simd_bound_rows(d->n, d->width, rows, weight, abs, dev, mag, flagged, sums);
        return;
    }
    for (size_t p = 0; p < rows; p++) {
        double *restrict sum_mag = f->row_mag + p * d->width, *restrict sum_dev = f->row_dev + p * d->width,
                         *restrict sum_abs = f->row_abs + p * d->width;
        uint32_t *restrict sum_flagged = f->row_flagged + p * d->width;
        for (size_t j = 0; j < d->n; j++) {
            const double a = d->w_abs[(r0 + p) * d->n + j];
            if (a == 0) continue;
            const size_t at = j * d->width;
            for (size_t col = 0; col < d->width; col++) {
                sum_mag[col] += a * mag[at + col];
                sum_dev[col] += a * dev[at + col];
                sum_abs[col] += a * abs[at + col];
                sum_flagged[col] += flagged[at + col];
            }
        }
    }
}

/* Sum (r, col)'s bound parts, as weighted_sum leaves them (at = p·width
 * + col for row r0 + p). */
static sum_bound row_sum(const fast_head *f, size_t at)
{
    return (sum_bound){f->row_mag[at], f->row_dev[at], f->row_abs[at], f->row_flagged[at]};
}

/* Sets sum at's bound parts to the leading term's. */
static void row_sum_set(fast_head *f, size_t at, sum_bound b)
{
    f->row_mag[at] = b.mag;
    f->row_dev[at] = b.dev;
    f->row_abs[at] = b.abs;
    f->row_flagged[at] = b.flagged;
}

/* The window of column col with row r: sum_j ±c_j s_j. The limb count is
 * a literal at each call, so each instance is unrolled. */
UG_XSUM_INLINE void window_dot(const fast_head *f, int nc, size_t n, size_t r, size_t col,
                               uint64_t acc[UG_XWIN_LIMBS])
{
    const uint64_t(*c)[UG_XWIN_MAX_C] = f->op_c + col * n;
    const uint64_t *mask = f->op_mask + col * n, *w_s = f->w_s + r * n, *w_mask = f->w_mask + r * n;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0;
    for (size_t j = 0; j < n; j++) {
        uint64_t sum[UG_XWIN_LIMBS] = {a0, a1, a2, a3, a4};
        ug_xwin_add_product(sum, nc, c[j], w_s[j], mask[j] ^ w_mask[j]);
        a0 = sum[0], a1 = sum[1], a2 = sum[2], a3 = sum[3], a4 = sum[4];
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4;
}

/* A sum's leading term (u, or e^{G_last} S exactly) as ±m·2^e, m of up to
 * four limbs without trailing zero bits; zero: a signed zero. */
typedef struct {
    bool neg, zero;
    int e;
    uint64_t m[4];
} lead_term;

static lead_term lead_of_double(double x)
{
    lead_term t = {0};
    ug_xsum_split(x, &t.neg, &t.m[0], &t.e);
    t.zero = t.m[0] == 0;
    if (!t.zero) {
        const int zeros = __builtin_ctzll(t.m[0]);
        t.m[0] >>= zeros;
        t.e += zeros;
    }
    return t;
}

/* ±a·b·2^e exactly (a, b < 2^128, nonzero). */
static lead_term lead_of_product(bool neg, ug_u128 a, ug_u128 b, int e)
{
    uint64_t w[4];
    ug_mul128(a, b, w);
    ug_u128 low = (ug_u128)w[1] << 64 | w[0], high = (ug_u128)w[3] << 64 | w[2];
    const int zeros = low ? trailing_zeros128(low) : 128 + trailing_zeros128(high);
    if (zeros >= 128) {
        low = high >> (zeros - 128);
        high = 0;
    } else if (zeros) {
        low = low >> zeros | high << (128 - zeros);
        high >>= zeros;
    }
    return (lead_term){neg, false, e + zeros, {(uint64_t)low, (uint64_t)(low >> 64), (uint64_t)high,
                                               (uint64_t)(high >> 64)}};
}

static void lead_add(ug_xsum *sum, const lead_term *t)
{
    const ug_u128 low = (ug_u128)t->m[1] << 64 | t->m[0], high = (ug_u128)t->m[3] << 64 | t->m[2];
    if (t->zero) ug_xsum_add_zero(sum, t->neg);
    if (low) ug_xsum_add(sum, t->neg, low, t->e);
    if (high) ug_xsum_add(sum, t->neg, high, t->e + 128);
}

/* sum += w·op, both nonzero. */
static void add_term(ug_xsum *sum, const small_factor *w, const ug_xval *op)
{
    ug_xsum_add_mul(sum, w->neg != op->neg, w->m, op->m, w->e + op->e);
}

/* Sum (r, col): the leading term plus the MPFR path's other terms (nonzero
 * weights times nonzero operands), exactly; out = RN_128 of the sum. The
 * window holds the terms on the grids; with the leading term where it fits
 * and no term is off the grids, it is read directly, else the accumulator
 * adds the rest. False when a term leaves the accumulator's range. */
static bool window_sum(fast_head *f, const weighted_sums *d, size_t r, size_t col, const lead_term *lead,
                       ug_xval *out)
{
    uint64_t window[UG_XWIN_LIMBS];
    const int nc = f->col_nc[col], limbs = d->simd ? UG_XWIN_LIMBS : nc + 2, e = f->col_grid[col] + f->row_grid[r];
    switch (d->simd ? 0 : nc) {
    case 0: memcpy(window, f->win[r * d->width + col], sizeof window); break;
    case 1: window_dot(f, 1, d->n, r, col, window); break;
    case 2: window_dot(f, 2, d->n, r, col, window); break;
    default: window_dot(f, 3, d->n, r, col, window); break;
    }
    const small_factor *w = d->w + r * d->n;
    const ug_xval *op = d->ops + col * d->n;
    const bool *op_on = f->op_on + col * d->n;
    const bool all_on = !f->row_off[r] && !f->col_off[col] && !f->col_low[col];
    ug_xval exact;
    const int lead_e = lead->zero ? e : lead->e;
    if (!all_on || !(ug_xwin_read_plus(window, limbs, e, lead->neg, lead->m, 4, lead_e, &exact) ||
                     ug_xwin_read_plus_wide(window, limbs, e, lead->neg, lead->m, 4, lead_e, &exact))) {
        ug_xsum *sum = &f->acc;
        ug_xsum_clear(sum);
        lead_add(sum, lead);
        ug_xsum_add_xwin(sum, window, limbs, e);
        if (f->col_low[col])
            ug_xsum_add_xwin(sum, f->win_low[r * d->width + col], UG_XWIN_LIMBS, f->col_low_grid[col] + f->row_grid[r]);
        /* the terms off the grids: the column's, then the row's not among them */
        const size_t *col_j = f->col_off_j + col * d->n, *row_j = f->row_off_j + r * d->n;
        for (size_t k = 0; k < f->col_off[col]; k++)
            if (w[col_j[k]].m) add_term(sum, &w[col_j[k]], &op[col_j[k]]);
        for (size_t k = 0; k < f->row_off[r]; k++)
            if (op_on[row_j[k]] && !op[row_j[k]].zero) add_term(sum, &w[row_j[k]], &op[row_j[k]]);
        if (!ug_xsum_in_range(sum)) return false;
        exact = ug_xsum_read(sum);
    }
    if (exact.zero) { /* -0 only where the leading term, a -0, is the only term: as mpfr_sum's */
        bool any_term = false;
        for (size_t j = 0; j < d->n && !any_term; j++) any_term = w[j].m && !op[j].zero;
        exact.neg = lead->neg && !any_term;
    }
    const ug_xval rounded = ug_xval_round128(&exact);
    ug_xval_set(out, &rounded);
    return true;
}

/* ws->e (an exponential at 128 bits, as the MPFR path rounds it) as its
 * integer significand and exponent; false if it is not a positive number. */
static bool split_exp(workspace *ws, ug_u128 *m, int *e)
{
    bool neg;
    return ug_xsum_split_mpfr(ws->e, &neg, m, e) && !neg;
}

/* emit_state on the fast path; false where an operand cannot be staged. */
static bool fast_emit_state(workspace *ws, size_t c, ug_ref_value *h)
{
    const gdn_chunk_state_shape *s = ws->s;
    ug_ref_value *out = chunk_states(ws, c, h);
    for (size_t kk = 0; kk < s->k; kk++)
        for (size_t vv = 0; vv < s->v; vv++) {
            const size_t x = kk * s->v + vv, op = vv * s->k + kk;
            ug_xval_finish(&ws->fast.state[x], &out[op], ws->state_err[x], ws->state_abs[x], ws->state_flagged[x],
                           UG_BF16);
            if (!fast_stage(ws, &ws->fast.state[x], &out[op], ws->state_err[x], &ws->fast.state_ops[op], x))
                return false;
            ws->norm.op_abs_state[x] = ws->fast.op_abs[x];
        }
    return true;
}

static bool fast_corrected_values(workspace *ws, size_t t0, const ug_bf16 *w, const ug_bf16 *u, ug_ref_value *v_new)
{
    const gdn_chunk_state_shape *s = ws->s;
    fast_head *f = &ws->fast;
    for (size_t i = 0; i < s->bt; i++)
        for (size_t kk = 0; kk < s->k; kk++)
            set_factor(&f->neg_w[i * s->k + kk], &ws->neg_w.abs[i * s->k + kk],
                       w[token(ws, t0 + i, s->h, ws->h, s->k) + kk], true);
    const bool simd = ug_ref_simd_available();
    const weighted_sums d = {s->k, s->v, s->bt, f->neg_w, ws->neg_w.abs, f->state_ops, 0,
                             simd && s->k <= UG_XWIN52_MAX_TERMS};
    place_rows(f, &d);
    place_columns(f, &d);
    const f32_sum_model v_model = f32_sum_of(ws->model, s->k + 1);
    for (size_t i0 = 0; i0 < s->bt; i0 += UG_REF_BOUND_ROWS) { /* rows in row_bounds's groups */
        const size_t rows = s->bt - i0 < UG_REF_BOUND_ROWS ? s->bt - i0 : UG_REF_BOUND_ROWS;
        for (size_t p = 0; p < rows; p++) {
            const size_t row = token(ws, t0 + i0 + p, s->h, ws->h, s->v);
            for (size_t vv = 0; vv < s->v; vv++) {
                const double abs_u = fabs((double)ug_bf16_to_f32(u[row + vv]));
                row_sum_set(f, p * s->v + vv, (sum_bound){abs_u, 0, abs_u, 0});
            }
        }
        row_bounds(f, &d, i0, rows, simd);
        for (size_t p = 0; p < rows; p++) {
            const size_t i = i0 + p, row = token(ws, t0 + i, s->h, ws->h, s->v);
            for (size_t vv = 0; vv < s->v; vv++) {
                const lead_term lead = lead_of_double(ug_bf16_to_f32(u[row + vv]));
                ug_xval *v = &f->v[i * s->v + vv];
                if (!window_sum(f, &d, i, vv, &lead, v)) return false;
                const sum_bound acc = row_sum(f, p * s->v + vv);
                const double err = f32_sum_error(v_model, &acc);
                ws->v_err[i * s->v + vv] = err;
                ws->v_mag[i * s->v + vv] = xval_abs_up(v);
                ug_xval_finish(v, &v_new[row + vv], err, acc.abs * UG_F32_SLACK, acc.flagged, UG_BF16);
            }
        }
    }
    return true;
}

static bool fast_decayed_values(workspace *ws, size_t t0, const float *g, float g_last)
{
    const gdn_chunk_state_shape *s = ws->s;
    fast_head *f = &ws->fast;
    for (size_t i = 0; i < s->bt; i++) {
        double e_err;
        const double e = token_decay(ws, g_last, g[(ws->b * s->t + t0 + i) * s->h + ws->h], i, &e_err);
        const double e_up = e + e_err;
        ug_u128 e_m;
        int e_e;
        if (!split_exp(ws, &e_m, &e_e)) return false;
        for (size_t vv = 0; vv < s->v; vv++) {
            const size_t x = i * s->v + vv, op = vv * s->bt + i;
            const ug_xval *v = &f->v[x];
            ug_xval decayed = {.zero = true, .neg = v->neg};
            if (!v->zero) {
                const ug_xval product = ug_xval_product128(v->neg, e_m, v->m, e_e + v->e),
                              rounded = ug_xval_round128(&product);
                ug_xval_set(&decayed, &rounded);
            }
            const double v_abs = ws->v_mag[x] + ws->v_err[x]; /* >= |v^| */
            double radius = e_err * v_abs + e * ws->v_err[x] + UG_F32_U * e_up * v_abs + ug_f32_underflow_half(ws->model);
            radius = radius * UG_F32_SLACK + xval_abs_up(&decayed) * 0x1p-100;
            if (!fast_stage(ws, &decayed, NULL, radius, &f->decayed_ops[op], s->k * s->v + x)) return false;
            ws->norm.op_abs_dec[x] = f->op_abs[s->k * s->v + x];
        }
    }
    return true;
}

static bool fast_advance_state(workspace *ws, size_t t0, const ug_bf16 *k, float g_last)
{
    const gdn_chunk_state_shape *s = ws->s;
    fast_head *f = &ws->fast;
    double e_err;
    const double e = chunk_decay(ws, g_last, &e_err);
    ug_u128 e_m;
    int e_e;
    if (!split_exp(ws, &e_m, &e_e)) return false;
    for (size_t i = 0; i < s->bt; i++)
        for (size_t kk = 0; kk < s->k; kk++)
            set_factor(&f->keys[kk * s->bt + i], &ws->keys.abs[kk * s->bt + i],
                       k[token(ws, t0 + i, s->hg, ws->key_head, s->k) + kk], false);
    const bool simd = ug_ref_simd_available();
    const weighted_sums d = {s->bt, s->v, s->k, f->keys, ws->keys.abs, f->decayed_ops, s->k * s->v,
                             simd && s->bt <= UG_XWIN52_MAX_TERMS};
    place_rows(f, &d);
    place_columns(f, &d);
    const f32_sum_model state_model = f32_sum_of(ws->model, s->bt + 1);
    for (size_t k0 = 0; k0 < s->k; k0 += UG_REF_BOUND_ROWS) { /* rows in row_bounds's groups */
        const size_t rows = s->k - k0 < UG_REF_BOUND_ROWS ? s->k - k0 : UG_REF_BOUND_ROWS;
        for (size_t p = 0; p < rows; p++)
            for (size_t vv = 0; vv < s->v; vv++) {
                const size_t x = (k0 + p) * s->v + vv;
                const double s_abs = ws->state_mag[x] + ws->state_err[x]; /* >= |S^| */
                row_sum_set(f, p * s->v + vv, (sum_bound){(e + e_err) * s_abs, e_err * s_abs + e * ws->state_err[x],
                                                          e * ws->state_mag[x], 0});
            }
        row_bounds(f, &d, k0, rows, simd);
        for (size_t p = 0; p < rows; p++)
            for (size_t vv = 0; vv < s->v; vv++) {
                const size_t kk = k0 + p, x = kk * s->v + vv;
                const ug_xval *state = &f->state[x];
                /* e^{G_last} S: e > 0 keeps S's sign */
                const lead_term lead = state->zero ? (lead_term){.neg = state->neg, .zero = true}
                                                   : lead_of_product(state->neg, e_m, state->m, e_e + state->e);
                if (!window_sum(f, &d, kk, vv, &lead, &f->next[x])) return false;
                const sum_bound acc = row_sum(f, p * s->v + vv);
                ws->state_err[x] = f32_sum_error(state_model, &acc);
                ws->state_abs[x] = acc.abs * UG_F32_SLACK;
                ws->state_flagged[x] = acc.flagged;
            }
    }
    ug_xval *swap = f->state;
    f->state = f->next;
    f->next = swap;
    for (size_t x = 0; x < s->k * s->v; x++) ws->state_mag[x] = xval_abs_up(&f->state[x]);
    return true;
}

/* reference_head on the fast path; false where it cannot certify a value
 * (the caller then runs the MPFR path on the whole head, whose outputs
 * replace any written here). */
static bool fast_reference_head(workspace *ws, const io *a)
{
    const gdn_chunk_state_shape *s = ws->s;
    const size_t kv = s->k * s->v;
    if (!head_in_fast_domain(ws, a)) return false;
    for (size_t x = 0; x < kv; x++) ws->fast.state[x] = xval_of_double(h0_at(ws, a, x));
    start_head(ws, a);
    for (size_t t0 = 0, c = 0; t0 < s->t; t0 += s->bt, c++) {
        const float g_last = a->g[(ws->b * s->t + t0 + s->bt - 1) * s->h + ws->h];
        norm_begin_chunk(ws);
        if (!fast_emit_state(ws, c, a->h) || !fast_corrected_values(ws, t0, a->w, a->u, a->v_new) ||
            !fast_decayed_values(ws, t0, a->g, g_last) || !fast_advance_state(ws, t0, a->k, g_last))
            return false;
        norm_end_chunk(ws, a, t0);
    }
    ug_ref_value *out = a->final_state + (ws->b * s->h + ws->h) * kv;
    for (size_t x = 0; x < kv; x++)
        ug_xval_finish(&ws->fast.state[x], &out[x], ws->state_err[x], ws->state_abs[x], ws->state_flagged[x], UG_F32);
    return true;
}

ug_status gdn_chunk_state_reference(const gdn_chunk_state_shape *s, const ug_bf16 *k, const ug_bf16 *w,
                                    const ug_bf16 *u, const float *g, const float *h0, const ug_f32_model *model,
                                    ug_ref_mode mode, ug_ref_value *h, ug_ref_value *v_new, ug_ref_value *final_state)
{
    workspace ws = {.model = model};
    UG_TRY(workspace_init(&ws, s, mode));
    const io a = {k, w, u, g, s->has_h0 ? h0 : NULL, h, v_new, final_state};
    const size_t group = s->h / s->hg;
    for (ws.b = 0; ws.b < s->b; ws.b++)
        for (ws.h = 0; ws.h < s->h; ws.h++) {
            ws.key_head = ws.h / group;
            if (!ug_ref_fast() || !fast_reference_head(&ws, &a)) reference_head(&ws, &a);
        }
    workspace_free(&ws);
    return ug_ok();
}
