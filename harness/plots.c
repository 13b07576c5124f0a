#include "plots.h"

#include <math.h>

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

/* Sampled elements: error in ulps against cond, log-log; grey: the bound. */
static void scatter(FILE *f, const ug_run_result *run, const ug_family_result *fr, size_t o)
{
    const double ylo = -3;
    double xhi = 1, yhi = 1;
    for (size_t i = 0; i < run->n_cases; i++) {
        if (run->cases[i].c->family != fr->family) continue;
        for (size_t k = 0; k < run->cases[i].samples.n; k++) {
            const ug_sample *x = &run->cases[i].samples.items[k];
            if (x->output != o) continue;
            xhi = fmax(xhi, fmin(log_clamped(x->cond, 0), 24));
            yhi = fmax(yhi, fmax(log_clamped(x->ulp_err, ylo), log_clamped(x->bound_ulps, ylo)));
        }
    }
    xhi = ceil(xhi);
    yhi = ceil(yhi);
    axes(f, "error of sampled elements; grey +: their bounds", "condition number (log10)", "error in ulps (log10)");
    legend(f);
    for (size_t i = 0; i < run->n_cases; i++) {
        if (run->cases[i].c->family != fr->family) continue;
        for (size_t k = 0; k < run->cases[i].samples.n; k++) {
            const ug_sample *x = &run->cases[i].samples.items[k];
            if (x->output != o) continue;
            double px = px_x(fmin(log_clamped(x->cond, 0), 24), 0, xhi);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#777\" text-anchor=\"middle\">+</text>\n", px,
                    px_y(log_clamped(x->bound_ulps, ylo), ylo, yhi) + 3);
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\" fill=\"%s\" fill-opacity=\"0.7\"/>\n", px,
                    px_y(log_clamped(x->ulp_err, ylo), ylo, yhi), mode_color[x->mode % UG_REF_MODE_COUNT]);
        }
    }
    char label[16];
    for (int d = 0; d <= (int)xhi; d += xhi > 10 ? 2 : 1) {
        snprintf(label, sizeof label, "1e%d", d);
        tick(f, true, px_x(d, 0, xhi), label);
    }
    for (int d = (int)ylo; d <= (int)yhi; d++) {
        snprintf(label, sizeof label, "1e%d", d);
        tick(f, false, px_y(d, ylo, yhi), label);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"3,3\"/>\n", LEFT,
            px_y(log10(0.5), ylo, yhi), W - RIGHT, px_y(log10(0.5), ylo, yhi));
    fputs("</svg>\n", f);
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
            scatter(f, run, fr, o);
            fputs("</div>\n", f);
        }
    }
    fputs("</body></html>\n", f);
    return ug_ok();
}
