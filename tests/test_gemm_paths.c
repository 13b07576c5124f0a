/* SPDX-License-Identifier: MIT */
/* The ISA paths' product with general operands and their row operations:
 * on every path the CPU supports, each output is bit for bit the scalar
 * contract of isa.h, at sizes that are not multiples of any path's tile
 * (the 8 x 32 and 6 x 16 blocks, the 16- and 8-lane vectors, the 8 x 16
 * transpose block, the 256-row panels), with awkward values, and nothing
 * outside the outputs is written. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/expf.h"
#include "../kernels/isa.h"
#include "tests.h"

static uint64_t rng_state;

static uint32_t next_u32(void) { return ug_test_next_u32(&rng_state); }

/* Mostly U(-1, 1); also signed zeros, subnormals, large values, infinities,
 * NaNs of either sign, and values exactly halfway between two bf16. */
static float awkward_f32(void)
{
    const uint32_t sign = next_u32() & 0x80000000u;
    switch (next_u32() % 12) {
    case 0: return ug_f32_from_bits(sign);
    case 1: return ug_f32_from_bits(sign | (next_u32() % 0x7FFFFFu + 1u));
    case 2: return ug_f32_from_bits(sign | ug_f32_bits(ldexpf(ug_test_uniform(&rng_state, 1.0f, 2.0f), 40)));
    case 3: return ug_f32_from_bits(sign | 0x7F800000u);
    case 4: return ug_f32_from_bits(sign | 0x7FC00000u | (next_u32() & 0x3FFFFFu));
    case 5: return ug_f32_from_bits((next_u32() & 0xFFFF0000u & ~0x7F800000u) | 0x3F000000u | 0x8000u);
    default: return ug_test_uniform(&rng_state, -1.0f, 1.0f);
    }
}

/* Finite values only (no inf or NaN), so that a product's chain is a number
 * whose every rounding shows. */
static float finite_f32(void)
{
    float x;
    do x = awkward_f32();
    while (!isfinite(x) || fabsf(x) > 0x1p20f);
    return x;
}

static ug_bf16 finite_bf16(void) { return (ug_bf16)(ug_f32_bits(finite_f32()) >> 16); }

static const uint32_t untouched = 0x7FBADBADu;

/* ---- the product ----------------------------------------------------------------- */

typedef enum { A_ROWS, A_COLUMNS, B_COLUMNS, BOTH_REVERSED, N_LAYOUTS } layout;

static const char *const layout_names[N_LAYOUTS] = {"row-major", "A by columns", "B by columns",
                                                    "both reversed"};

/* Runs ug_gemm on one shape and layout with padded strides; counts outputs
 * that differ from the naive chain and padding cells that were written. */
static size_t product_mismatches(size_t m, size_t n, size_t kk, layout lay)
{
    const size_t pad = 3, a_cells = (m + pad) * (kk + pad), b_cells = (kk + pad) * (n + pad), ldc = n + 2;
    float *a = malloc(a_cells * sizeof *a), *c = malloc(m * ldc * sizeof *c);
    ug_bf16 *b = malloc(b_cells * sizeof *b);
    CU_ASSERT_FATAL(a && b && c);
    for (size_t i = 0; i < a_cells; i++) a[i] = finite_f32();
    for (size_t i = 0; i < b_cells; i++) b[i] = finite_bf16();
    for (size_t i = 0; i < m * ldc; i++) c[i] = ug_f32_from_bits(untouched);

    ug_gemm_operands g = {.m = m, .n = n, .kk = kk, .a = a, .a_row = (ptrdiff_t)(kk + pad), .a_col = 1,
                          .b = b, .b_row = (ptrdiff_t)(n + pad), .b_col = 1, .c = c, .ldc = ldc};
    switch (lay) {
    case A_COLUMNS: g.a_row = 1, g.a_col = (ptrdiff_t)(m + pad); break;
    case B_COLUMNS: g.b_row = 1, g.b_col = (ptrdiff_t)(kk + pad); break;
    case BOTH_REVERSED: /* p runs from the last stored term to the first */
        g.a = a + (kk ? kk - 1 : 0), g.a_col = -1;
        g.b = b + (kk ? kk - 1 : 0) * (n + pad), g.b_row = -(ptrdiff_t)(n + pad);
        break;
    default: break;
    }
    ug_gemm(&g);

    size_t bad = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < ldc; j++) {
            uint32_t want = untouched;
            if (j < n) {
                float acc = 0.0f;
                for (size_t p = 0; p < kk; p++)
                    acc = fmaf(g.a[(ptrdiff_t)i * g.a_row + (ptrdiff_t)p * g.a_col],
                               ug_bf16_to_f32(g.b[(ptrdiff_t)p * g.b_row + (ptrdiff_t)j * g.b_col]), acc);
                want = ug_f32_bits(acc);
            }
            if (ug_f32_bits(c[i * ldc + j]) != want)
                UG_TEST_MISMATCH(bad, "%s %s m=%zu n=%zu kk=%zu: C[%zu][%zu] = 0x%08x, want 0x%08x",
                                 ug_isa_name(ug_isa_current()), layout_names[lay], m, n, kk, i, j,
                                 ug_f32_bits(c[i * ldc + j]), want);
        }
    free(a);
    free(b);
    free(c);
    return bad;
}

