/* SPDX-License-Identifier: MIT */
/* `make bench`: every registered kernel family at realistic sizes, on every
 * ISA path this CPU supports, against this machine's peaks measured in the
 * same run and against a naive C translation of the seed; then the MPFR
 * reference's speed and the harness's threading (docs/performance.md).
 *
 * Like llama.cpp's test-backend-ops perf mode, the bench drives the same
 * descriptors as `verify`: buffers sized by ug_family_buffer_count, inputs from
 * generate (regime 0, a seeded mt19937), the kernel through run. The table
 * below only names parameter values, by parameter name.
 *
 * usage: bench [--ulpgate PATH] [--filter TEXT] [--isa LIST] [--no-naive] [--no-verify] [--no-ref]
 *              [--cpu-time] */
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/bf16.h"
#include "../kernels/isa.h"
#include "../kernels/parallel.h"
#include "bench.h"

extern char **environ;

/* ---- the table --------------------------------------------------------------- */

typedef enum { WORK_MACS, WORK_BYTES } work_kind;

typedef struct {
    const char *family;
    const char *size;   /* the size column */
    const char *params; /* "NAME=VALUE ..." by the descriptor's parameter names */
    void (*naive)(const bench_call *c);
    bool portable; /* also time the portable path (slow: seconds per call) */
    work_kind kind;
    /* Multiply-adds of the algorithm (WORK_MACS; docs/performance.md derives
     * each), or NULL for WORK_BYTES: every buffer read or written once. */
    double (*macs)(const bench_call *c);
} bench_case;

static double P(const bench_call *c, const char *n) { return bench_param(c, n); }

/* Full BT x BT tiles of A times the staged operands: BT terms per output. */
static double macs_recompute_wu(const bench_call *c)
{
    return P(c, "B") * P(c, "T") * P(c, "H") * P(c, "BT") * (P(c, "K") + P(c, "V"));
}

/* Per chunk: q k^T (BT x BT x K), q h^T (BT x V x K), Q v (BT x BT x V). */
static double macs_chunk_o(const bench_call *c)
{
    double bt = P(c, "BT"), k = P(c, "K"), v = P(c, "V");
    return P(c, "B") * P(c, "H") * P(c, "T") * (bt * k + v * k + bt * v);
}

/* The Gram matrix of a chunk's keys, once per key head: BT x BT x K. */
static double macs_scaled_kkt(const bench_call *c)
{
    return P(c, "B") * P(c, "Hg") * P(c, "T") * P(c, "BT") * P(c, "K");
}

/* Per chunk: w . bf16(S) (BT x K x V) and K^T . staged (K x BT x V). */
static double macs_chunk_state(const bench_call *c)
{
    return P(c, "B") * P(c, "H") * P(c, "T") * 2 * P(c, "K") * P(c, "V");
}

/* Forward substitution per chunk: sum over i < BT, j < i of (i - j) terms
 * = (BT - 1) BT (BT + 1) / 6. */
static double macs_solve_tril(const bench_call *c)
{
    double bt = P(c, "BT");
    return P(c, "B") * P(c, "H") * P(c, "T") / bt * (bt - 1) * bt * (bt + 1) / 6;
}

/* The pipeline: the sum of its stages (the cumsum's adds not counted). */
static double macs_e2e(const bench_call *c)
{
    double bt = P(c, "BT"), k = P(c, "K"), v = P(c, "V"), rows = P(c, "B") * P(c, "T");
    return rows * P(c, "Hg") * bt * k + rows * P(c, "H") / bt * (bt - 1) * bt * (bt + 1) / 6 +
           rows * P(c, "H") * (bt * (k + v) + 2 * k * v + bt * k + v * k + bt * v);
}

#define GDN_SHAPE(hg) "B=1 T=4096 H=16 Hg=" #hg " K=128 V=128 BT=64"
#define GDN_SIZE(hg) "B1 T4096 H16 Hg" #hg " K=V=128"

