/* SPDX-License-Identifier: MIT */
/* The runner (harness/runner.c) on the real gdn_recompute_wu family, with
 * cases built by hand: an accepted case is measured and passes within its
 * bounds; a rejected case passes only when the kernel rejects it with every
 * expected substring; a case over the byte cap fails without stopping the
 * run, and cases run at once keep their buffers under it together; and a
 * run is deterministic. Shapes are the smallest the kernel takes
 * (one 64-token chunk), so the suite stays quick under valgrind. */
#include <gsl/gsl_randist.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/hash.h"
#include "../harness/chain.h"
#include "../harness/gen.h"
#include "../harness/runner.h"
#include "../harness/slice.h"
#include "tests.h"

enum { B = 1, T = 64, HG = 1, H = 2, K = 64, V = 64, BT = 64 };

#define ASSERT_CONTAINS(msg, needle) assert_contains((msg), (needle), __LINE__)
static void assert_contains(const char *msg, const char *needle, unsigned line)
{
    char what[UG_MSG_MAX + 160];
    snprintf(what, sizeof what, "message lacks \"%s\": %s", needle, msg);
    CU_assertImplementation(strstr(msg, needle) != NULL, line, what, __FILE__, "", CU_FALSE);
}

static const ug_family *family(void)
{
    const ug_family *f = ug_family_find("gdn_recompute_wu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    return f;
}

static void set_param(ug_case *c, const char *name, double value)
{
    int i = ug_family_param_index(c->family, name);
    CU_ASSERT_FATAL(i >= 0);
    c->params.v[i] = value;
}

static ug_case accepted_case(const char *label, uint64_t seed)
{
    ug_case c;
    memset(&c, 0, sizeof c);
    c.family = family();
    snprintf(c.label, sizeof c.label, "%s", label);
    set_param(&c, "B", B);
    set_param(&c, "T", T);
    set_param(&c, "Hg", HG);
    set_param(&c, "H", H);
    set_param(&c, "K", K);
    set_param(&c, "V", V);
    set_param(&c, "BT", BT);
    c.regime = 0; /* realistic */
    c.override.buffer = -1;
    c.override.dtype = UG_DTYPE_COUNT;
    c.seed = seed;
    return c;
}

/* The small shape with K changed, expected to be rejected with `expect`. */
static ug_case rejected_case(const char *label, double k, const char *expect)
{
    ug_case c = accepted_case(label, 0);
    set_param(&c, "K", k);
    c.expect_reject = true;
    c.n_expect = 1;
    snprintf(c.expect[0], UG_EXPECT_LEN, "%s", expect);
    return c;
}

static ug_run_options options(size_t max_case_bytes)
{
    ug_run_options opt;
    memset(&opt, 0, sizeof opt);
    opt.moderate_cond = 16;
    opt.model = ug_test_cpu_model();
    for (int i = 0; i < UG_ISA_COUNT; i++) opt.isa_enabled[i] = true;
    opt.max_case_bytes = max_case_bytes;
    opt.progress = false;
    return opt;
}

/* Runs the given cases as a sweep (which must outlive the result). */
static void run_cases(ug_sweep *sweep, ug_case *cases, size_t n, size_t max_case_bytes, ug_run_result *out)
{
    memset(sweep, 0, sizeof *sweep);
    snprintf(sweep->path, sizeof sweep->path, "(test_runner)");
    sweep->seed = 1;
    sweep->n_cases = n;
    sweep->cases = cases; /* not owned: never ug_sweep_free'd */
    ug_run_options opt = options(max_case_bytes);
    ug_status st = ug_run_sweep(sweep, &opt, out);
    CU_assertImplementation(st.code == UG_OK, __LINE__, st.msg, __FILE__, "", CU_TRUE);
    CU_ASSERT_EQUAL_FATAL(out->n_cases, n);
}

static const size_t outputs_per_case = (size_t)B * T * H * K + (size_t)B * T * H * V; /* w, u */

/* ---- accepted ---------------------------------------------------------- */

/* The accepted small case is run once and its result shared by the tests
 * below (the reference dominates the time under valgrind); freed at exit. */
static ug_case small_case;
static ug_sweep small_sweep;
static ug_run_result small_result;
static bool small_ran;

static void small_free(void) { ug_run_result_free(&small_result); }

static const ug_run_result *small_run(void)
{
    if (!small_ran) {
        small_case = accepted_case("small", 12345);
        run_cases(&small_sweep, &small_case, 1, UG_MAX_CASE_BYTES_DEFAULT, &small_result);
        small_ran = true;
        atexit(small_free);
    }
    return &small_result;
}

static void test_accepted_case_passes(void)
{
    const ug_run_result *r = small_run();
    const ug_case_result *cr = &r->cases[0];
    CU_assertImplementation(cr->passed, __LINE__, cr->failure, __FILE__, "", CU_FALSE);
    CU_ASSERT_STRING_EQUAL(cr->failure, "");
    CU_ASSERT_EQUAL(cr->kernel_status.code, UG_OK);
    CU_ASSERT_PTR_EQUAL(cr->c, &small_case);
}

static void test_accepted_case_within_bounds(void)
{
    const ug_run_result *r = small_run();
    const ug_case_result *cr = &r->cases[0];
    uint64_t elements = 0;
    for (size_t o = 0; o < 2; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            CU_ASSERT(cr->sum[o][m].max_ratio <= 1.0);
            CU_ASSERT_EQUAL(cr->sum[o][m].over_bound, 0);
            CU_ASSERT_EQUAL(cr->sum[o][m].class_failures, 0);
            if (m == UG_REF_EXACT) elements += cr->sum[o][m].elements;
        }
    CU_ASSERT_EQUAL(cr->sum[0][UG_REF_EXACT].elements, (uint64_t)B * T * H * K); /* w */
    CU_ASSERT_EQUAL(cr->sum[1][UG_REF_EXACT].elements, (uint64_t)B * T * H * V); /* u */
    CU_ASSERT_EQUAL(elements, outputs_per_case);
}

static void test_accepted_case_isa_paths_agree(void)
{
    const ug_run_result *r = small_run();
    CU_ASSERT_TRUE(r->cases[0].isa_bits_agree);
    CU_ASSERT_NOT_EQUAL(r->cases[0].bits_hash, 0);
    /* Agreeing paths are measured once. */
    CU_ASSERT_EQUAL(r->elements_checked, outputs_per_case);
}

/* The evenly spaced samples are the elements whose case index is a
 * multiple of count / UG_SAMPLES_SPREAD + 1, found across the slices (two
 * heads: each slice's indices of w and u jump between runs); besides them
 * each output and mode keeps its UG_SAMPLES_WORST worst ratios. */
static void test_spread_samples_by_case_index(void)
{
    const ug_case_result *cr = &small_run()->cases[0];
    const size_t counts[2] = {(size_t)B * T * H * K, (size_t)B * T * H * V};
    for (size_t o = 0; o < 2; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            const size_t stride = counts[o] / UG_SAMPLES_SPREAD + 1, spread = (counts[o] - 1) / stride + 1;
            size_t kept = 0;
            for (size_t k = 0; k < cr->samples.n; k++)
                kept += cr->samples.items[k].output == o && cr->samples.items[k].mode == m;
            CU_ASSERT_EQUAL(kept, spread + UG_SAMPLES_WORST);
        }
}

static void test_family_aggregate_counts_case_elements(void)
{
    const ug_run_result *r = small_run();
    CU_ASSERT_FATAL(r->n_families == 1);
    const ug_family_result *fr = &r->families[0];
    CU_ASSERT_PTR_EQUAL(fr->family, family());
    CU_ASSERT_EQUAL_FATAL(fr->n_outputs, 2);
    CU_ASSERT_EQUAL(fr->output_buffer[0], ug_family_buffer_index(fr->family, "w"));
    CU_ASSERT_EQUAL(fr->output_buffer[1], ug_family_buffer_index(fr->family, "u"));
    for (size_t o = 0; o < 2; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            CU_ASSERT_EQUAL(fr->agg[o][m].sum.elements, r->cases[0].sum[o][m].elements);
            CU_ASSERT_DOUBLE_EQUAL(fr->agg[o][m].sum.max_ratio, r->cases[0].sum[o][m].max_ratio, 0);
        }
    CU_ASSERT_EQUAL(fr->cases_accepted, 1);
    CU_ASSERT_EQUAL(fr->cases_rejected, 0);
    CU_ASSERT_EQUAL(fr->cases_failed, 0);
    CU_ASSERT_TRUE(fr->isa_ran[UG_ISA_PORTABLE]);
}

/* ---- rejected ---------------------------------------------------------- */

static void test_rejected_case_with_expected_message_passes(void)
{
    ug_case c = rejected_case("K=256", 256, "MAX_K = 192");
    ug_sweep sw;
    ug_run_result r;
    run_cases(&sw, &c, 1, UG_MAX_CASE_BYTES_DEFAULT, &r);
    CU_assertImplementation(r.cases[0].passed, __LINE__, r.cases[0].failure, __FILE__, "", CU_FALSE);
    CU_ASSERT_EQUAL(r.cases[0].kernel_status.code, UG_EINVAL);
    ASSERT_CONTAINS(r.cases[0].kernel_status.msg, "MAX_K = 192");
    CU_ASSERT_EQUAL(r.families[0].cases_rejected, 1);
    CU_ASSERT_EQUAL(r.families[0].cases_failed, 0);
    CU_ASSERT_EQUAL(r.elements_checked, 0);
    ug_run_result_free(&r);
}

static void test_rejected_case_with_missing_text_fails(void)
{
    ug_case c = rejected_case("K=256", 256, "no such text");
    ug_sweep sw;
    ug_run_result r;
    run_cases(&sw, &c, 1, UG_MAX_CASE_BYTES_DEFAULT, &r);
    CU_ASSERT_FALSE(r.cases[0].passed);
    ASSERT_CONTAINS(r.cases[0].failure, "\"no such text\"");
    CU_ASSERT_EQUAL(r.families[0].cases_failed, 1);
    ug_run_result_free(&r);
}

static void test_valid_shape_expected_to_reject_fails(void)
{
    ug_case c = rejected_case("K=64 valid", K, "MAX_K");
    ug_sweep sw;
    ug_run_result r;
    run_cases(&sw, &c, 1, UG_MAX_CASE_BYTES_DEFAULT, &r);
    CU_ASSERT_FALSE(r.cases[0].passed);
    ASSERT_CONTAINS(r.cases[0].failure, "expected rejection");
    CU_ASSERT_EQUAL(r.cases[0].kernel_status.code, UG_OK);
    CU_ASSERT_EQUAL(r.families[0].cases_failed, 1);
    ug_run_result_free(&r);
}

/* A rejected case whose buffer is one element short: the kernel names it. */
static void test_rejected_buffer_override_passes(void)
{
    ug_case c = rejected_case("k short", K, "k must be bf16[");
    c.override.buffer = ug_family_buffer_index(c.family, "k");
    c.override.count_delta = -1;
    ug_sweep sw;
    ug_run_result r;
    run_cases(&sw, &c, 1, UG_MAX_CASE_BYTES_DEFAULT, &r);
    CU_assertImplementation(r.cases[0].passed, __LINE__, r.cases[0].failure, __FILE__, "", CU_FALSE);
    ug_run_result_free(&r);
}

/* ---- byte cap ---------------------------------------------------------- */

static void test_case_over_byte_cap_fails_naming_cap(void)
{
    ug_case c = accepted_case("small", 12345);
    ug_sweep sw;
    ug_run_result r;
    run_cases(&sw, &c, 1, 1024, &r);
    CU_ASSERT_FALSE(r.cases[0].passed);
    ASSERT_CONTAINS(r.cases[0].failure, "1024-byte cap");
    CU_ASSERT_EQUAL(r.families[0].cases_failed, 1);
    CU_ASSERT_EQUAL(r.elements_checked, 0);
    ug_run_result_free(&r);
}

/* The capped case fails; the run goes on to the next case (B = 0: no
 * buffer bytes at all), which passes. */
static void test_case_over_byte_cap_does_not_abort_run(void)
{
    ug_case cases[2] = {accepted_case("small", 12345), rejected_case("B=0", K, "B (0)")};
    set_param(&cases[1], "B", 0);
    ug_sweep sw;
    ug_run_result r;
    run_cases(&sw, cases, 2, 1024, &r);
    CU_ASSERT_FALSE(r.cases[0].passed);
    CU_assertImplementation(r.cases[1].passed, __LINE__, r.cases[1].failure, __FILE__, "", CU_FALSE);
    CU_ASSERT_EQUAL(r.families[0].cases_accepted, 1);
    CU_ASSERT_EQUAL(r.families[0].cases_rejected, 1);
    CU_ASSERT_EQUAL(r.families[0].cases_failed, 1);
    ug_run_result_free(&r);
}

/* A rejected shape whose buffer counts do not fit in size_t (the kernel's
 * own validation rejects such shapes) cannot be allocated: the case fails,
 * naming the buffer, and the run goes on to the next case. */
static void test_case_with_overflowing_counts_does_not_abort_run(void)
{
    ug_case cases[2] = {rejected_case("huge", K, "size_t"), rejected_case("B=0", K, "B (0)")};
    set_param(&cases[0], "B", 4294967295.0);
    set_param(&cases[0], "T", 4294967232.0);
    set_param(&cases[0], "H", 4294967295.0);
    set_param(&cases[1], "B", 0);
    ug_sweep sw = {.n_cases = 2, .cases = cases};
    ug_run_options opt = options(UG_MAX_CASE_BYTES_DEFAULT);
    ug_run_result r;
    ug_status st = ug_run_sweep(&sw, &opt, &r);
    CU_assertImplementation(st.code == UG_OK, __LINE__, st.msg, __FILE__, "", CU_FALSE);
    CU_ASSERT_EQUAL(r.n_cases, 2);
    CU_ASSERT_FALSE(r.n_cases > 0 && r.cases[0].passed);
    CU_ASSERT_TRUE(r.n_cases > 1 && r.cases[1].passed);
    ug_run_result_free(&r);
}

/* ---- determinism ------------------------------------------------------- */

/* A second run of the shared small case gives the same bits. */
static void test_same_sweep_twice_same_bits(void)
{
    const ug_run_result *a = small_run();
    ug_case c = accepted_case("small", 12345);
    ug_sweep sw;
    ug_run_result b;
    run_cases(&sw, &c, 1, UG_MAX_CASE_BYTES_DEFAULT, &b);
    CU_ASSERT_TRUE(a->cases[0].passed && b.cases[0].passed);
    CU_ASSERT_EQUAL(a->cases[0].bits_hash, b.cases[0].bits_hash);
    for (int isa = 0; isa < UG_ISA_COUNT; isa++)
        CU_ASSERT_EQUAL(a->families[0].bits_hash[isa], b.families[0].bits_hash[isa]);
    ug_run_result_free(&b);
}

/* --jobs: the same figures, failures and bits with 1 and 2 threads. */
static void run_with_jobs(ug_sweep *sw, ug_case *cases, size_t n, int jobs, ug_run_result *out)
{
    memset(sw, 0, sizeof *sw);
    sw->n_cases = n;
    sw->cases = cases;
    ug_run_options opt = options(UG_MAX_CASE_BYTES_DEFAULT);
    opt.jobs = jobs;
    ug_status st = ug_run_sweep(sw, &opt, out);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
}

static bool summaries_equal(const ug_summary *a, const ug_summary *b)
{
    return a->elements == b->elements && a->moderate == b->moderate &&
           a->correctly_rounded == b->correctly_rounded && a->class_failures == b->class_failures &&
           a->over_bound == b->over_bound && a->flagged == b->flagged && a->max_ulp_dist == b->max_ulp_dist &&
           a->p99_ulp_dist == b->p99_ulp_dist && a->max_ulp_dist_all == b->max_ulp_dist_all &&
           a->max_ulp_err == b->max_ulp_err && a->max_ratio == b->max_ratio && a->max_cond == b->max_cond &&
           a->worst_index == b->worst_index;
}

static void test_two_jobs_same_results_as_one(void)
{
    ug_case cases[3] = {accepted_case("a", 1), accepted_case("b", 2), rejected_case("K=256", 256, "MAX_K = 192")};
    for (int i = 0; i < 2; i++) {
        set_param(&cases[i], "Hg", 1);
        set_param(&cases[i], "H", 1);
    }
    ug_sweep sw1, sw2;
    ug_run_result one, two;
    run_with_jobs(&sw1, cases, 3, 1, &one);
    run_with_jobs(&sw2, cases, 3, 2, &two);
    CU_ASSERT_EQUAL(one.elements_checked, two.elements_checked);
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(one.cases[i].passed, two.cases[i].passed);
        CU_ASSERT_EQUAL(one.cases[i].bits_hash, two.cases[i].bits_hash);
        for (size_t o = 0; o < UG_MAX_BUFFERS; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++)
                CU_ASSERT_TRUE(summaries_equal(&one.cases[i].sum[o][m], &two.cases[i].sum[o][m]));
    }
    for (size_t o = 0; o < one.families[0].n_outputs; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_summary a = ug_stats_summary(&one.families[0].agg[o][m]);
            ug_summary b = ug_stats_summary(&two.families[0].agg[o][m]);
            CU_ASSERT_TRUE(summaries_equal(&a, &b));
        }
    CU_ASSERT_EQUAL(memcmp(one.families[0].bits_hash, two.families[0].bits_hash, sizeof one.families[0].bits_hash), 0);
    ug_run_result_free(&one);
    ug_run_result_free(&two);
}

