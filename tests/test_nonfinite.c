/* SPDX-License-Identifier: MIT */
/* Non-finite and extreme inputs, for every family (issue 9): NaN, +-inf,
 * values at the edge of bf16/f32 overflow, subnormals and zeros injected into
 * each floating-point input tensor of a small accepted case. Whatever the
 * kernel computes, it must not crash, must stay inside its buffers (guards),
 * must return a status (UG_OK, or UG_EINVAL naming the value for parameters
 * it validates), and when it returns UG_OK it must write every output
 * element.
 *
 * Then the semantics (docs/nonfinite.md): one table, family x input tensor x
 * {NaN, +inf, -inf, 0x1.fep127, subnormal, all-zero tensor}, says how the
 * kernel's classes compare with the reference's; for every cell the kernel
 * and both reference modes run on the case, and every element must pass the
 * gate's per-element rule (harness/ulp.c), every element outside the wild
 * cones must be finite, and the comparison must be the table's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "../harness/chain.h"
#include "../harness/sweep.h"
#include "../harness/ulp.h"
#include "tests.h"

static const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0x1.fep127f, -0x1.fep127f,
                                 0x1p-140f, -0x1p-149f, 0.0f, -0.0f};
static const unsigned char poison = 0xA7;

static void put_special(ug_buf *b, size_t i, float x)
{
    if (b->dtype == UG_BF16) ((ug_bf16 *)b->data)[i] = ug_bf16_from_f32(x);
    else ((float *)b->data)[i] = x;
}

typedef struct {
    const ug_family *f;
    ug_guarded mem[UG_MAX_BUFFERS];
    ug_buf bufs[UG_MAX_BUFFERS];
} case_memory;

static void case_alloc(case_memory *cm, const ug_case *c)
{
    const ug_family *f = cm->f = c->family;
    for (size_t i = 0; i < f->n_buffers; i++) {
        CU_ASSERT_FATAL(ug_family_buffer_count(f, &c->params, i, &cm->bufs[i].count).code == UG_OK);
        cm->bufs[i].dtype = f->buffers[i].dtype;
        size_t bytes = cm->bufs[i].count * ug_dtype_size(cm->bufs[i].dtype);
        CU_ASSERT_FATAL(ug_guarded_alloc(&cm->mem[i], bytes).code == UG_OK);
        cm->bufs[i].data = ug_guarded_data(&cm->mem[i]);
        memset(cm->bufs[i].data, 0, bytes);
    }
}

static void case_free(case_memory *cm)
{
    for (size_t i = 0; i < cm->f->n_buffers; i++)
        CU_ASSERT_EQUAL(ug_guarded_free(&cm->mem[i], cm->f->buffers[i].name).code, UG_OK);
}

/* Runs the kernel on freshly poisoned outputs; checks the contract above. */
static void run_and_check(case_memory *cm, const ug_case *c, const char *what)
{
    const ug_family *f = cm->f;
    for (size_t i = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) memset(cm->bufs[i].data, poison, cm->bufs[i].count * ug_dtype_size(cm->bufs[i].dtype));
    ug_status st = f->run(&c->params, cm->bufs);
    for (size_t i = 0; i < f->n_buffers; i++)
        if (!ug_guarded_intact(&cm->mem[i])) {
            printf("\n    %s %s: guard of %s overwritten", f->name, what, f->buffers[i].name);
            CU_FAIL("guard overwritten");
        }
    if (st.code != UG_OK) {
        if (st.code != UG_EINVAL || !st.msg[0]) {
            printf("\n    %s %s: %s: %s", f->name, what, ug_code_name(st.code), st.msg);
            CU_FAIL("a kernel failed on extreme inputs without a validation message");
        }
        return;
    }
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!f->buffers[i].is_output) continue;
        size_t size = ug_dtype_size(cm->bufs[i].dtype);
        for (size_t e = 0; e < cm->bufs[i].count; e++) {
            const unsigned char *p = (const unsigned char *)cm->bufs[i].data + e * size;
            bool all_poison = true;
            for (size_t k = 0; k < size; k++) all_poison &= p[k] == poison;
            if (all_poison) {
                printf("\n    %s %s: %s[%zu] left unwritten", f->name, what, f->buffers[i].name, e);
                CU_FAIL("output element left unwritten");
                break;
            }
        }
    }
}

