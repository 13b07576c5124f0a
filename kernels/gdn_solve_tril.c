/* gdn_solve_tril (SPEC §1.3). Forward substitution, one row of the inverse
 * at a time: row i is minus the combination of the rows above it weighted by
 * L[i][m], accumulated as axpy updates in increasing m so that every element
 * is the same FMA chain, whatever the vector width the compiler picks. The
 * chunk's L block and its inverse live in one guarded scratch allocation of
 * exactly two BT x BT f32 tiles. */
#include "gdn_solve_tril.h"

#include <math.h>
#include <stddef.h>

#include "../core/guard.h"
#include "tensor_check.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_SOLVE_TRIL_CORRECT
#endif

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

/* x = (I + l)^-1 for the strictly lower part of l. */
static void invert_unit_lower(float (*l)[BT], float (*x)[BT])
{
    for (size_t i = 0; i < BT; i++) {
        float acc[BT] = {0};
        for (size_t m = 0; m < end_of_terms(i); m++) {
            const float weight = l[i][m];
            for (size_t j = 0; j < columns_fed_by_row(m); j++) acc[j] = fmaf(weight, x[m][j], acc[j]);
        }
        for (size_t j = 0; j < BT; j++)
            x[i][j] = j < i ? (UG_MUTANT == GDN_SOLVE_TRIL_MUT_SIGN_ERROR ? acc[j] : -acc[j]) : j == i ? 1.0f : 0.0f;
    }
}

/* Variants COLUMN_ORIENTED and REVERSED_SUMS: the same substitution one
 * element at a time, column by column. */
static void invert_by_columns(float (*l)[BT], float (*x)[BT])
{
    for (size_t j = 0; j < BT; j++)
        for (size_t i = 0; i < BT; i++) {
            float acc = 0.0f;
            if (UG_MUTANT == GDN_SOLVE_TRIL_LEGIT_REVERSED_SUMS)
                for (size_t m = i; m-- > j;) acc = fmaf(l[i][m], x[m][j], acc);
            else
                for (size_t m = j; m < i; m++) acc += l[i][m] * x[m][j];
            x[i][j] = j < i ? -acc : j == i ? 1.0f : 0.0f;
        }
}

ug_status gdn_solve_tril(const gdn_solve_tril_params *p, const ug_buf *l, ug_buf *a)
{
    UG_TRY(validate(p, l, a));
    ug_guarded scratch;
    UG_TRY(ug_guarded_alloc(&scratch, 2 * BT * BT * sizeof(float)));
    float (*l_tile)[BT] = ug_guarded_data(&scratch);
    float (*x_tile)[BT] = l_tile + BT;
    const float *in = l->data;
    float *out = a->data;
    for (size_t b = 0; b < p->b; b++)
        for (size_t h = 0; h < p->h; h++)
            for (size_t t0 = 0; t0 < p->t; t0 += BT) {
                for (size_t i = 0; i < BT; i++)
                    for (size_t j = 0; j < BT; j++) l_tile[i][j] = in[((b * p->t + t0 + i) * p->h + h) * BT + j];
                if (UG_MUTANT == GDN_SOLVE_TRIL_LEGIT_COLUMN_ORIENTED || UG_MUTANT == GDN_SOLVE_TRIL_LEGIT_REVERSED_SUMS)
                    invert_by_columns(l_tile, x_tile);
                else
                    invert_unit_lower(l_tile, x_tile);
                for (size_t i = 0; i < BT; i++)
                    for (size_t j = 0; j < BT; j++) out[((b * p->t + t0 + i) * p->h + h) * BT + j] = x_tile[i][j];
            }
    return ug_guarded_free(&scratch, KERNEL " scratch");
}
