/* SPDX-License-Identifier: MIT */
/* The MPFR reference's speed: gdn_recompute_wu's reference (the family's
 * `reference`, both modes) on a moderate shape, in multiply-add terms per
 * second, against a straightforward exact-mode reference written here: every
 * operand converted to a 128-bit mpfr_t (the gated ones through mpfr_exp),
 * then per output element an mpfr_fma chain over the same BT terms. The
 * plain loop's results are checked against the reference's r, so both
 * compute the same function. The reference runs on its fast path (the exact
 * accumulator of ref/exact_sum.h) and on its plain MPFR path
 * (ug_ref_set_fast(false)); their outputs must be bit-identical. Each time is
 * the best of REPEATS runs: the machine is shared, and the least disturbed
 * run is the closest to the code's own cost. */
#include <math.h>
#include <mpfr.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/bf16.h"
#include "../harness/profile.h"
#include "../ref/ref.h"
#include "bench.h"

#define REF_FAMILY "gdn_recompute_wu"
enum { REPEATS = 3 };
#define REF_SHAPE "B=1 T=256 Hg=2 H=4 K=64 V=64 BT=64"

typedef struct {
    size_t b, t, hg, h, k, v, bt;
} shape;

static size_t at4(const shape *s, size_t b, size_t t, size_t heads, size_t head, size_t width, size_t col)
{
    return ((b * s->t + t) * heads + head) * width + col;
}

/* The straightforward exact-mode reference of one output (u from v, or w
 * from k with the gate); r receives each element's value as a double. */
static void plain_output(const shape *s, const ug_bf16 *src, size_t src_heads, size_t width, bool gated,
                         const float *beta, const float *g, const float *a, double *r)
{
    const size_t bt = s->bt, group = s->h / src_heads;
    mpfr_t *a_mp = malloc(bt * bt * sizeof *a_mp), *x_mp = malloc(bt * width * sizeof *x_mp);
    if (!a_mp || !x_mp) abort();
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(a_mp[i], UG_REF_PREC);
    for (size_t i = 0; i < bt * width; i++) mpfr_init2(x_mp[i], UG_REF_PREC);
    mpfr_t acc, e;
    mpfr_inits2(UG_REF_PREC, acc, e, (mpfr_ptr)0);
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++)
            for (size_t t0 = 0; t0 < s->t; t0 += bt) {
                for (size_t j = 0; j < bt; j++) {
                    const size_t tok = (b * s->t + t0 + j) * s->h + h;
                    if (gated) {
                        mpfr_set_flt(e, g[tok], MPFR_RNDN);
                        mpfr_exp(e, e, MPFR_RNDN);
                    }
                    for (size_t col = 0; col < width; col++) {
                        double val = ug_bf16_to_f32(src[at4(s, b, t0 + j, src_heads, h / group, width, col)]);
                        mpfr_ptr x = x_mp[j * width + col];
                        mpfr_set_d(x, val * beta[tok], MPFR_RNDN); /* bf16 x f32: exact */
                        if (gated) mpfr_mul(x, x, e, MPFR_RNDN);
                    }
                    for (size_t i = 0; i < bt; i++)
                        mpfr_set_flt(a_mp[i * bt + j], a[at4(s, b, t0 + i, s->h, h, bt, j)], MPFR_RNDN);
                }
                for (size_t i = 0; i < bt; i++)
                    for (size_t col = 0; col < width; col++) {
                        mpfr_set_zero(acc, 1);
                        for (size_t j = 0; j < bt; j++)
                            mpfr_fma(acc, a_mp[i * bt + j], x_mp[j * width + col], acc, MPFR_RNDN);
                        r[at4(s, b, t0 + i, s->h, h, width, col)] = mpfr_get_d(acc, MPFR_RNDN);
                    }
            }
    for (size_t i = 0; i < bt * bt; i++) mpfr_clear(a_mp[i]);
    for (size_t i = 0; i < bt * width; i++) mpfr_clear(x_mp[i]);
    mpfr_clears(acc, e, (mpfr_ptr)0);
    free(a_mp);
    free(x_mp);
}

