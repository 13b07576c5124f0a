/* SPDX-License-Identifier: MIT */
/* ug_spectral_norm_up against the largest singular value from GSL's SVD:
 * never below it (on matrices built so that the power iteration's estimate
 * falls short and only the Cholesky certificate can decide), within a hair
 * of it, exact for what it can be exact for (a zero matrix, the error
 * allowance added on top), and +inf for what it cannot bound. */
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/rowsimd.h"
#include "../ref/spectral_norm.h"
#include "tests.h"

/* sigma_max of the rows x cols matrix m (rows >= cols for GSL's SVD: the
 * transpose otherwise). */
static double svd_sigma_max(const double *m, size_t rows, size_t cols)
{
    const bool tall = rows >= cols;
    const size_t r = tall ? rows : cols, c = tall ? cols : rows;
    gsl_matrix *a = gsl_matrix_alloc(r, c), *v = gsl_matrix_alloc(c, c);
    gsl_vector *s = gsl_vector_alloc(c), *work = gsl_vector_alloc(c);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) gsl_matrix_set(a, tall ? i : j, tall ? j : i, m[i * cols + j]);
    gsl_linalg_SV_decomp(a, v, s, work);
    const double sigma = gsl_vector_get(s, 0);
    gsl_matrix_free(a);
    gsl_matrix_free(v);
    gsl_vector_free(s);
    gsl_vector_free(work);
    return sigma;
}

static double bound_of(const double *m, size_t rows, size_t cols, double err_f)
{
    double *work = malloc(ug_spectral_norm_work(cols) * sizeof *work);
    const double b = ug_spectral_norm_up(m, rows, cols, err_f, work);
    free(work);
    return b;
}

/* Q = product of k Householder reflections of R^n (orthogonal), scaled
 * column j by d[j]: singular values d, top singular vector e_top. */
static void scaled_orthogonal(gsl_rng *rng, size_t n, const double *d, double *m)
{
    for (size_t i = 0; i < n * n; i++) m[i] = i / n == i % n;
    double *h = malloc(n * sizeof *h);
    for (int k = 0; k < 6; k++) {
        double hh = 0;
        for (size_t i = 0; i < n; i++) {
            h[i] = gsl_ran_gaussian(rng, 1);
            hh += h[i] * h[i];
        }
        for (size_t r = 0; r < n; r++) { /* row r of M (I - 2 h h^T / h^T h) */
            double dot = 0;
            for (size_t i = 0; i < n; i++) dot += m[r * n + i] * h[i];
            for (size_t i = 0; i < n; i++) m[r * n + i] -= 2 * dot / hh * h[i];
        }
    }
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < n; j++) m[r * n + j] *= d[j];
    free(h);
}

static void never_below_the_largest_singular_value(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    const size_t shapes[][2] = {{1, 1}, {3, 3}, {17, 17}, {64, 128}, {128, 64}, {96, 96}, {5, 40}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const size_t rows = shapes[t][0], cols = shapes[t][1];
        double *m = malloc(rows * cols * sizeof *m);
        for (int draw = 0; draw < 4; draw++) {
            for (size_t i = 0; i < rows * cols; i++) m[i] = gsl_ran_gaussian(rng, draw == 3 ? 1e-150 : 1.0);
            const double sigma = svd_sigma_max(m, rows, cols), b = bound_of(m, rows, cols, 0);
            CU_ASSERT(b >= sigma);
            CU_ASSERT(b <= sigma * (1 + 1e-3));
        }
        free(m);
    }
    gsl_rng_free(rng);
}

/* Where the power iteration's estimate falls short, only the Cholesky
 * certificate (or the Gershgorin fallback) keeps the bound above sigma_max:
 * M = 0.5 I + 0.5 v v^T with v orthogonal to the iteration's fixed start
 * (ref/spectral_norm.c: x_i = 1 + ((i * 0x9E3779B9) >> 24) / 512), so the
 * iteration sees only the eigenvalue 0.25 of M^T M and settles there, while
 * sigma_max = 1. A bound that trusted the estimate would say 0.5. */