static void test_product_every_layout_matches_the_naive_chain(void)
{
    /* Around every tile edge: 8/6 rows, 32/16 columns, 16/8 lanes, 256-term
     * panels (kk = 257 continues a chain from the stored partial sums). */
    static const size_t rows[] = {1, 5, 6, 7, 8, 9, 13, 64};
    static const size_t cols[] = {1, 8, 15, 16, 17, 31, 32, 33, 64};
    static const size_t terms[] = {0, 1, 7, 64, 256, 257};
    const size_t max_fmas = 400000; /* keeps valgrind runs short */
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        rng_state = 0x243F6A8885A308D3u;
        size_t bad = 0;
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
            for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
                for (size_t t = 0; t < sizeof terms / sizeof *terms; t++)
                    for (int lay = 0; lay < N_LAYOUTS; lay++)
                        if (rows[r] * cols[c] * terms[t] <= max_fmas)
                            bad += product_mismatches(rows[r], cols[c], terms[t], (layout)lay);
        CU_ASSERT_EQUAL(bad, 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* ---- the row operations ----------------------------------------------------------- */

enum { ROW_MAX = 100, ROW_PAD = 4 };

/* Inputs of one row test, padded: elements n .. n + ROW_PAD must stay as
 * they were in the outputs. */
typedef struct {
    float x[ROW_MAX], y[ROW_MAX], acc[ROW_MAX + ROW_PAD], out[ROW_MAX + ROW_PAD];
    ug_bf16 xb[ROW_MAX], bf[ROW_MAX + ROW_PAD], bf2[ROW_MAX + ROW_PAD];
    float s1, s2;
} row_inputs;

static void fill_row(row_inputs *in)
{
    for (size_t i = 0; i < ROW_MAX; i++) {
        in->x[i] = awkward_f32();
        in->y[i] = awkward_f32();
        in->acc[i] = awkward_f32();
        in->xb[i] = (ug_bf16)(ug_f32_bits(awkward_f32()) >> 16);
    }
    in->s1 = awkward_f32();
    in->s2 = next_u32() % 4 ? ug_test_uniform(&rng_state, -2.0f, 2.0f) : awkward_f32();
}

static void clear_outputs(row_inputs *o, size_t n)
{
    for (size_t i = 0; i < ROW_MAX + ROW_PAD; i++) {
        o->out[i] = ug_f32_from_bits(untouched);
        o->bf[i] = o->bf2[i] = 0xBADu;
        if (i >= n) o->acc[i] = ug_f32_from_bits(untouched);
    }
}

/* Equal bits, or NaN where the contract gives NaN: when two NaNs meet in
 * one operation (or an invalid operation's default NaN meets a NaN operand)
 * IEEE 754 leaves open which one propagates, and the compiled scalar code
 * and the vector instructions may order the operands differently (isa.h). */
static int same_f32(float got, float want)
{
    return ug_f32_bits(got) == ug_f32_bits(want) || (isnan(got) && isnan(want));
}

static int same_bf16(ug_bf16 got, ug_bf16 want)
{
    return got == want || ((got & 0x7FFFu) == 0x7FC0u && (want & 0x7FFFu) == 0x7FC0u);
}

/* The f32 and bf16 outputs of `got` and `want` compared over n + ROW_PAD
 * elements (the padding must be untouched). */
static size_t compare_rows(const char *op, size_t n, const row_inputs *got, const row_inputs *want)
{
    size_t bad = 0;
    for (size_t i = 0; i < n + ROW_PAD; i++) {
        if (!same_f32(got->out[i], want->out[i]) || !same_f32(got->acc[i], want->acc[i]))
            UG_TEST_MISMATCH(bad, "%s %s n=%zu: f32 element %zu = 0x%08x / 0x%08x, want 0x%08x / 0x%08x",
                             ug_isa_name(ug_isa_current()), op, n, i, ug_f32_bits(got->out[i]),
                             ug_f32_bits(got->acc[i]), ug_f32_bits(want->out[i]), ug_f32_bits(want->acc[i]));
        if (!same_bf16(got->bf[i], want->bf[i]) || !same_bf16(got->bf2[i], want->bf2[i]))
            UG_TEST_MISMATCH(bad, "%s %s n=%zu: bf16 element %zu = 0x%04x / 0x%04x, want 0x%04x / 0x%04x",
                             ug_isa_name(ug_isa_current()), op, n, i, got->bf[i], got->bf2[i], want->bf[i],
                             want->bf2[i]);
    }
    return bad;
}

/* One operation on the selected path (got) and as the contract's scalar
 * expression (want). */
static size_t check_operation(int op, size_t n, const row_inputs *in)
{
    static row_inputs got, want;
    got = want = *in;
    clear_outputs(&got, n);
    clear_outputs(&want, n);
    const char *name = "?";
    switch (op) {
    case 0:
        name = "widen";
        ug_rows_widen(n, in->xb, got.out);
        for (size_t i = 0; i < n; i++) want.out[i] = ug_bf16_to_f32(in->xb[i]);
        break;
    case 1:
        name = "round";
        ug_rows_round(n, in->x, got.bf);
        for (size_t i = 0; i < n; i++) want.bf[i] = ug_bf16_from_f32(in->x[i]);
        break;
    case 2:
        name = "scale_round";
        ug_rows_scale_round(n, in->xb, in->s1, in->s2, got.bf);
        for (size_t i = 0; i < n; i++) want.bf[i] = ug_bf16_from_f32(ug_bf16_to_f32(in->xb[i]) * in->s1 * in->s2);
        break;
    case 3:
        name = "mul3";
        ug_rows_mul3(n, in->s1, in->x, in->y, got.out);
        for (size_t i = 0; i < n; i++) want.out[i] = in->s1 * in->x[i] * in->y[i];
        break;
    case 4:
        name = "fma";
        ug_rows_fma(n, in->s1, got.acc, in->y);
        for (size_t i = 0; i < n; i++) want.acc[i] = fmaf(in->s1, in->acc[i], in->y[i]);
        break;
    case 5:
        name = "scaled_sum_round";
        ug_rows_scaled_sum_round(n, in->s1, in->x, in->y, in->s2, got.bf);
        for (size_t i = 0; i < n; i++)
            want.bf[i] = ug_bf16_from_f32(in->s1 * in->x[i] * in->s2 + in->y[i] * in->s2);
        break;
    case 6:
        name = "exp_diff";
        ug_rows_exp_diff(n, in->s1, in->x, got.out);
        for (size_t i = 0; i < n; i++) want.out[i] = ug_expf(in->s1 - in->x[i]);
        break;
    case 7:
        name = "exp_sub";
        ug_rows_exp_sub(n, in->x, in->s1, got.out);
        for (size_t i = 0; i < n; i++) want.out[i] = ug_expf(in->x[i] - in->s1);
        break;
    case 8:
        name = "decay_mul";
        ug_rows_decay_mul(n, in->s1, in->x, in->s2, in->y, got.out);
        for (size_t i = 0; i < n; i++) want.out[i] = in->s2 * ug_expf(in->s1 - in->x[i]) * in->y[i];
        break;
    default:
        name = "residual";
        ug_rows_residual(n, in->xb, in->x, in->s1, got.bf, got.bf2);
        for (size_t i = 0; i < n; i++) {
            float r = ug_bf16_to_f32(in->xb[i]) - in->x[i];
            want.bf[i] = ug_bf16_from_f32(r);
            want.bf2[i] = ug_bf16_from_f32(in->s1 * r);
        }
        break;
    }
    return compare_rows(name, n, &got, &want);
}

static void test_row_operations_match_their_scalar_expressions(void)
{
    static const size_t lengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, ROW_MAX};
    const unsigned long samples = ug_test_random_samples() / 1000 + 5;
    static row_inputs in;
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        rng_state = 0x13198A2E03707344u;
        size_t bad = 0;
        for (unsigned long s = 0; s < samples; s++) {
            fill_row(&in);
            for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++)
                for (int op = 0; op < 10; op++) bad += check_operation(op, lengths[l], &in);
        }
        CU_ASSERT_EQUAL(bad, 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* ---- exp ------------------------------------------------------------------------------ */

/* A sample of all 2^32 arguments: every 65537th bit pattern, and every
 * pattern around the edges of the special cases (|x| = 88, the overflow and
 * the two underflow thresholds) and around 0. */
static size_t exp_arguments(float *out, size_t max)
{
    static const float edges[] = {88.0f, 0x1.62e42ep6f, -88.0f, -0x1.9fe368p6f, -0x1.9d1d9ep6f, 0.0f, -0.0f};
    size_t n = 0;
    for (uint64_t bits = 0; bits < 0x100000000u && n < max; bits += 65537) out[n++] = ug_f32_from_bits((uint32_t)bits);
    for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
        for (int32_t step = -2000; step <= 2000 && n < max; step++)
            out[n++] = ug_f32_from_bits(ug_f32_bits(edges[e]) + (uint32_t)step);
    return n;
}

/* ug_expf is this libm's expf (expf.h: the kernels' bits rest on it; an
 * exhaustive run over all 2^32 arguments found no difference on Debian 12's
 * glibc 2.36), and every path's ug_rows_exp_diff and ug_rows_exp_sub give
 * ug_expf's bits, special cases included, at every vector length. exp_sub's
 * NaNs are compared bit for bit: with a finite a only x can be a NaN, and
 * its sign and payload must come through as the scalar x - a passes them. */
static void test_exp_is_libm_expf_on_every_path(void)
{
    enum { MAX_ARGS = 100000 };
    float *v = malloc(MAX_ARGS * sizeof *v), *neg = malloc(MAX_ARGS * sizeof *neg), *got = malloc(MAX_ARGS * sizeof *got);
    CU_ASSERT_FATAL(v && neg && got);
    const size_t n = exp_arguments(v, MAX_ARGS);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        neg[i] = -v[i];
        if (ug_f32_bits(ug_expf(v[i])) != ug_f32_bits(expf(v[i])))
            UG_TEST_MISMATCH(bad, "ug_expf(%a) = %a, libm expf gives %a", v[i], ug_expf(v[i]), expf(v[i]));
    }
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        for (size_t len = 1, at = 0; at < n; at += len, len = len % 37 + 1) {
            const size_t count = n - at < len ? n - at : len;
            ug_rows_exp_diff(count, 0.0f, neg + at, got + at);
        }
        for (size_t i = 0; i < n; i++)
            if (!same_f32(got[i], ug_expf(0.0f - neg[i])))
                UG_TEST_MISMATCH(bad, "%s exp_diff(0, %a) = %a, ug_expf gives %a", ug_isa_name((ug_isa)isa), neg[i],
                                 got[i], ug_expf(0.0f - neg[i]));
        static const float shifts[] = {0.0f, -0.0f, 1.25f, -0x1p-140f, 100.0f};
        for (size_t s = 0; s < sizeof shifts / sizeof *shifts; s++) {
            const float a = shifts[s];
            for (size_t len = 1, at = 0; at < n; at += len, len = len % 37 + 1)
                ug_rows_exp_sub(n - at < len ? n - at : len, v + at, a, got + at);
            for (size_t i = 0; i < n; i++)
                if (ug_f32_bits(got[i]) != ug_f32_bits(ug_expf(v[i] - a)))
                    UG_TEST_MISMATCH(bad, "%s exp_sub(%a, %a) = %a, ug_expf gives %a", ug_isa_name((ug_isa)isa), v[i],
                                     a, got[i], ug_expf(v[i] - a));
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
    free(v);
    free(neg);
    free(got);
}

/* ug_rows_store, streamed or not, copies exactly the bytes it is given from
 * every alignment of the destination (partial lines at either end) and
 * writes nothing around them. */
static void test_store_copies_exactly_from_every_alignment(void)
{
    enum { MAX_BYTES = 300, AROUND = 64 };
    static const size_t sizes[] = {0, 1, 63, 64, 65, 127, 128, 192, 256, 257, MAX_BYTES};
    static unsigned char src[MAX_BYTES], buf[AROUND + 64 + MAX_BYTES + AROUND] __attribute__((aligned(64)));
    for (size_t i = 0; i < MAX_BYTES; i++) src[i] = (unsigned char)(i * 37u + 11u);
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        size_t bad = 0;
        for (int stream = 0; stream < 2; stream++)
            for (size_t offset = 0; offset < 64; offset++)
                for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
                    memset(buf, 0xA5, sizeof buf);
                    unsigned char *dst = buf + AROUND + offset;
                    ug_rows_store(sizes[s], src, dst, stream);
                    ug_rows_stream_end();
                    for (size_t i = 0; i < sizeof buf; i++) {
                        const ptrdiff_t at = (ptrdiff_t)i - (ptrdiff_t)(AROUND + offset);
                        const unsigned char want = at >= 0 && (size_t)at < sizes[s] ? src[at] : 0xA5;
                        if (buf[i] != want)
                            UG_TEST_MISMATCH(bad, "%s store(%zu bytes, stream %d) at offset %zu: byte %td = 0x%02x, "
                                             "want 0x%02x", ug_isa_name((ug_isa)isa), sizes[s], stream, offset, at,
                                             buf[i], want);
                    }
                }
        CU_ASSERT_EQUAL(bad, 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

static void test_transpose_moves_every_element_and_nothing_else(void)
{
    static const size_t sizes[] = {1, 7, 8, 9, 16, 17, 33, 64};
    const size_t n_sizes = sizeof sizes / sizeof *sizes, lds_pad = 5, ldd_pad = 3;
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        size_t bad = 0;
        for (size_t r = 0; r < n_sizes; r++)
            for (size_t c = 0; c < n_sizes; c++) {
                const size_t rows = sizes[r], cols = sizes[c], lds = cols + lds_pad, ldd = rows + ldd_pad;
                ug_bf16 *src = malloc(rows * lds * sizeof *src), *dst = malloc(cols * ldd * sizeof *dst);
                CU_ASSERT_FATAL(src && dst);
                for (size_t i = 0; i < rows * lds; i++) src[i] = (ug_bf16)(i * 7919u + 1u);
                for (size_t i = 0; i < cols * ldd; i++) dst[i] = 0xBADu;
                ug_rows_transpose(rows, cols, src, lds, dst, ldd);
                for (size_t j = 0; j < cols; j++)
                    for (size_t i = 0; i < ldd; i++) {
                        ug_bf16 want = i < rows ? src[i * lds + j] : 0xBADu;
                        if (dst[j * ldd + i] != want)
                            UG_TEST_MISMATCH(bad, "%s %zu x %zu: dst[%zu][%zu] = 0x%04x, want 0x%04x",
                                             ug_isa_name((ug_isa)isa), rows, cols, j, i, dst[j * ldd + i], want);
                    }
                free(src);
                free(dst);
            }
        CU_ASSERT_EQUAL(bad, 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

UG_TEST_SUITE(gemm_paths_suite, "gemm_paths",
              UG_TEST(test_product_every_layout_matches_the_naive_chain),
              UG_TEST(test_row_operations_match_their_scalar_expressions),
              UG_TEST(test_exp_is_libm_expf_on_every_path),
              UG_TEST(test_store_copies_exactly_from_every_alignment),
              UG_TEST(test_transpose_moves_every_element_and_nothing_else));
