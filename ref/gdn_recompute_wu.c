/* SPDX-License-Identifier: MIT */
#include "gdn_recompute_wu.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exact_sum.h"
#include "round.h"
#include "rowsimd.h"

/* Term precision: A (24 bits) times an operand of at most 53 + the exp's
 * precision bits is exact at 224 bits while the exp precision is <= 128;
 * retries at higher exp precision (vanishingly rare) widen it. */
enum { OPERAND_PREC_EXTRA = 64, TERM_PREC_EXTRA = 96, EXP_PREC_MAX = 2048 };

/* Row-major [B, T, heads, width] with width innermost. */
static size_t at4(const gdn_recompute_wu_shape *s, size_t b, size_t t, size_t heads, size_t head,
                  size_t width, size_t col)
{
    return ((b * s->t + t) * heads + head) * width + col;
}

/* Row-major [B, T, H] (beta, g). */
static size_t at3(const gdn_recompute_wu_shape *s, size_t b, size_t t, size_t head)
{
    return (b * s->t + t) * s->h + head;
}

/* The fast path's operands (docs/error-model.md §2.1): x = scale * gate with
 * scale = v*beta or k*beta = ±m·2^e exact (m < 2^32: a bf16 times an f32,
 * trailing zeros dropped) and gate = exp(g) rounded to UG_REF_PREC bits (or
 * exactly 1), a 128-bit integer times 2^e; A_ij = ±m·2^e (m < 2^24). A term
 * A_ij x_j is then (m_A m_scale) m_gate 2^(e_A + e_scale + e_gate), exact in
 * the accumulator. */
typedef struct {
    bool neg;
    uint64_t m;
    int e;
} parts;

typedef struct {
    ug_u128 m;
    int e;
    bool unit; /* the gate is exactly 1 (ungated, or g == 0) */
    bool ok;   /* exp(g) is a positive 128-bit number within the accumulator's reach */
    bool wider_than_double; /* m has more than 53 significant bits: so has scale * gate (an odd scale) */
    double nearest; /* RN_53(gate), a normal double (or 0: the gate is out of its range) */
    double e_up; /* gate_up: exp(g) in binary64, rounded up, for the underflow allowance */
    double precast_rel; /* the kernel's pre-cast error of this token's operands, relative */
    double tiny;        /* its absolute unit: two subnormal roundings, or the profile's expf floor */
} gate_parts;

typedef struct {
    uint64_t s, mask; /* |s| on the grid, and s's sign as a mask (0 or all ones) */
} col_factor;

typedef struct {
    uint64_t c[UG_XWIN_MAX_C], mask;
} row_factor;

typedef struct {
    size_t rows, width;
    mpfr_t *x;          /* [rows][width] exact operand (to the exp's precision), where x_ready */
    ug_staged *staged;  /* [rows][width] */
    mpfr_t *terms;      /* [rows] */
    mpfr_ptr *term_ptrs;
    mpfr_t e, radius, sum;
    /* fast path */
    parts *scale;       /* [rows][width] */
    bool *x_ready;      /* [rows][width] */
    bool *wide;         /* [width]: an operand of the column is not scale * gate (exact mode: MPFR sums) */
    bool *infinite;     /* [width]: a staged operand of the column is +-inf (staged mode: MPFR sums) */
    gate_parts *gate;   /* [rows] */
    mpfr_t *gate_value; /* [rows] exp(g) at UG_REF_PREC bits, where the gate is not a unit */
    ug_xsum operand;    /* one operand, for its staging */
    ug_xsum *acc;       /* [width] the sums of one output row, where a window cannot hold them */
    /* The windows (exact_sum.h) of one chunk: a term A_ij x_j is the row
     * factor c_ij (A_ij times the gate of token j in exact mode, A_ij in
     * staged mode) times the column factor s_j (scale = k·beta or v·beta in
     * exact mode, the staged operand in staged mode). */
    col_factor *col;    /* [width][rows] s_j on its column's grid, where col_on_grid */
    bool *col_on_grid;  /* [width][rows] */
    parts *col_parts;   /* [rows] one column's factors before the grid */
    /* The same factors as rowsimd.h takes them, where the chunk's windows
     * are summed eight columns at a time (ug_ref_simd_available). */
    uint64_t *col_digit;  /* [rows][width] */
    uint8_t *col_neg;     /* [rows][(width + 7) / 8] */
    uint64_t *row_digits; /* [rows][UG_XWIN52_DIGITS] */
    uint8_t *row_neg;     /* [rows] */
    uint64_t (*win)[UG_XWIN_LIMBS]; /* [width] one output row's windows */
    int *balance;       /* [rows] the binade moved from column to row factors */
    int *col_grid;      /* [width] */
    size_t *col_off;    /* [width] how many factors of the column are off its grid */
    row_factor *row;    /* [rows] one output row's factors, over its nonzero A_ij */
    size_t *row_j;      /* [rows] their j */
    int *row_e;         /* [rows] their exponents (before the grid) */
    bool *row_on_grid;  /* [rows] by j */
    /* The bound's parts per operand in the mode's terms ([rows][width]):
     * |operand|, its deviation (exact: dev; staged: gap), the kernel's
     * magnitude, flagged; and the staged operand's value. */
    double *op_abs, *op_err, *op_mag, *op_rn;
    uint32_t *op_flagged;
    /* The bound parts of two output rows, summed together ([2][width]),
     * and the rows' weights |A_ij| ([2][rows]). */
    ug_ref_bound_row bound_row[2];
    double *bound_sums, *weight[2];
} workspace;

static void workspace_free(workspace *ws)
{
    if (ws->x)
        for (size_t i = 0; i < ws->rows * ws->width; i++) mpfr_clear(ws->x[i]);
    if (ws->terms)
        for (size_t j = 0; j < ws->rows; j++) mpfr_clear(ws->terms[j]);
    if (ws->gate_value)
        for (size_t j = 0; j < ws->rows; j++) mpfr_clear(ws->gate_value[j]);
    free(ws->x);
    free(ws->staged);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->scale);
    free(ws->x_ready);
    free(ws->wide);
    free(ws->gate);
    free(ws->gate_value);
    free(ws->acc);
    free(ws->col);
    free(ws->col_grid);
    free(ws->col_off);
    free(ws->row);
    free(ws->row_j);
    free(ws->row_e);
    free(ws->row_on_grid);
    free(ws->col_on_grid);
    free(ws->col_parts);
    free(ws->col_digit);
    free(ws->col_neg);
    free(ws->row_digits);
    free(ws->row_neg);
    free(ws->win);
    free(ws->balance);
    free(ws->op_abs);
    free(ws->op_flagged);
    free(ws->bound_sums);
    free(ws->weight[0]);
    mpfr_clears(ws->e, ws->radius, ws->sum, (mpfr_ptr)0);
}

