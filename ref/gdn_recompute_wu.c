#include "gdn_recompute_wu.h"

#include <math.h>
#include <stdlib.h>

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

typedef struct {
    size_t rows, width;
    mpfr_t *x;          /* [rows][width] exact operand (to the exp's precision) */
    ug_staged *staged;  /* [rows][width] */
    mpfr_t *terms;      /* [rows] */
    mpfr_ptr *term_ptrs;
    mpfr_t e, radius, sum;
} workspace;

static void workspace_free(workspace *ws)
{
    if (ws->x)
        for (size_t i = 0; i < ws->rows * ws->width; i++) mpfr_clear(ws->x[i]);
    if (ws->terms)
        for (size_t j = 0; j < ws->rows; j++) mpfr_clear(ws->terms[j]);
    free(ws->x);
    free(ws->staged);
    free(ws->terms);
    free(ws->term_ptrs);
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
    mpfr_inits2(UG_REF_PREC + OPERAND_PREC_EXTRA, ws->e, ws->radius, (mpfr_ptr)0);
    mpfr_init2(ws->sum, UG_REF_PREC);
    if (!ws->x || !ws->staged || !ws->terms || !ws->term_ptrs) {
        free(ws->x);
        free(ws->terms);
        ws->x = NULL;
        ws->terms = NULL;
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_recompute_wu reference: cannot allocate a %zu x %zu workspace",
                       rows, width);
    }
    for (size_t i = 0; i < rows * width; i++) mpfr_init2(ws->x[i], 2 * UG_REF_PREC);
    for (size_t j = 0; j < rows; j++) {
        mpfr_init2(ws->terms[j], 2 * UG_REF_PREC + TERM_PREC_EXTRA);
        ws->term_ptrs[j] = ws->terms[j];
    }
    return ug_ok();
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
    double e_up = gated ? exp((double)g) * (1 + 0x1p-40) : 1.0;
    mpfr_set_prec(ws->radius, 64);
    mpfr_abs(ws->radius, x, MPFR_RNDU);
    mpfr_mul_d(ws->radius, ws->radius, precast_rel, MPFR_RNDU);
    mpfr_add_d(ws->radius, ws->radius, (fabs(scale) + 1.0 + e_up) * 0x1p-148, MPFR_RNDU);
    ug_staged *st = &ws->staged[idx];
    ug_stage_operand(x, ws->radius, st);
    if (!exact && mpfr_number_p(x)) st->dev += fabs(mpfr_get_d(x, MPFR_RNDU)) * 0x1p-126;
    return ug_ok();
}

typedef struct {
    const gdn_recompute_wu_shape *s;
    const float *beta, *g, *a;
    ug_ref_mode mode;
} common_args;

/* One output (u when src is v, w when src is k) for chunk c of head h. */
static ug_status reference_chunk(workspace *ws, const common_args *ca, size_t b, size_t h,
                                 size_t c, const ug_bf16 *src, size_t src_heads, size_t src_head,
                                 bool gated, double precast_rel, ug_ref_value *out)
{
    const gdn_recompute_wu_shape *s = ca->s;
    const size_t bt = s->bt, width = ws->width;
    for (size_t j = 0; j < bt; j++) {
        size_t tok = c * bt + j;
        double beta = ca->beta[at3(s, b, tok, h)];
        float g = ca->g[at3(s, b, tok, h)];
        for (size_t col = 0; col < width; col++) {
            double val = ug_bf16_to_f32(src[at4(s, b, tok, src_heads, src_head, width, col)]);
            UG_TRY(stage_one(ws, j * width + col, val * beta, g, gated, precast_rel));
        }
    }
    const double gamma = bt * 0x1p-24 / (1 - bt * 0x1p-24);
    for (size_t i = 0; i < bt; i++) {
        size_t tok = c * bt + i;
        const float *arow = ca->a + at4(s, b, tok, s->h, h, bt, 0);
        for (size_t col = 0; col < width; col++) {
            double abs_sum = 0, acc_mag = 0, cast_err = 0;
            uint32_t flagged = 0;
            size_t n_terms = 0;
            for (size_t j = 0; j < bt; j++) {
                if (arow[j] == 0) continue; /* the zero upper triangle adds nothing */
                const ug_staged *st = &ws->staged[j * width + col];
                double aij = arow[j], abs_a = fabs(aij);
                mpfr_ptr term = ws->term_ptrs[n_terms++];
                if (ca->mode == UG_REF_EXACT) {
                    mpfr_mul_d(term, ws->x[j * width + col], aij, MPFR_RNDN); /* exact */
                    abs_sum += abs_a * st->abs_x;
                    cast_err += abs_a * st->dev;
                } else {
                    double sj = ug_bf16_to_f32(st->rn);
                    mpfr_set_d(term, aij * sj, MPFR_RNDN); /* f32 x bf16: exact */
                    abs_sum += fabs(aij * sj);
                    cast_err += abs_a * st->gap;
                }
                acc_mag += abs_a * st->mag;
                flagged += st->flagged;
            }
            mpfr_sum(ws->sum, ws->term_ptrs, n_terms, MPFR_RNDN);
            double bound = (gamma * acc_mag * UG_REF_SUM_SLACK + cast_err) * UG_REF_SUM_SLACK +
                           bt * 0x1p-149;
            ug_ref_finish(&out[at4(s, b, tok, s->h, h, width, col)], ws->sum, bound,
                          abs_sum * UG_REF_SUM_SLACK, flagged, UG_BF16);
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
            for (size_t c = 0; c < s->t / s->bt && ug_is_ok(&st); c++)
                st = reference_chunk(&ws, ca, b, h, c, src, src_heads, h / group, gated,
                                     precast_rel, out);
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