static void test_every_family_survives_extreme_inputs(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    size_t families = 0;
    for (size_t fi = 0; fi < ug_family_count(); fi++) {
        const ug_family *f = ug_family_at(fi);
        const ug_case *c = NULL;
        for (size_t i = 0; i < sw.n_cases && !c; i++)
            if (sw.cases[i].family == f && !sw.cases[i].expect_reject) c = &sw.cases[i];
        if (!c) continue;
        families++;
        case_memory cm;
        case_alloc(&cm, c);
        for (size_t b = 0; b < f->n_buffers; b++) {
            if (f->buffers[b].is_output || cm.bufs[b].count == 0) continue;
            if (cm.bufs[b].dtype != UG_BF16 && cm.bufs[b].dtype != UG_F32) continue;
            for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++) {
                gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
                gsl_rng_set(rng, c->seed);
                CU_ASSERT_FATAL(f->generate(&c->params, c->regime, rng, cm.bufs).code == UG_OK);
                gsl_rng_free(rng);
                /* one element at the start and one in the middle */
                put_special(&cm.bufs[b], 0, specials[s]);
                put_special(&cm.bufs[b], cm.bufs[b].count / 2, specials[s]);
                char what[96];
                snprintf(what, sizeof what, "%s = %a", f->buffers[b].name, (double)specials[s]);
                run_and_check(&cm, c, what);
            }
        }
        /* all-zero inputs */
        for (size_t b = 0; b < f->n_buffers; b++)
            if (!f->buffers[b].is_output) memset(cm.bufs[b].data, 0, cm.bufs[b].count * ug_dtype_size(cm.bufs[b].dtype));
        run_and_check(&cm, c, "all inputs zero");
        case_free(&cm);
    }
    CU_ASSERT(families >= 8);
    ug_sweep_free(&sw);
}

/* ---- the semantics table ------------------------------------------------ */

/* The columns: a value planted at element count * 5/8 of one input tensor
 * (for [B, T, ...] tensors of two chunks, row 16 of the second chunk), or
 * that whole tensor zeroed. */
enum { COL_NAN, COL_PLUS_INF, COL_MINUS_INF, COL_HUGE, COL_SUBNORMAL, COL_ZERO, N_COLS };
static const float planted[N_COLS] = {NAN, INFINITY, -INFINITY, 0x1.fep127f, 0x1p-140f, 0.0f};
static const char *const col_names[N_COLS] = {"NaN", "+inf", "-inf", "0x1.fep127", "2^-140", "all-zero"};

/* A cell: 'A' the kernel's class equals the reference's in the output's
 * format, RN_T(r) (NaN sign not compared), on every element, and some
 * element is NaN or infinite;
 * 'F' every element of both is finite; 'W' some element's class differs,
 * each on a wild cone (the gate's rule accepts it, docs/nonfinite.md says why). */
typedef struct {
    const char *family, *tensor;
    const char cells[N_COLS + 1];
} expectation;

static const expectation table[] = {
    {"attn_reduce_fwht", "htmp", "AAAFFF"},
    {"gdn_chunk_cumsum", "g_raw", "AAAFFF"},
    {"gdn_chunk_o", "q", "AAAFFF"},
    {"gdn_chunk_o", "k", "AAAFFF"},
    {"gdn_chunk_o", "v", "WWWFFF"},
    {"gdn_chunk_o", "h", "AAAFFF"},
    {"gdn_chunk_o", "g", "AAAAFF"},
    {"gdn_chunk_scaled_kkt", "k", "AAAFFF"},
    {"gdn_chunk_scaled_kkt", "beta", "AAAFFF"},
    {"gdn_chunk_scaled_kkt", "g", "AAAAFF"},
    {"gdn_chunk_state", "k", "AAAFFF"},
    {"gdn_chunk_state", "w", "AAAFFF"},
    {"gdn_chunk_state", "u", "AAAFFF"},
    {"gdn_chunk_state", "g", "AFAFFF"},
    {"gdn_chunk_state", "h0", "AAAFFF"},
    {"gdn_e2e", "q", "AWWWFF"},
    {"gdn_e2e", "k", "WWWWFF"},
    {"gdn_e2e", "v", "WWWFFF"},
    {"gdn_e2e", "beta", "WWWWFF"},
    {"gdn_e2e", "g_raw", "WWWWFF"},
    {"gdn_e2e", "h0", "AAAFFF"},
    {"gdn_recompute_wu", "k", "WWWFFF"},
    {"gdn_recompute_wu", "v", "WWWFFF"},
    {"gdn_recompute_wu", "beta", "WWWFFF"},
    {"gdn_recompute_wu", "g", "WWFWFF"},
    {"gdn_recompute_wu", "A", "AAAFFF"},
    {"gdn_solve_tril", "L", "AAAFFF"},
    {"head_norm_rope", "input_bf16", "AAAFFF"},
    {"head_norm_rope", "norm_weight_bf16", "AAAFFF"},
    {"head_norm_rope", "cos_cache", "AAAAFF"},
    {"head_norm_rope", "sin_cache", "AAAAFF"},
    {"head_norm_rope", "input_f32", "AAAFFF"},
    {"head_norm_rope", "norm_weight_f32", "AAAWFF"},
    {"head_norm_rope", "freq_factors", "AFFFWA"},
};