static ug_status workspace_init(workspace *ws, size_t rows, size_t width)
{
    ws->rows = rows;
    ws->width = width;
    ws->x = calloc(rows * width, sizeof *ws->x);
    ws->staged = calloc(rows * width, sizeof *ws->staged);
    ws->terms = calloc(rows, sizeof *ws->terms);
    ws->term_ptrs = calloc(rows, sizeof *ws->term_ptrs);
    ws->scale = calloc(rows * width, sizeof *ws->scale);
    ws->x_ready = calloc(rows * width, sizeof *ws->x_ready);
    ws->wide = calloc(2 * width, sizeof *ws->wide);
    ws->gate = calloc(rows, sizeof *ws->gate);
    ws->gate_value = calloc(rows, sizeof *ws->gate_value);
    ws->acc = malloc(width * sizeof *ws->acc);
    ws->col = calloc(width * rows, sizeof *ws->col);
    ws->col_grid = calloc(width, sizeof *ws->col_grid);
    ws->col_off = calloc(width, sizeof *ws->col_off);
    ws->row = calloc(rows, sizeof *ws->row);
    ws->row_j = calloc(rows, sizeof *ws->row_j);
    ws->row_e = calloc(rows, sizeof *ws->row_e);
    ws->row_on_grid = calloc(rows, sizeof *ws->row_on_grid);
    ws->col_on_grid = calloc(width * rows, sizeof *ws->col_on_grid);
    ws->col_parts = calloc(rows, sizeof *ws->col_parts);
    ws->col_digit = calloc(rows * width, sizeof *ws->col_digit);
    ws->col_neg = calloc(rows * ((width + 7) / 8), sizeof *ws->col_neg);
    ws->row_digits = calloc(rows * UG_XWIN52_DIGITS, sizeof *ws->row_digits);
    ws->row_neg = calloc(rows, sizeof *ws->row_neg);
    ws->win = calloc(width, sizeof *ws->win);
    ws->balance = calloc(rows, sizeof *ws->balance);
    ws->op_abs = calloc(4 * rows * width, sizeof *ws->op_abs);
    ws->op_flagged = calloc(rows * width + 2 * width, sizeof *ws->op_flagged);
    ws->bound_sums = calloc(6 * width, sizeof *ws->bound_sums);
    ws->weight[0] = calloc(2 * rows, sizeof *ws->weight[0]);
    ug_xsum_init(&ws->operand);
    mpfr_inits2(UG_REF_PREC + OPERAND_PREC_EXTRA, ws->e, ws->radius, (mpfr_ptr)0);
    mpfr_init2(ws->sum, UG_REF_PREC);
    if (!ws->x || !ws->staged || !ws->terms || !ws->term_ptrs || !ws->scale || !ws->x_ready || !ws->wide ||
        !ws->gate || !ws->gate_value || !ws->acc || !ws->col || !ws->col_grid || !ws->col_off || !ws->row ||
        !ws->row_j || !ws->row_e || !ws->row_on_grid || !ws->col_on_grid || !ws->col_parts || !ws->balance || !ws->col_digit ||
        !ws->col_neg || !ws->row_digits || !ws->row_neg || !ws->win || !ws->op_abs || !ws->op_flagged ||
        !ws->bound_sums || !ws->weight[0]) {
        free(ws->x);
        free(ws->terms);
        free(ws->gate_value);
        ws->x = NULL;
        ws->terms = NULL;
        ws->gate_value = NULL;
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_recompute_wu reference: cannot allocate a %zu x %zu workspace",
                       rows, width);
    }
    for (size_t i = 0; i < rows * width; i++) mpfr_init2(ws->x[i], 2 * UG_REF_PREC);
    for (size_t j = 0; j < rows; j++) {
        mpfr_init2(ws->terms[j], 2 * UG_REF_PREC + TERM_PREC_EXTRA);
        ws->term_ptrs[j] = ws->terms[j];
        mpfr_init2(ws->gate_value[j], UG_REF_PREC);
    }
    for (size_t col = 0; col < width; col++) ug_xsum_init(&ws->acc[col]);
    ws->op_err = ws->op_abs + rows * width;
    ws->op_mag = ws->op_err + rows * width;
    ws->op_rn = ws->op_mag + rows * width;
    ws->infinite = ws->wide + width;
    for (size_t r = 0; r < 2; r++) {
        double *sums = ws->bound_sums + 3 * r * width;
        ws->bound_row[r] = (ug_ref_bound_row){sums, sums + width, sums + 2 * width,
                                              ws->op_flagged + rows * width + r * width};
    }
    ws->weight[1] = ws->weight[0] + rows;
    return ug_ok();
}

/* The absolute part of the kernel's pre-cast window (rounded to nearest; the
 * caller adds it rounding up): f32 underflow, twice the profile's underflow
 * allowance (or twice expf's absolute floor) covering the subnormal expf and
 * product roundings. */
static double gate_up(bool gated, float g) { return gated ? exp((double)g) * UG_F32_SLACK : 1.0; }

static double underflow_allowance(double scale, const gate_parts *gp) { return (fabs(scale) + 1.0 + gp->e_up) * gp->tiny; }

/* The pre-cast error of a w operand fl(fl(k beta) expf(g)) relative to
 * k beta exp(g): two f32 roundings and expf's rel r, (1 + u)^2 (1 + r) - 1
 * = 2u + r + (u^2 + r (2u + u^2)), the second-order part taken as at least
 * the 2^-44 the bound had before profiles (so that cpu's is unchanged). */
static double precast_rel_w(ug_f32_error exp)
{
    const double u = UG_F32_U;
    const double second_order = fmax(0x1p-44, (u * u + exp.rel * (2 * u + u * u)) * UG_F32_SLACK);
    return 2 * u + exp.rel + second_order;
}

/* Operand x = scale * e (scale an exact double, e = exp(g) or 1), its staged
 * analysis with the kernel's pre-cast window, and a check that RN_bf16 of the
 * true operand is determined despite e's rounding (Ziv: retry more bits). */
