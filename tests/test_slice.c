/* SPDX-License-Identifier: MIT */
/* Slices (harness/slice.h): gathering a slice takes exactly the case's
 * elements ug_slice_index names, every output element lies in exactly one
 * slice, and the reference computed on a slice equals the case's reference at
 * those elements, field for field, in both modes (a pipeline's chained stages
 * included). Checked on every family that declares slicing, on a case of the
 * default sweep with several slices. And a family that declares its staged
 * reference the exact one has equal references in both modes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/chain.h"
#include "../harness/family.h"
#include "../harness/runner.h"
#include "../harness/slice.h"
#include "../harness/sweep.h"
#include "tests.h"

/* A case of family f with the most slices, among the smallest such. */
static const ug_case *case_with_slices(const ug_sweep *sw, const ug_family *f)
{
    const ug_case *best = NULL;
    size_t best_slices = 0;
    double best_elements = 0;
    for (size_t k = 0; k < sw->n_cases; k++) {
        const ug_case *c = &sw->cases[k];
        if (c->family != f || c->expect_reject) continue;
        ug_slicing_plan sp;
        ug_slice_plan(f, &c->params, &sp);
        double elements = 0;
        for (size_t i = 0; i < f->n_buffers; i++) {
            size_t n = 0;
            const ug_status st = ug_family_buffer_count(f, &c->params, i, &n);
            if (ug_is_ok(&st)) elements += (double)n;
        }
        if (sp.n > best_slices || (sp.n == best_slices && elements < best_elements)) {
            best = c, best_slices = sp.n, best_elements = elements;
        }
    }
    return best;
}

typedef struct {
    ug_buf buf[UG_MAX_BUFFERS];
} buffers;

static void buffers_alloc(const ug_family *f, const ug_params *p, buffers *b)
{
    for (size_t i = 0; i < f->n_buffers; i++) {
        CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(f, p, i, &b->buf[i].count).code, UG_OK);
        b->buf[i].dtype = f->buffers[i].dtype;
        b->buf[i].data = calloc(b->buf[i].count + 1, ug_dtype_size(b->buf[i].dtype));
        CU_ASSERT_PTR_NOT_NULL_FATAL(b->buf[i].data);
    }
}

static void buffers_free(const ug_family *f, buffers *b)
{
    for (size_t i = 0; i < f->n_buffers; i++) free(b->buf[i].data);
}

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static bool same_value(const ug_ref_value *a, const ug_ref_value *b)
{
    return (bits_of(a->r_hi) == bits_of(b->r_hi) || (isnan(a->r_hi) && isnan(b->r_hi))) &&
           bits_of(a->r_lo) == bits_of(b->r_lo) && a->rn_bits == b->rn_bits && a->flagged == b->flagged &&
           bits_of(a->bound) == bits_of(b->bound) && bits_of(a->abs_sum) == bits_of(b->abs_sum) &&
           a->wild == b->wild && a->no_bound == b->no_bound;
}

/* The reference of every output in one mode, into fresh arrays. */
static void reference(const ug_family *f, const ug_params *p, const buffers *b, ug_ref_mode m,
                      ug_ref_value *outs[UG_MAX_BUFFERS])
{
    for (size_t i = 0, o = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) {
            outs[o] = calloc(b->buf[i].count + 1, sizeof(ug_ref_value));
            CU_ASSERT_PTR_NOT_NULL_FATAL(outs[o]);
            o++;
        }
    CU_ASSERT_EQUAL_FATAL(ug_case_reference(f, p, b->buf, ug_test_cpu_model(), m, outs).code, UG_OK);
}

