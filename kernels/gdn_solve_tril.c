/* SPDX-License-Identifier: MIT */
/* gdn_solve_tril (SPEC §1.3). Forward substitution per chunk tile: row i of
 * the inverse is minus the combination of the rows above it weighted by
 * L[i][m], every element the same FMA chain in increasing m on every path
 * (gdn_solve_tril_paths.h). A, written once, is streamed past the caches
 * when it is large (isa.h; the gain is in docs/performance.md). */
#include "gdn_solve_tril.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "../core/guard.h"
#include "gdn_solve_tril_paths.h"
#include "isa.h"
#include "parallel.h"
#include "tensor_check.h"

#define KERNEL "gated_delta_net_solve_tril"

enum { BT = GDN_SOLVE_TRIL_BT };

static ug_status validate(const gdn_solve_tril_params *p, const ug_buf *l, const ug_buf *a)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"H", p->h}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL ": bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL ": t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    const ug_tensor_spec tensors[] = {
        {"L", l, UG_F32, 4, {"B", "T", "H", "BT"}, {p->b, p->t, p->h, p->bt}, false},
        {"A", a, UG_F32, 4, {"B", "T", "H", "BT"}, {p->b, p->t, p->h, p->bt}, false},
    };
    return ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors);
}

/* Row m of the inverse contributes to the columns j <= m (x[m][j] is zero
 * beyond); the mutant starts every sum one term late, at m = j + 1. */
static size_t columns_fed_by_row(size_t m)
{
    return UG_MUTANT == GDN_SOLVE_TRIL_MUT_SUBSTITUTION_FROM_J1 ? m : m + 1;
}

/* Rows m < end_of_terms(i) feed row i; the mutant drops the last one. */
static size_t end_of_terms(size_t i)
{
    return UG_MUTANT == GDN_SOLVE_TRIL_MUT_DROPPED_LAST_TERM && i > 0 ? i - 1 : i;
}

/* The portable solver (gdn_solve_tril_paths.h): x = (I + l)^-1 for the
 * strictly lower part of l, row by row, row i accumulated in acc as axpy
 * updates in increasing m. The mutants live here, and every path runs this
 * solver in a mutant build (the ISA solvers are built once, correct). */
static void invert_unit_lower(const float *l, float *x, size_t ld)
{
    for (size_t i = 0; i < BT; i++) {
        float acc[BT] = {0};
        for (size_t m = 0; m < end_of_terms(i); m++) {
            const float weight = l[i * ld + m];
            for (size_t j = 0; j < columns_fed_by_row(m); j++) acc[j] = fmaf(weight, x[m * ld + j], acc[j]);
        }
        for (size_t j = 0; j < BT; j++)
            x[i * ld + j] = j < i ? (UG_MUTANT == GDN_SOLVE_TRIL_MUT_SIGN_ERROR ? acc[j] : -acc[j])
                            : j == i ? 1.0f
                                     : 0.0f;
    }
}

/* Variants COLUMN_ORIENTED and REVERSED_SUMS: the same substitution one
 * element at a time, column by column. */
static void invert_by_columns(const float *l, float *x, size_t ld)
{
    for (size_t j = 0; j < BT; j++)
        for (size_t i = 0; i < BT; i++) {
            float acc = 0.0f;
            if (UG_MUTANT == GDN_SOLVE_TRIL_LEGIT_REVERSED_SUMS)
                for (size_t m = i; m-- > j;) acc = fmaf(l[i * ld + m], x[m * ld + j], acc);
            else
                for (size_t m = j; m < i; m++) acc += l[i * ld + m] * x[m * ld + j];
            x[i * ld + j] = j < i ? -acc : j == i ? 1.0f : 0.0f;
        }
}

static const gdn_solve_tril_paths paths_portable = {invert_unit_lower};
UG_ISA_PATHS(gdn_solve_tril, UG_ISA_PORTABLE, paths_portable);

