/* SPDX-License-Identifier: MIT */
/* The loop nest around a SIMD path's micro-kernel (BLIS's macro-kernel),
 * written once for the AVX2 and AVX-512 paths: panels of NR columns of B,
 * up to KC terms at a time, packed by the path's pack_panel; blocks of up to
 * UG_GEMM_MR rows of C by its block_of_width, each with a constant row count
 * so that the accumulators live in registers. A chain longer than KC
 * continues from the partial sums the previous panel stored in C (exact: an
 * f32 stored and reloaded), so every element's FMA chain runs unbroken in
 * increasing p. kk == 0 still visits one empty panel: C = +0.
 *
 * Included by a path file after it defines UG_GEMM_MR, the enum constants NR
 * and KC, pack_panel and block_of_width; defines that path's static gemm(). */
#ifndef UG_GEMM_DRIVER_H
#define UG_GEMM_DRIVER_H

#define UG_GEMM_ROWS(r)                                                                         \
    case r: block_of_width(r, nc, kc, ai, g->a_row, g->a_col, pn, c, g->ldc, p0 == 0); break

static void gemm(const ug_gemm_operands *g)
{
    float panel[KC][NR] __attribute__((aligned(64)));
    const float(*pn)[NR] = (const float(*)[NR])panel;
    for (size_t j0 = 0; j0 < g->n; j0 += NR) {
        const size_t nc = g->n - j0 < NR ? g->n - j0 : NR;
        for (size_t p0 = 0; p0 == 0 || p0 < g->kk; p0 += KC) {
            const size_t kc = g->kk - p0 < KC ? g->kk - p0 : KC;
            pack_panel(g, p0, kc, j0, nc, panel);
            const float *a = g->a + (ptrdiff_t)p0 * g->a_col;
            for (size_t i0 = 0; i0 < g->m; i0 += UG_GEMM_MR) {
                const float *ai = a + (ptrdiff_t)i0 * g->a_row;
                float *c = g->c + i0 * g->ldc + j0;
                switch (g->m - i0 < UG_GEMM_MR ? g->m - i0 : UG_GEMM_MR) {
#if UG_GEMM_MR >= 8
                    UG_GEMM_ROWS(8);
                    UG_GEMM_ROWS(7);
#endif
                    UG_GEMM_ROWS(6);
                    UG_GEMM_ROWS(5);
                    UG_GEMM_ROWS(4);
                    UG_GEMM_ROWS(3);
                    UG_GEMM_ROWS(2);
                    default: block_of_width(1, nc, kc, ai, g->a_row, g->a_col, pn, c, g->ldc, p0 == 0); break;
                }
            }
        }
    }
}

#undef UG_GEMM_ROWS
#endif
