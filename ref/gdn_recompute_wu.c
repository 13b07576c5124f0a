#include "gdn_recompute_wu.h"

#include <math.h>
#include <stdlib.h>

#include "exact_sum.h"
#include "round.h"

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
} gate_parts;

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
    mpz_t scratch;
    ug_xsum operand;    /* one operand, for its staging */
    ug_xsum *acc;       /* [width] the sums of one output row */
    /* The bound's parts per operand in the mode's terms ([rows][width]):
     * |operand|, its deviation (exact: dev; staged: gap), the kernel's
     * magnitude, flagged; and the staged operand's value. */
    double *op_abs, *op_err, *op_mag, *op_rn;
    uint32_t *op_flagged;
    /* One output row's bound parts ([width]). */
    double *abs_sum, *acc_mag, *cast_err;
    uint32_t *flagged;
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
    free(ws->op_abs);
    free(ws->op_flagged);
    free(ws->abs_sum);
    mpz_clear(ws->scratch);
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
    ws->op_abs = calloc(4 * rows * width, sizeof *ws->op_abs);
    ws->op_flagged = calloc(rows * width + width, sizeof *ws->op_flagged);
    ws->abs_sum = calloc(3 * width, sizeof *ws->abs_sum);
    mpz_init(ws->scratch);
    ug_xsum_init(&ws->operand);
    mpfr_inits2(UG_REF_PREC + OPERAND_PREC_EXTRA, ws->e, ws->radius, (mpfr_ptr)0);
    mpfr_init2(ws->sum, UG_REF_PREC);
    if (!ws->x || !ws->staged || !ws->terms || !ws->term_ptrs || !ws->scale || !ws->x_ready || !ws->wide ||
        !ws->gate || !ws->gate_value || !ws->acc || !ws->op_abs || !ws->op_flagged || !ws->abs_sum) {
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
    ws->flagged = ws->op_flagged + rows * width;
    ws->infinite = ws->wide + width;
    ws->acc_mag = ws->abs_sum + width;
    ws->cast_err = ws->acc_mag + width;
    return ug_ok();
}

/* The absolute part of the kernel's pre-cast window (rounded to nearest; the
 * caller adds it rounding up): f32 underflow, 2^-148 covering the subnormal
 * expf and product roundings. */
static double underflow_allowance(double scale, bool gated, float g)
{
    const double e_up = gated ? exp((double)g) * (1 + 0x1p-40) : 1.0;
    return (fabs(scale) + 1.0 + e_up) * 0x1p-148;
}

/* Operand x = scale * e (scale an exact double, e = exp(g) or 1), its staged
 * analysis with the kernel's pre-cast window, and a check that RN_bf16 of the
 * true operand is determined despite e's rounding (Ziv: retry more bits). */
static ug_status stage_one(workspace *ws, size_t idx, double scale, float g, bool gated,
                           double precast_rel)
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
     * underflow terms (2^-148 covers the subnormal expf and product roundings). */
    mpfr_set_prec(ws->radius, 64);
    mpfr_abs(ws->radius, x, MPFR_RNDU);
    mpfr_mul_d(ws->radius, ws->radius, precast_rel, MPFR_RNDU);
    mpfr_add_d(ws->radius, ws->radius, underflow_allowance(scale, gated, g), MPFR_RNDU);
    ug_staged *st = &ws->staged[idx];
    ug_stage_operand(x, ws->radius, st);
    if (!exact && mpfr_number_p(x)) st->dev += fabs(mpfr_get_d(x, MPFR_RNDU)) * 0x1p-126;
    return ug_ok();
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
 * exact x. Zero operands (always flagged: the window holds -0 and +0), those
 * rounding to zero or beyond the bf16 range, and windows that reach a
 * rounding boundary return false: the caller stages them through MPFR. */