/* --max-case-mib also caps the buffers of the cases running at once: a
 * source that counts its concurrent calls sees two cases at once with room
 * for two, and one at a time when two do not fit. */
static int concurrent_calls, most_concurrent_calls;
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;

static ug_status counting_run(void *ctx, const ug_case *c, ug_buf *bufs)
{
    (void)ctx, (void)c, (void)bufs;
    pthread_mutex_lock(&calls_lock);
    concurrent_calls++;
    if (concurrent_calls > most_concurrent_calls) most_concurrent_calls = concurrent_calls;
    pthread_mutex_unlock(&calls_lock);
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    pthread_mutex_lock(&calls_lock);
    concurrent_calls--;
    pthread_mutex_unlock(&calls_lock);
    return ug_fail(UG_EINVAL, "counting source: no kernel");
}

/* Four cases of the small shape through the counting source, accepted (the
 * source then fails them: no reference runs) or rejected. */
static int most_concurrent_cases(size_t max_case_bytes, bool accepted)
{
    ug_case cases[4];
    for (int i = 0; i < 4; i++) cases[i] = accepted ? accepted_case("counted", 0) : rejected_case("counted", K, "no kernel");
    ug_sweep sw = {.n_cases = 4, .cases = cases};
    const ug_kernel_source source = {"counting", counting_run, NULL};
    ug_run_options opt = options(max_case_bytes);
    opt.jobs = 2;
    opt.source = &source;
    most_concurrent_calls = 0;
    ug_run_result out;
    ug_status st = ug_run_sweep(&sw, &opt, &out);
    CU_ASSERT_EQUAL(st.code, UG_OK);
    ug_run_result_free(&out);
    return most_concurrent_calls;
}