static const bench_case cases[] = {
    {"gdn_recompute_wu", GDN_SIZE(16), GDN_SHAPE(16), naive_gdn_recompute_wu, true, WORK_MACS, macs_recompute_wu},
    {"gdn_recompute_wu", GDN_SIZE(8), GDN_SHAPE(8), naive_gdn_recompute_wu, false, WORK_MACS, macs_recompute_wu},
    {"gdn_chunk_o", GDN_SIZE(16), GDN_SHAPE(16) " scale_bits=1035273459", naive_gdn_chunk_o, true, WORK_MACS,
     macs_chunk_o},
    {"gdn_chunk_o", GDN_SIZE(8), GDN_SHAPE(8) " scale_bits=1035273459", naive_gdn_chunk_o, false, WORK_MACS,
     macs_chunk_o},
    {"gdn_chunk_scaled_kkt", "B1 T4096 H16 Hg16 K128", "B=1 T=4096 H=16 Hg=16 K=128 BT=64", naive_gdn_chunk_scaled_kkt,
     true, WORK_MACS, macs_scaled_kkt},
    {"gdn_chunk_scaled_kkt", "B1 T4096 H16 Hg8 K128", "B=1 T=4096 H=16 Hg=8 K=128 BT=64", naive_gdn_chunk_scaled_kkt,
     false, WORK_MACS, macs_scaled_kkt},
    {"gdn_chunk_state", GDN_SIZE(16), GDN_SHAPE(16) " has_h0=1", naive_gdn_chunk_state, true, WORK_MACS,
     macs_chunk_state},
    {"gdn_chunk_state", GDN_SIZE(8), GDN_SHAPE(8) " has_h0=1", naive_gdn_chunk_state, false, WORK_MACS,
     macs_chunk_state},
    {"gdn_solve_tril", "B1 T4096 H16", "B=1 T=4096 H=16 BT=64", naive_gdn_solve_tril, true, WORK_MACS,
     macs_solve_tril},
    {"gdn_chunk_cumsum", "B1 T4096 H16", "B=1 T=4096 H=16 BT=64", naive_gdn_chunk_cumsum, true, WORK_BYTES, NULL},
    {"gdn_e2e", GDN_SIZE(16), GDN_SHAPE(16) " has_h0=1", NULL, false, WORK_MACS, macs_e2e},
    {"attn_reduce_fwht", "rows32 nwg16 d256 fused", "nrows=32 nwg=16 head_dim=256 fused=1", naive_attn_reduce_fwht,
     true, WORK_BYTES, NULL},
    {"attn_reduce_fwht", "rows32 nwg16 d256 pair", "nrows=32 nwg=16 head_dim=256 fused=0", naive_attn_reduce_fwht,
     true, WORK_BYTES, NULL},
    {"attn_reduce_fwht", "rows32 nwg16 d512 fused", "nrows=32 nwg=16 head_dim=512 fused=1", naive_attn_reduce_fwht,
     true, WORK_BYTES, NULL},
    {"attn_reduce_fwht", "rows32 nwg16 d512 pair", "nrows=32 nwg=16 head_dim=512 fused=0", naive_attn_reduce_fwht,
     true, WORK_BYTES, NULL},
#define NORM_ROPE_COMMON "has_weight=1 has_ff=0 eps_exp10=6 theta=1000000 cache_extra=0"
    {"head_norm_rope", "f32 seq4096 x16 d128", "variant=1 seq_len=4096 n_heads=16 head_dim=128 half_rope_dim=64 "
     "pos_max=8191 " NORM_ROPE_COMMON, naive_head_norm_rope, true, WORK_BYTES, NULL},
    {"head_norm_rope", "f32 seq4096 x16 d256", "variant=1 seq_len=4096 n_heads=16 head_dim=256 half_rope_dim=128 "
     "pos_max=8191 " NORM_ROPE_COMMON, naive_head_norm_rope, true, WORK_BYTES, NULL},
    {"head_norm_rope", "bf16 1 token x16 d128", "variant=0 seq_len=1 n_heads=16 head_dim=128 half_rope_dim=64 "
     "pos_max=8191 " NORM_ROPE_COMMON, naive_head_norm_rope, true, WORK_BYTES, NULL},
    {"head_norm_rope", "bf16 1 token x16 d256", "variant=0 seq_len=1 n_heads=16 head_dim=256 half_rope_dim=128 "
     "pos_max=8191 " NORM_ROPE_COMMON, naive_head_norm_rope, true, WORK_BYTES, NULL},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ---- parameters and buffers by name --------------------------------------------- */

double bench_param(const bench_call *c, const char *name)
{
    int i = ug_family_param_index(c->f, name);
    if (i < 0) {
        fprintf(stderr, "bench: %s has no parameter '%s'\n", c->f->name, name);
        exit(3);
    }
    return c->p->v[i];
}

void *bench_buffer(const bench_call *c, const char *name)
{
    int i = ug_family_buffer_index(c->f, name);
    if (i < 0) {
        fprintf(stderr, "bench: %s has no buffer '%s'\n", c->f->name, name);
        exit(3);
    }
    return c->bufs[i].data;
}

/* Sets every "NAME=VALUE" of text; false (reason in why) on an unknown name. */
static bool parse_params(const ug_family *f, const char *text, ug_params *p, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    char copy[512];
    snprintf(copy, sizeof copy, "%s", text);
    for (char *save = NULL, *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = '\0';
        int i = ug_family_param_index(f, tok);
        if (i < 0) {
            snprintf(why, why_size, "the descriptor has no parameter '%s'", tok);
            return false;
        }
        p->v[i] = strtod(eq + 1, NULL);
    }
    return true;
}

/* ---- one case's buffers ----------------------------------------------------------- */

typedef struct {
    const ug_family *f;
    ug_params p;
    ug_buf bufs[UG_MAX_BUFFERS];
    void *saved[UG_MAX_BUFFERS]; /* outputs of the first path, for the comparisons */
    double bytes;                /* every buffer once */
} case_data;

static void case_free(case_data *d)
{
    for (size_t i = 0; i < d->f->n_buffers; i++) {
        free(d->bufs[i].data);
        free(d->saved[i]);
    }
}

static size_t buf_bytes(const ug_buf *b) { return b->count * ug_dtype_size(b->dtype); }

static bool case_open(case_data *d, const ug_family *f, const ug_params *p, char *why, size_t why_size)
{
    memset(d, 0, sizeof *d);
    d->f = f;
    d->p = *p;
    for (size_t i = 0; i < f->n_buffers; i++) {
        ug_status st = ug_family_buffer_count(f, p, i, &d->bufs[i].count);
        d->bufs[i].dtype = f->buffers[i].dtype;
        size_t bytes = buf_bytes(&d->bufs[i]);
        d->bufs[i].data = ug_is_ok(&st) ? aligned_alloc(64, (bytes + 63) / 64 * 64 + 64) : NULL;
        if (!d->bufs[i].data) {
            snprintf(why, why_size, "buffer %s: %s", f->buffers[i].name, ug_is_ok(&st) ? "out of memory" : st.msg);
            case_free(d);
            return false;
        }
        memset(d->bufs[i].data, 0, bytes); /* outputs: no page faults inside the timing */
        d->bytes += (double)bytes;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20260517);
    ug_status st = f->generate(p, 0, rng, d->bufs);
    gsl_rng_free(rng);
    if (!ug_is_ok(&st)) {
        snprintf(why, why_size, "generate: %s", st.msg);
        case_free(d);
        return false;
    }
    return true;
}

/* Keeps (first call) or compares with (later calls) the output buffers:
 * true when every output is bit-identical to the kept one. */
static bool outputs_match_saved(case_data *d)
{
    bool same = true;
    for (size_t i = 0; i < d->f->n_buffers; i++) {
        if (!d->f->buffers[i].is_output) continue;
        size_t bytes = buf_bytes(&d->bufs[i]);
        if (!d->saved[i]) {
            d->saved[i] = malloc(bytes ? bytes : 1);
            if (!d->saved[i]) exit(3);
            memcpy(d->saved[i], d->bufs[i].data, bytes);
        } else if (memcmp(d->saved[i], d->bufs[i].data, bytes) != 0) {
            same = false;
        }
    }
    return same;
}

static double element(const ug_buf *b, const void *data, size_t i)
{
    switch (b->dtype) {
    case UG_BF16: return ug_bf16_to_f32(((const ug_bf16 *)data)[i]);
    case UG_F32: return ((const float *)data)[i];
    case UG_F64: return ((const double *)data)[i];
    default: return ((const uint32_t *)data)[i];
    }
}

/* The naive outputs against the kept kernel outputs: the largest difference
 * relative to the largest kernel value of the same output buffer. */
static double naive_difference(const case_data *d)
{
    double worst = 0;
    for (size_t i = 0; i < d->f->n_buffers; i++) {
        if (!d->f->buffers[i].is_output || !d->saved[i]) continue;
        double max_diff = 0, max_abs = 0;
        for (size_t e = 0; e < d->bufs[i].count; e++) {
            double y = element(&d->bufs[i], d->bufs[i].data, e), r = element(&d->bufs[i], d->saved[i], e);
            if (!isfinite(y) || !isfinite(r)) {
                if (!(isnan(y) && isnan(r)) && y != r) return INFINITY;
                continue;
            }
            max_diff = fmax(max_diff, fabs(y - r));
            max_abs = fmax(max_abs, fabs(r));
        }
        if (max_abs > 0) worst = fmax(worst, max_diff / max_abs);
        else if (max_diff > 0) return INFINITY;
    }
    return worst;
}

/* ---- timing ------------------------------------------------------------------------- */

typedef struct {
    const case_data *d;
    void (*naive)(const bench_call *c);
    bool failed;
    char why[UG_MSG_MAX];
} call_ctx;

static void call_once(call_ctx *x)
{
    case_data *d = (case_data *)x->d;
    if (x->naive) {
        bench_call c = {d->f, &d->p, d->bufs};
        x->naive(&c);
        return;
    }
    ug_status st = d->f->run(&d->p, d->bufs);
    if (!ug_is_ok(&st) && !x->failed) {
        x->failed = true;
        snprintf(x->why, sizeof x->why, "%s", st.msg);
    }
}

typedef struct {
    double per_call; /* median seconds per call */
    int samples;     /* timed samples after the warm-up */
    int inner;       /* calls per sample */
} timing;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Calls at least this long are timed once, without a warm-up: their
 * buffers are touched before the first call, and a cold start is a small
 * part of seconds of work. */
static const double slow_call = 0.5;

/* One warm-up call, then up to max_samples samples of `inner` calls each
 * (inner chosen so that a sample lasts >= 2 ms), as many as fit in budget
 * seconds but at least one; the median per-call time. */
static timing measure(call_ctx *x, int max_samples, double budget)
{
    enum { MAX_SAMPLES = 15 };
    timing t = {0, 0, 1};
    double t0 = bench_clock();
    call_once(x);
    double first = fmax(bench_clock() - t0, 1e-9);
    if (first >= slow_call) {
        t.per_call = first;
        t.samples = 1;
        return t;
    }
    t.inner = first >= 2e-3 ? 1 : (int)ceil(2e-3 / first);
    double per_sample = first * t.inner;
    t.samples = (int)fmin((double)max_samples, fmax(1.0, floor(budget / per_sample)));
    if (t.samples > MAX_SAMPLES) t.samples = MAX_SAMPLES;
    double samples[MAX_SAMPLES];
    for (int s = 0; s < t.samples; s++) {
        double s0 = bench_clock();
        for (int i = 0; i < t.inner; i++) call_once(x);
        samples[s] = (bench_clock() - s0) / t.inner;
    }
    qsort(samples, (size_t)t.samples, sizeof *samples, cmp_double);
    t.per_call = t.samples % 2 ? samples[t.samples / 2]
                               : 0.5 * (samples[t.samples / 2 - 1] + samples[t.samples / 2]);
    return t;
}

/* Busy CPU seconds of the whole machine so far (/proc/stat: every state but
 * idle and iowait), or NAN. */
static double machine_busy_seconds(void)
{
    FILE *fp = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = fp ? fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                        &v[5], &v[6], &v[7])
               : 0;
    if (fp) fclose(fp);
    if (n != 8) return NAN;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]; /* user nice system irq softirq steal */
    return (double)busy / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds (user + system) of this process so far, every thread. */