static bool stage_fast(workspace *ws, size_t idx, const gate_parts *gp, double scale, bool gated, float g,
                       double precast_rel)
{
    const parts *sp = &ws->scale[idx];
    if (sp->m == 0 || sp->m >> 32 || !gp->ok) return false;
    const ug_xval x = ug_xval_product(sp->neg, sp->m, gp->m, sp->e + gp->e);
    const uint16_t rn = (uint16_t)ug_xval_rn_bits(&x, UG_BF16), mag_bits = rn & 0x7FFF;
    if (mag_bits == 0 || mag_bits >= 0x7F80) return false;
    /* The rounding interval of |RN(x)|: halfway to its neighbours (exact). */
    const double abs_rn = ug_bf16_to_f32(mag_bits), prev = ug_bf16_to_f32((ug_bf16)(mag_bits - 1));
    const double next = mag_bits == 0x7F7F ? 0x1p128 : ug_bf16_to_f32((ug_bf16)(mag_bits + 1));
    const double near = (abs_rn + prev) / 2, far = (abs_rn + next) / 2;
    /* reach >= the MPFR path's radii (|x| precast_rel + allowance, rounded
     * up to 64 bits; |x| 2^-127 for exp) + |x - x0| (<= 2^-53 |x0|) + the
     * roundings of these double operations (each <= 2^-53 relative). */
    const double abs_x0 = fabs(ug_xval_to_double(&x, MPFR_RNDN));
    const double reach = (abs_x0 * precast_rel + underflow_allowance(scale, gated, g)) * (1 + 0x1p-20) +
                         abs_x0 * 0x1p-48;
    if (!(abs_x0 - reach > near && abs_x0 + reach < far)) return false;
    ug_staged *st = &ws->staged[idx];
    *st = (ug_staged){.rn = rn, .lo = rn, .hi = rn, .flagged = false, .mag = abs_rn, .gap = 0.0,
                      .abs_x = fabs(ug_xval_to_double(&x, MPFR_RNDA))};
    ug_xval deviation; /* |x - RN(x)|, from x's window or else from an accumulator */
    if (!ug_xval_distance(&x, ug_bf16_to_f32(rn), &deviation)) {
        ug_xsum_clear(&ws->operand);
        ug_xsum_add_mul(&ws->operand, sp->neg, sp->m, gp->m, sp->e + gp->e);
        ug_xsum_add_double(&ws->operand, -(double)ug_bf16_to_f32(rn));
        if (!ug_xsum_in_range(&ws->operand)) return false;
        deviation = ug_xsum_read(&ws->operand);
    }
    st->dev = fabs(ug_xval_to_double(&deviation, MPFR_RNDA));
    if (!gp->unit) st->dev += fabs(ug_xval_to_double(&x, MPFR_RNDU)) * 0x1p-126;
    return true;
}

typedef struct {
    const gdn_recompute_wu_shape *s;
    const float *beta, *g, *a;
    ug_ref_mode mode;
} common_args;