/* Every field bit for bit (a NaN's sign is MPFR's choice: NaNs compare equal). */
static bool same_value(const ug_ref_value *a, const ug_ref_value *b)
{
    const double x[] = {a->r_hi, a->r_lo, a->bound, a->abs_sum}, y[] = {b->r_hi, b->r_lo, b->bound, b->abs_sum};
    for (size_t i = 0; i < 4; i++)
        if (memcmp(&x[i], &y[i], sizeof x[i]) != 0 && !(isnan(x[i]) && isnan(y[i]))) return false;
    return (a->rn_bits == b->rn_bits || (isnan(a->r_hi) && isnan(b->r_hi))) && a->flagged == b->flagged;
}

static double param(const ug_family *f, const ug_params *p, const char *name)
{
    int i = ug_family_param_index(f, name);
    return i < 0 ? 0 : p->v[i];
}

/* One case of a family: parameters from "NAME=VALUE ..." text, buffers,
 * regime-0 inputs, and three output sets (exact mode, staged mode, the
 * MPFR path's). */
typedef struct {
    const ug_family *f;
    ug_params p;
    ug_buf bufs[UG_MAX_BUFFERS];
    ug_ref_value *outs[UG_REF_MODE_COUNT][UG_MAX_BUFFERS], *plain_path[UG_MAX_BUFFERS];
    size_t n_out, out_counts[UG_MAX_BUFFERS], elements;
} ref_case;

static void case_close(ref_case *c)
{
    for (size_t i = 0; i < UG_MAX_BUFFERS; i++) {
        free(c->bufs[i].data);
        free(c->plain_path[i]);
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) free(c->outs[m][i]);
    }
}

static int case_open(ref_case *c, const char *family, const char *shape_text)
{
    memset(c, 0, sizeof *c);
    c->f = ug_family_find(family);
    if (!c->f) {
        printf("  skipped: %s is not registered\n", family);
        return -1;
    }
    char text[256];
    snprintf(text, sizeof text, "%s", shape_text);
    for (char *save = NULL, *tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        *eq = '\0';
        int i = ug_family_param_index(c->f, tok);
        if (i < 0) {
            printf("  skipped: %s has no parameter %s\n", family, tok);
            return -1;
        }
        c->p.v[i] = strtod(eq + 1, NULL);
    }
    for (size_t i = 0; i < c->f->n_buffers; i++) {
        ug_status st = ug_family_buffer_count(c->f, &c->p, i, &c->bufs[i].count);
        c->bufs[i].dtype = c->f->buffers[i].dtype;
        c->bufs[i].data = ug_is_ok(&st) ? calloc(c->bufs[i].count + 1, ug_dtype_size(c->bufs[i].dtype)) : NULL;
        if (!c->bufs[i].data) abort();
        if (c->f->buffers[i].is_output) {
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) c->outs[m][c->n_out] = calloc(c->bufs[i].count + 1, sizeof(ug_ref_value));
            c->plain_path[c->n_out] = calloc(c->bufs[i].count + 1, sizeof(ug_ref_value));
            if (!c->outs[0][c->n_out] || !c->outs[1][c->n_out] || !c->plain_path[c->n_out]) abort();
            c->out_counts[c->n_out++] = c->bufs[i].count;
            c->elements += c->bufs[i].count;
        }
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20260517);
    ug_status st = c->f->generate(&c->p, 0, rng, c->bufs);
    gsl_rng_free(rng);
    if (!ug_is_ok(&st)) {
        printf("  failed: %s\n", st.msg);
        return -1;
    }
    return 0;
}

/* The arithmetic profile the references' bounds assume (the CPU's, as verify's default). */
static ug_f32_model bench_model;

/* The reference in one mode on its fast path (best of REPEATS) and on its
 * MPFR path (one run); prints both rates for `terms` multiply-adds and
 * returns the fast path's rate (*mpfr_rate the other), or a negative value
 * when a call fails; *differ counts elements whose two results differ in
 * any field. */