static void check_family(const ug_sweep *sw, const ug_family *f)
{
    const ug_case *c = case_with_slices(sw, f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    ug_slicing_plan sp;
    ug_slice_plan(f, &c->params, &sp);
    CU_ASSERT(sp.n >= 2 && !sp.whole);
    buffers full;
    buffers_alloc(f, &c->params, &full);
    CU_ASSERT_EQUAL_FATAL(ug_case_generate(c, full.buf).code, UG_OK);
    CU_ASSERT_EQUAL_FATAL(f->run(&c->params, full.buf).code, UG_OK);
    ug_ref_value *whole[UG_REF_MODE_COUNT][UG_MAX_BUFFERS];
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) reference(f, &c->params, &full, (ug_ref_mode)m, whole[m]);
    size_t *covered[UG_MAX_BUFFERS] = {0};
    size_t gathered_wrong = 0, walked_wrong = 0, values_differ = 0, compared = 0;
    for (size_t s = 0; s < sp.n; s++) {
        ug_params sub;
        ug_slice_params(&sp, s, &sub);
        buffers part;
        buffers_alloc(f, &sub, &part);
        for (size_t i = 0; i < f->n_buffers; i++) {
            ug_slice_gather(&sp, s, i, &full.buf[i], &part.buf[i]);
            const size_t size = ug_dtype_size(full.buf[i].dtype);
            ug_slice_layout layout;
            ug_slice_layout_of(&sp, s, i, &layout);
            ug_slice_walk walk;
            ug_slice_walk_start(&walk, &layout);
            for (size_t j = 0; j < part.buf[i].count; j++) {
                const size_t at = ug_slice_index(&sp, s, i, j);
                walked_wrong += ug_slice_walk_next(&walk) != at;
                gathered_wrong += at >= full.buf[i].count ||
                                  memcmp((char *)part.buf[i].data + j * size, (char *)full.buf[i].data + at * size,
                                         size) != 0;
            }
        }
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_ref_value *sliced[UG_MAX_BUFFERS];
            reference(f, &sub, &part, (ug_ref_mode)m, sliced);
            for (size_t i = 0, o = 0; i < f->n_buffers; i++) {
                if (!f->buffers[i].is_output) continue;
                if (m == 0 && !covered[i]) covered[i] = calloc(full.buf[i].count + 1, sizeof(size_t));
                for (size_t j = 0; j < part.buf[i].count; j++) {
                    const size_t at = ug_slice_index(&sp, s, i, j);
                    if (at >= full.buf[i].count) continue;
                    if (m == 0) covered[i][at]++;
                    compared++;
                    if (!same_value(&sliced[o][j], &whole[m][o][at]))
                        UG_TEST_MISMATCH(values_differ, "%s %s[%zu] %s: the slice's reference differs", f->name,
                                         f->buffers[i].name, at, ug_ref_mode_name((ug_ref_mode)m));
                }
                free(sliced[o++]);
            }
        }
        buffers_free(f, &part);
    }
    size_t not_once = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!covered[i]) continue;
        for (size_t at = 0; at < full.buf[i].count; at++) not_once += covered[i][at] != 1;
        free(covered[i]);
    }
    CU_ASSERT_EQUAL(gathered_wrong, 0);
    CU_ASSERT_EQUAL(walked_wrong, 0);
    CU_ASSERT_EQUAL(values_differ, 0);
    CU_ASSERT_EQUAL(not_once, 0);
    CU_ASSERT(compared > 0);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        for (size_t i = 0, o = 0; i < f->n_buffers; i++)
            if (f->buffers[i].is_output) free(whole[m][o++]);
    buffers_free(f, &full);
}

static void test_slices_give_the_case_reference(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/default", &sw).code == UG_OK);
    size_t families = 0;
    for (size_t k = 0; k < ug_family_count(); k++) {
        const ug_family *f = ug_family_at(k);
        if (!f->slicing.on) continue;
        check_family(&sw, f);
        families++;
    }
    CU_ASSERT(families >= 8);
    ug_sweep_free(&sw);
}

/* A family that declares staged_is_exact (the runner then computes its
 * reference once for both modes) has equal references in both modes, field
 * for field, on a case of every regime of the default sweep. */
static void test_staged_is_exact_where_declared(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/default", &sw).code == UG_OK);
    size_t families = 0, compared = 0, differ = 0;
    for (size_t k = 0; k < ug_family_count(); k++) {
        const ug_family *f = ug_family_at(k);
        if (!f->staged_is_exact) continue;
        families++;
        for (size_t regime = 0; regime < f->n_regimes; regime++) {
            const ug_case *c = NULL;
            for (size_t j = 0; j < sw.n_cases && !c; j++)
                if (sw.cases[j].family == f && !sw.cases[j].expect_reject && sw.cases[j].regime == regime)
                    c = &sw.cases[j];
            if (!c) continue;
            buffers b;
            buffers_alloc(f, &c->params, &b);
            CU_ASSERT_EQUAL_FATAL(ug_case_generate(c, b.buf).code, UG_OK);
            ug_ref_value *modes[UG_REF_MODE_COUNT][UG_MAX_BUFFERS];
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) reference(f, &c->params, &b, (ug_ref_mode)m, modes[m]);
            for (size_t i = 0, o = 0; i < f->n_buffers; i++) {
                if (!f->buffers[i].is_output) continue;
                for (size_t j = 0; j < b.buf[i].count; j++, compared++)
                    if (!same_value(&modes[UG_REF_EXACT][o][j], &modes[UG_REF_STAGED][o][j]))
                        UG_TEST_MISMATCH(differ, "%s %s[%zu] (%s): staged differs from exact", f->name,
                                         f->buffers[i].name, j, c->label);
                for (int m = 0; m < UG_REF_MODE_COUNT; m++) free(modes[m][o]);
                o++;
            }
            buffers_free(f, &b);
        }
    }
    CU_ASSERT(families >= 5 && compared > 0);
    CU_ASSERT_EQUAL(differ, 0);
    ug_sweep_free(&sw);
}