static ug_status stage_one(workspace *ws, size_t idx, double scale, float g, bool gated, const gate_parts *gp)
{
    mpfr_ptr x = ws->x[idx];
    /* e = exp(g) is exact when g == 0 or the operand is ungated; otherwise
     * within 2^-prec relative, so the true x lies in x(1 +- 2^(1-prec)). */
    const bool exact = !gated || g == 0.0f;
    for (mpfr_prec_t prec = UG_REF_PREC;; prec *= 4) {
        mpfr_set_prec(x, prec + 64);
        if (exact) {
            mpfr_set_d(x, scale, MPFR_RNDN);
            break;
        }
        mpfr_set_prec(ws->e, prec);
        mpfr_set_flt(ws->e, g, MPFR_RNDN);
        mpfr_clear_underflow();
        mpfr_exp(ws->e, ws->e, MPFR_RNDN);
        mpfr_mul_d(x, ws->e, scale, MPFR_RNDN); /* exact: 53 + prec bits */
        /* A zero, NaN or infinite operand (a zero k or beta, exp(-inf) = 0,
         * k, beta or g non-finite) is exact: MPFR's extended reals; so is
         * exp(g) beyond MPFR's exponent range, +inf above and 0 below it
         * (|x| < 2^-2^30 is 0 to any format). */
        if (mpfr_underflow_p()) mpfr_set_zero(x, scale < 0 ? -1 : 1);
        if (!mpfr_regular_p(x)) break;
        mpfr_set_prec(ws->radius, 64);
        mpfr_abs(ws->radius, x, MPFR_RNDU);
        mpfr_mul_2si(ws->radius, ws->radius, 1 - (long)prec, MPFR_RNDU);
        uint16_t lo, hi;
        ug_mpfr_bf16_window(x, ws->radius, &lo, &hi);
        if (lo == hi) break;
        if (prec >= EXP_PREC_MAX)
            return ug_fail(UG_EREF, "gdn_recompute_wu reference: cannot round k*beta*exp(%a) to bf16 "
                           "with %d bits", (double)g, EXP_PREC_MAX);
    }
    /* The kernel's window: relative pre-cast error, plus the absolute f32
     * underflow terms (gp->tiny covers the subnormal expf and product roundings). */
    mpfr_set_prec(ws->radius, 64);
    mpfr_abs(ws->radius, x, MPFR_RNDU);
    mpfr_mul_d(ws->radius, ws->radius, gp->precast_rel, MPFR_RNDU);
    mpfr_add_d(ws->radius, ws->radius, underflow_allowance(scale, gp), MPFR_RNDU);
    ug_staged *st = &ws->staged[idx];
    ug_stage_operand(x, ws->radius, st);
    if (!exact && mpfr_number_p(x)) st->dev += fabs(mpfr_get_d(x, MPFR_RNDU)) * 0x1p-126;
    return ug_ok();
}

/* stage_one's allowance for exp's rounding, |RU(x)| 2^-126, for x = scale
 * * gate certified with abs_x = RA(|x|) (round away): that is |RU(x)| for
 * a positive x; for a negative one |RU(x)| = RZ(|x|), the double below
 * RA(|x|) where x has more than 53 bits (a certified x is a normal double's
 * magnitude: its bf16 is nonzero and finite). */
static double gate_rounding_dev(const parts *sp, const gate_parts *gp, double abs_x)
{
    if (!sp->neg) return abs_x * 0x1p-126;
    if (gp->wider_than_double) return nextafter(abs_x, 0.0) * 0x1p-126;
    const ug_xval x = ug_xval_product(sp->neg, sp->m, gp->m, sp->e + gp->e);
    return fabs(ug_xval_to_double(&x, MPFR_RNDU)) * 0x1p-126;
}

/* |p| < 2^parts_top(p) (p nonzero). */
static int parts_top(const parts *p) { return p->e + 64 - __builtin_clzll(p->m); }

/* |x| below this power of two rounds to a zero bf16 (half the least subnormal, 2^-133). */
enum { BF16_ZERO_BELOW = -134 };

/* stage_one's staging of x = scale * gate where x's window lies below
 * 2^BF16_ZERO_BELOW (the decayed gates of late tokens): every candidate
 * is then a signed zero, x's when the window keeps x's sign, else -0 and
 * +0 (flagged), both at |x| from x, so ug_stage_operand's fields are those
 * of |x| rounded up, and its deviation is |x|'s. The radius (|x|
 * precast_rel + allowance, each rounded up) is compared with margins;
 * false where they do not decide, or where the MPFR path's exp or product
 * could leave MPFR's exponent range (it then stages 0). */
static bool stage_below_bf16(workspace *ws, size_t idx, const gate_parts *gp, double allowance)
{
    const parts *sp = &ws->scale[idx];
    if ((long)sp->e + gp->e < mpfr_get_emin() + 1024) return false;
    const ug_xval x = ug_xval_product(sp->neg, sp->m, gp->m, sp->e + gp->e);
    const double abs_x = fabs(ug_xval_to_double(&x, MPFR_RNDA));
    const double reach = (abs_x * gp->precast_rel + allowance) * (1 + 0x1p-20);
    if (!(abs_x + reach < 0x1p-134)) return false;
    const bool straddles = abs_x < allowance; /* |x| <= abs_x < allowance <= radius */
    if (!straddles && !(abs_x >= 0x1p-1000 && abs_x * (1 - 0x1p-50) > reach)) return false;
    const uint16_t rn = sp->neg ? 0x8000 : 0;
    ug_staged *st = &ws->staged[idx];
    *st = (ug_staged){.rn = rn, .lo = straddles ? 0x8000 : rn, .hi = straddles ? 0 : rn, .flagged = straddles,
                      .dev = abs_x, .mag = 0.0, .gap = 0.0, .abs_x = abs_x};
    if (!gp->unit) st->dev += fabs(ug_xval_to_double(&x, MPFR_RNDU)) * 0x1p-126;
    return true;
}

/* stage_one's staging of an operand x = scale * gate from x0 = scale *
 * RN_53(gate) rounded to nearest (x0 = x when the gate is exactly 1;
 * else |x - x0| < 2^-51 |x|), where it is certain: the window x +- radius
 * (radius = |x| radius_rel + radius_abs, each rounded up) lies strictly
 * inside the rounding interval of a nonzero finite bf16 rn. Then rn =
 * RN_bf16(x) and both window ends round to it (not flagged). abs_x and
 * dev are x0's: those of x where x0 = x (the deviation |x - rn| is exact
 * in a double: x has at most 32 bits); staged mode, which stages a gated
 * x here, reads neither. rn is taken from x0's f32 rounding, which may
 * round twice; the interval test rejects such an rn, as it rejects every
 * window that reaches a boundary (false: the caller stages through MPFR). */