static double own_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The best path's timing again at 2 kernel threads (kernels/parallel.h),
 * with the CPUs that other processes kept busy meanwhile (/proc/stat's busy
 * time less this process's): on a shared 2-CPU machine a 2-thread figure
 * means something only when that is near 0. */
typedef struct {
    timing t;
    double others; /* CPUs busy with other processes during the timing */
} two_threads;

static const double min_busy_window = 0.3;

static two_threads measure_two_threads(call_ctx *x, int max_samples, double budget)
{
    two_threads r;
    (void)ug_kernel_threads_set(2);
    bench_unpin();
    double busy0 = machine_busy_seconds(), cpu0 = own_cpu_seconds(), wall0 = bench_now();
    const bool cpu_time = bench_cpu_time;
    bench_cpu_time = false; /* one thread's CPU time is not the call's time */
    r.t = measure(x, max_samples, budget);
    bench_cpu_time = cpu_time;
    /* /proc/stat counts in clock ticks (10 ms): a short timing is extended
     * with more calls until the window is long enough to read. */
    while (bench_now() - wall0 < min_busy_window) call_once(x);
    double wall = bench_now() - wall0;
    r.others = (machine_busy_seconds() - busy0 - (own_cpu_seconds() - cpu0)) / wall;
    (void)bench_pin();
    (void)ug_kernel_threads_set(1);
    return r;
}

/* ---- the report ----------------------------------------------------------------------- */

typedef struct {
    double fma[UG_ISA_COUNT]; /* GFLOP/s per path: portable = scalar fmaf() */
    double fma_best;          /* the machine's f32 FMA peak: the best path's */
    bench_bandwidth bw;
    double stream;            /* the bandwidth peak: max(copy, triad) over DRAM-sized buffers */
} peaks;

static void format_time(double s, char *out, size_t size)
{
    if (s >= 1) snprintf(out, size, "%.3f s", s);
    else if (s >= 1e-3) snprintf(out, size, "%.2f ms", s * 1e3);
    else if (s >= 1e-5) snprintf(out, size, "%.1f us", s * 1e6);
    else snprintf(out, size, "%.2f us", s * 1e6);
}

static void print_header(void)
{
    printf("%-21s %-24s %-8s %3s %10s %15s %6s %6s %6s %8s %10s %6s %6s  %s\n", "family", "size", "path", "n",
           "time/call", "rate", "%peak", "%path", "%copy", "x naive", "2 threads", "x 2/1", "others", "check");
    printf("%.*s\n", 158, "------------------------------------------------------------------------------------------"
                          "------------------------------------------------------------------------------------------");
}

typedef struct {
    const bench_case *bc;
    const peaks *pk;
    double work;     /* multiply-adds or bytes per call */
    double copy_ref; /* GB/s of a same-size copy (WORK_BYTES) */
    double naive_s;  /* seconds per naive call, 0 when none */
} row_ctx;

/* two: the 2-thread figures of the best path's row, NULL on the others. */
static void print_row(const row_ctx *r, const char *path, ug_isa isa, const timing *t, const two_threads *two,
                      const char *check)
{
    char time_text[32], rate_text[32], peak_text[16] = "-", path_text[16] = "-", copy_text[16] = "-",
                                                       naive_text[16] = "-", two_text[32] = "-", speedup_text[16] = "-",
                                                       others_text[16] = "-";
    if (two) {
        format_time(two->t.per_call, two_text, sizeof two_text);
        snprintf(speedup_text, sizeof speedup_text, "%.2fx", t->per_call / two->t.per_call);
        snprintf(others_text, sizeof others_text, "%.2f", two->others);
    }
    format_time(t->per_call, time_text, sizeof time_text);
    if (r->bc->kind == WORK_MACS) {
        double gflops = 2 * r->work / t->per_call * 1e-9;
        snprintf(rate_text, sizeof rate_text, "%.2f GFLOP/s", gflops);
        if (r->pk->fma_best > 0) snprintf(peak_text, sizeof peak_text, "%.1f%%", 100 * gflops / r->pk->fma_best);
        if (r->pk->fma[isa] > 0 && strcmp(path, "naive") != 0)
            snprintf(path_text, sizeof path_text, "%.1f%%", 100 * gflops / r->pk->fma[isa]);
    } else {
        double gbs = r->work / t->per_call * 1e-9;
        snprintf(rate_text, sizeof rate_text, "%.2f GB/s", gbs);
        if (r->pk->stream > 0) snprintf(peak_text, sizeof peak_text, "%.1f%%", 100 * gbs / r->pk->stream);
        if (r->copy_ref > 0) snprintf(copy_text, sizeof copy_text, "%.1f%%", 100 * gbs / r->copy_ref);
    }
    if (r->naive_s > 0) snprintf(naive_text, sizeof naive_text, "%.2fx", r->naive_s / t->per_call);
    printf("%-21s %-24s %-8s %3d %10s %15s %6s %6s %6s %8s %10s %6s %6s  %s\n", r->bc->family, r->bc->size, path,
           t->samples, time_text, rate_text, peak_text, path_text, copy_text, naive_text, two_text, speedup_text,
           others_text, check);
    fflush(stdout);
}

static const char *filter_text;
static bool isa_enabled[UG_ISA_COUNT] = {true, true, true};
static bool naive_enabled = true;
static double setup_seconds; /* generating the inputs, outside every timing */
static int failures;         /* kernel errors, bits differing across paths, naive mismatches */

static void run_case(const bench_case *bc, const peaks *pk)
{
    const ug_family *f = ug_family_find(bc->family);
    if (!f) {
        printf("%-21s %-24s skipped: the family is not registered in this build\n", bc->family, bc->size);
        return;
    }
    ug_params p;
    char why[UG_MSG_MAX];
    case_data d;
    double t0 = bench_now();
    bool opened = parse_params(f, bc->params, &p, why, sizeof why) && case_open(&d, f, &p, why, sizeof why);
    setup_seconds += bench_now() - t0;
    if (!opened) {
        failures++;
        printf("%-21s %-24s skipped: %s\n", bc->family, bc->size, why);
        return;
    }
    bench_call call = {f, &d.p, d.bufs};
    row_ctx r = {bc, pk, bc->kind == WORK_MACS ? bc->macs(&call) : d.bytes, 0, 0};
    if (bc->kind == WORK_BYTES) r.copy_ref = bench_copy_rate((size_t)d.bytes);

    /* The naive baseline first (its time sets the x-naive column); its
     * outputs are compared after the kernel's. */
    timing naive_t = {0, 0, 1};
    call_ctx naive = {&d, naive_enabled ? bc->naive : NULL, false, ""};
    if (naive.naive) {
        naive_t = measure(&naive, 3, 1.0);
        r.naive_s = naive_t.per_call;
    }
    ug_isa order[] = {UG_ISA_AVX512, UG_ISA_AVX2, UG_ISA_PORTABLE};
    const char *first_path = NULL;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        ug_isa isa = order[k];
        if (!ug_isa_supported(isa) || !isa_enabled[isa]) continue;
        if (isa == UG_ISA_PORTABLE && !bc->portable) {
            printf("%-21s %-24s %-8s not timed here: seconds per call; the same kernel's portable row above "
                   "stands for it\n",
                   bc->family, bc->size, ug_isa_name(isa));
            continue;
        }
        (void)ug_isa_select(isa); /* supported: checked above */
        call_ctx x = {&d, NULL, false, ""};
        bool slow = isa == UG_ISA_PORTABLE;
        timing t = measure(&x, slow ? 3 : 5, slow ? 1.0 : 0.8);
        char check[96];
        if (x.failed) {
            printf("%-21s %-24s %-8s the kernel failed: %s\n", bc->family, bc->size, ug_isa_name(isa), x.why);
            failures++;
            continue;
        }
        bool same = outputs_match_saved(&d);
        failures += !same;
        two_threads two;
        bool best_path = !first_path;
        if (best_path) {
            first_path = ug_isa_name(isa);
            two = measure_two_threads(&x, slow ? 3 : 5, slow ? 1.0 : 0.8);
            bool same_two = !x.failed && outputs_match_saved(&d);
            failures += !same_two;
            snprintf(check, sizeof check, same_two ? "-" : "BITS DIFFER at 2 threads");
        } else {
            snprintf(check, sizeof check, same ? "bits = %s" : "BITS DIFFER from %s", first_path);
        }
        print_row(&r, ug_isa_name(isa), isa, &t, best_path ? &two : NULL, check);
    }
    (void)ug_isa_select(ug_isa_best()); /* the best is always supported */
    if (naive.naive) {
        call_once(&naive); /* fresh outputs to compare */
        double diff = naive_difference(&d);
        failures += diff > 1e-2;
        char check[96];
        snprintf(check, sizeof check, "%s max|naive-kernel|/max|kernel| = %.1e", diff > 1e-2 ? "MISMATCH" : "ok:",
                 diff);
        print_row(&r, "naive", UG_ISA_PORTABLE, &naive_t, NULL, check);
    }
    case_free(&d);
}