/* FNV-1a over the outputs of the kernel run on case c's inputs, in
 * descriptor order: what a case's bits hash must be. */
static uint64_t outputs_hash_of(const ug_case *c)
{
    const ug_family *f = c->family;
    ug_buf bufs[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) {
        bufs[i].dtype = f->buffers[i].dtype;
        CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(f, &c->params, i, &bufs[i].count).code, UG_OK);
        bufs[i].data = calloc(bufs[i].count + 1, ug_dtype_size(bufs[i].dtype));
        CU_ASSERT_PTR_NOT_NULL_FATAL(bufs[i].data);
    }
    CU_ASSERT_EQUAL_FATAL(ug_case_generate(c, bufs).code, UG_OK);
    CU_ASSERT_EQUAL_FATAL(f->run(&c->params, bufs).code, UG_OK);
    uint64_t h = UG_FNV1A_OFFSET;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (f->buffers[i].is_output) h = ug_fnv1a(h, bufs[i].data, bufs[i].count * ug_dtype_size(bufs[i].dtype));
        free(bufs[i].data);
    }
    return h;
}

/* The bits hash is the outputs' hash, whichever thread computes it while
 * the slices are measured (with 2 jobs and one case, a lent one). */
static void test_bits_hash_is_the_outputs_hash(void)
{
    ug_case c = accepted_case("hashed", 7);
    const uint64_t expected = outputs_hash_of(&c);
    for (int jobs = 1; jobs <= 2; jobs++) {
        ug_sweep sw;
        ug_run_result out;
        run_with_jobs(&sw, &c, 1, jobs, &out);
        CU_ASSERT_TRUE(out.cases[0].passed);
        CU_ASSERT_EQUAL(out.cases[0].bits_hash, expected);
        ug_run_result_free(&out);
    }
}