static bool stage_double(double x0, double radius_rel, double radius_abs, ug_staged *out)
{
    const ug_bf16 rn = ug_bf16_from_f32((float)x0), mag_bits = rn & 0x7FFF;
    if (mag_bits == 0 || mag_bits >= 0x7F80) return false;
    const double abs_x = fabs(x0), abs_rn = ug_bf16_to_f32(mag_bits);
    if (!ug_bf16_window_inside(mag_bits, abs_x, radius_rel, radius_abs)) return false;
    *out = (ug_staged){.rn = rn, .lo = rn, .hi = rn, .flagged = false, .dev = fabs(x0 - ug_bf16_to_f32(rn)),
                       .mag = abs_rn, .gap = 0.0, .abs_x = abs_x};
    return true;
}

/* A nonnegative integer of three 64-bit words, little-endian. */
typedef struct {
    uint64_t w[3];
} u192;

static int u192_bit_length(const u192 *v)
{
    for (int k = 2; k >= 0; k--)
        if (v->w[k]) return 64 * k + 64 - __builtin_clzll(v->w[k]);
    return 0;
}

/* v·2^e rounded away from zero to a double, where the result is a normal
 * double: v's leading 53 bits (two words hold them), plus one unit where
 * any bit below them is set. */
static double u192_away(const u192 *v, int e)
{
    const int len = u192_bit_length(v), cut = len > 53 ? len - 53 : 0;
    const int k = cut >> 6, r = cut & 63;
    uint64_t lead = v->w[k] >> r, below = v->w[k] & ((UINT64_C(1) << r) - 1);
    if (r && k < 2) lead |= v->w[k + 1] << (64 - r);
    for (int i = 0; i < k; i++) below |= v->w[i];
    const uint64_t bits = (uint64_t)(e + cut + 1023) << 52;
    double unit;
    memcpy(&unit, &bits, sizeof unit);
    return (double)(lead + (below != 0)) * unit;
}

/* abs_x = RA(|x|) and dev = |x - rn| rounded up, as ug_stage_operand has
 * them, for x = scale * gate (the exact product of a scale of at most 32
 * bits and the 128-bit gate) and st->rn = RN_bf16(x) certified by
 * stage_double: on x's grid 2^e, |x| = P and |rn| = C, each below 2^192,
 * their difference exact. False (st unchanged) where rn does not lie on
 * that grid within 192 bits or a result would not be a normal double. */
static bool exact_magnitudes(const parts *sp, const gate_parts *gp, ug_staged *st)
{
    const int e = sp->e + gp->e;
    bool rn_neg;
    uint64_t cm;
    int ce;
    ug_xsum_split(ug_bf16_to_f32(st->rn & 0x7FFF), &rn_neg, &cm, &ce);
    const int shift = ce - e;
    if (shift < 0 || shift > 192 - 53 || e < -1000 || e > 700) return false;
    const ug_u128 low = (ug_u128)sp->m * (uint64_t)gp->m, high = (ug_u128)sp->m * (uint64_t)(gp->m >> 64);
    const ug_u128 mid = (low >> 64) + (uint64_t)high;
    const u192 p = {{(uint64_t)low, (uint64_t)mid, (uint64_t)(high >> 64) + (uint64_t)(mid >> 64)}};
    u192 c = {{0, 0, 0}};
    const int q = shift >> 6, r = shift & 63;
    c.w[q] = cm << r;
    if (r && q < 2) c.w[q + 1] = cm >> (64 - r);
    int k = 2;
    while (k >= 0 && p.w[k] == c.w[k]) k--;
    const bool p_above = k >= 0 && p.w[k] > c.w[k];
    const u192 *big = p_above ? &p : &c, *small = p_above ? &c : &p;
    u192 d;
    ug_u128 borrow = 0;
    for (int i = 0; i < 3; i++) {
        const ug_u128 t = (ug_u128)big->w[i] - small->w[i] - borrow;
        d.w[i] = (uint64_t)t;
        borrow = t >> 127;
    }
    st->abs_x = u192_away(&p, e);
    st->dev = k < 0 ? 0.0 : u192_away(&d, e);
    return true;
}

/* x = ±m·2^e, m odd (or 0), from a finite double. */
static parts parts_of(double x)
{
    parts p;
    ug_xsum_split(x, &p.neg, &p.m, &p.e);
    if (p.m) {
        const int zeros = __builtin_ctzll(p.m);
        p.m >>= zeros;
        p.e += zeros;
    }
    return p;
}

/* The staging of operand idx without MPFR, where it can be certified: the
 * whole window of the kernel's pre-cast values (and of exp's rounding, which
 * the MPFR path's Ziv loop checks) lies strictly inside RN_bf16(x)'s rounding
 * interval, so both window ends round to RN_bf16(x) and the operand is not
 * flagged; the fields are then those ug_stage_operand computes, from the
 * exact x (stage_double, then ug_stage_certified where the double cannot
 * decide). Operands whose whole window lies below 2^BF16_ZERO_BELOW go to
 * stage_below_bf16. Zero operands (always flagged: the window holds -0 and
 * +0), other ones rounding to zero or beyond the bf16 range, and windows
 * that reach a rounding boundary return false: the caller stages them
 * through MPFR. */
static bool stage_fast(workspace *ws, ug_ref_mode mode, size_t idx, const gate_parts *gp, double scale)
{
    const parts *sp = &ws->scale[idx];
    if (sp->m == 0 || sp->m >> 32 || !gp->ok) return false;
    /* the MPFR path's radii: |x| precast_rel + allowance, and |x| 2^-127 for exp (within the margin) */
    ug_staged *st = &ws->staged[idx];
    const double allowance = underflow_allowance(scale, gp);
    if (parts_top(sp) + ug_u128_bit_length(gp->m) + gp->e <= BF16_ZERO_BELOW) /* |x| < 2^that */
        return stage_below_bf16(ws, idx, gp, allowance);
    /* staged mode reads no more of an operand than a double near x decides;
     * exact mode then reads |x| and |x - rn| from the exact product */
    if (gp->nearest != 0 && stage_double(scale * gp->nearest, gp->precast_rel, allowance, st)) {
        if (gp->unit || mode == UG_REF_STAGED) return true;
        if (exact_magnitudes(sp, gp, st)) {
            st->dev += gate_rounding_dev(sp, gp, st->abs_x);
            return true;
        }
    }
    /* staged mode's terms and bound read no deviation (operand_parts) */
    if (mode == UG_REF_STAGED)
        return ug_stage_certified_cast(sp->neg, sp->m, gp->m, sp->e + gp->e, gp->precast_rel, allowance, st,
                                       &ws->operand);
    if (!ug_stage_certified(sp->neg, sp->m, gp->m, sp->e + gp->e, gp->precast_rel, allowance, st, &ws->operand))
        return false;
    if (!gp->unit) st->dev += gate_rounding_dev(sp, gp, st->abs_x);
    return true;
}

typedef struct {
    const gdn_recompute_wu_shape *s;
    const float *beta, *g, *a;
    const ug_f32_model *model;
    ug_ref_mode mode;
} common_args;