/* ---- verify --jobs 1 vs 2 --------------------------------------------------------------- */

/* Wall and CPU seconds of one `ulpgate verify` on the smoke sweep; false
 * when it could not run or did not pass. */
static bool time_verify(const char *ulpgate, int jobs, double *wall, double *cpu, int *exit_code)
{
    char jobs_text[16];
    snprintf(jobs_text, sizeof jobs_text, "%d", jobs);
    char *argv[] = {(char *)ulpgate, "verify", "--sweep", "fixtures/sweeps/smoke", "--budgets", "fixtures/budgets",
                    "--quiet", "--jobs", jobs_text, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    double t0 = bench_now();
    int err = posix_spawn(&pid, ulpgate, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        printf("  cannot run %s: %s\n", ulpgate, strerror(err));
        return false;
    }
    int status;
    struct rusage ru;
    *exit_code = -1;
    if (wait4(pid, &status, 0, &ru) < 0) return false;
    *wall = bench_now() - t0;
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return *exit_code == 0;
}

static void print_loadavg(const char *when)
{
    char text[128] = "?";
    FILE *fp = fopen("/proc/loadavg", "r");
    if (fp) {
        if (!fgets(text, sizeof text, fp)) snprintf(text, sizeof text, "?");
        fclose(fp);
    }
    text[strcspn(text, "\n")] = '\0';
    printf("  load average %s: %s\n", when, text);
}

static bool verify_threads(const char *ulpgate)
{
    printf("\n== harness threads: ulpgate verify --sweep fixtures/sweeps/smoke --budgets fixtures/budgets --quiet "
           "--jobs N ==\n");
    print_loadavg("before");
    /* Two runs each, in the order 1 2 2 1, so that a drift in the machine's
     * load weighs on both; the best wall time of each counts. */
    static const int order[] = {1, 2, 2, 1};
    double best[3] = {INFINITY, INFINITY, INFINITY};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int jobs = order[i], code = 0;
        double wall, cpu, busy0 = machine_busy_seconds();
        if (!time_verify(ulpgate, jobs, &wall, &cpu, &code)) {
            printf("  --jobs %d did not pass (exit %d): no figure\n", jobs, code);
            return false;
        }
        double others = (machine_busy_seconds() - busy0 - cpu) / wall;
        printf("  --jobs %d: %7.2f s wall, %7.2f s CPU (user+sys), CPU/wall %.2f; other processes meanwhile: %.2f "
               "CPUs busy\n",
               jobs, wall, cpu, cpu / wall, others);
        best[jobs] = fmin(best[jobs], wall);
    }
    print_loadavg("after");
    printf("  speed-up --jobs 2 over --jobs 1 (best wall of two runs each): %.2fx (the issue's target: >= 1.8x)\n",
           best[1] / best[2]);
    return true;
}