/* What ug_case_reference_streamed handed over, against the references
 * computed at once. */
typedef struct {
    const ug_family *f;
    const buffers *b;
    ug_ref_value *const *whole[UG_REF_MODE_COUNT];
    size_t handed[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    size_t compared, differ;
} streamed_check;

static ug_status compare_part(void *ctx, ug_ref_mode m, const bool measured[UG_MAX_BUFFERS], ug_ref_value *const *outs)
{
    streamed_check *sc = ctx;
    for (size_t i = 0, o = 0; i < sc->f->n_buffers; i++) {
        if (!sc->f->buffers[i].is_output) continue;
        sc->handed[i][m] += measured[i];
        for (size_t j = 0; measured[i] && j < sc->b->buf[i].count; j++, sc->compared++)
            if (!same_value(&outs[o][j], &sc->whole[m][o][j]))
                UG_TEST_MISMATCH(sc->differ, "%s %s[%zu] %s: the streamed reference differs from the one at once",
                                 sc->f->name, sc->f->buffers[i].name, j, ug_ref_mode_name(m));
        o++;
    }
    return ug_ok();
}

/* The parts of the reference last to first, one call each (the runner
 * spreads them over threads in any order): *peak the largest part's bytes. */
static ug_status parts_backwards(const ug_family *f, const ug_params *p, const bool present[UG_MAX_BUFFERS],
                                 ug_buf *bufs, const ug_reference_stream *stream, size_t *peak)
{
    size_t n_parts, part_peak;
    UG_TRY(ug_case_reference_parts(f, present, &n_parts));
    *peak = 0;
    for (size_t part = n_parts; part-- > 0;) {
        UG_TRY(ug_case_reference_part(f, p, present, part, bufs, ug_test_cpu_model(), stream, &part_peak));
        if (part_peak > *peak) *peak = part_peak;
    }
    return ug_ok();
}

/* Streamed (the runner's way: all parts in order, or backwards) as at
 * once: every measured output once per mode with ug_case_reference's
 * values, holding one part at a time. */
static void check_streamed(const ug_family *f, const ug_case *c, const buffers *b, bool backwards, size_t *compared,
                           size_t *differ)
{
    ug_ref_value *whole[UG_REF_MODE_COUNT][UG_MAX_BUFFERS];
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) reference(f, &c->params, b, (ug_ref_mode)m, whole[m]);
    streamed_check sc = {f, b, {whole[0], whole[1]}, {{0}}, 0, 0};
    size_t peak = 0, estimate = 0, all_bytes = 0;
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) present[i] = !f->buffers[i].optional || b->buf[i].data;
    ug_buf bufs[UG_MAX_BUFFERS];
    memcpy(bufs, b->buf, sizeof bufs);
    const ug_reference_stream stream = {NULL, compare_part, &sc};
    const ug_status st = backwards ? parts_backwards(f, &c->params, present, bufs, &stream, &peak)
                                   : ug_case_reference_streamed(f, &c->params, present, bufs, ug_test_cpu_model(),
                                                                &stream, &peak);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL_FATAL(ug_case_reference_bytes(f, &c->params, &estimate).code, UG_OK);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        bool measured[UG_MAX_BUFFERS];
        CU_ASSERT_EQUAL_FATAL(ug_case_measured(f, present, (ug_ref_mode)m, measured).code, UG_OK);
        for (size_t i = 0; i < f->n_buffers; i++)
            if (sc.handed[i][m] != (f->buffers[i].is_output && measured[i]))
                UG_TEST_MISMATCH(sc.differ, "%s %s %s: handed over %zu times, measured: %d", f->name,
                                 f->buffers[i].name, ug_ref_mode_name((ug_ref_mode)m), sc.handed[i][m], measured[i]);
    }
    for (size_t i = 0, o = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) {
            all_bytes += (b->buf[i].count ? b->buf[i].count : 1) * sizeof(ug_ref_value);
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) free(whole[m][o]);
            o++;
        }
    /* one part at a time: a pipeline's largest stage, never every output at once */
    CU_ASSERT(peak > 0 && peak <= estimate);
    if (f->n_stages) CU_ASSERT(2 * peak < all_bytes);
    *compared += sc.compared;
    *differ += sc.differ;
}

