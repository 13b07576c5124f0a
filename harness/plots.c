/* SPDX-License-Identifier: MIT */
#include "plots.h"

#include <math.h>
#include <stdlib.h>

/* Plot geometry (SVG user units). */
enum { W = 440, H = 260, LEFT = 52, RIGHT = 12, TOP = 24, BOTTOM = 40, SHOWN_BINS = 16 };
static const char *const mode_color[UG_REF_MODE_COUNT] = {"#1f77b4", "#ff7f0e"};

static double px_x(double v, double lo, double hi) { return LEFT + (v - lo) / (hi - lo) * (W - LEFT - RIGHT); }
static double px_y(double v, double lo, double hi) { return H - BOTTOM - (v - lo) / (hi - lo) * (H - TOP - BOTTOM); }

static void axes(FILE *f, const char *title, const char *xlabel, const char *ylabel)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"15\" font-size=\"12\" font-weight=\"bold\">%s</text>\n", LEFT, title);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", LEFT, TOP, LEFT, H - BOTTOM);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", (LEFT + W - RIGHT) / 2, H - 6, xlabel);
    fprintf(f, "<text x=\"12\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 12 %d)\">%s</text>\n",
            (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2, ylabel);
}

static void tick(FILE *f, bool x_axis, double at, const char *label)
{
    if (x_axis)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", at, H - BOTTOM + 13, label);
    else
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n", LEFT - 4, at + 3, label);
}

static void legend(FILE *f)
{
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" font-size=\"10\">%s</text>\n",
                W - RIGHT - 110 + 55 * m, TOP - 2, mode_color[m], W - RIGHT - 97 + 55 * m, TOP + 7,
                ug_ref_mode_name((ug_ref_mode)m));
}

/* Grouped bars per ulp_dist (0..15, then 16+), log10(1 + count) high. */
static void histogram(FILE *f, const ug_family_result *fr, size_t o)
{
    double counts[UG_REF_MODE_COUNT][SHOWN_BINS + 1] = {{0}}, top = 1;
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        for (size_t i = 0; i < UG_DIST_BINS; i++)
            counts[m][i < SHOWN_BINS ? i : SHOWN_BINS] += gsl_histogram_get(fr->agg[o][m].dist, i);
        for (int b = 0; b <= SHOWN_BINS; b++) top = fmax(top, log10(1 + counts[m][b]));
    }
    top = ceil(top);
    axes(f, "ulp_dist of moderate-condition elements", "ulp_dist (last bar: 16 or more)", "count (log10)");
    legend(f);
    double slot = (W - LEFT - RIGHT) / (double)(SHOWN_BINS + 1);
    for (int b = 0; b <= SHOWN_BINS; b++) {
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            double h = log10(1 + counts[m][b]), y = px_y(h, 0, top);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s ulp_dist %s%d: %.0f</title></rect>\n",
                    LEFT + slot * b + 2 + m * (slot - 4) / 2, y, (slot - 4) / 2, H - BOTTOM - y, mode_color[m],
                    ug_ref_mode_name((ug_ref_mode)m), b == SHOWN_BINS ? ">=" : "", b, counts[m][b]);
        }
        if (b % 2 == 0 || b == SHOWN_BINS) {
            char label[8];
            snprintf(label, sizeof label, b == SHOWN_BINS ? "16+" : "%d", b);
            tick(f, true, LEFT + slot * (b + 0.5), label);
        }
    }
    for (int d = 0; d <= (int)top; d++) {
        char label[16];
        snprintf(label, sizeof label, "1e%d", d);
        tick(f, false, px_y(d, 0, top), label);
    }
    fputs("</svg>\n", f);
}

static double log_clamped(double v, double lo) { return isfinite(v) && v > 0 ? fmax(log10(v), lo) : lo; }

/* The sampled elements of one output, over the family's cases (caller frees). */
static ug_status collect_samples(const ug_run_result *run, const ug_family_result *fr, size_t o, ug_sample **out,
                                 size_t *n)
{
    *n = 0;
    size_t total = 0;
    for (size_t i = 0; i < run->n_cases; i++)
        if (run->cases[i].c->family == fr->family) total += run->cases[i].samples.n;
    *out = malloc((total ? total : 1) * sizeof **out);
    if (!*out) return ug_fail(UG_ENOMEM, "cannot allocate %zu plot samples", total);
    for (size_t i = 0; i < run->n_cases; i++) {
        if (run->cases[i].c->family != fr->family) continue;
        for (size_t k = 0; k < run->cases[i].samples.n; k++)
            if (run->cases[i].samples.items[k].output == o) (*out)[(*n)++] = run->cases[i].samples.items[k];
    }
    return ug_ok();
}

static int by_error(const void *a, const void *b)
{
    double x = ((const ug_sample *)a)->ulp_err, y = ((const ug_sample *)b)->ulp_err;
    return isnan(x) ? !isnan(y) : isnan(y) ? -1 : (x > y) - (x < y);
}

/* Sampled elements: error in ulps against cond, log-log; grey +: the bound.
 * When the samples' condition numbers lie within half a decade (or all at or
 * below 1: gdn_chunk_cumsum's are 0 and 1), a scatter would be one vertical
 * line: the samples are drawn by rank of their error instead. An element without a bound (infinite) or with a non-finite
 * error is not drawn; a note counts them. */