/* Draws made ahead (harness/gen.h) are mt19937's, draw for draw, past
 * many refills of the ring: words, doubles, positive doubles, bounded
 * integers and gaussians (which take a varying number of words) mixed. */
static void test_draws_made_ahead_are_mt19937s(void)
{
    const unsigned long seed = 20261126;
    gsl_rng *mt = gsl_rng_alloc(gsl_rng_mt19937);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mt);
    gsl_rng_set(mt, seed);
    ug_gen_ahead *a;
    CU_ASSERT_EQUAL_FATAL(ug_gen_ahead_start(seed, &a).code, UG_OK);
    gsl_rng *ahead = ug_gen_ahead_rng(a);
    size_t differ = 0;
    for (size_t i = 0; i < 1500000; i++) {
        double x, y;
        switch (i % 5) {
        case 0: x = (double)gsl_rng_get(mt), y = (double)gsl_rng_get(ahead); break;
        case 1: x = gsl_rng_uniform(mt), y = gsl_rng_uniform(ahead); break;
        case 2: x = gsl_rng_uniform_pos(mt), y = gsl_rng_uniform_pos(ahead); break;
        case 3: x = (double)gsl_rng_uniform_int(mt, 1000 + i), y = (double)gsl_rng_uniform_int(ahead, 1000 + i); break;
        default: x = gsl_ran_gaussian(mt, 1.0), y = gsl_ran_gaussian(ahead, 1.0);
        }
        if (memcmp(&x, &y, sizeof x) != 0 && differ++ < 3)
            printf("\n    draw %zu: %a made ahead, %a in place", i, y, x);
    }
    CU_ASSERT_EQUAL(differ, 0);
    ug_gen_ahead_stop(a);
    gsl_rng_free(mt);
}