static gdn_solve_tril_tile_fn *tile_solver(void)
{
    if (UG_MUTANT == GDN_SOLVE_TRIL_LEGIT_COLUMN_ORIENTED || UG_MUTANT == GDN_SOLVE_TRIL_LEGIT_REVERSED_SUMS)
        return invert_by_columns;
    /* a bug planted in the portable solver must run there, one in the vector paths there */
    if (UG_MUTANT != GDN_SOLVE_TRIL_CORRECT && UG_MUTANT != GDN_SOLVE_TRIL_MUT_VECTOR_MASK_OFF_BY_ONE)
        return invert_unit_lower;
    return UG_ISA_PATHS_OF(gdn_solve_tril, ug_isa_current())->tile;
}

/* The tiles, one per (batch, chunk, head), are independent: ranges of them
 * go to the kernel threads (kernels/parallel.h). A tile's rows lie H * BT
 * floats apart in L and A (4 KiB at H = 16: in place, all 64 rows would fall
 * in the same L1 sets), so each worker copies its L tile into two contiguous
 * BT x BT tiles of its guarded scratch, solves there, and copies the inverse
 * out. Heads are the innermost tile index: consecutive tiles then read and
 * write neighbouring 256-byte pieces of the same rows (a sequential sweep
 * over a chunk's H * BT * BT floats), not 64 rows in 64 distinct pages. */
enum { TILE = BT * BT };

typedef struct {
    const gdn_solve_tril_params *p;
    const float *l;
    float *a;
    float *scratch; /* 2 * TILE floats per worker */
    gdn_solve_tril_tile_fn *solve;
    bool stream; /* A is streamed past the caches (isa.h) */
} solve_job;

/* The index of a tile's first element in L and A. */
static size_t tile_offset(const gdn_solve_tril_params *p, size_t tile)
{
    const size_t heads = p->h, chunks = p->t / BT;
    const size_t b = tile / (chunks * heads), chunk = tile / heads % chunks, h = tile % heads;
    return ((b * p->t + chunk * BT) * heads + h) * BT;
}

/* The next tile's 64 rows are 64 short pieces in 64 pages, more streams than
 * the hardware prefetchers follow: they are requested while this tile is
 * solved (L to read, A to be written unless it is streamed). */
static void prefetch_tile(const solve_job *job, size_t first, size_t ld)
{
    enum { LINE_FLOATS = 16 };
    for (size_t i = 0; i < BT; i++)
        for (size_t j = 0; j < BT; j += LINE_FLOATS) {
            __builtin_prefetch(job->l + first + i * ld + j, 0);
            if (!job->stream) __builtin_prefetch(job->a + first + i * ld + j, 1);
        }
}

static void solve_tiles(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const solve_job *job = ctx;
    const size_t ld = (size_t)job->p->h * BT;
    float *l_tile = job->scratch + (size_t)worker * 2 * TILE, *x_tile = l_tile + TILE;
    for (size_t tile = begin; tile < end; tile++) {
        const size_t first = tile_offset(job->p, tile);
        for (size_t i = 0; i < BT; i++) memcpy(l_tile + i * BT, job->l + first + i * ld, BT * sizeof(float));
        if (tile + 1 < end) prefetch_tile(job, tile_offset(job->p, tile + 1), ld);
        job->solve(l_tile, x_tile, BT);
        for (size_t i = 0; i < BT; i++)
            ug_rows_store(BT * sizeof(float), x_tile + i * BT, job->a + first + i * ld, job->stream);
    }
    if (job->stream) ug_rows_stream_end();
}

ug_status gdn_solve_tril(const gdn_solve_tril_params *p, const ug_buf *l, ug_buf *a)
{
    UG_TRY(validate(p, l, a));
    const size_t tiles = (size_t)p->b * p->h * (p->t / BT);
    ug_guarded scratch;
    UG_TRY(ug_guarded_alloc(&scratch, ug_parallel_workers(tiles) * 2 * TILE * sizeof(float)));
    solve_job job = {p, l->data, a->data, ug_guarded_data(&scratch), tile_solver(),
                     a->count * sizeof(float) >= UG_STREAM_MIN_BYTES};
    ug_parallel_for(tiles, solve_tiles, &job);
    return ug_guarded_free(&scratch, KERNEL " scratch");
}