static ug_status scatter(FILE *f, const ug_run_result *run, const ug_family_result *fr, size_t o)
{
    const double ylo = -3;
    ug_sample *pts;
    size_t n;
    UG_TRY(collect_samples(run, fr, o, &pts, &n));
    double xhi = 1, yhi = 1, xlo = INFINITY, xmax = -INFINITY, cond_lo = INFINITY, cond_hi = -INFINITY;
    size_t no_bound = 0, no_error = 0;
    for (size_t k = 0; k < n; k++) {
        double x = fmin(log_clamped(pts[k].cond, 0), 24);
        xhi = fmax(xhi, x);
        xlo = fmin(xlo, x);
        xmax = fmax(xmax, x);
        yhi = fmax(yhi, fmax(log_clamped(pts[k].ulp_err, ylo), log_clamped(pts[k].bound_ulps, ylo)));
        cond_lo = fmin(cond_lo, pts[k].cond);
        cond_hi = fmax(cond_hi, pts[k].cond);
        no_bound += !isfinite(pts[k].bound_ulps);
        no_error += !isfinite(pts[k].ulp_err);
    }
    bool by_rank = n > 1 && xmax - xlo < 0.5; /* within half a decade: one vertical line */
    if (by_rank) qsort(pts, n, sizeof *pts, by_error);
    xhi = by_rank ? (double)(n - 1) : ceil(xhi);
    yhi = ceil(yhi);
    char title[96], xlabel[96];
    if (by_rank) {
        snprintf(title, sizeof title, "sampled elements by error, condition %.3g to %.3g; grey +: bounds", cond_lo,
                 cond_hi);
        snprintf(xlabel, sizeof xlabel, "sampled elements (%zu), sorted by error", n);
    } else {
        snprintf(title, sizeof title, "error of sampled elements; grey +: their bounds");
        snprintf(xlabel, sizeof xlabel, "condition number (log10)");
    }
    axes(f, title, xlabel, "error in ulps (log10)");
    legend(f);
    for (size_t k = 0; k < n; k++) {
        const ug_sample *x = &pts[k];
        double px = by_rank ? px_x((double)k, 0, xhi) : px_x(fmin(log_clamped(x->cond, 0), 24), 0, xhi);
        if (isfinite(x->bound_ulps))
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#777\" text-anchor=\"middle\">+</text>\n",
                    px, px_y(log_clamped(x->bound_ulps, ylo), ylo, yhi) + 3);
        if (isfinite(x->ulp_err))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\" fill=\"%s\" fill-opacity=\"0.7\"/>\n", px,
                    px_y(log_clamped(x->ulp_err, ylo), ylo, yhi), mode_color[x->mode % UG_REF_MODE_COUNT]);
    }
    free(pts);
    char label[16];
    if (by_rank) {
        tick(f, true, px_x(0, 0, xhi), "1");
        snprintf(label, sizeof label, "%zu", n);
        tick(f, true, px_x(xhi, 0, xhi), label);
    }
    for (int d = 0; !by_rank && d <= (int)xhi; d += xhi > 10 ? 2 : 1) {
        snprintf(label, sizeof label, "1e%d", d);
        tick(f, true, px_x(d, 0, xhi), label);
    }
    for (int d = (int)ylo; d <= (int)yhi; d++) {
        snprintf(label, sizeof label, "1e%d", d);
        tick(f, false, px_y(d, ylo, yhi), label);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"3,3\"/>\n", LEFT,
            px_y(log10(0.5), ylo, yhi), W - RIGHT, px_y(log10(0.5), ylo, yhi));
    if (no_bound || no_error)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#a00\">no bound (infinite): %zu elements, no +; "
                   "non-finite error: %zu, no dot</text>\n",
                LEFT + 4, TOP + 12, no_bound, no_error);
    fputs("</svg>\n", f);
    return ug_ok();
}

ug_status ug_plots_write_html(FILE *f, const ug_run_result *run, const ug_verdict *verdict)
{
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ulpgate: %s</title>\n"
               "<style>body{font-family:sans-serif;margin:20px;color:#222}"
               ".row{display:flex;flex-wrap:wrap;gap:16px}svg{border:1px solid #ddd}</style></head><body>\n",
            run->sweep->path);
    fprintf(f, "<h1>ulpgate: %s</h1>\n<p>Sweep <code>%s</code>, started %s, %.1f s. Verdict: <b>%s</b>. "
               "Dashed line: half an ulp (correct rounding). Exact mode in blue, staged in orange.</p>\n",
            verdict->pass ? "PASS" : "FAIL", run->sweep->path, run->started_utc, run->wall_seconds,
            verdict->pass ? "PASS" : "FAIL");
    for (size_t i = 0; i < run->n_families; i++) {
        const ug_family_result *fr = &run->families[i];
        fprintf(f, "<h2>%s</h2>\n", fr->family->name);
        for (size_t o = 0; o < fr->n_outputs; o++) {
            fprintf(f, "<h3>output %s</h3>\n<div class=\"row\">\n", fr->family->buffers[fr->output_buffer[o]].name);
            histogram(f, fr, o);
            UG_TRY(scatter(f, run, fr, o));
            fputs("</div>\n", f);
        }
    }
    fputs("</body></html>\n", f);
    return ug_ok();
}