/* The inputs of a case generated with the draws made ahead (a run with an
 * idle worker) are those generated in place, byte for byte. */
static void test_inputs_drawn_ahead_are_the_same(void)
{
    ug_case c = accepted_case("drawn", 11);
    ug_sweep sw;
    ug_run_result one, two;
    run_with_jobs(&sw, &c, 1, 1, &one);
    run_with_jobs(&sw, &c, 1, 2, &two); /* one case, two jobs: the other worker draws ahead */
    CU_ASSERT_EQUAL(one.cases[0].bits_hash, two.cases[0].bits_hash);
    CU_ASSERT_EQUAL(two.cases[0].bits_hash, outputs_hash_of(&c));
    ug_run_result_free(&one);
    ug_run_result_free(&two);
}

/* The built-in kernel, then w[5] and w[9] back to their poison (bf16
 * 0x7FA7, the runner's): elements the kernel never wrote. */
static ug_status unwriting_run(void *ctx, const ug_case *c, ug_buf *bufs)
{
    (void)ctx;
    UG_TRY(c->family->run(&c->params, bufs));
    uint16_t *w = bufs[ug_family_buffer_index(c->family, "w")].data;
    w[5] = w[9] = 0x7FA7;
    return ug_ok();
}

/* Case c run through a kernel source that writes its outputs with run:
 * the case must fail, its failure naming `expected`. */
