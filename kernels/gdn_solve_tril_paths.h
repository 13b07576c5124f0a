/* SPDX-License-Identifier: MIT */
/* The per-ISA tile solvers of gdn_solve_tril (private to kernels/).
 *
 * The portable solver lives in gdn_solve_tril.c; gdn_solve_tril_avx2.c and
 * gdn_solve_tril_avx512.c instantiate gdn_solve_tril_simd.h over their
 * vec_<isa>.h; each registers its paths (isa.h). Every solver computes each element of the inverse as the same FMA
 * chain, so all paths produce identical bits:
 *   x[i][j] = -fmaf(l[i][i-1], x[i-1][j], ... fmaf(l[i][j], x[j][j], +0.0f))  j < i
 *   x[i][i] = 1,  x[i][j] = +0 (j > i)
 * l and x are BT x BT tiles with row stride ld (elements), in distinct
 * memory; l is read strictly below its diagonal only. */
#ifndef UG_GDN_SOLVE_TRIL_PATHS_H
#define UG_GDN_SOLVE_TRIL_PATHS_H

#include <stddef.h>

#include "isa.h"

typedef void gdn_solve_tril_tile_fn(const float *l, float *x, size_t ld);

typedef struct {
    gdn_solve_tril_tile_fn *tile;
} gdn_solve_tril_paths;
UG_ISA_PATHS_DECLARE(gdn_solve_tril);

#endif