static double time_paths(ref_case *c, ug_ref_mode mode, double terms, size_t *differ, double *mpfr_rate)
{
    double fast_rate = 0;
    for (int fast = 1; fast >= 0; fast--) {
        ug_ref_value **dst = fast ? c->outs[mode] : c->plain_path;
        double best = INFINITY;
        ug_ref_set_fast(fast);
        ug_status st = ug_ok();
        for (int r = 0; r < (fast ? REPEATS : 1) && ug_is_ok(&st); r++) {
            double t0 = bench_now();
            st = c->f->reference(&c->p, c->bufs, &bench_model, mode, dst);
            best = fmin(best, bench_now() - t0);
        }
        ug_ref_set_fast(true);
        if (!ug_is_ok(&st)) {
            printf("  failed: %s\n", st.msg);
            return -1;
        }
        printf("  reference, %-6s mode, %-9s: %8.3f s  %7.3f Mterm/s  (%zu outputs%s)\n", ug_ref_mode_name(mode),
               fast ? "fast path" : "MPFR path", best, terms / best * 1e-6, c->elements,
               fast ? "; best of 3" : "; one run");
        if (fast) {
            fast_rate = terms / best;
            continue;
        }
        *mpfr_rate = terms / best;
        for (size_t o = 0; o < c->n_out; o++)
            for (size_t e = 0; e < c->out_counts[o]; e++)
                *differ += !same_value(&c->plain_path[o][e], &c->outs[mode][o][e]);
    }
    return fast_rate;
}

/* Cases spread over the cores, as `verify --jobs N` runs them: each online
 * CPU runs the reference (fast path) on its own copy of the case, all at
 * once; the throughput is every thread's terms over the wall time of the
 * slowest (best of REPEATS rounds). */
typedef struct {
    ref_case c;
    ug_ref_mode mode;
    ug_status st;
} spread_job;

static void *spread_worker(void *arg)
{
    spread_job *job = arg;
    ug_ref_value **outs = job->c.outs[job->mode];
    job->st = job->c.f->reference(&job->c.p, job->c.bufs, &bench_model, job->mode, outs);
    return NULL;
}

/* Terms per second of `threads` concurrent references in `mode`, or a
 * negative value when a case cannot be set up or a reference fails. */
static double spread_rate(ug_ref_mode mode, unsigned threads, double terms)
{
    spread_job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *tids = calloc(threads, sizeof *tids);
    double best = INFINITY;
    unsigned opened = 0;
    bool ok = jobs && tids;
    for (; ok && opened < threads; opened++) {
        ok = case_open(&jobs[opened].c, REF_FAMILY, REF_SHAPE) == 0;
        jobs[opened].mode = mode;
    }
    for (int round = 0; ok && round < REPEATS; round++) {
        const double t0 = bench_now();
        unsigned started = 0;
        for (; started < threads; started++)
            if (pthread_create(&tids[started], NULL, spread_worker, &jobs[started]) != 0) break;
        for (unsigned t = 0; t < started; t++) pthread_join(tids[t], NULL);
        best = fmin(best, bench_now() - t0);
        ok = started == threads;
        for (unsigned t = 0; t < threads; t++) ok = ok && ug_is_ok(&jobs[t].st);
    }
    for (unsigned t = 0; jobs && t < opened; t++) case_close(&jobs[t].c);
    free(jobs);
    free(tids);
    return ok ? threads * terms / best : -1;
}