static void assert_source_fails(ug_case *c, const ug_kernel_source *source, const char *expected)
{
    ug_sweep sw = {.n_cases = 1, .cases = c};
    ug_run_options opt = options(UG_MAX_CASE_BYTES_DEFAULT);
    opt.source = source;
    ug_run_result out;
    CU_ASSERT_EQUAL_FATAL(ug_run_sweep(&sw, &opt, &out).code, UG_OK);
    CU_ASSERT_FALSE(out.cases[0].passed);
    ASSERT_CONTAINS(out.cases[0].failure, expected);
    ug_run_result_free(&out);
}

/* An element left at its poison fails the case, named by its first index
 * (the scan goes a word at a time, harness/runner.c). */
static void test_unwritten_element_named(void)
{
    ug_case c = accepted_case("unwritten", 3);
    const ug_kernel_source source = {"unwriting", unwriting_run, NULL};
    assert_source_fails(&c, &source, "[unwriting] w[5] was never written");
}

static size_t buffer_bytes(const ug_case *c, const ug_params *p)
{
    size_t bytes = 0;
    for (size_t i = 0; i < c->family->n_buffers; i++) {
        size_t count;
        CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(c->family, p, i, &count).code, UG_OK);
        bytes += count * ug_dtype_size(c->family->buffers[i].dtype);
    }
    return bytes;
}