/* ---- main ---------------------------------------------------------------------------------- */

static void print_machine(void)
{
    char line[256], model[256] = "?";
    FILE *fp = fopen("/proc/cpuinfo", "r");
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            snprintf(model, sizeof model, "%s", colon ? colon + 2 : line);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (fp) fclose(fp);
    printf("machine: %s, %ld online CPUs; compiler: gcc %s\n", model, sysconf(_SC_NPROCESSORS_ONLN), __VERSION__);
    print_loadavg("at start");
}

static void measure_peaks(peaks *pk)
{
    memset(pk, 0, sizeof *pk);
    printf("\n== peaks of this machine (one core, measured now; best of 5 passes%s) ==\n",
           bench_cpu_time ? "; thread CPU time" : "");
    pk->fma[UG_ISA_AVX512] = bench_fma_peak_avx512();
    pk->fma[UG_ISA_AVX2] = bench_fma_peak_avx2();
    pk->fma[UG_ISA_PORTABLE] = bench_fma_peak_scalar();
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) pk->fma_best = fmax(pk->fma_best, pk->fma[isa]);
    printf("  f32 FMA avx512 : %8.1f GFLOP/s  (24 independent zmm FMA chains; an FMA = 2 flops)\n",
           pk->fma[UG_ISA_AVX512]);
    printf("  f32 FMA avx2   : %8.1f GFLOP/s  (12 independent ymm FMA chains)\n", pk->fma[UG_ISA_AVX2]);
    printf("  f32 FMA scalar : %8.1f GFLOP/s  (8 chains of fmaf() built without -mfma: the portable path's)\n",
           pk->fma[UG_ISA_PORTABLE]);
    const double dot_bf16 = bench_dot_peak_bf16();
    if (dot_bf16 > 0)
        printf("  bf16 dot       : %8.1f GFLOP/s  (24 chains of vdpbf16ps, 32 bf16 products each: %.2fx the FMA rate; "
               "not used, docs/performance.md)\n",
               dot_bf16, dot_bf16 / pk->fma[UG_ISA_AVX512]);
    bench_measure_bandwidth(&pk->bw);
    pk->stream = fmax(pk->bw.copy_dram, pk->bw.triad_dram);
    printf("  DRAM copy      : %8.1f GB/s   (memcpy, 2 x %zu MiB; bytes read + written)\n", pk->bw.copy_dram,
           pk->bw.dram_bytes >> 20);
    printf("  DRAM triad     : %8.1f GB/s   (a = b + s*c, 3 x %zu MiB; read-for-ownership not counted)\n",
           pk->bw.triad_dram, pk->bw.dram_bytes >> 20);
    printf("  LLC copy       : %8.1f GB/s   (memcpy, 2 x 16 MiB, hot)\n", pk->bw.copy_llc);
    printf("  L2 copy        : %8.1f GB/s   (memcpy, 2 x 256 KiB, hot)\n", pk->bw.copy_l2);
    printf("  %%peak of a compute row: of the best f32 FMA peak (%.1f GFLOP/s); %%path: of its own path's peak\n",
           pk->fma_best);
    printf("  %%peak of a memory row: of the DRAM stream peak (%.1f GB/s); %%copy: of a hot memcpy of its own "
           "working-set size\n",
           pk->stream);
}