/* gdn_recompute_wu: both modes against the plain mpfr_fma loop. */
static int recompute_wu_speed(void)
{
    printf("\n== reference speed: %s reference vs a plain mpfr_fma loop (%d bits), %s ==\n", REF_FAMILY,
           UG_REF_PREC, REF_SHAPE);
    ref_case c;
    int rc = case_open(&c, REF_FAMILY, REF_SHAPE);
    if (rc != 0) {
        case_close(&c);
        return rc;
    }
    const ug_family *f = c.f;
    const shape s = {(size_t)param(f, &c.p, "B"), (size_t)param(f, &c.p, "T"),  (size_t)param(f, &c.p, "Hg"),
                     (size_t)param(f, &c.p, "H"), (size_t)param(f, &c.p, "K"),  (size_t)param(f, &c.p, "V"),
                     (size_t)param(f, &c.p, "BT")};
    const size_t elements = c.elements;
    const double terms = (double)elements * (double)s.bt;
    /* Nonzero A entries: the reference skips the zero upper triangle. */
    const float *a = c.bufs[ug_family_buffer_index(f, "A")].data;
    size_t nonzero = 0;
    for (size_t i = 0; i < s.b * s.t * s.h * s.bt; i++) nonzero += a[i] != 0;
    const double nonzero_share = (double)nonzero / (double)(s.b * s.t * s.h * s.bt);
    double ref_rate[UG_REF_MODE_COUNT] = {0};
    size_t path_differ = 0;
    for (int mode = 0; rc == 0 && mode < UG_REF_MODE_COUNT; mode++) {
        double mpfr_rate;
        ref_rate[mode] = time_paths(&c, (ug_ref_mode)mode, terms, &path_differ, &mpfr_rate);
        if (ref_rate[mode] < 0) rc = -1;
    }
    if (rc == 0) {
        /* The plain loop, checked against the exact mode's values. */
        double *r = malloc(elements * sizeof *r);
        if (!r) abort();
        const int k = ug_family_buffer_index(f, "k"), v = ug_family_buffer_index(f, "v");
        const float *beta = c.bufs[ug_family_buffer_index(f, "beta")].data;
        const float *g = c.bufs[ug_family_buffer_index(f, "g")].data;
        const size_t w_count = s.b * s.t * s.h * s.k;
        double dt = INFINITY;
        for (int rep = 0; rep < REPEATS; rep++) {
            double t0 = bench_now();
            plain_output(&s, c.bufs[k].data, s.hg, s.k, true, beta, g, a, r);           /* w */
            plain_output(&s, c.bufs[v].data, s.h, s.v, false, beta, g, a, r + w_count); /* u */
            dt = fmin(dt, bench_now() - t0);
        }
        const double plain_rate = terms / dt;
        printf("  plain mpfr_fma loop                : %8.3f s  %7.3f Mterm/s  (same terms; operands converted, exp at "
               "%d bits; best of 3)\n", dt, plain_rate * 1e-6, UG_REF_PREC);
        size_t differ = 0;
        for (size_t e = 0; e < elements; e++) {
            const ug_ref_value *rv = e < w_count ? &c.outs[UG_REF_EXACT][0][e] : &c.outs[UG_REF_EXACT][1][e - w_count];
            double ref = rv->r_hi + rv->r_lo;
            differ += fabs(ref - r[e]) > 1e-15 * fabs(ref) + 1e-300;
        }
        printf("  check: the plain loop's values agree with the reference's r in %zu of %zu elements\n",
               elements - differ, elements);
        printf("  check: the fast path's values equal the MPFR path's, every field, in %zu of %zu (elements x modes)\n",
               2 * elements - path_differ, 2 * elements);
        if (path_differ) rc = -1;
        printf("  A entries nonzero: %.1f%% (the reference skips zero terms; mpfr_fma returns early on them)\n",
               100 * nonzero_share);
        printf("  speed-up of the reference (fast path) over the plain loop, one core each: exact %.2fx, staged %.2fx\n",
               ref_rate[UG_REF_EXACT] / plain_rate, ref_rate[UG_REF_STAGED] / plain_rate);
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        const unsigned threads = cpus > 1 ? (unsigned)cpus : 1;
        double spread[UG_REF_MODE_COUNT];
        bench_unpin();
        for (int mode = 0; mode < UG_REF_MODE_COUNT && rc == 0; mode++) {
            spread[mode] = spread_rate((ug_ref_mode)mode, threads, terms);
            if (spread[mode] < 0) rc = -1;
        }
        (void)bench_pin();
        if (rc == 0)
            printf("  cases spread over the %u CPUs (verify --jobs %u): exact %.3f, staged %.3f Mterm/s: %.2fx and "
                   "%.2fx the plain loop on one core (the issue's target: >= 10x)\n",
                   threads, threads, spread[UG_REF_EXACT] * 1e-6, spread[UG_REF_STAGED] * 1e-6,
                   spread[UG_REF_EXACT] / plain_rate, spread[UG_REF_STAGED] / plain_rate);
        free(r);
    }
    case_close(&c);
    return rc;
}

