/* SPDX-License-Identifier: MIT */
/* A certified upper bound on the spectral norm ||M||_2 = sigma_max(M) of a
 * square matrix known in binary64 (docs/error-model-gdn_stages.md §4, "The
 * norm bound").
 *
 * Why: an error that a linear recursion carries from step to step grows by
 * ||M||_2 per step in the 2-norm, while a bound built from magnitudes |M|
 * grows by the spectral radius of |M|, which for a product of reflections
 * (the gated delta rule's chunk transition) is far above 1 even where
 * ||M||_2 <= 1.
 *
 * How: G = m^T m in binary64, an estimate lambda of its largest eigenvalue
 * by power iteration, then a proof that t I - G is positive definite for a
 * t slightly above lambda: a binary64 Cholesky factorization (its inner
 * products in any order) that runs to completion (every pivot positive)
 * shows lambda_min(t I - G) >= -c with
 * c = gamma_{n+1} / (1 - gamma_{n+1}) tr(t I - G) (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed., Thm 10.3; Rump, Verification
 * of positive definiteness, BIT 46 (2006)), plus an underflow allowance.
 * The estimate only decides how tight the result is, never whether it holds:
 * when no t certifies, the bound falls back to max row sum of |G|. Every
 * rounding of the computation itself is covered (gamma_n |m|^T |m| for G,
 * the subtraction on the diagonal, the final square root).
 *
 * Deterministic: the same m gives the same bits on every call and thread. */
#ifndef UG_REF_SPECTRAL_NORM_H
#define UG_REF_SPECTRAL_NORM_H

#include <stddef.h>

/* Scratch doubles ug_spectral_norm_up needs for a matrix of n columns. */
size_t ug_spectral_norm_work(size_t n);

/* An upper bound (rounded up) on ||M||_2 for every M with ||M - m||_F <=
 * err_f, m a rows x n row-major binary64 matrix (its Gram matrix is n x n:
 * pass the narrower orientation); +inf if m has a non-finite entry or its
 * Gram matrix overflows. work holds ug_spectral_norm_work(n) doubles. */
double ug_spectral_norm_up(const double *m, size_t rows, size_t n, double err_f, double *work);

#endif