/* Where a chunk's operands are read from. */
typedef struct {
    size_t b, h, c;
    const ug_bf16 *src;
    size_t src_heads, src_head;
    bool gated;
} chunk_args;

/* Whether every input of the chunk is finite: the fast path's domain (the
 * MPFR path propagates NaN and inf). */
static bool chunk_finite(const workspace *ws, const common_args *ca, const chunk_args *ch)
{
    const gdn_recompute_wu_shape *s = ca->s;
    const size_t bt = s->bt;
    for (size_t j = 0; j < bt; j++) {
        const size_t tok = ch->c * bt + j;
        if (!isfinite(ca->beta[at3(s, ch->b, tok, ch->h)]) || !isfinite(ca->g[at3(s, ch->b, tok, ch->h)]))
            return false;
        const float *arow = ca->a + at4(s, ch->b, tok, s->h, ch->h, bt, 0);
        for (size_t i = 0; i < bt; i++)
            if (!isfinite(arow[i])) return false;
        for (size_t col = 0; col < ws->width; col++)
            if (!isfinite(ug_bf16_to_f32(ch->src[at4(s, ch->b, tok, ch->src_heads, ch->src_head, ws->width, col)])))
                return false;
    }
    return true;
}

/* Every operand of the chunk: exp(g) once per token, then each operand
 * staged without MPFR where stage_fast certifies it, through stage_one
 * (MPFR, per operand) otherwise or when fast is false. */
static ug_status stage_chunk(workspace *ws, const common_args *ca, const chunk_args *ch, bool fast)
{
    const gdn_recompute_wu_shape *s = ca->s;
    const size_t width = ws->width;
    for (size_t col = 0; col < width; col++) ws->wide[col] = ws->infinite[col] = false;
    for (size_t j = 0; j < s->bt; j++) {
        const size_t tok = ch->c * s->bt + j;
        const double beta = ca->beta[at3(s, ch->b, tok, ch->h)];
        const float g = ca->g[at3(s, ch->b, tok, ch->h)];
        gate_parts *gp = &ws->gate[j];
        *gp = (gate_parts){.m = 1, .e = 0, .unit = !ch->gated || g == 0.0f, .ok = true, .nearest = 1.0,
                           .e_up = gate_up(ch->gated, g),
                           .precast_rel = GDN_WU_PRECAST_REL_U, .tiny = 2 * ug_f32_underflow(ca->model)};
        if (ch->gated) {
            const ug_f32_error exp = ug_f32_op_error(ca->model, UG_F32_EXP, g, g);
            gp->precast_rel = precast_rel_w(exp);
            gp->tiny = fmax(gp->tiny, 2 * exp.abs);
        }
        if (fast && !gp->unit) {
            mpfr_set_flt(ws->gate_value[j], g, MPFR_RNDN);
            mpfr_exp(ws->gate_value[j], ws->gate_value[j], MPFR_RNDN);
            bool neg;
            gp->ok = ug_xsum_split_mpfr(ws->gate_value[j], &neg, &gp->m, &gp->e) && !neg;
            const uint64_t low = (uint64_t)gp->m, high = (uint64_t)(gp->m >> 64);
            const int zeros = low ? __builtin_ctzll(low) : high ? 64 + __builtin_ctzll(high) : 0;
            gp->wider_than_double = gp->ok && ug_u128_bit_length(gp->m) - zeros > 53;
            const bool normal = gp->ok && labs(mpfr_get_exp(ws->gate_value[j])) < 1000;
            gp->nearest = normal ? mpfr_get_d(ws->gate_value[j], MPFR_RNDN) : 0.0;
        }
        for (size_t col = 0; col < width; col++) {
            const size_t idx = j * width + col;
            const double val = ug_bf16_to_f32(ch->src[at4(s, ch->b, tok, ch->src_heads, ch->src_head, width, col)]);
            const double scale = val * beta; /* bf16 x f32: exact */
            ws->scale[idx] = parts_of(scale);
            ws->x_ready[idx] = false;
            if (fast && stage_fast(ws, ca->mode, idx, gp, scale)) continue;
            UG_TRY(stage_one(ws, idx, scale, g, ch->gated, gp));
            ws->x_ready[idx] = true;
            /* x is scale * gate unless exp needed more bits (Ziv) or the gate is out of reach. */
            ws->wide[col] |= !gp->ok || mpfr_get_prec(ws->x[idx]) > UG_REF_PREC + OPERAND_PREC_EXTRA ||
                             !mpfr_number_p(ws->x[idx]) || ws->scale[idx].m >> 32;
            ws->infinite[col] |= !isfinite(ug_bf16_to_f32(ws->staged[idx].rn));
        }
    }
    return ug_ok();
}

/* The MPFR terms of element (row arow, column col): what the plain path sums. */
static size_t mpfr_terms(workspace *ws, const common_args *ca, const float *arow, size_t col)
{
    const size_t width = ws->width;
    size_t n_terms = 0;
    for (size_t j = 0; j < ca->s->bt; j++) {
        if (arow[j] == 0) continue;
        const size_t idx = j * width + col;
        mpfr_ptr term = ws->term_ptrs[n_terms++];
        if (ca->mode == UG_REF_EXACT) {
            if (!ws->x_ready[idx]) { /* staged by stage_fast: x = scale * gate exactly, as stage_one has it */
                mpfr_set_prec(ws->x[idx], UG_REF_PREC + OPERAND_PREC_EXTRA);
                const double scale = ldexp(ws->scale[idx].neg ? -(double)ws->scale[idx].m : (double)ws->scale[idx].m,
                                           ws->scale[idx].e);
                if (ws->gate[j].unit)
                    mpfr_set_d(ws->x[idx], scale, MPFR_RNDN);
                else
                    mpfr_mul_d(ws->x[idx], ws->gate_value[j], scale, MPFR_RNDN);
                ws->x_ready[idx] = true;
            }
            mpfr_mul_d(term, ws->x[idx], arow[j], MPFR_RNDN); /* exact */
        } else {
            mpfr_set_d(term, (double)arow[j] * ug_bf16_to_f32(ws->staged[idx].rn), MPFR_RNDN); /* f32 x bf16: exact */
        }
    }
    return n_terms;
}

/* The bound's parts of every operand in the mode's terms, laid out as the
 * output loop reads them. In staged mode |A_ij s_j| = |A_ij| |s_j| exactly
 * (the product is exact), so both modes accumulate |A_ij| times a part. */