static void test_cases_at_once_fit_the_byte_cap(void)
{
    const ug_case c = accepted_case("sized", 0);
    const size_t bytes = buffer_bytes(&c, &c.params);
    CU_ASSERT_EQUAL(most_concurrent_cases(2 * bytes, false), 2);
    CU_ASSERT_EQUAL(most_concurrent_cases(bytes + bytes / 2, false), 1);
}

/* An accepted case also holds one slice's working set while its reference
 * runs: its gathered buffers and its largest reference part (harness/chain.h);
 * two such cases start together only when both fit with it. */
static void test_admission_counts_the_reference(void)
{
    const ug_case c = accepted_case("sized", 0);
    ug_slicing_plan sp;
    ug_params sub;
    ug_slice_plan(c.family, &c.params, &sp);
    ug_slice_params(&sp, 0, &sub);
    CU_ASSERT_FATAL(!sp.whole);
    size_t reference = 0;
    CU_ASSERT_EQUAL_FATAL(ug_case_reference_bytes(c.family, &sub, &reference).code, UG_OK);
    const size_t held = buffer_bytes(&c, &c.params) + buffer_bytes(&c, &sub) + reference;
    CU_ASSERT_EQUAL(most_concurrent_cases(2 * held, true), 2);
    CU_ASSERT_EQUAL(most_concurrent_cases(2 * held - 1, true), 1);
}

/* The built-in gdn_e2e kernel, then final_state[0] and o[0] moved far
 * off: each fails in the staged mode alone (the exact mode's end-to-end
 * bound is infinite), final_state in chunk_state's part, o in chunk_o's,
 * the later one. */
static ug_status corrupting_run(void *ctx, const ug_case *c, ug_buf *bufs)
{
    (void)ctx;
    UG_TRY(c->family->run(&c->params, bufs));
    ((float *)bufs[ug_family_buffer_index(c->family, "final_state")].data)[0] += 1e3f;
    ((uint16_t *)bufs[ug_family_buffer_index(c->family, "o")].data)[0] = 0x4400; /* 512 */
    return ug_ok();
}

/* The failure a case reports is its first in the order of modes, then
 * outputs, then elements, whatever order the reference's parts come in
 * (harness/chain.h): o's, not final_state's, though chunk_state's part is
 * measured before chunk_o's. */
static void test_first_failure_in_mode_and_output_order(void)
{
    ug_case c;
    memset(&c, 0, sizeof c);
    c.family = ug_family_find("gdn_e2e");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c.family);
    snprintf(c.label, sizeof c.label, "corrupted");
    const struct { const char *name; double value; } shape[] = {{"B", 1}, {"T", 64}, {"Hg", 1}, {"H", 1}, {"K", 128},
                                                                {"V", 128}, {"BT", 64}, {"has_h0", 0}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) set_param(&c, shape[i].name, shape[i].value);
    c.override.buffer = -1;
    c.override.dtype = UG_DTYPE_COUNT;
    const ug_kernel_source source = {"corrupting", corrupting_run, NULL};
    assert_source_fails(&c, &source, "] o[0] staged:");
}

UG_TEST_SUITE(runner_suite, "runner",
              UG_TEST(test_accepted_case_passes),
              UG_TEST(test_cases_at_once_fit_the_byte_cap),
              UG_TEST(test_admission_counts_the_reference),
              UG_TEST(test_first_failure_in_mode_and_output_order),
              UG_TEST(test_accepted_case_within_bounds),
              UG_TEST(test_accepted_case_isa_paths_agree), UG_TEST(test_spread_samples_by_case_index),
              UG_TEST(test_family_aggregate_counts_case_elements),
              UG_TEST(test_rejected_case_with_expected_message_passes),
              UG_TEST(test_rejected_case_with_missing_text_fails),
              UG_TEST(test_valid_shape_expected_to_reject_fails),
              UG_TEST(test_rejected_buffer_override_passes),
              UG_TEST(test_case_over_byte_cap_fails_naming_cap),
              UG_TEST(test_case_over_byte_cap_does_not_abort_run),
              UG_TEST(test_case_with_overflowing_counts_does_not_abort_run),
              UG_TEST(test_same_sweep_twice_same_bits),
              UG_TEST(test_two_jobs_same_results_as_one),
              UG_TEST(test_bits_hash_is_the_outputs_hash),
              UG_TEST(test_draws_made_ahead_are_mt19937s),
              UG_TEST(test_inputs_drawn_ahead_are_the_same),
              UG_TEST(test_unwritten_element_named));
