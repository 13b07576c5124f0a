/* The MPFR reference's speed: gdn_recompute_wu's reference (the family's
 * `reference`, both modes) on a moderate shape, in multiply-add terms per
 * second, against a straightforward exact-mode reference written here: every
 * operand converted to a 128-bit mpfr_t (the gated ones through mpfr_exp),
 * then per output element an mpfr_fma chain over the same BT terms. The
 * plain loop's results are checked against the reference's r, so both
 * compute the same function. The reference runs on its fast path (the exact
 * accumulator of ref/exact_sum.h) and on its plain MPFR path
 * (ug_ref_set_fast(false)); their outputs must be bit-identical. Each time is
 * the best of REPEATS runs: the machine is shared, and the least disturbed
 * run is the closest to the code's own cost. */
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../ref/ref.h"
#include "bench.h"

#define REF_FAMILY "gdn_recompute_wu"
enum { REPEATS = 3 };
#define REF_SHAPE "B=1 T=256 Hg=2 H=4 K=64 V=64 BT=64"

typedef struct {
    size_t b, t, hg, h, k, v, bt;
} shape;

static size_t at4(const shape *s, size_t b, size_t t, size_t heads, size_t head, size_t width, size_t col)
{
    return ((b * s->t + t) * heads + head) * width + col;
}

/* The straightforward exact-mode reference of one output (u from v, or w
 * from k with the gate); r receives each element's value as a double. */
static void plain_output(const shape *s, const ug_bf16 *src, size_t src_heads, size_t width, bool gated,
                         const float *beta, const float *g, const float *a, double *r)
{
    const size_t bt = s->bt, group = s->h / src_heads;
    mpfr_t *a_mp = malloc(bt * bt * sizeof *a_mp), *x_mp = malloc(bt * width * sizeof *x_mp);
    if (!a_mp || !x_mp) abort();
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(a_mp[i], UG_REF_PREC);
    for (size_t i = 0; i < bt * width; i++) mpfr_init2(x_mp[i], UG_REF_PREC);
    mpfr_t acc, e;
    mpfr_inits2(UG_REF_PREC, acc, e, (mpfr_ptr)0);
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++)
            for (size_t t0 = 0; t0 < s->t; t0 += bt) {
                for (size_t j = 0; j < bt; j++) {
                    const size_t tok = (b * s->t + t0 + j) * s->h + h;
                    if (gated) {
                        mpfr_set_flt(e, g[tok], MPFR_RNDN);
                        mpfr_exp(e, e, MPFR_RNDN);
                    }
                    for (size_t col = 0; col < width; col++) {
                        double val = ug_bf16_to_f32(src[at4(s, b, t0 + j, src_heads, h / group, width, col)]);
                        mpfr_ptr x = x_mp[j * width + col];
                        mpfr_set_d(x, val * beta[tok], MPFR_RNDN); /* bf16 x f32: exact */
                        if (gated) mpfr_mul(x, x, e, MPFR_RNDN);
                    }
                    for (size_t i = 0; i < bt; i++)
                        mpfr_set_flt(a_mp[i * bt + j], a[at4(s, b, t0 + i, s->h, h, bt, j)], MPFR_RNDN);
                }
                for (size_t i = 0; i < bt; i++)
                    for (size_t col = 0; col < width; col++) {
                        mpfr_set_zero(acc, 1);
                        for (size_t j = 0; j < bt; j++)
                            mpfr_fma(acc, a_mp[i * bt + j], x_mp[j * width + col], acc, MPFR_RNDN);
                        r[at4(s, b, t0 + i, s->h, h, width, col)] = mpfr_get_d(acc, MPFR_RNDN);
                    }
            }
    for (size_t i = 0; i < bt * bt; i++) mpfr_clear(a_mp[i]);
    for (size_t i = 0; i < bt * width; i++) mpfr_clear(x_mp[i]);
    mpfr_clears(acc, e, (mpfr_ptr)0);
    free(a_mp);
    free(x_mp);
}