/* A reference's fast path against its MPFR path (ug_ref_set_fast(false)),
 * exact mode, in terms per second: gdn_chunk_scaled_kkt's (the Gram dot
 * products in the exact accumulator; a term is one product k_i[d] k_j[d] of a
 * dot product below the diagonal). */
static int paths_speed(const char *family, const char *shape_text, bool per_gram_product)
{
    printf("\n== reference speed: %s reference, fast path vs MPFR path, %s ==\n", family, shape_text);
    ref_case c;
    int rc = case_open(&c, family, shape_text);
    if (rc == 0) {
        const double bt = param(c.f, &c.p, "BT");
        const double terms = per_gram_product ? param(c.f, &c.p, "B") * param(c.f, &c.p, "Hg") *
                                                    (param(c.f, &c.p, "T") / bt) * (bt * (bt - 1) / 2) *
                                                    param(c.f, &c.p, "K")
                                              : (double)c.elements;
        size_t differ = 0;
        double mpfr_rate = 0;
        const double fast_rate = time_paths(&c, UG_REF_EXACT, terms, &differ, &mpfr_rate);
        if (fast_rate < 0) rc = -1;
        else {
            if (!per_gram_product)
                printf("  output elements per second: fast path %.0f k/s, MPFR path %.0f k/s\n", fast_rate * 1e-3,
                       mpfr_rate * 1e-3);
            printf("  check: the fast path's values equal the MPFR path's, every field, in %zu of %zu elements\n",
                   c.elements - differ, c.elements);
            printf("  speed-up of the fast path over the MPFR path: %.2fx\n", fast_rate / mpfr_rate);
            if (differ) rc = -1;
        }
    }
    case_close(&c);
    return rc;
}

/* This thread's CPU time (s): on a shared machine it counts this thread's
 * work only, where the wall time also counts the other processes'. */