/* Where a chunk's operands are read from. */
typedef struct {
    size_t b, h, c;
    const ug_bf16 *src;
    size_t src_heads, src_head;
    bool gated;
    double precast_rel;
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
        *gp = (gate_parts){.m = 1, .e = 0, .unit = !ch->gated || g == 0.0f, .ok = true};
        if (fast && !gp->unit) {
            mpfr_set_flt(ws->gate_value[j], g, MPFR_RNDN);
            mpfr_exp(ws->gate_value[j], ws->gate_value[j], MPFR_RNDN);
            bool neg;
            gp->ok = ug_xsum_split_mpfr(ws->gate_value[j], ws->scratch, &neg, &gp->m, &gp->e) && !neg;
        }
        for (size_t col = 0; col < width; col++) {
            const size_t idx = j * width + col;
            const double val = ug_bf16_to_f32(ch->src[at4(s, ch->b, tok, ch->src_heads, ch->src_head, width, col)]);
            const double scale = val * beta; /* bf16 x f32: exact */
            ws->scale[idx] = parts_of(scale);
            ws->x_ready[idx] = false;
            if (fast && stage_fast(ws, idx, gp, scale, ch->gated, g, ch->precast_rel)) continue;
            UG_TRY(stage_one(ws, idx, scale, g, ch->gated, ch->precast_rel));
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
static void add_bound_parts(workspace *ws, double abs_a, size_t row)
{
    const size_t width = ws->width;
    const double *restrict op_abs = ws->op_abs + row, *restrict op_err = ws->op_err + row,
                           *restrict op_mag = ws->op_mag + row;
    const uint32_t *restrict op_flagged = ws->op_flagged + row;
    double *restrict abs_sum = ws->abs_sum, *restrict cast_err = ws->cast_err, *restrict acc_mag = ws->acc_mag;
    uint32_t *restrict flagged = ws->flagged;
    for (size_t col = 0; col < width; col++) {
        abs_sum[col] += abs_a * op_abs[col];
        cast_err[col] += abs_a * op_err[col];
        acc_mag[col] += abs_a * op_mag[col];
        flagged[col] += op_flagged[col];
    }
}

/* One output (u when src is v, w when src is k) for chunk c of head h. The
 * loops run over a whole output row at once (column innermost), so the
 * bound's sums vectorize and the row's exact sums are independent of each
 * other; each element still sees its terms in the order j = 0, 1, ... */
static ug_status reference_chunk(workspace *ws, const common_args *ca, const chunk_args *ch, ug_ref_value *out)
{
    const gdn_recompute_wu_shape *s = ca->s;
    const size_t bt = s->bt, width = ws->width;
    const bool fast = ug_ref_fast() && chunk_finite(ws, ca, ch);
    UG_TRY(stage_chunk(ws, ca, ch, fast));
    operand_parts(ws, ca->mode);
    const double gamma = bt * 0x1p-24 / (1 - bt * 0x1p-24);
    for (size_t i = 0; i < bt; i++) {
        size_t tok = ch->c * bt + i;
        const float *arow = ca->a + at4(s, ch->b, tok, s->h, ch->h, bt, 0);
        for (size_t col = 0; col < width; col++) {
            ws->abs_sum[col] = ws->acc_mag[col] = ws->cast_err[col] = 0;
            ws->flagged[col] = 0;
            ug_xsum_clear(&ws->acc[col]);
        }
        for (size_t j = 0; j < bt; j++) {
            if (arow[j] == 0) continue; /* the zero upper triangle adds nothing */
            const double aij = arow[j], abs_a = fabs(aij);
            const size_t row = j * width;
            add_bound_parts(ws, abs_a, row);
            if (!fast) continue;
            if (ca->mode == UG_REF_EXACT) {
                const parts a = parts_of(aij);
                const gate_parts *gp = &ws->gate[j];
                if (gp->unit) /* A_ij scale: 24 + 32 bits */
                    for (size_t col = 0; col < width; col++) {
                        const parts *x = &ws->scale[row + col];
                        ug_xsum_add(&ws->acc[col], a.neg != x->neg, a.m * x->m, a.e + x->e);
                    }
                else
                    for (size_t col = 0; col < width; col++) {
                        const parts *x = &ws->scale[row + col];
                        ug_xsum_add_mul(&ws->acc[col], a.neg != x->neg, a.m * x->m, gp->m, a.e + x->e + gp->e);
                    }
            } else {
                for (size_t col = 0; col < width; col++)
                    ug_xsum_add_double(&ws->acc[col], aij * ws->op_rn[row + col]); /* f32 x bf16: exact */
            }
        }
        for (size_t col = 0; col < width; col++) {
            const double bound = (gamma * ws->acc_mag[col] * UG_REF_SUM_SLACK + ws->cast_err[col]) * UG_REF_SUM_SLACK +
                                 bt * 0x1p-149;
            const double abs_sum = ws->abs_sum[col] * UG_REF_SUM_SLACK;
            ug_ref_value *o = &out[at4(s, ch->b, tok, s->h, ch->h, width, col)];
            /* The accumulator holds the sum unless an operand of the column is
             * wider than scale * gate (exact mode) or infinite (staged mode),
             * or an add left its range. */
            const bool outside = ca->mode == UG_REF_EXACT ? ws->wide[col] : ws->infinite[col];
            if (fast && !outside && ug_xsum_in_range(&ws->acc[col])) {
                ug_xsum_finish(&ws->acc[col], o, bound, abs_sum, ws->flagged[col], UG_BF16);
                continue;
            }
            mpfr_sum(ws->sum, ws->term_ptrs, mpfr_terms(ws, ca, arow, col), MPFR_RNDN);
            ug_ref_finish(o, ws->sum, bound, abs_sum, ws->flagged[col], UG_BF16);
        }
    }
    return ug_ok();
}

static ug_status reference_output(const common_args *ca, const ug_bf16 *src, size_t src_heads,
                                  size_t width, bool gated, double precast_rel, ug_ref_value *out)
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
                const chunk_args ch = {b, h, c, src, src_heads, h / group, gated, precast_rel};
                st = reference_chunk(&ws, ca, &ch, out);
            }
    workspace_free(&ws);
    return st;
}

ug_status gdn_recompute_wu_reference(const gdn_recompute_wu_shape *s, const ug_bf16 *k,
                                     const ug_bf16 *v, const float *beta, const float *g,
                                     const float *a, ug_ref_mode mode, ug_ref_value *w,
                                     ug_ref_value *u)
{
    const common_args ca = {s, beta, g, a, mode};
    UG_TRY(reference_output(&ca, v, s->h, s->v, false, GDN_WU_PRECAST_REL_U, u));
    return reference_output(&ca, k, s->hg, s->k, true, GDN_WU_PRECAST_REL_W, w);
}