static void operand_parts(workspace *ws, ug_ref_mode mode)
{
    for (size_t idx = 0; idx < ws->rows * ws->width; idx++) {
        const ug_staged *st = &ws->staged[idx];
        ws->op_rn[idx] = ug_bf16_to_f32(st->rn);
        ws->op_abs[idx] = mode == UG_REF_EXACT ? st->abs_x : fabs(ws->op_rn[idx]);
        ws->op_err[idx] = mode == UG_REF_EXACT ? st->dev : st->gap;
        ws->op_mag[idx] = st->mag;
        ws->op_flagged[idx] = st->flagged;
    }
}

/* One term's bound parts added to each element of an output row; the
 * columns are independent sums, each in its own j order. */
static void add_bound_parts(const workspace *ws, double abs_a, size_t row, const ug_ref_bound_row *sums)
{
    const size_t width = ws->width;
    const double *restrict op_abs = ws->op_abs + row, *restrict op_err = ws->op_err + row,
                           *restrict op_mag = ws->op_mag + row;
    const uint32_t *restrict op_flagged = ws->op_flagged + row;
    double *restrict abs_sum = sums->abs_sum, *restrict cast_err = sums->cast_err, *restrict acc_mag = sums->acc_mag;
    uint32_t *restrict flagged = sums->flagged;
    /* Two columns at a time in vector registers (GCC 12's -O2 vectorizer
     * leaves this loop scalar): the same products and sums per element. */
    typedef double pair __attribute__((vector_size(16), aligned(8), may_alias));
    const pair a = {abs_a, abs_a};
    size_t col = 0;
    for (; col + 2 <= width; col += 2) {
        *(pair *)(abs_sum + col) += a * *(const pair *)(op_abs + col);
        *(pair *)(cast_err + col) += a * *(const pair *)(op_err + col);
        *(pair *)(acc_mag + col) += a * *(const pair *)(op_mag + col);
        flagged[col] += op_flagged[col];
        flagged[col + 1] += op_flagged[col + 1];
    }
    for (; col < width; col++) {
        abs_sum[col] += abs_a * op_abs[col];
        cast_err[col] += abs_a * op_err[col];
        acc_mag[col] += abs_a * op_mag[col];
        flagged[col] += op_flagged[col];
    }
}

/* The bound parts of output rows arow[0 .. rows) (rows <= 2), each row's
 * sums over its nonzero |A_ij| in the order j = 0, 1, ...; on AVX-512 both
 * rows at once, their sums held in registers across the terms. */
static void row_bounds(workspace *ws, const float *const arow[2], size_t rows, bool simd)
{
    const size_t width = ws->width;
    memset(ws->bound_sums, 0, 6 * width * sizeof *ws->bound_sums);
    memset(ws->bound_row[0].flagged, 0, 2 * width * sizeof *ws->bound_row[0].flagged);
    if (simd) {
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < ws->rows; j++) ws->weight[r][j] = fabs(arow[r][j]);
        ug_ref_simd_bound_rows(ws->rows, width, rows, (const double *const *)ws->weight, ws->op_abs, ws->op_err,
                               ws->op_mag, ws->op_flagged, ws->bound_row);
        return;
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < ws->rows; j++)
            if (arow[r][j] != 0) add_bound_parts(ws, fabs(arow[r][j]), j * width, &ws->bound_row[r]);
}

/* The binade shift of token j's factors: a staged operand of w carries its
 * gate exp(g_j), whose binade varies along a chunk by hundreds (the gates
 * accumulate), and A_ij varies inversely (A ~ exp(g_i - g_j)), so the
 * column factor is divided by the gate's binade and the row factor
 * multiplied by it: both then keep to a few binades, and the product, the
 * term, is unchanged. Exact mode has the gate in the row factor already. */
static int balance(const workspace *ws, ug_ref_mode mode, size_t j)
{
    const gate_parts *gp = &ws->gate[j];
    if (mode == UG_REF_EXACT || gp->unit || !gp->ok) return 0;
    const uint64_t g[2] = {(uint64_t)gp->m, (uint64_t)(gp->m >> 64)};
    return gp->e + ug_xwin_bit_length(g, 2);
}


/* Every column's factors on the column's grid: the top of its largest
 * factor less 64 bits, so a factor fits one limb when it lies within 64 -
 * (its bits) binades of the largest (a scale has at most 32 bits, a bf16
 * 8); the others are off the grid and summed in the accumulator. A
 * column factor is the scale in exact mode, the staged operand over its
 * balance in staged mode. */
static void column_factors(workspace *ws, ug_ref_mode mode, bool simd)
{
    const size_t rows = ws->rows, width = ws->width, blocks = (width + 7) / 8;
    const int digit_bits = simd ? 52 : 64;
    for (size_t j = 0; j < rows; j++) ws->balance[j] = balance(ws, mode, j);
    if (simd) memset(ws->col_neg, 0, rows * blocks);
    for (size_t col = 0; col < width; col++) {
        parts *p = ws->col_parts;
        int top = INT_MIN;
        for (size_t j = 0; j < rows; j++) {
            const size_t idx = j * width + col;
            p[j] = mode == UG_REF_EXACT ? ws->scale[idx] : parts_of(ws->op_rn[idx]);
            p[j].e -= ws->balance[j];
            if (p[j].m && parts_top(&p[j]) > top) top = parts_top(&p[j]);
        }
        const int grid = top == INT_MIN ? 0 : top - digit_bits;
        col_factor *cf = ws->col + col * rows;
        bool *on_grid = ws->col_on_grid + col * rows;
        size_t off = 0;
        for (size_t j = 0; j < rows; j++) {
            cf[j].mask = p[j].neg ? ~UINT64_C(0) : 0;
            on_grid[j] = ug_xwin_place(&p[j].m, 1, p[j].e, grid, &cf[j].s, 1);
            off += !on_grid[j];
            if (!simd) continue;
            ws->col_digit[j * width + col] = cf[j].s;
            ws->col_neg[j * blocks + col / 8] |= (uint8_t)(p[j].neg << (col % 8));
        }
        ws->col_grid[col] = grid;
        ws->col_off[col] = off;
    }
}

/* The row factor c_ij as an integer of up to three limbs times 2^e. */
static void row_factor_value(const workspace *ws, ug_ref_mode mode, size_t j, double aij, uint64_t c[3], int *e)
{
    const parts a = parts_of(aij);
    const gate_parts *gp = &ws->gate[j];
    c[0] = a.m;
    c[1] = c[2] = 0;
    *e = a.e + ws->balance[j];
    if (mode == UG_REF_STAGED || gp->unit) return;
    const ug_u128 low = (ug_u128)a.m * (uint64_t)gp->m, high = (ug_u128)a.m * (uint64_t)(gp->m >> 64);
    const ug_u128 mid = (low >> 64) + (uint64_t)high;
    c[0] = (uint64_t)low;
    c[1] = (uint64_t)mid;
    c[2] = (uint64_t)(high >> 64) + (uint64_t)(mid >> 64);
    *e += gp->e;
}