/* Every field bit for bit (a NaN's sign is MPFR's choice: NaNs compare equal). */
static bool same_value(const ug_ref_value *a, const ug_ref_value *b)
{
    const double x[] = {a->r_hi, a->r_lo, a->bound, a->abs_sum}, y[] = {b->r_hi, b->r_lo, b->bound, b->abs_sum};
    for (size_t i = 0; i < 4; i++)
        if (memcmp(&x[i], &y[i], sizeof x[i]) != 0 && !(isnan(x[i]) && isnan(y[i]))) return false;
    return (a->rn_bits == b->rn_bits || (isnan(a->r_hi) && isnan(b->r_hi))) && a->flagged == b->flagged;
}

static double param(const ug_family *f, const ug_params *p, const char *name)
{
    int i = ug_family_param_index(f, name);
    return i < 0 ? 0 : p->v[i];
}

int bench_reference_speed(void)
{
    printf("\n== reference speed: %s reference vs a plain mpfr_fma loop (%d bits), %s ==\n", REF_FAMILY,
           UG_REF_PREC, REF_SHAPE);
    const ug_family *f = ug_family_find(REF_FAMILY);
    if (!f) {
        printf("  skipped: %s is not registered\n", REF_FAMILY);
        return -1;
    }
    ug_params p;
    memset(&p, 0, sizeof p);
    char text[] = REF_SHAPE;
    for (char *save = NULL, *tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        *eq = '\0';
        int i = ug_family_param_index(f, tok);
        if (i < 0) {
            printf("  skipped: %s has no parameter %s\n", REF_FAMILY, tok);
            return -1;
        }
        p.v[i] = strtod(eq + 1, NULL);
    }
    const shape s = {(size_t)param(f, &p, "B"), (size_t)param(f, &p, "T"),  (size_t)param(f, &p, "Hg"),
                     (size_t)param(f, &p, "H"), (size_t)param(f, &p, "K"),  (size_t)param(f, &p, "V"),
                     (size_t)param(f, &p, "BT")};
    ug_buf bufs[UG_MAX_BUFFERS];
    ug_ref_value *outs[UG_MAX_BUFFERS] = {0}, *exact[UG_MAX_BUFFERS] = {0}, *plain_path[UG_MAX_BUFFERS] = {0};
    size_t n_out = 0, elements = 0, out_counts[UG_MAX_BUFFERS] = {0};
    memset(bufs, 0, sizeof bufs);
    int rc = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        ug_status st = f->buffer_count(&p, i, &bufs[i].count);
        bufs[i].dtype = f->buffers[i].dtype;
        bufs[i].data = ug_is_ok(&st) ? calloc(bufs[i].count + 1, ug_dtype_size(bufs[i].dtype)) : NULL;
        if (!bufs[i].data) abort();
        if (f->buffers[i].is_output) {
            outs[n_out] = calloc(bufs[i].count + 1, sizeof(ug_ref_value));
            exact[n_out] = calloc(bufs[i].count + 1, sizeof(ug_ref_value));
            plain_path[n_out] = calloc(bufs[i].count + 1, sizeof(ug_ref_value));
            if (!outs[n_out] || !exact[n_out] || !plain_path[n_out]) abort();
            out_counts[n_out++] = bufs[i].count;
            elements += bufs[i].count;
        }
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20260517);
    ug_status st = f->generate(&p, 0, rng, bufs);
    gsl_rng_free(rng);
    const double terms = (double)elements * (double)s.bt;
    /* Nonzero A entries: the reference skips the zero upper triangle. */
    const float *a = bufs[ug_family_buffer_index(f, "A")].data;
    size_t nonzero = 0;
    for (size_t i = 0; i < s.b * s.t * s.h * s.bt; i++) nonzero += a[i] != 0;
    double nonzero_share = (double)nonzero / (double)(s.b * s.t * s.h * s.bt);

    double ref_rate[UG_REF_MODE_COUNT] = {0};
    size_t path_differ = 0;
    for (int mode = 0; ug_is_ok(&st) && mode < UG_REF_MODE_COUNT; mode++)
        for (int fast = 1; ug_is_ok(&st) && fast >= 0; fast--) {
            ug_ref_value **dst = fast ? (mode == UG_REF_EXACT ? exact : outs) : plain_path;
            double best = INFINITY;
            ug_ref_set_fast(fast);
            for (int r = 0; r < (fast ? REPEATS : 1) && ug_is_ok(&st); r++) {
                double t0 = bench_now();
                st = f->reference(&p, bufs, (ug_ref_mode)mode, dst);
                best = fmin(best, bench_now() - t0);
            }
            ug_ref_set_fast(true);
            if (!ug_is_ok(&st)) break;
            if (fast) ref_rate[mode] = terms / best;
            else
                for (size_t o = 0; o < n_out; o++)
                    for (size_t e = 0; e < out_counts[o]; e++)
                        path_differ += !same_value(&plain_path[o][e], mode == UG_REF_EXACT ? &exact[o][e] : &outs[o][e]);
            printf("  reference, %-6s mode, %-9s: %8.3f s  %7.3f Mterm/s  (%zu outputs x %zu terms%s)\n",
                   ug_ref_mode_name((ug_ref_mode)mode), fast ? "fast path" : "MPFR path", best, terms / best * 1e-6,
                   elements, s.bt, fast ? "; best of 3" : "; one run");
        }
    if (!ug_is_ok(&st)) {
        printf("  failed: %s\n", st.msg);
        rc = -1;
    } else {
        /* The plain loop, checked against the exact mode's values. */
        double *r = malloc(elements * sizeof *r);
        if (!r) abort();
        const int k = ug_family_buffer_index(f, "k"), v = ug_family_buffer_index(f, "v");
        const float *beta = bufs[ug_family_buffer_index(f, "beta")].data;
        const float *g = bufs[ug_family_buffer_index(f, "g")].data;
        const size_t w_count = s.b * s.t * s.h * s.k;
        double dt = INFINITY;
        for (int rep = 0; rep < REPEATS; rep++) {
            double t0 = bench_now();
            plain_output(&s, bufs[k].data, s.hg, s.k, true, beta, g, a, r);             /* w */
            plain_output(&s, bufs[v].data, s.h, s.v, false, beta, g, a, r + w_count);   /* u */
            dt = fmin(dt, bench_now() - t0);
        }
        double plain_rate = terms / dt;
        printf("  plain mpfr_fma loop                : %8.3f s  %7.3f Mterm/s  (same terms; operands converted, exp at "
               "%d bits; best of 3)\n", dt, plain_rate * 1e-6, UG_REF_PREC);
        size_t differ = 0;
        for (size_t e = 0; e < elements; e++) {
            const ug_ref_value *rv = e < w_count ? &exact[0][e] : &exact[1][e - w_count];
            double ref = rv->r_hi + rv->r_lo;
            differ += fabs(ref - r[e]) > 1e-15 * fabs(ref) + 1e-300;
        }
        printf("  check: the plain loop's values agree with the reference's r in %zu of %zu elements\n",
               elements - differ, elements);
        printf("  check: the fast path's values equal the MPFR path's, every field, in %zu of %zu (elements x modes)\n",
               2 * elements - path_differ, 2 * elements);
        if (path_differ) rc = -1;
        printf("  A entries nonzero: %.1f%% (the reference skips zero terms; mpfr_fma returns early on them)\n",
               100 * nonzero_share);
        printf("  speed-up of the reference (fast path) over the plain loop: exact %.2fx, staged %.2fx (the issue's "
               "target: >= 10x)\n",
               ref_rate[UG_REF_EXACT] / plain_rate, ref_rate[UG_REF_STAGED] / plain_rate);
        free(r);
    }
    for (size_t i = 0; i < f->n_buffers; i++) free(bufs[i].data);
    for (size_t o = 0; o < n_out; o++) {
        free(outs[o]);
        free(exact[o]);
        free(plain_path[o]);
    }
    return rc;
}