int main(int argc, char **argv)
{
    const char *ulpgate = "build/ulpgate";
    bool do_verify = true, do_ref = true;
    static const struct option opts[] = {{"ulpgate", required_argument, 0, 'u'},
                                         {"filter", required_argument, 0, 'f'},
                                         {"no-verify", no_argument, 0, 'V'},
                                         {"no-ref", no_argument, 0, 'R'},
                                         {"isa", required_argument, 0, 'i'},
                                         {"no-naive", no_argument, 0, 'N'},
                                         {"cpu-time", no_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'u': ulpgate = optarg; break;
        case 'f': filter_text = optarg; break;
        case 'V': do_verify = false; break;
        case 'R': do_ref = false; break;
        case 'N': naive_enabled = false; break;
        case 'C': bench_cpu_time = true; break;
        case 'i':
            for (int isa = 0; isa < UG_ISA_COUNT; isa++) isa_enabled[isa] = false;
            for (char *save = NULL, *tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                ug_isa isa;
                if (!ug_isa_parse(tok, &isa)) {
                    fprintf(stderr, "bench: --isa: unknown path '%s' (expected portable, avx2, avx512)\n", tok);
                    return 2;
                }
                isa_enabled[isa] = true;
            }
            break;
        default:
            fprintf(ch == 'h' ? stdout : stderr,
                    "usage: bench [--ulpgate PATH] [--filter TEXT] [--isa LIST] [--no-naive] [--no-verify] [--no-ref]\n"
                    "             [--cpu-time]\n"
                    "  --ulpgate PATH  the ulpgate binary timed with verify --jobs 1 and 2 (build/ulpgate)\n"
                    "  --filter TEXT   only the table rows whose family or size contains TEXT\n"
                    "  --isa LIST      comma-separated paths to time (portable,avx2,avx512; default all supported)\n"
                    "  --no-naive      skip the naive baselines (the x naive column stays empty)\n"
                    "  --no-verify     skip the verify --jobs 1 vs 2 timing\n"
                    "  --no-ref        skip the MPFR reference speed\n"
                    "  --cpu-time      time the peaks and the one-thread rows in this thread's CPU time, not\n"
                    "                  wall-clock (a shared machine: time other processes held the CPU left out)\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    const double t_start = bench_now();
    print_machine();
    const int cpu = bench_pin();
    if (cpu >= 0)
        printf("  one-thread timings and peaks on CPU %d (pinned; 2-thread rows, verify --jobs and the reference's "
               "spread cases on every CPU)\n", cpu);
    peaks pk;
    measure_peaks(&pk);

    printf("\n== kernels ==\n"
           "  time/call: median of n samples after a warm-up call (n = 1: a call of >= 0.5 s, timed once, no "
           "warm-up)%s\n"
           "  rate: 2 x multiply-adds / time (GFLOP/s), or bytes of every buffer once / time (GB/s)\n"
           "  x naive: the naive loops' time / this time; check: bits = P: output bits identical to path P's\n"
           "  2 threads, x 2/1: the best path again at 2 kernel threads, and 1-thread time / 2-thread time;\n"
           "  others: CPUs kept busy by other processes meanwhile (/proc/stat less this process)\n",
           bench_cpu_time ? "; --cpu-time: the peaks and 1-thread rows in thread CPU time, 2 threads wall-clock" : "");
    print_header();
    for (size_t i = 0; i < N_CASES; i++) {
        const bench_case *bc = &cases[i];
        if (filter_text && !strstr(bc->family, filter_text) && !strstr(bc->size, filter_text)) continue;
        run_case(bc, &pk);
    }
    /* Families the table does not know are named, so that none goes unnoticed. */
    for (size_t i = 0; i < ug_family_count(); i++) {
        bool listed = false;
        for (size_t c = 0; c < N_CASES; c++) listed |= strcmp(cases[c].family, ug_family_at(i)->name) == 0;
        if (!listed) printf("%-21s not benchmarked: no row in bench/bench.c's table\n", ug_family_at(i)->name);
    }

    if (do_ref && bench_reference_speed() != 0) failures++;
    bench_unpin();
    if (do_verify && !verify_threads(ulpgate)) failures++;
    if (failures) printf("\nbench: %d failure(s) above (a kernel error, bits differing across paths, a naive "
                         "mismatch, the reference or verify)\n", failures);
    printf("\nbench: %.1f s wall (of which %.1f s generating inputs)\n", bench_now() - t_start, setup_seconds);
    return failures ? 1 : 0;
}