/* One output row's factors over its nonzero A_ij, on the row's grid: the
 * top of its largest factor less 64·nc bits, nc (1 to 3 limbs) as few as
 * hold every factor (A alone: 24 bits; A times a 128-bit gate: 152); past
 * three limbs the lowest factors are off the grid. */
typedef struct {
    size_t n;   /* factors: ws->row[0 .. n), their j in ws->row_j */
    bool simd;  /* in rowsimd.h's digits (ws->row_digits), summed by ug_xwin52_windows */
    int nc;     /* limbs (simd: 52-bit digits) of a factor */
    int limbs;  /* of the window */
    int grid;   /* 2^grid: a factor's unit */
    size_t off; /* factors off the grid */
} row_window;

static row_window row_factors(workspace *ws, ug_ref_mode mode, const float *arow, bool simd)
{
    row_window rw = {.simd = simd};
    int top = INT_MIN, bottom = INT_MAX;
    for (size_t j = 0; j < ws->rows; j++) {
        ws->row_on_grid[j] = true;
        if (arow[j] == 0) continue; /* the zero upper triangle adds nothing */
        row_factor *rf = &ws->row[rw.n];
        int e;
        row_factor_value(ws, mode, j, arow[j], rf->c, &e);
        rf->mask = arow[j] < 0 ? ~UINT64_C(0) : 0;
        ws->row_e[rw.n] = e;
        const int t = e + ug_xwin_bit_length(rf->c, 3);
        top = t > top ? t : top;
        bottom = e < bottom ? e : bottom;
        ws->row_j[rw.n++] = j;
    }
    const int bits = rw.n ? top - bottom : 0; /* a row of zeros: no factor, an empty window */
    const int digit_bits = simd ? 52 : 64, max_digits = simd ? UG_XWIN52_DIGITS : UG_XWIN_MAX_C;
    rw.nc = (bits + digit_bits - 1) / digit_bits;
    rw.nc = rw.nc < 1 ? 1 : rw.nc > max_digits ? max_digits : rw.nc;
    rw.limbs = simd ? UG_XWIN_LIMBS : rw.nc + 2;
    rw.grid = rw.n ? top - digit_bits * rw.nc : 0;
    for (size_t k = 0; k < rw.n; k++) {
        row_factor *rf = &ws->row[k];
        const uint64_t c[3] = {rf->c[0], rf->c[1], rf->c[2]};
        uint64_t placed[4];
        const bool on = ug_xwin_place(c, 3, ws->row_e[k], rw.grid, simd ? placed : rf->c, simd ? 4 : rw.nc);
        if (simd) {
            ug_xwin52_digits(placed, ws->row_digits + k * UG_XWIN52_DIGITS);
            ws->row_neg[k] = rf->mask ? 0xFF : 0;
        }
        ws->row_on_grid[ws->row_j[k]] = on;
        rw.off += !on;
    }
    return rw;
}

/* Sum over the row's factors of c_ij s_j for column col, in the window. The
 * limb count is a literal at each call, so each instance is unrolled; the
 * limbs are copied in and out of the add so that they stay in registers. */