static double thread_cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Each reference on its fast path (best of REPEATS) and on its MPFR path
 * (one run), both modes, in output elements per second on one core, by wall
 * time and by the thread's CPU time; the two paths' values must be equal in
 * every field. gdn_chunk_o and gdn_chunk_state at a GQA shape; gdn_e2e's
 * exact recurrence (256-bit state columns, AVX-512 dot products, against GMP
 * integers; both modes are one function); the
 * elementwise references at production shapes: head_norm_rope with
 * head_dim 128 (partial rotary 1/2) and 256 (1/4, as Qwen3-Next), many bf16
 * heads or an f32 sequence; attn_reduce_fwht decode rows at head_dim 256
 * and 512, split-K widths 4 to 32 (the kernel's limit); cumsum at T = 8192,
 * H = 32; gdn_chunk_scaled_kkt at a GQA shape; gdn_solve_tril (X~ at 256
 * bits as integers, ref/gdn_solve_tril.c) at T = 1024, H = 4. */
static int elements_speed(void)
{
    static const char *const cases[][2] = {
        {"gdn_chunk_o", "B=1 T=1024 Hg=2 H=4 K=128 V=128 BT=64 scale_bits=1035273459"},
        {"gdn_chunk_state", "B=1 T=1024 Hg=2 H=4 K=128 V=128 BT=64 has_h0=1"},
        {"gdn_e2e", "B=1 T=1024 Hg=2 H=4 K=128 V=128 BT=64 has_h0=1"},
        {"head_norm_rope", "variant=0 n_heads=2048 head_dim=128 half_rope_dim=32 has_weight=1 eps_exp10=6 theta=10000 "
                           "pos_max=4096"},
        {"head_norm_rope", "variant=0 n_heads=1024 head_dim=256 half_rope_dim=32 has_weight=1 eps_exp10=6 "
                           "theta=10000000 pos_max=4096"},
        {"head_norm_rope", "variant=1 n_heads=32 head_dim=128 half_rope_dim=32 seq_len=64 has_weight=1 eps_exp10=6 "
                           "theta=10000 pos_max=8192"},
        {"head_norm_rope", "variant=1 n_heads=16 head_dim=256 half_rope_dim=32 seq_len=64 has_weight=1 eps_exp10=6 "
                           "theta=10000000 pos_max=8192"},
        {"attn_reduce_fwht", "nrows=64 head_dim=256 nwg=4 fused=1"},
        {"attn_reduce_fwht", "nrows=32 head_dim=256 nwg=32 fused=1"},
        {"attn_reduce_fwht", "nrows=32 head_dim=512 nwg=8 fused=1"},
        {"attn_reduce_fwht", "nrows=16 head_dim=512 nwg=32 fused=1"},
        {"gdn_chunk_cumsum", "B=1 T=8192 H=32 BT=64"},
        {"gdn_chunk_scaled_kkt", "B=1 T=1024 Hg=2 H=4 K=128 BT=64"},
        {"gdn_solve_tril", "B=1 T=1024 H=4 BT=64"},
    };
    int rc = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        printf("\n== reference speed: %s reference, fast path vs MPFR path, %s ==\n", cases[k][0], cases[k][1]);
        ref_case c;
        if (case_open(&c, cases[k][0], cases[k][1]) != 0) {
            case_close(&c);
            rc = -1;
            continue;
        }
        for (int mode = 0; mode < UG_REF_MODE_COUNT; mode++) {
            double wall[2] = {INFINITY, INFINITY}, cpu[2] = {INFINITY, INFINITY}; /* [fast] */
            ug_status st = ug_ok();
            for (int fast = 1; fast >= 0 && ug_is_ok(&st); fast--) {
                ug_ref_set_fast(fast);
                for (int r = 0; r < (fast ? REPEATS : 1) && ug_is_ok(&st); r++) {
                    const double t0 = bench_now(), c0 = thread_cpu_seconds();
                    st = c.f->reference(&c.p, c.bufs, &bench_model, (ug_ref_mode)mode,
                                        fast ? c.outs[mode] : c.plain_path);
                    wall[fast] = fmin(wall[fast], bench_now() - t0);
                    cpu[fast] = fmin(cpu[fast], thread_cpu_seconds() - c0);
                }
            }
            ug_ref_set_fast(true);
            if (!ug_is_ok(&st)) {
                printf("  failed: %s\n", st.msg);
                rc = -1;
                break;
            }
            size_t differ = 0;
            for (size_t o = 0; o < c.n_out; o++)
                for (size_t e = 0; e < c.out_counts[o]; e++)
                    differ += !same_value(&c.plain_path[o][e], &c.outs[mode][o][e]);
            const double elements = (double)c.elements;
            printf("  %-6s mode, fast path: %7.3f s wall %7.3f Melem/s, %7.3f s cpu %7.3f Melem/s (best of %d)\n",
                   ug_ref_mode_name((ug_ref_mode)mode), wall[1], elements / wall[1] * 1e-6, cpu[1],
                   elements / cpu[1] * 1e-6, REPEATS);
            printf("  %-6s mode, MPFR path: %7.3f s wall %7.3f Melem/s, %7.3f s cpu %7.3f Melem/s (one run)\n",
                   ug_ref_mode_name((ug_ref_mode)mode), wall[0], elements / wall[0] * 1e-6, cpu[0],
                   elements / cpu[0] * 1e-6);
            printf("  %-6s mode: fast path %.2fx the MPFR path by wall time, %.2fx by cpu time; %zu of %.0f "
                   "elements differ in some field\n", ug_ref_mode_name((ug_ref_mode)mode), wall[0] / wall[1],
                   cpu[0] / cpu[1], differ, elements);
            if (differ) rc = -1;
        }
        case_close(&c);
    }
    return rc;
}

int bench_reference_speed(void)
{
    ug_status st = ug_profile_load("fixtures/profiles/cpu.json", &bench_model);
    if (!ug_is_ok(&st)) {
        printf("  reference speed: %s (run the bench from the repository root)\n", st.msg);
        return -1;
    }
    const int wu = recompute_wu_speed();
    const int kkt = paths_speed("gdn_chunk_scaled_kkt", "B=1 T=256 Hg=2 H=4 K=128 BT=64", true);
    const int elements = elements_speed();
    return wu != 0 || kkt != 0 || elements != 0 ? -1 : 0;
}