static void certified_where_the_estimate_falls_short(void)
{
    const size_t n = 48;
    double x0[48], v[48], *m = malloc(n * n * sizeof *m), xx = 0, vx = 0, vv = 0;
    for (uint32_t i = 0; i < n; i++) {
        x0[i] = 1.0 + (double)((i * 0x9E3779B9u) >> 24) / 512.0;
        xx += x0[i] * x0[i];
        vx += (i % 2 ? -1.0 : 1.0) * x0[i];
    }
    for (size_t i = 0; i < n; i++) { /* alternating signs, made orthogonal to the start: spread out, so
                                        t I - M^T M has a positive diagonal where it is not definite */
        v[i] = (i % 2 ? -1.0 : 1.0) - vx / xx * x0[i];
        vv += v[i] * v[i];
    }
    for (size_t i = 0; i < n; i++) v[i] /= sqrt(vv);
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < n; c++) m[r * n + c] = 0.5 * (r == c) + 0.5 * v[r] * v[c];
    const double sigma = svd_sigma_max(m, n, n), b = bound_of(m, n, n, 0);
    CU_ASSERT(fabs(sigma - 1) < 1e-12);
    CU_ASSERT(b >= sigma);
    CU_ASSERT(b <= 1.1);
    /* an orthogonal matrix (a chunk transition without decay is close to one) */
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    double d[48];
    for (size_t j = 0; j < n; j++) d[j] = 1.0;
    scaled_orthogonal(rng, n, d, m);
    const double q = bound_of(m, n, n, 0);
    CU_ASSERT(q >= 1.0 && q <= 1.0 + 1e-4);
    /* two top singular values 1 and 0.99: slow convergence */
    for (size_t j = 0; j < n; j++) d[j] = j == 0 ? 1.0 : j == 1 ? 0.99 : 0.5 * (double)(n - j) / (double)n;
    for (int draw = 0; draw < 4; draw++) {
        scaled_orthogonal(rng, n, d, m);
        const double top = bound_of(m, n, n, 0);
        CU_ASSERT(top >= 1.0 && top <= 1.01);
    }
    free(m);
    gsl_rng_free(rng);
}

static void edges(void)
{
    double m[9] = {0};
    CU_ASSERT_EQUAL(bound_of(m, 3, 3, 0), 0.0);
    CU_ASSERT_EQUAL(bound_of(m, 3, 3, 0.25), 0.25);
    m[4] = 2;
    const double b = bound_of(m, 3, 3, 0.5);
    CU_ASSERT(b >= 2.5 && b <= 2.5 * (1 + 1e-6));
    m[2] = NAN;
    CU_ASSERT_EQUAL(bound_of(m, 3, 3, 0), INFINITY);
    m[2] = INFINITY;
    CU_ASSERT_EQUAL(bound_of(m, 3, 3, 0), INFINITY);
    m[2] = 0x1p600; /* its Gram matrix overflows */
    CU_ASSERT_EQUAL(bound_of(m, 3, 3, 0), INFINITY);
}

/* The Gram matrix's products and sums eight entries at a time (rowsimd.h)
 * give the bound bit for bit as the plain loop: widths off the vector
 * length, zero entries (skipped), products that underflow. */
static void the_same_bits_with_and_without_simd(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 13);
    const size_t shapes[][2] = {{1, 1}, {3, 7}, {17, 17}, {64, 128}, {128, 64}, {9, 13}};
    size_t mismatches = 0;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const size_t rows = shapes[t][0], cols = shapes[t][1];
        double *m = malloc(rows * cols * sizeof *m);
        for (int draw = 0; draw < 4; draw++) {
            for (size_t i = 0; i < rows * cols; i++)
                m[i] = i % 5 == (size_t)draw ? 0.0 : gsl_ran_gaussian(rng, draw == 3 ? 1e-160 : 1.0);
            ug_ref_simd_set_enabled(false);
            const double plain = bound_of(m, rows, cols, 0.0);
            ug_ref_simd_set_enabled(true);
            const double simd = bound_of(m, rows, cols, 0.0);
            if (memcmp(&plain, &simd, sizeof plain) != 0)
                UG_TEST_MISMATCH(mismatches, "%zux%zu draw %d: simd %a, plain %a", rows, cols, draw, simd, plain);
        }
        free(m);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    gsl_rng_free(rng);
}

UG_TEST_SUITE(spectral_norm_suite, "spectral_norm",
              UG_TEST(never_below_the_largest_singular_value),
              UG_TEST(certified_where_the_estimate_falls_short),
              UG_TEST(edges),
              UG_TEST(the_same_bits_with_and_without_simd));