/* ug_case_reference_streamed, and its parts run backwards, equal
 * ug_case_reference in both modes, for every family: gdn_e2e's chain
 * included, with every intermediate handed over and without A (its solve
 * stage, and the stages reading A, skipped). */
static void test_streamed_equals_the_reference_at_once(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/default", &sw).code == UG_OK);
    size_t compared = 0, differ = 0;
    for (size_t k = 0; k < ug_family_count(); k++) {
        const ug_family *f = ug_family_at(k);
        const ug_case *c = case_with_slices(&sw, f);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        buffers b;
        buffers_alloc(f, &c->params, &b);
        CU_ASSERT_EQUAL_FATAL(ug_case_generate(c, b.buf).code, UG_OK);
        CU_ASSERT_EQUAL_FATAL(f->run(&c->params, b.buf).code, UG_OK);
        for (int backwards = 0; backwards < 2; backwards++) check_streamed(f, c, &b, backwards, &compared, &differ);
        const int a = ug_family_buffer_index(f, "A");
        if (f->n_stages && a >= 0) {
            void *kept = b.buf[a].data;
            b.buf[a].data = NULL;
            check_streamed(f, c, &b, false, &compared, &differ);
            b.buf[a].data = kept;
        }
        buffers_free(f, &b);
    }
    CU_ASSERT(compared > 0);
    CU_ASSERT_EQUAL(differ, 0);
    ug_sweep_free(&sw);
}

/* gdn_e2e's parts largest first: chunk_state's (h, v_new, final_state)
 * first, the cumsum's (g) last, each part once. */
static void test_parts_largest_first(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/default", &sw).code == UG_OK);
    const ug_family *f = ug_family_find("gdn_e2e");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const ug_case *c = case_with_slices(&sw, f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) present[i] = true;
    size_t n_parts, order[UG_MAX_BUFFERS], seen = 0;
    CU_ASSERT_EQUAL_FATAL(ug_case_reference_parts(f, present, &n_parts).code, UG_OK);
    CU_ASSERT_FATAL(n_parts == 1 + f->n_stages && n_parts <= UG_MAX_BUFFERS);
    CU_ASSERT_EQUAL_FATAL(ug_case_reference_part_order(f, &c->params, present, n_parts, order).code, UG_OK);
    for (size_t k = 0; k < n_parts; k++) seen |= (size_t)1 << order[k];
    CU_ASSERT_EQUAL(seen, ((size_t)1 << n_parts) - 1);
    CU_ASSERT_FATAL(order[0] > 0 && order[n_parts - 1] > 0); /* stages, not the family's own part */
    CU_ASSERT_STRING_EQUAL(f->stages[order[0] - 1].family, "gdn_chunk_state");
    CU_ASSERT_STRING_EQUAL(f->stages[order[n_parts - 1] - 1].family, "gdn_chunk_cumsum");
    ug_sweep_free(&sw);
}

/* A family without slicing is one slice: the case itself. */
static void test_no_slicing_is_the_whole_case(void)
{
    const ug_family *f = ug_family_find("attn_reduce_fwht");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const ug_params p = {{0}};
    ug_slicing_plan sp;
    ug_slice_plan(f, &p, &sp);
    CU_ASSERT(sp.whole && sp.n == 1);
    CU_ASSERT_EQUAL(ug_slice_index(&sp, 0, 0, 17), 17);
    ug_slice_layout layout;
    ug_slice_layout_of(&sp, 0, 0, &layout);
    ug_slice_walk walk;
    ug_slice_walk_start(&walk, &layout);
    for (size_t j = 0; j < 100; j++) CU_ASSERT_EQUAL(ug_slice_walk_next(&walk), j);
}

UG_TEST_SUITE(slice_suite, "slice", UG_TEST(test_slices_give_the_case_reference),
              UG_TEST(test_staged_is_exact_where_declared),
              UG_TEST(test_streamed_equals_the_reference_at_once),
              UG_TEST(test_parts_largest_first), UG_TEST(test_no_slicing_is_the_whole_case));
