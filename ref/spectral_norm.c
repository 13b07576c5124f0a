/* SPDX-License-Identifier: MIT */
#include "spectral_norm.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "rowsimd.h"

/* Covers the binary64 rounding of the few operations that combine the
 * certified parts below (each within 2^-53 relative). */
#define SLACK (1.0 + 0x1p-40)

/* gamma_k of binary64: the relative error of k roundings in a row. */
static double gamma53(size_t k)
{
    const double ku = (double)k * 0x1p-53;
    return ku / (1 - ku) * SLACK;
}

size_t ug_spectral_norm_work(size_t n) { return 2 * n * n + 2 * n; }

/* g = upper and lower triangle of m^T m, each entry summed over the rows in
 * order; false on overflow. */
static bool gram(const double *m, size_t rows, size_t n, double *g)
{
    const bool simd = ug_ref_simd_available(); /* the same products and sums, eight entries an instruction */
    for (size_t i = 0; i < n * n; i++) g[i] = 0;
    for (size_t r = 0; r < rows; r++) {
        const double *row = m + r * n;
        for (size_t p = 0; p < n; p++) {
            const double c = row[p];
            if (c == 0) continue; /* its products are exact zeros */
            double *gp = g + p * n;
            if (simd) {
                ug_ref_simd_axpy(n - p, c, row + p, gp + p);
                continue;
            }
            for (size_t q = p; q < n; q++) gp[q] += c * row[q];
        }
    }
    for (size_t p = 0; p < n; p++)
        for (size_t q = p; q < n; q++) {
            if (!isfinite(g[p * n + q])) return false;
            g[q * n + p] = g[p * n + q];
        }
    return true;
}

/* a . b in four interleaved partial sums (independent add chains; any
 * order of an inner product is covered wherever a bound relies on one). */
static double dot(const double *a, const double *b, size_t n)
{
    double s[4] = {0, 0, 0, 0};
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (int lane = 0; lane < 4; lane++) s[lane] += a[j + lane] * b[j + lane];
    for (; j < n; j++) s[0] += a[j] * b[j];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* The largest eigenvalue of the symmetric g, estimated (not certified) by
 * power iteration from a fixed start, so that the result is deterministic;
 * the iterate is scaled by its largest entry (tiny Gram matrices would
 * underflow a sum of squares). */
static double estimate_top_eigenvalue(const double *g, size_t n, double *x, double *y)
{
    for (size_t i = 0; i < n; i++) x[i] = 1.0 + (double)(((uint32_t)i * 0x9E3779B9u) >> 24) / 512.0;
    double lambda = 0;
    for (int it = 0; it < 100; it++) {
        double xx = 0, xy = 0, top = 0;
        for (size_t i = 0; i < n; i++) {
            const double s = dot(g + i * n, x, n);
            y[i] = s;
            xx += x[i] * x[i];
            xy += x[i] * s;
            top = fmax(top, fabs(s));
        }
        if (!(top > 0)) return 0;
        const double next = xy / xx;
        const bool settled = fabs(next - lambda) <= 0x1p-30 * next;
        lambda = next;
        if (settled) break;
        for (size_t i = 0; i < n; i++) x[i] = y[i] / top;
    }
    return lambda;
}

/* Whether t I - g is certified positive semidefinite up to the returned
 * allowance: on success *lambda_up >= lambda_max(g). r: n x n scratch. */
static bool certify_below(const double *g, size_t n, double t, double *r, double *lambda_up)
{
    double trace = 0, max_diag = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            r[i * n + j] = i == j ? t - g[i * n + i] : -g[i * n + j];
            if (i == j) {
                if (!(r[i * n + i] > 0)) return false;
                trace += r[i * n + i];
                max_diag = fmax(max_diag, r[i * n + i]);
            }
        }
    for (size_t j = 0; j < n; j++) { /* lower Cholesky factor, in place */
        double *rj = r + j * n;
        const double pivot = rj[j] - dot(rj, rj, j);
        if (!(pivot > 0)) return false;
        rj[j] = sqrt(pivot);
        for (size_t i = j + 1; i < n; i++) {
            double *ri = r + i * n;
            ri[j] = (ri[j] - dot(ri, rj, j)) / rj[j];
        }
    }
    /* R^T R = B + dB, ||dB||_2 <= gamma_{n+1}/(1 - gamma_{n+1}) tr(B) (no
     * underflow; n (n + 2) 2^-1070 covers an absolute 2^-1074 per operation
     * of every entry), B the rounded t I - g; the diagonal's rounding moves
     * B from t I - g by at most 2^-53 max_diag. */
    const double gamma = gamma53(n + 1);
    const double chol = gamma / (1 - gamma) * trace * (1 + (double)n * 0x1p-52) * SLACK +
                        (double)n * (double)(n + 2) * 0x1p-1070;
    *lambda_up = (t + chol + max_diag * 0x1p-53) * SLACK;
    return true;
}

double ug_spectral_norm_up(const double *m, size_t rows, size_t n, double err_f, double *work)
{
    double fro2 = 0;
    for (size_t i = 0; i < rows * n; i++) {
        if (!isfinite(m[i])) return INFINITY;
        fro2 += m[i] * m[i];
    }
    if (!isfinite(fro2)) return INFINITY;
    if (fro2 == 0) return err_f;
    fro2 *= 1 + gamma53(rows * n + 1); /* >= the exact sum of squares */
    double *g = work, *r = g + n * n, *x = r + n * n, *y = x + n;
    if (!gram(m, rows, n, g)) return INFINITY;
    const double lambda = estimate_top_eigenvalue(g, n, x, y);
    double lambda_up = INFINITY;
    for (int step = 0; step < 10 && lambda_up == INFINITY; step++) {
        const double widen = ldexp(1.0, -20 + 2 * step);
        if (!certify_below(g, n, lambda * (1 + widen) + widen * 0x1p-20 * fro2 / (double)n, r, &lambda_up))
            lambda_up = INFINITY;
    }
    if (lambda_up == INFINITY) { /* Gershgorin: lambda_max <= max row sum of |g| */
        lambda_up = 0;
        for (size_t i = 0; i < n; i++) {
            double row = 0;
            for (size_t j = 0; j < n; j++) row += fabs(g[i * n + j]);
            lambda_up = fmax(lambda_up, row);
        }
        lambda_up *= 1 + gamma53(n);
    }
    /* ||g - m^T m||_2 <= gamma_rows || |m|^T |m| ||_F <= gamma_rows ||m||_F^2,
     * plus an absolute 2^-1074 per product and addition where they underflow. */
    const double gram_error = gamma53(rows) * fro2 + (double)n * (double)(rows + 1) * 0x1p-1070;
    const double sigma = sqrt((lambda_up + gram_error) * SLACK) * (1 + 0x1p-52);
    return (sigma + err_f) * SLACK;
}