static const expectation *expectation_of(const char *family, const char *tensor)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].family, family) && !strcmp(table[i].tensor, tensor)) return &table[i];
    return NULL;
}

static double element_value(const ug_buf *b, size_t i)
{
    return b->dtype == UG_BF16 ? ug_bf16_to_f32(((const ug_bf16 *)b->data)[i]) : ((const float *)b->data)[i];
}

static uint32_t element_bits(const ug_buf *b, size_t i)
{
    if (b->dtype == UG_BF16) return ((const ug_bf16 *)b->data)[i];
    uint32_t u;
    memcpy(&u, (const float *)b->data + i, sizeof u);
    return u;
}

/* 0 finite, 1 NaN, 2 +inf, 3 -inf: the class the rule compares. */
static int class_of(double x) { return isnan(x) ? 1 : isinf(x) ? (x > 0 ? 2 : 3) : 0; }

/* The accepted memcheck case of f where tensor b is not empty and the
 * outputs are largest (most chunks and heads outside one cone), or NULL. */
static const ug_case *case_for(const ug_sweep *sw, const ug_family *f, size_t b)
{
    const ug_case *best = NULL;
    size_t best_out = 0;
    for (size_t i = 0; i < sw->n_cases; i++) {
        const ug_case *c = &sw->cases[i];
        if (c->family != f || c->expect_reject) continue;
        size_t n = 0, out = 0;
        CU_ASSERT_FATAL(ug_family_buffer_count(f, &c->params, b, &n).code == UG_OK);
        if (n == 0) continue;
        for (size_t o = 0; o < f->n_buffers; o++)
            if (f->buffers[o].is_output) {
                CU_ASSERT_FATAL(ug_family_buffer_count(f, &c->params, o, &n).code == UG_OK);
                out += n;
            }
        if (out > best_out) best = c, best_out = out;
    }
    return best;
}

typedef struct {
    size_t gate_failures, unaffected_nonfinite, class_differs, nonfinite, wild;
} cell_result;

/* Kernel and both reference modes on the planted case; every element
 * measured with the gate's rule. */
static void run_cell(case_memory *cm, const ug_case *c, size_t tensor, int col, cell_result *res)
{
    const ug_family *f = cm->f;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, c->seed);
    CU_ASSERT_FATAL(f->generate(&c->params, c->regime, rng, cm->bufs).code == UG_OK);
    gsl_rng_free(rng);
    ug_buf *in = &cm->bufs[tensor];
    if (col == COL_ZERO) memset(in->data, 0, in->count * ug_dtype_size(in->dtype));
    else put_special(in, in->count * 5 / 8, planted[col]); /* a chunk's interior: masked terms exist */
    ug_status st = f->run(&c->params, cm->bufs);
    if (st.code != UG_OK) {
        printf("\n    %s %s = %s: kernel: %s", f->name, f->buffers[tensor].name, col_names[col], st.msg);
        CU_FAIL("the kernel refused a planted value");
        return;
    }
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        ug_ref_value *outs[UG_MAX_BUFFERS];
        size_t n_out = 0;
        for (size_t o = 0; o < f->n_buffers; o++)
            if (f->buffers[o].is_output) outs[n_out++] = calloc(cm->bufs[o].count + 1, sizeof(ug_ref_value));
        st = ug_case_reference(f, &c->params, cm->bufs, ug_test_cpu_model(), (ug_ref_mode)m, outs);
        bool present[UG_MAX_BUFFERS], measured[UG_MAX_BUFFERS];
        for (size_t i = 0; i < f->n_buffers; i++) present[i] = true;
        if (st.code == UG_OK) st = ug_case_measured(f, present, (ug_ref_mode)m, measured);
        if (st.code != UG_OK) {
            printf("\n    %s %s = %s: reference: %s", f->name, f->buffers[tensor].name, col_names[col], st.msg);
            CU_FAIL("the reference refused a planted value");
        }
        for (size_t o = 0, k = 0; o < f->n_buffers && st.code == UG_OK; o++) {
            if (!f->buffers[o].is_output) continue;
            const ug_buf *b = &cm->bufs[o];
            for (size_t i = 0; i < b->count && measured[o]; i++) {
                const ug_ref_value *r = &outs[k][i];
                const double y = element_value(b, i);
                ug_elem_error e = ug_measure(element_bits(b, i), b->dtype, r);
                res->gate_failures += !e.class_ok || e.ratio > 1.0;
                /* the reference in the output's format: RN_T(r) */
                const double rn = b->dtype == UG_BF16 ? ug_bf16_to_f32((ug_bf16)r->rn_bits) : ug_f32_from_bits(r->rn_bits);
                res->unaffected_nonfinite += r->wild == UG_WILD_NONE && (!isfinite(y) || !isfinite(rn));
                res->class_differs += class_of(y) != class_of(rn);
                res->nonfinite += !isfinite(y) || !isfinite(rn);
                res->wild += r->wild != UG_WILD_NONE;
            }
            k++;
        }
        for (size_t k = 0; k < n_out; k++) free(outs[k]);
    }
}