UG_XSUM_INLINE void window_dot(const workspace *ws, int nc, bool contiguous, size_t n, size_t col,
                               uint64_t acc[UG_XWIN_LIMBS])
{
    const col_factor *cf = ws->col + col * ws->rows;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0;
    for (size_t k = 0; k < n; k++) {
        const col_factor *x = &cf[contiguous ? k : ws->row_j[k]];
        uint64_t sum[UG_XWIN_LIMBS] = {a0, a1, a2, a3, a4};
        ug_xwin_add_product(sum, nc, ws->row[k].c, x->s, ws->row[k].mask ^ x->mask);
        a0 = sum[0], a1 = sum[1], a2 = sum[2], a3 = sum[3], a4 = sum[4];
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4;
}

/* Term A_ij x_j of column col added to an accumulator exactly (the terms a
 * window cannot hold). */
static void add_term(workspace *ws, ug_ref_mode mode, double aij, size_t j, size_t col, ug_xsum *acc)
{
    const size_t idx = j * ws->width + col;
    if (mode == UG_REF_STAGED) {
        ug_xsum_add_double(acc, aij * ws->op_rn[idx]); /* f32 x bf16: exact */
        return;
    }
    const parts a = parts_of(aij), *x = &ws->scale[idx];
    const gate_parts *gp = &ws->gate[j];
    if (gp->unit) /* A_ij scale: 24 + 32 bits */
        ug_xsum_add(acc, a.neg != x->neg, a.m * x->m, a.e + x->e);
    else
        ug_xsum_add_mul(acc, a.neg != x->neg, a.m * x->m, gp->m, a.e + x->e + gp->e);
}

/* The sign of an exactly zero sum, as mpfr_sum rounding to nearest gives
 * it: -0 when every term is -0 (at least one), +0 otherwise. */
static bool zero_sum_is_negative(const workspace *ws, size_t n, size_t col)
{
    const col_factor *cf = ws->col + col * ws->rows;
    for (size_t k = 0; k < n; k++) {
        const col_factor *x = &cf[ws->row_j[k]];
        if (x->s != 0 || !ws->col_on_grid[col * ws->rows + ws->row_j[k]] || !(ws->row[k].mask ^ x->mask)) return false;
    }
    return n > 0;
}

/* An element's bound, magnitude sum and flagged count (ug_xval_finish's). */
typedef struct {
    double bound, abs_sum;
    uint32_t flagged;
} element_bound;

/* The exact sum finished into o; an exact zero takes mpfr_sum's sign. */
static void finish_exact(const workspace *ws, size_t n, size_t col, ug_xval *exact, const element_bound *eb,
                         ug_ref_value *o)
{
    if (exact->zero) exact->neg = zero_sum_is_negative(ws, n, col);
    ug_xval_finish(exact, o, eb->bound, eb->abs_sum, eb->flagged, UG_BF16);
}

/* Element (row arow, column col) from the window, with the terms off the
 * grids added in an accumulator, finished into o. False when an add leaves
 * the accumulator's range: the caller takes the MPFR path. Each read
 * initialises its own variable: a read assigned through a pointer went
 * through a temporary whose 16-byte copy, right after the call, loaded
 * across the call's 8-byte stores and stalled (store forwarding; 4 % of
 * this reference's time in perf). */
static bool window_element(workspace *ws, const common_args *ca, const float *arow, const row_window *rw, size_t col,
                           const element_bound *eb, ug_ref_value *o)
{
    uint64_t scalar[UG_XWIN_LIMBS];
    const uint64_t *acc = rw->simd ? ws->win[col] : scalar; /* the row's windows: ug_xwin52_windows */
    /* A row of the lower triangle has every j up to the diagonal: its
     * factors are the column's first n, read without the index. */
    const bool contiguous = rw->n == 0 || ws->row_j[rw->n - 1] == rw->n - 1;
    switch (rw->simd ? 0 : rw->nc + 3 * contiguous) {
    case 0: break;
    case 1: window_dot(ws, 1, false, rw->n, col, scalar); break;
    case 2: window_dot(ws, 2, false, rw->n, col, scalar); break;
    case 3: window_dot(ws, 3, false, rw->n, col, scalar); break;
    case 4: window_dot(ws, 1, true, rw->n, col, scalar); break;
    case 5: window_dot(ws, 2, true, rw->n, col, scalar); break;
    default: window_dot(ws, 3, true, rw->n, col, scalar); break;
    }
    const int e = rw->grid + ws->col_grid[col];
    if (rw->off == 0 && ws->col_off[col] == 0) {
        ug_xval exact = ug_xwin_read(acc, rw->limbs, e);
        finish_exact(ws, rw->n, col, &exact, eb, o);
        return true;
    }
    ug_xsum *sum = &ws->acc[col];
    ug_xsum_clear(sum);
    ug_xsum_add_xwin(sum, acc, rw->limbs, e);
    const bool *on_grid = ws->col_on_grid + col * ws->rows;
    for (size_t k = 0; k < rw->n; k++) {
        const size_t j = ws->row_j[k];
        if (!ws->row_on_grid[j] || !on_grid[j]) add_term(ws, ca->mode, arow[j], j, col, sum);
    }
    if (!ug_xsum_in_range(sum)) return false;
    ug_xval exact = ug_xsum_read(sum);
    finish_exact(ws, rw->n, col, &exact, eb, o);
    return true;
}

/* One output (u when src is v, w when src is k) for chunk c of head h. The
 * bound's sums run over a whole output row at once (column innermost), so
 * they vectorize, each element still seeing its terms in the order j = 0,
 * 1, ...; the exact sums run per element in a window. */
static ug_status reference_chunk(workspace *ws, const common_args *ca, const chunk_args *ch, ug_ref_value *out)
{
    const gdn_recompute_wu_shape *s = ca->s;
    const size_t bt = s->bt, width = ws->width;
    const bool fast = ug_ref_fast() && chunk_finite(ws, ca, ch);
    UG_TRY(stage_chunk(ws, ca, ch, fast));
    operand_parts(ws, ca->mode);
    const bool simd = fast && bt <= UG_XWIN52_MAX_TERMS && ug_ref_simd_available();
    if (fast) column_factors(ws, ca->mode, simd);
    /* A X multiplies f32 by the bf16 operands: a tf32 profile rounds A */
    const double gamma = ug_f32_dot_gamma(ca->model, ug_f32_gamma(bt)), underflow = bt * ug_f32_underflow(ca->model);
    for (size_t i = 0; i < bt; i++) {
        size_t tok = ch->c * bt + i;
        const float *arow = ca->a + at4(s, ch->b, tok, s->h, ch->h, bt, 0);
        /* rows in pairs: the second's bound sums were made with the first's */
        const size_t pair = i % 2;
        if (pair == 0) {
            const float *const arows[2] = {arow, ca->a + at4(s, ch->b, i + 1 < bt ? tok + 1 : tok, s->h, ch->h, bt, 0)};
            row_bounds(ws, arows, i + 1 < bt ? 2 : 1, simd);
        }
        const ug_ref_bound_row *sums = &ws->bound_row[pair];
        const row_window rw = fast ? row_factors(ws, ca->mode, arow, simd) : (row_window){0};
        if (simd) {
            const ug_xwin52_row r = {rw.n,          width,       rw.nc,         ws->row_digits,
                                     ws->row_neg,   ws->row_j,   ws->col_digit, ws->col_neg};
            ug_xwin52_windows(&r, ws->win);
        }
        for (size_t col = 0; col < width; col++) {
            const element_bound eb = {(gamma * sums->acc_mag[col] * UG_F32_SLACK + sums->cast_err[col]) * UG_F32_SLACK +
                                          underflow,
                                      sums->abs_sum[col] * UG_F32_SLACK, sums->flagged[col]};
            ug_ref_value *o = &out[at4(s, ch->b, tok, s->h, ch->h, width, col)];
            /* The window holds the sum unless an operand of the column is
             * wider than scale * gate (exact mode) or infinite (staged mode),
             * or an add left the accumulator's range. */
            const bool outside = ca->mode == UG_REF_EXACT ? ws->wide[col] : ws->infinite[col];
            if (fast && !outside && window_element(ws, ca, arow, &rw, col, &eb, o)) continue;
            mpfr_sum(ws->sum, ws->term_ptrs, mpfr_terms(ws, ca, arow, col), MPFR_RNDN);
            ug_ref_finish(o, ws->sum, eb.bound, eb.abs_sum, eb.flagged, UG_BF16);
        }
    }
    return ug_ok();
}

static ug_status reference_output(const common_args *ca, const ug_bf16 *src, size_t src_heads,
                                  size_t width, bool gated, ug_ref_value *out)
{
    const gdn_recompute_wu_shape *s = ca->s;
    workspace ws;
    UG_TRY(workspace_init(&ws, s->bt, width));
    ug_status st = ug_ok();
    /* u reads value head h (src_heads == H); w reads key head h / (H/Hg). */
    const size_t group = s->h / src_heads;
    for (size_t b = 0; b < s->b && ug_is_ok(&st); b++)
        for (size_t h = 0; h < s->h && ug_is_ok(&st); h++)
            for (size_t c = 0; c < s->t / s->bt && ug_is_ok(&st); c++) {
                const chunk_args ch = {b, h, c, src, src_heads, h / group, gated};
                st = reference_chunk(&ws, ca, &ch, out);
            }
    workspace_free(&ws);
    return st;
}

ug_status gdn_recompute_wu_reference(const gdn_recompute_wu_shape *s, const ug_bf16 *k,
                                     const ug_bf16 *v, const float *beta, const float *g,
                                     const float *a, const ug_f32_model *model, ug_ref_mode mode,
                                     ug_ref_value *w, ug_ref_value *u)
{
    const common_args ca = {s, beta, g, a, model, mode};
    UG_TRY(reference_output(&ca, v, s->h, s->v, false, u));
    return reference_output(&ca, k, s->hg, s->k, true, w);
}