static void test_every_family_meets_the_nonfinite_table(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    size_t rows = 0, wrong = 0;
    for (size_t fi = 0; fi < ug_family_count(); fi++) {
        const ug_family *f = ug_family_at(fi);
        for (size_t t = 0; t < f->n_buffers; t++) {
            if (f->buffers[t].is_output || (f->buffers[t].dtype != UG_BF16 && f->buffers[t].dtype != UG_F32)) continue;
            const ug_case *c = case_for(&sw, f, t);
            if (!c) continue;
            const expectation *x = expectation_of(f->name, f->buffers[t].name);
            if (!x) {
                printf("\n    %s %s: no row in the table", f->name, f->buffers[t].name);
                CU_FAIL("a family's input tensor has no row in the non-finite table");
                continue;
            }
            rows++;
            case_memory cm;
            case_alloc(&cm, c);
            /* Under valgrind (make memcheck) the NaN column alone: the
             * references' non-finite paths are what it has to see; the
             * survival test above covers every value's memory safety. */
            const int cols = RUNNING_ON_VALGRIND ? 1 : N_COLS;
            char seen[N_COLS + 1] = {0};
            for (int col = 0; col < cols; col++) {
                cell_result res = {0};
                run_cell(&cm, c, t, col, &res);
                seen[col] = res.class_differs ? 'W' : res.nonfinite ? 'A' : 'F';
                /* Nothing the sweeps generate may open a cone: a subnormal or
                 * a zero tensor opens none unless it changes a class. */
                if ((col == COL_SUBNORMAL || col == COL_ZERO) && seen[col] == 'F' && res.wild) {
                    printf("\n    %s %s = %s: %zu elements marked wild", f->name, f->buffers[t].name,
                           col_names[col], res.wild);
                    CU_FAIL("a cone opened without a wild input");
                }
                if (res.gate_failures || res.unaffected_nonfinite) {
                    printf("\n    %s %s = %s: %zu elements fail the gate's rule, %zu non-finite outside a wild cone",
                           f->name, f->buffers[t].name, col_names[col], res.gate_failures, res.unaffected_nonfinite);
                    CU_FAIL("the kernel or the reference breaks the non-finite rule");
                }
            }
            if (strncmp(seen, x->cells, (size_t)cols)) {
                UG_TEST_MISMATCH(wrong, "%s %s: measured %s, the table says %s", f->name, f->buffers[t].name, seen,
                                 x->cells);
            }
            for (size_t i = 0; i < f->n_buffers; i++)
                CU_ASSERT_EQUAL(ug_guarded_free(&cm.mem[i], f->buffers[i].name).code, UG_OK);
        }
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(rows, sizeof table / sizeof table[0]);
    ug_sweep_free(&sw);
}

UG_TEST_SUITE(nonfinite_suite, "nonfinite", UG_TEST(test_every_family_survives_extreme_inputs),
              UG_TEST(test_every_family_meets_the_nonfinite_table));
