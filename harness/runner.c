/* SPDX-License-Identifier: MIT */
#include "runner.h"

#include <gsl/gsl_randist.h>

#include <inttypes.h>
#include <mpfr.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "../core/hash.h"
#include "../kernels/parallel.h"
#include "chain.h"
#include "gen.h"
#include "slice.h"

/* Poison of unwritten outputs: the bytes A7 7F repeated read as the
 * signalling NaN 0x7FA7 in bf16 and 0x7FA77FA7 in f32, values no rounding
 * produces (kernels write quiet NaNs), so a poisoned element is unwritten.
 * Written and compared a block at a time (a byte at a time, poisoning and
 * scanning the production gdn_e2e case's 300 MB of outputs took 0.5 s of
 * its serial start); every element size is even, so each element starts on
 * the pattern's first byte. */
#define POISON_2 0xA7, 0x7F
#define POISON_8 POISON_2, POISON_2, POISON_2, POISON_2
enum { POISON_BLOCK = 32 };
static const unsigned char poison[POISON_BLOCK] = {POISON_8, POISON_8, POISON_8, POISON_8};
static const unsigned char input_fill_byte = 0x3C;

static void fill_poison(void *data, size_t bytes)
{
    unsigned char *p = data;
    size_t k = 0;
    for (; k + POISON_BLOCK <= bytes; k += POISON_BLOCK) memcpy(p + k, poison, POISON_BLOCK);
    memcpy(p + k, poison, bytes - k);
}

static bool is_poison(const void *data, size_t bytes)
{
    const unsigned char *p = data;
    size_t k = 0;
    for (; k + POISON_BLOCK <= bytes; k += POISON_BLOCK)
        if (memcmp(p + k, poison, POISON_BLOCK) != 0) return false;
    return memcmp(p + k, poison, bytes - k) == 0;
}

typedef struct {
    const ug_family *f;
    size_t n;
    ug_guarded mem[UG_MAX_BUFFERS];
    ug_buf buf[UG_MAX_BUFFERS];
} case_buffers;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


static size_t buf_bytes(const ug_buf *b) { return b->count * ug_dtype_size(b->dtype); }

static ug_status buffers_free(case_buffers *cb)
{
    ug_status first = ug_ok();
    for (size_t i = 0; i < cb->n; i++) {
        ug_status st = ug_guarded_free(&cb->mem[i], cb->f->buffers[i].name);
        if (ug_is_ok(&first)) first = st;
    }
    return first;
}

/* Every buffer's expected count and dtype, with the case's override
 * applied, refusing more than max_bytes in all. */
static ug_status buffers_size(ug_buf *bufs, const ug_case *c, size_t max_bytes)
{
    const ug_family *f = c->family;
    size_t total = 0, bytes;
    bool overflow = false;
    for (size_t i = 0; i < f->n_buffers; i++) {
        ug_buf *b = &bufs[i];
        UG_TRY(ug_family_buffer_count(f, &c->params, i, &b->count));
        b->dtype = f->buffers[i].dtype;
        if (c->override.buffer == (int)i) {
            long long n = (long long)b->count + c->override.count_delta;
            b->count = n < 0 ? 0 : (size_t)n;
            if (c->override.dtype != UG_DTYPE_COUNT) b->dtype = c->override.dtype;
        }
        overflow = overflow || __builtin_mul_overflow(b->count, ug_dtype_size(b->dtype), &bytes) ||
                   __builtin_add_overflow(total, bytes, &total);
    }
    if (overflow)
        return ug_fail(UG_ENOMEM, "buffers of this case need more than SIZE_MAX bytes, over the %zu-byte cap",
                       max_bytes);
    if (total > max_bytes)
        return ug_fail(UG_ENOMEM, "buffers of this case need %zu bytes, over the %zu-byte cap", total, max_bytes);
    return ug_ok();
}

ug_status ug_run_check_sizes(const ug_sweep *sweep, size_t max_bytes)
{
    for (size_t k = 0; k < sweep->n_cases; k++) {
        const ug_case *c = &sweep->cases[k];
        ug_buf bufs[UG_MAX_BUFFERS];
        ug_status st = buffers_size(bufs, c, max_bytes);
        if (!ug_is_ok(&st))
            return ug_fail(UG_EINVAL, "%s: case %s/%s: %s (--max-case-mib %zu); no case was run", sweep->path,
                           c->family->name, c->label, st.msg, max_bytes >> 20);
    }
    return ug_ok();
}

/* Allocates every buffer (buffers_size), outputs poisoned, inputs filled. */
static ug_status buffers_alloc(case_buffers *cb, const ug_case *c, size_t max_bytes)
{
    const ug_family *f = c->family;
    memset(cb, 0, sizeof *cb);
    cb->f = f;
    UG_TRY(buffers_size(cb->buf, c, max_bytes));
    for (size_t i = 0; i < f->n_buffers; i++) {
        ug_status st = ug_guarded_alloc(&cb->mem[i], buf_bytes(&cb->buf[i]));
        cb->n = i + (ug_is_ok(&st) ? 1 : 0);
        if (!ug_is_ok(&st)) {
            (void)buffers_free(cb); /* nothing written yet: the allocation failure is the news */
            return st;
        }
        cb->buf[i].data = ug_guarded_data(&cb->mem[i]);
        if (f->buffers[i].is_output) fill_poison(cb->buf[i].data, buf_bytes(&cb->buf[i]));
        else memset(cb->buf[i].data, input_fill_byte, buf_bytes(&cb->buf[i]));
    }
    return ug_ok();
}

/* ug_case_generate, with the random words drawn ahead on a thread of
 * their own when `ahead` (harness/gen.h: the same draws). */
static ug_status generate_inputs(const ug_case *c, ug_buf *bufs, bool ahead)
{
    for (size_t i = 0; i < c->family->n_buffers; i++)
        if (!c->family->buffers[i].is_output) memset(bufs[i].data, input_fill_byte, buf_bytes(&bufs[i]));
    if (c->load_inputs) return c->load_inputs(c->inputs_ctx, c, bufs);
    ug_gen_ahead *drawn = NULL;
    ug_status st = ahead ? ug_gen_ahead_start(c->seed, &drawn) : ug_ok();
    if (!ug_is_ok(&st)) drawn = NULL; /* drawn in place instead */
    gsl_rng *rng = drawn ? ug_gen_ahead_rng(drawn) : gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) return ug_fail(UG_ENOMEM, "cannot allocate a random generator");
    if (!drawn) gsl_rng_set(rng, c->seed);
    st = c->family->generate(&c->params, c->regime, rng, bufs);
    if (drawn) ug_gen_ahead_stop(drawn);
    else gsl_rng_free(rng);
    return st;
}

ug_status ug_case_generate(const ug_case *c, ug_buf *bufs) { return generate_inputs(c, bufs, false); }

uint64_t ug_buf_hash(const ug_buf *b) { return ug_fnv1a(UG_FNV1A_OFFSET, b->data, buf_bytes(b)); }

static uint64_t hash_buffers(const case_buffers *cb, bool outputs)
{
    uint64_t h = UG_FNV1A_OFFSET;
    for (size_t i = 0; i < cb->n; i++)
        if (cb->f->buffers[i].is_output == outputs) h = ug_fnv1a(h, cb->buf[i].data, buf_bytes(&cb->buf[i]));
    return h;
}

static void poison_outputs(case_buffers *cb)
{
    for (size_t i = 0; i < cb->n; i++)
        if (cb->f->buffers[i].is_output) fill_poison(cb->buf[i].data, buf_bytes(&cb->buf[i]));
}

static bool outputs_all_poison(const case_buffers *cb, const char **which)
{
    for (size_t i = 0; i < cb->n; i++) {
        if (!cb->f->buffers[i].is_output) continue;
        if (!is_poison(cb->buf[i].data, buf_bytes(&cb->buf[i]))) {
            *which = cb->f->buffers[i].name;
            return false;
        }
    }
    return true;
}

static const char *guard_broken(const case_buffers *cb)
{
    for (size_t i = 0; i < cb->n; i++)
        if (!ug_guarded_intact(&cb->mem[i])) return cb->f->buffers[i].name;
    return NULL;
}

static void set_failure(ug_case_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_failure(ug_case_result *r, const char *fmt, ...)
{
    if (!r->passed) return; /* keep the first reason */
    r->passed = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->failure, sizeof r->failure, fmt, ap);
    va_end(ap);
}

static uint32_t element_bits(const ug_buf *b, size_t i)
{
    if (b->dtype == UG_BF16) return ((const uint16_t *)b->data)[i];
    return ((const uint32_t *)b->data)[i];
}

static double bits_value(ug_dtype t, uint32_t bits)
{
    return t == UG_BF16 ? (double)ug_bf16_to_f32((ug_bf16)bits) : (double)ug_f32_from_bits(bits);
}

/* The first element of b that holds its poison (b->count: none), compared
 * as one word of the element's size. */
#define FIRST_POISON_OF(type)                                                        \
    do {                                                                             \
        type pattern;                                                                \
        memcpy(&pattern, poison, sizeof pattern);                                    \
        const type *x = b->data;                                                     \
        for (size_t j = 0; j < b->count; j++)                                        \
            if (x[j] == pattern) return j;                                           \
        return b->count;                                                             \
    } while (0)

static size_t first_poison_element(const ug_buf *b)
{
    switch (ug_dtype_size(b->dtype)) {
    case 2: FIRST_POISON_OF(uint16_t);
    case 4: FIRST_POISON_OF(uint32_t);
    default: FIRST_POISON_OF(uint64_t);
    }
}

/* The run's case workers that found no case left, or that wait for memory
 * to start theirs: a case still running borrows them for its slices. A
 * waiting worker that starts while its place is lent out is owed that
 * place: the lent thread then hands it back to no one. */
typedef struct {
    pthread_mutex_t *lock;
    size_t idle, owed;
} worker_pool;

/* Takes up to `most` idle places of the pool (none without a pool). */
static size_t pool_borrow(worker_pool *pool, size_t most)
{
    if (!pool) return 0;
    pthread_mutex_lock(pool->lock);
    const size_t n = pool->idle < most ? pool->idle : most;
    pool->idle -= n;
    pthread_mutex_unlock(pool->lock);
    return n;
}

/* Gives back n places taken from the pool, first to the workers owed one. */
static void pool_return(worker_pool *pool, size_t n)
{
    if (n == 0) return;
    pthread_mutex_lock(pool->lock);
    for (; n > 0; n--) {
        if (pool->owed > 0) pool->owed--;
        else pool->idle++;
    }
    pthread_mutex_unlock(pool->lock);
}

/* One way of producing a case's outputs: an ISA path of the built-in kernel,
 * or the run's kernel source in place of all of them. */
typedef struct {
    const char *label;               /* in failure messages: "avx2", "plugin" */
    ug_isa isa;                      /* built-in: the path the kernel runs on */
    const ug_kernel_source *source;  /* NULL: the built-in kernel */
    const ug_kernel_source *isolated; /* built-in: run through this instead of in this thread */
} kernel_path;

/* The paths a case runs on: the source alone, or every enabled ISA path the CPU supports. */
static size_t kernel_paths(const ug_run_options *opt, kernel_path paths[UG_ISA_COUNT])
{
    if (opt->source) {
        paths[0] = (kernel_path){opt->source->name, UG_ISA_COUNT, opt->source, NULL};
        return 1;
    }
    size_t n = 0;
    for (int isa = 0; isa < UG_ISA_COUNT; isa++)
        if (opt->isa_enabled[isa] && ug_isa_supported((ug_isa)isa))
            paths[n++] = (kernel_path){ug_isa_name((ug_isa)isa), (ug_isa)isa, NULL, opt->isolated};
    return n;
}

/* A built-in kernel in this thread runs with the run's kernel threads
 * plus one per idle case worker (kernels/parallel.h: the same bits at any
 * count): the kernel of a sweep's last case is not one core's alone. */
static ug_status run_kernel_on(const ug_case *c, case_buffers *cb, const kernel_path *path, uint64_t input_hash,
                               worker_pool *pool, ug_case_result *r, ug_status *kernel_status)
{
    if (!path->source) UG_TRY(ug_isa_select(path->isa));
    poison_outputs(cb);
    const ug_kernel_source *through = path->source ? path->source : path->isolated;
    const unsigned threads = ug_kernel_threads();
    const size_t lent = through ? 0 : pool_borrow(pool, UG_KERNEL_MAX_THREADS - threads);
    (void)ug_kernel_threads_set(threads + (unsigned)lent); /* within 1 .. UG_KERNEL_MAX_THREADS: cannot fail */
    double t0 = now_seconds();
    *kernel_status = through ? through->run(through->ctx, c, cb->buf) : c->family->run(&c->params, cb->buf);
    r->kernel_seconds += now_seconds() - t0;
    (void)ug_kernel_threads_set(threads);
    pool_return(pool, lent);
    /* A guard the kernel's worker process found overwritten (harness/isolate.c), named like ours. */
    if (kernel_status->code == UG_EGUARD) set_failure(r, "[%s] %s", path->label, kernel_status->msg);
    const char *broken = guard_broken(cb);
    if (broken) set_failure(r, "[%s] guard zone of buffer %s overwritten", path->label, broken);
    if (hash_buffers(cb, false) != input_hash) set_failure(r, "[%s] the kernel modified an input buffer", path->label);
    return ug_ok();
}

static void check_rejection(const ug_case *c, case_buffers *cb, const char *label, const ug_status *ks,
                            ug_case_result *r)
{
    const char *which = NULL;
    if (ks->code != UG_EINVAL) {
        set_failure(r, "[%s] expected rejection (invalid-argument), kernel returned %s%s%s", label,
                    ug_code_name(ks->code), ks->msg[0] ? ": " : "", ks->msg);
        return;
    }
    for (size_t e = 0; e < c->n_expect; e++)
        if (!strstr(ks->msg, c->expect[e])) {
            set_failure(r, "[%s] message lacks \"%s\": %s", label, c->expect[e], ks->msg);
            return;
        }
    if (!outputs_all_poison(cb, &which))
        set_failure(r, "[%s] rejected call wrote to output %s", label, which);
}

/* ---- measuring a set of outputs against the reference, slice by slice ---------- */

/* The elements with the largest ratios of one output and mode, largest
 * first, earlier index first on ties. */
typedef struct {
    size_t n;
    double ratio[UG_SAMPLES_WORST];
    ug_sample sample[UG_SAMPLES_WORST];
} worst_list;

static bool would_keep(const worst_list *w, double ratio)
{
    return ratio > 0 && (w->n < UG_SAMPLES_WORST || w->ratio[UG_SAMPLES_WORST - 1] < ratio);
}

static void keep_if_worse(worst_list *w, double ratio, const ug_sample *x)
{
    if (!would_keep(w, ratio)) return;
    size_t at = w->n < UG_SAMPLES_WORST ? w->n++ : UG_SAMPLES_WORST;
    while (at > 0 && w->ratio[at - 1] < ratio) {
        if (at < UG_SAMPLES_WORST) w->ratio[at] = w->ratio[at - 1], w->sample[at] = w->sample[at - 1];
        at--;
    }
    if (at < UG_SAMPLES_WORST) w->ratio[at] = ratio, w->sample[at] = *x;
}

/* What one part of a slice's reference (harness/chain.h) found. */
typedef struct {
    ug_status st;
    /* The part's first failing element, "" if none: first in the order of
     * modes, then outputs, then elements (failure_rank: its mode and output). */
    char failure[UG_MSG_MAX];
    size_t failure_rank;
    double reference_seconds;
} part_outcome;

/* What one slice measured: folded into the case in slice order as soon as
 * every slice before it is folded (so the figures do not depend on which
 * thread ran which slice or part), then freed: a case holds the results of
 * only the slices in flight. Its parts run on any thread: each output and
 * mode is measured by one part (harness/chain.h), so they write disjoint
 * figures. */
typedef struct {
    ug_stats stats[UG_MAX_BUFFERS][UG_REF_MODE_COUNT]; /* per output ordinal */
    ug_samples spread[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    worst_list worst[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    part_outcome part[]; /* per part */
} slice_result;

typedef struct {
    bool sampled;               /* measured (every slice, unless sampled checking leaves it out) */
    size_t parts_done;
    slice_result *result;       /* while measured and not yet folded */
} slice_state;

/* The hash of the outputs measured (a case's bits hash), computed by a
 * slice worker while the others measure (FNV-1a is one serial chain: 0.3
 * s of the production gdn_e2e case's 300 MB of outputs, which held up its
 * first slice), or by the caller when no worker took it. */
typedef struct {
    const case_buffers *cb;
    bool taken;    /* under the slices' lock */
    uint64_t bits; /* once taken and the slices' threads are joined */
} outputs_hash;

/* Everything the slices of one output set share (read-only while they run). */
typedef struct {
    const ug_case *c;
    const case_buffers *cb;     /* the inputs, and the outputs of the path measured */
    const char *label;          /* that path's */
    const ug_run_options *opt;
    ug_slicing_plan sp;
    bool present[UG_MAX_BUFFERS]; /* inputs, and the outputs the kernel wrote */
    bool checked[UG_MAX_BUFFERS][UG_REF_MODE_COUNT]; /* outputs measured in this set, per mode */
    size_t n_outputs;
    int out_buf[UG_MAX_BUFFERS];  /* buffer index of output ordinal */
    slice_state *slices;
    size_t n_parts;               /* of each slice's reference: the work queue's unit is one part of one slice */
    size_t *part_order;           /* the parts of a slice in the order they are taken, largest first */
    /* the work queue of the parts, and the slices' fold into the case (under lock) */
    pthread_mutex_t lock;
    size_t next, folded;
    ug_case_result *r;
    ug_stats total[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    worst_list worst[UG_MAX_BUFFERS][UG_REF_MODE_COUNT];
    ug_status fold_st;
    worker_pool *pool;            /* NULL: this thread alone */
    outputs_hash *hash;           /* NULL: none; else taken by the first thread to ask for work */
} slice_work;

static void slice_failure(part_outcome *sr, size_t rank, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void slice_failure(part_outcome *sr, size_t rank, const char *fmt, ...)
{
    if (sr->failure[0] && sr->failure_rank <= rank) return;
    sr->failure_rank = rank;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sr->failure, sizeof sr->failure, fmt, ap);
    va_end(ap);
}

/* Measures one output of a slice against its reference in one mode. */
static ug_status measure_output(const slice_work *w, size_t s, size_t o, int m, const ug_buf *b,
                                const ug_ref_value *ref, slice_result *sr, part_outcome *outcome)
{
    const ug_case *c = w->c;
    const ug_f32_model *model = w->opt->model;
    const size_t bi = (size_t)w->out_buf[o];
    const char *name = c->family->buffers[bi].name, *label = w->label;
    const size_t stride = w->cb->buf[bi].count / UG_SAMPLES_SPREAD + 1;
    /* Every exact regime's math takes exp(0): only a target that computes it
     * exactly keeps every intermediate exact (docs/ties.md). */
    const bool exact_inputs = m == UG_REF_STAGED && (c->family->exact_regimes >> c->regime & 1u) &&
                              model->ops[UG_F32_EXP].exact_at_zero;
    ug_stats_batch st;
    ug_stats_batch_begin(&st, &sr->stats[o][m], w->opt->moderate_cond);
    const size_t rank = (size_t)m * UG_MAX_BUFFERS + o;
    ug_slice_layout layout;
    ug_slice_layout_of(&w->sp, s, bi, &layout);
    ug_slice_walk walk;
    ug_slice_walk_start(&walk, &layout);
    size_t next_spread = 0; /* no multiple of stride below it is left: i increases with j */
    for (size_t j = 0; j < b->count; j++) {
        const size_t i = ug_slice_walk_next(&walk);
        const uint32_t bits = element_bits(b, j);
        const ug_elem_error e = ug_measure(bits, b->dtype, &ref[j]);
        if (exact_inputs && bits != ref[j].rn_bits)
            slice_failure(outcome, rank, "[%s] %s[%zu] %s: y=%a is not RN(r)=%a bit for bit: on regime %s every "
                          "intermediate is exact, so only the output's rounding (to nearest, ties to "
                          "even) may differ from r", label, name, i, ug_ref_mode_name((ug_ref_mode)m),
                          bits_value(b->dtype, bits), bits_value(b->dtype, ref[j].rn_bits),
                          c->family->regimes[c->regime]);
        ug_stats_batch_add(&st, &e, ref[j].flagged, i);
        bool spread = false;
        if (i >= next_spread) {
            spread = i % stride == 0;
            next_spread = i - i % stride + stride;
        }
        if (spread || would_keep(&sr->worst[o][m], e.ratio)) { /* the sample's figures only where it is kept */
            const double ulp = b->dtype == UG_BF16 ? ug_ulp_bf16(ref[j].r_hi) : ug_ulp_f32(ref[j].r_hi);
            const ug_sample x = {(uint8_t)o, (uint8_t)m, e.cond, e.ulp_err,
                                 isfinite(ref[j].r_hi) ? ref[j].bound / ulp : NAN};
            if (spread) UG_TRY(ug_samples_push(&sr->spread[o][m], &x));
            else keep_if_worse(&sr->worst[o][m], e.ratio, &x);
        }
        if (ref[j].no_bound && ref[j].wild == UG_WILD_NONE)
            slice_failure(outcome, rank, "[%s] %s[%zu] %s: no bound: its a-priori bound is infinite (an operation it "
                          "depends on has an argument outside the declared range of profile %s, or the bound itself "
                          "overflowed), so the element cannot be certified", label, name, i,
                          ug_ref_mode_name((ug_ref_mode)m), model->id.name);
        if (!e.class_ok || e.ratio > 1.0)
            slice_failure(outcome, rank, "[%s] %s[%zu] %s: y=%a r=%a bound=%.3g ratio=%.3g ulp_err=%.3g%s", label, name,
                          i, ug_ref_mode_name((ug_ref_mode)m), bits_value(b->dtype, bits), ref[j].r_hi, ref[j].bound,
                          e.ratio, e.ulp_err, e.class_ok ? "" : " (non-finite rule)");
    }
    ug_stats_batch_end(&st);
    return ug_ok();
}

/* The stream of one part of slice s's reference (harness/chain.h): its
 * buffers gathered from the case's, its references measured. */
typedef struct {
    const slice_work *w;
    size_t s;
    ug_buf sb[UG_MAX_BUFFERS];
    void *owned[UG_MAX_BUFFERS]; /* the gathered buffers */
    slice_result *sr;
    part_outcome *outcome;
    double measuring_seconds;
} slice_stream;

/* Keeps the slice's buffers a part needs, the others freed; a whole case
 * is read in place. */
static ug_status gather_part(void *ctx, const bool needed[UG_MAX_BUFFERS], ug_buf *bufs)
{
    slice_stream *k = ctx;
    const slice_work *w = k->w;
    const ug_family *f = w->c->family;
    for (size_t i = 0; i < f->n_buffers; i++)
        if (!needed[i] && k->owned[i]) {
            free(k->owned[i]);
            k->owned[i] = bufs[i].data = NULL;
        }
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!needed[i] || !w->present[i] || bufs[i].data) continue;
        if (w->sp.whole) {
            bufs[i].data = w->cb->buf[i].data;
            continue;
        }
        k->owned[i] = bufs[i].data = malloc(bufs[i].count * ug_dtype_size(bufs[i].dtype) + 1);
        if (!bufs[i].data) return ug_fail(UG_ENOMEM, "slice of %s: %zu elements", f->buffers[i].name, bufs[i].count);
        ug_slice_gather(&w->sp, k->s, i, &w->cb->buf[i], &bufs[i]);
    }
    return ug_ok();
}

static ug_status measure_part(void *ctx, ug_ref_mode m, const bool measured[UG_MAX_BUFFERS], ug_ref_value *const *refs)
{
    slice_stream *k = ctx;
    const double t0 = now_seconds();
    ug_status st = ug_ok();
    for (size_t o = 0; o < k->w->n_outputs && ug_is_ok(&st); o++) {
        if (!measured[k->w->out_buf[o]]) continue;
        const ug_buf *b = &k->sb[k->w->out_buf[o]];
        ug_ref_allow_flushed_output(k->w->opt->model, refs[o], b->count);
        st = measure_output(k->w, k->s, o, m, b, refs[o], k->sr, k->outcome);
    }
    k->measuring_seconds += now_seconds() - t0;
    return st;
}

/* One part of the reference of slice s in both modes (harness/chain.h),
 * each output measured as soon as it is known. */
static ug_status measure_slice_part(const slice_work *w, size_t s, size_t part, slice_result *sr)
{
    const ug_family *f = w->c->family;
    ug_params sub;
    ug_slice_params(&w->sp, s, &sub);
    slice_stream k = {.w = w, .s = s, .sr = sr, .outcome = &sr->part[part]};
    ug_status st = ug_ok();
    for (size_t i = 0; i < f->n_buffers && ug_is_ok(&st); i++) {
        k.sb[i] = (ug_buf){NULL, 0, w->cb->buf[i].dtype};
        st = ug_family_buffer_count(f, &sub, i, &k.sb[i].count);
    }
    const ug_reference_stream stream = {gather_part, measure_part, &k};
    const double t0 = now_seconds();
    if (ug_is_ok(&st)) st = ug_case_reference_part(f, &sub, w->present, part, k.sb, w->opt->model, &stream, NULL);
    k.outcome->reference_seconds = now_seconds() - t0 - k.measuring_seconds;
    for (size_t i = 0; i < f->n_buffers; i++) free(k.owned[i]);
    return st;
}

static void slice_result_free(const slice_work *w, slice_result *sr)
{
    if (!sr) return;
    for (size_t o = 0; o < w->n_outputs; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_stats_free(&sr->stats[o][m]);
            ug_samples_free(&sr->spread[o][m]);
        }
    free(sr);
}

/* Folds one slice's result into the case (w->lock held): its parts'
 * statuses in part order, its first failing element in the order of modes
 * and outputs, whichever part found it. */
static void fold_slice(slice_work *w, slice_result *sr)
{
    ug_case_result *r = w->r;
    const part_outcome *first = NULL;
    for (size_t p = 0; p < w->n_parts; p++) {
        const part_outcome *po = &sr->part[p];
        if (ug_is_ok(&w->fold_st) && !ug_is_ok(&po->st)) w->fold_st = po->st;
        if (po->failure[0] && (!first || po->failure_rank < first->failure_rank)) first = po;
        r->reference_seconds += po->reference_seconds;
    }
    if (first) set_failure(r, "%s", first->failure);
    for (int m = 0; m < UG_REF_MODE_COUNT; m++)
        for (size_t o = 0; o < w->n_outputs; o++)
            for (size_t k = 0; k < sr->spread[o][m].n && ug_is_ok(&w->fold_st); k++)
                w->fold_st = ug_samples_push(&r->samples, &sr->spread[o][m].items[k]);
    for (size_t o = 0; o < w->n_outputs; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_stats_merge(&w->total[o][m], &sr->stats[o][m]);
            for (size_t k = 0; k < sr->worst[o][m].n; k++)
                keep_if_worse(&w->worst[o][m], sr->worst[o][m].ratio[k], &sr->worst[o][m].sample[k]);
        }
}

/* A fresh result for slice s (NULL and w->fold_st set when memory is
 * short; w->lock held). */
static slice_result *slice_result_new(slice_work *w, size_t s)
{
    slice_result *sr = calloc(1, sizeof *sr + w->n_parts * sizeof sr->part[0]);
    ug_status st = sr ? ug_ok() : ug_fail(UG_ENOMEM, "cannot allocate the result of slice %zu", s);
    for (size_t p = 0; p < w->n_parts && sr; p++) sr->part[p].st = ug_ok();
    for (size_t o = 0; o < w->n_outputs && ug_is_ok(&st); o++)
        for (int m = 0; m < UG_REF_MODE_COUNT && ug_is_ok(&st); m++) st = ug_stats_init(&sr->stats[o][m]);
    if (ug_is_ok(&st)) return sr;
    slice_result_free(w, sr);
    if (ug_is_ok(&w->fold_st)) w->fold_st = st;
    return NULL;
}

/* Takes the next part of a slice until none is left. The unit is a part,
 * not a whole slice, and a slice's parts go largest first, so that near
 * the end of a case every thread has work until one small part is left (a
 * gdn_e2e slice of the production case is 2.3 s of CPU, its largest part
 * 0.8 s, its last 0.02 s). */
static void *slice_worker(void *arg)
{
    slice_work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        if (w->hash && !w->hash->taken) {
            w->hash->taken = true;
            pthread_mutex_unlock(&w->lock);
            w->hash->bits = hash_buffers(w->hash->cb, true);
            continue;
        }
        const size_t unit = w->next++, s = unit / w->n_parts;
        slice_state *state = s < w->sp.n ? &w->slices[s] : NULL;
        const size_t part = state ? w->part_order[unit % w->n_parts] : 0;
        if (state && state->sampled && unit % w->n_parts == 0) /* a slice's first unit is taken first */
            state->result = slice_result_new(w, s);
        slice_result *sr = state ? state->result : NULL;
        pthread_mutex_unlock(&w->lock);
        if (!state) {
            ug_case_reference_release();
            return NULL;
        }
        if (sr) sr->part[part].st = measure_slice_part(w, s, part, sr);
        pthread_mutex_lock(&w->lock);
        state->parts_done++;
        for (; w->folded < w->sp.n && w->slices[w->folded].parts_done == w->n_parts; w->folded++) {
            slice_state *next = &w->slices[w->folded];
            if (next->result) fold_slice(w, next->result);
            slice_result_free(w, next->result);
            next->result = NULL;
        }
        pthread_mutex_unlock(&w->lock);
    }
}

/* A case worker lent to this case's slices, when one is idle. */
static void *lent_slice_worker(void *arg)
{
    slice_work *w = arg;
    slice_worker(w);
    mpfr_free_cache(); /* MPFR's constant caches are per thread */
    pool_return(w->pool, 1);
    return NULL;
}

/* Runs every slice: this thread, plus every idle case worker of the run
 * (the last, largest cases of a sweep then use every core). */
static void run_slices(slice_work *w)
{
    pthread_t lent[256];
    size_t n_lent = 0;
    if (w->pool) {
        pthread_mutex_lock(w->pool->lock);
        while (w->pool->idle > 0 && n_lent + 1 < w->sp.n * w->n_parts && n_lent < sizeof lent / sizeof lent[0]) {
            w->pool->idle--;
            if (pthread_create(&lent[n_lent], NULL, lent_slice_worker, w) != 0) {
                w->pool->idle++;
                break;
            }
            n_lent++;
        }
        pthread_mutex_unlock(w->pool->lock);
    }
    slice_worker(w);
    for (size_t t = 0; t < n_lent; t++) pthread_join(lent[t], NULL);
}

/* Which outputs the kernel wrote (an optional one untouched as a whole was
 * not handed over; any other unwritten element fails), and which are
 * measured. */
static ug_status outputs_present(slice_work *w, ug_case_result *r)
{
    const ug_family *f = w->c->family;
    for (size_t i = 0; i < f->n_buffers; i++) {
        w->present[i] = true;
        if (!f->buffers[i].is_output) continue;
        const ug_buf b = w->cb->buf[i];
        if (f->buffers[i].optional && b.count && is_poison(b.data, buf_bytes(&b))) {
            w->present[i] = false;
            continue;
        }
        const size_t j = first_poison_element(&b);
        if (j < b.count) set_failure(r, "[%s] %s[%zu] was never written", w->label, f->buffers[i].name, j);
    }
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        bool measured[UG_MAX_BUFFERS];
        UG_TRY(ug_case_measured(f, w->present, (ug_ref_mode)m, measured));
        for (size_t i = 0; i < f->n_buffers; i++) w->checked[i][m] = measured[i];
    }
    int missing[UG_MAX_BUFFERS];
    UG_TRY(ug_case_unchecked(f, w->present, missing));
    for (size_t o = 0; o < w->n_outputs; o++) {
        r->unchecked[o] = missing[w->out_buf[o]] >= 0;
        r->unchecked_missing[o] = (uint8_t)(r->unchecked[o] ? missing[w->out_buf[o]] : 0);
    }
    return ug_ok();
}

/* Which slices are measured: all, or under sampled checking ceil(fraction * n)
 * of them, drawn without replacement from the run's sample seed and the
 * case's seed (the same slices at any thread count). */
static ug_status choose_slices(const ug_case *c, const ug_run_options *opt, slice_work *w, ug_case_result *r)
{
    const size_t n = w->sp.n;
    size_t k = n;
    if (opt->sample_fraction > 0) k = (size_t)ceil(opt->sample_fraction * (double)n);
    if (k > n) k = n;
    r->slices += n;
    r->slices_checked += k;
    if (k == n) {
        for (size_t s = 0; s < n; s++) w->slices[s].sampled = true;
        return ug_ok();
    }
    size_t *all = malloc(n * sizeof *all), *chosen = malloc(k * sizeof *chosen + 1);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ug_status st = ug_ok();
    if (!all || !chosen || !rng) {
        st = ug_fail(UG_ENOMEM, "cannot sample %zu of %zu slices", k, n);
    } else {
        for (size_t s = 0; s < n; s++) all[s] = s;
        gsl_rng_set(rng, (unsigned long)(opt->sample_seed ^ c->seed));
        gsl_ran_choose(rng, chosen, k, all, n, sizeof *all);
        for (size_t j = 0; j < k; j++) w->slices[chosen[j]].sampled = true;
    }
    gsl_rng_free(rng);
    free(all);
    free(chosen);
    return st;
}

/* The case's figures from the folded slices. */
static ug_status finish_slices(slice_work *w, ug_case_result *r)
{
    if (!r->pending) {
        r->pending = calloc(w->n_outputs * UG_REF_MODE_COUNT, sizeof *r->pending);
        if (!r->pending) return ug_fail(UG_ENOMEM, "cannot allocate statistics for %zu outputs", w->n_outputs);
        for (size_t k = 0; k < w->n_outputs * UG_REF_MODE_COUNT; k++) UG_TRY(ug_stats_init(&r->pending[k]));
    }
    ug_status st = w->fold_st;
    for (size_t o = 0; o < w->n_outputs; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            for (size_t k = 0; k < w->worst[o][m].n && ug_is_ok(&st); k++)
                st = ug_samples_push(&r->samples, &w->worst[o][m].sample[k]);
            if (!w->checked[w->out_buf[o]][m]) continue;
            const ug_summary sum = ug_stats_summary(&w->total[o][m]);
            if (sum.max_ratio > r->sum[o][m].max_ratio || r->sum[o][m].elements == 0) r->sum[o][m] = sum;
            ug_stats_merge(&r->pending[o * UG_REF_MODE_COUNT + m], &w->total[o][m]);
            r->elements += m == 0 || !w->checked[w->out_buf[o]][0] ? w->total[o][m].sum.elements : 0;
        }
    return st;
}

/* Measures the outputs a path left in the case's buffers against the
 * reference (computed from the inputs and, for a pipeline's stages, these
 * outputs). */
static ug_status measure(const ug_case *c, const case_buffers *cb, const char *label, const ug_run_options *opt,
                         worker_pool *pool, outputs_hash *hash, ug_case_result *r)
{
    slice_work w = {.c = c, .cb = cb, .label = label, .opt = opt, .lock = PTHREAD_MUTEX_INITIALIZER, .pool = pool,
                    .hash = hash};
    const ug_family *f = c->family;
    for (size_t i = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) w.out_buf[w.n_outputs++] = (int)i;
    UG_TRY(outputs_present(&w, r));
    UG_TRY(ug_case_reference_parts(f, w.present, &w.n_parts));
    ug_slice_plan(f, &c->params, &w.sp);
    w.r = r;
    w.fold_st = ug_ok();
    w.slices = calloc(w.sp.n, sizeof *w.slices);
    w.part_order = malloc(w.n_parts * sizeof *w.part_order);
    if (!w.slices || !w.part_order) {
        free(w.slices);
        free(w.part_order);
        return ug_fail(UG_ENOMEM, "cannot allocate the states of %zu slices of %zu parts", w.sp.n, w.n_parts);
    }
    ug_params sub;
    ug_slice_params(&w.sp, 0, &sub);
    ug_status st = ug_case_reference_part_order(f, &sub, w.present, w.n_parts, w.part_order);
    size_t initialised = 0;
    for (size_t o = 0; o < w.n_outputs && ug_is_ok(&st); o++)
        for (int m = 0; m < UG_REF_MODE_COUNT && ug_is_ok(&st); m++, initialised++) st = ug_stats_init(&w.total[o][m]);
    if (ug_is_ok(&st)) st = choose_slices(c, opt, &w, r);
    if (ug_is_ok(&st)) {
        run_slices(&w);
        st = finish_slices(&w, r);
    }
    for (size_t k = 0; k < initialised; k++) ug_stats_free(&w.total[k / UG_REF_MODE_COUNT][k % UG_REF_MODE_COUNT]);
    free(w.slices);
    free(w.part_order);
    pthread_mutex_destroy(&w.lock);
    return st;
}

static ug_status audit_plan(const ug_case *c, ug_case_result *r)
{
    if (!c->family->plan) return ug_ok();
    UG_TRY(c->family->plan(&c->params, &r->plan));
    r->has_plan = true;
    ug_plan_finding(&r->plan, r->plan_finding, sizeof r->plan_finding);
    return ug_ok();
}

/* Runs every path; measures the first path's outputs, and those of each
 * path whose bits differ from every path measured before (in place: the
 * reference of a case is computed once unless its paths disagree). */
static ug_status run_accepted(const ug_case *c, const ug_run_options *opt, worker_pool *pool, case_buffers *cb,
                              ug_case_result *r)
{
    UG_TRY(audit_plan(c, r));
    const size_t lent = pool_borrow(pool, 1); /* an idle core draws the random words */
    const ug_status generated = generate_inputs(c, cb->buf, lent > 0);
    pool_return(pool, lent);
    UG_TRY(generated);
    const uint64_t input_hash = hash_buffers(cb, false);
    r->isa_bits_agree = true;
    kernel_path paths[UG_ISA_COUNT];
    const size_t n_paths = kernel_paths(opt, paths);
    uint64_t measured_bits[UG_ISA_COUNT];
    size_t n_measured = 0;
    ug_status st = ug_ok();
    for (size_t k = 0; k < n_paths && ug_is_ok(&st); k++) {
        const kernel_path *path = &paths[k];
        ug_status ks;
        st = run_kernel_on(c, cb, path, input_hash, pool, r, &ks);
        if (!ug_is_ok(&st)) break;
        if (c->family->release && !path->source && !path->isolated) c->family->release();
        if (ks.code != UG_OK) {
            set_failure(r, "[%s] kernel returned %s: %s", path->label, ug_code_name(ks.code), ks.msg);
            r->kernel_status = ks;
            continue;
        }
        /* The first path's bits are hashed while it is measured; a later path's decide whether it is. */
        outputs_hash hash = {cb, n_measured > 0, 0};
        if (hash.taken) hash.bits = hash_buffers(cb, true);
        bool seen = false;
        for (size_t j = 0; j < n_measured; j++) seen |= measured_bits[j] == hash.bits;
        if (!seen) st = measure(c, cb, path->label, opt, pool, &hash, r); /* same bits, same figures */
        if (!hash.taken) hash.bits = hash_buffers(cb, true); /* measuring stopped before a worker took it */
        const uint64_t bits = hash.bits;
        if (path->source) {
            r->source_ran = true;
        } else {
            r->isa_ran[path->isa] = true;
            r->isa_bits[path->isa] = bits;
        }
        if (n_measured == 0) {
            r->bits_hash = bits;
            r->kernel_status = ks;
        } else if (!seen) {
            r->isa_bits_agree = false;
        }
        if (!seen) measured_bits[n_measured++] = bits;
    }
    return st;
}

static ug_status run_rejected(const ug_case *c, const ug_run_options *opt, case_buffers *cb, ug_case_result *r)
{
    uint64_t input_hash = hash_buffers(cb, false);
    kernel_path paths[UG_ISA_COUNT];
    size_t n_paths = kernel_paths(opt, paths);
    for (size_t k = 0; k < n_paths; k++) {
        ug_status ks;
        UG_TRY(run_kernel_on(c, cb, &paths[k], input_hash, NULL, r, &ks));
        if (k == 0) r->kernel_status = ks;
        check_rejection(c, cb, paths[k].label, &ks, r);
    }
    return ug_ok();
}

static ug_status run_case(const ug_case *c, const ug_run_options *opt, worker_pool *pool, ug_case_result *r)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->passed = true;
    case_buffers cb;
    ug_status st = buffers_alloc(&cb, c, opt->max_case_bytes);
    if (!ug_is_ok(&st)) { /* a shape too large to allocate fails its case, not the run */
        set_failure(r, "%s", st.msg);
        return ug_ok();
    }
    st = c->expect_reject ? run_rejected(c, opt, &cb, r) : run_accepted(c, opt, pool, &cb, r);
    ug_status freed = buffers_free(&cb);
    if (!ug_is_ok(&freed)) set_failure(r, "%s", freed.msg);
    return st;
}

ug_status ug_run_result_init(const ug_sweep *sw, double moderate_cond, ug_run_result *out)
{
    memset(out, 0, sizeof *out);
    out->sweep = sw;
    out->moderate_cond = moderate_cond;
    time_t now = time(NULL);
    strftime(out->started_utc, sizeof out->started_utc, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    out->families = calloc(ug_family_count(), sizeof *out->families);
    if (!out->families) return ug_fail(UG_ENOMEM, "cannot allocate %zu family results", ug_family_count());
    for (size_t i = 0; i < ug_family_count(); i++) {
        const ug_family *f = ug_family_at(i);
        bool used = false;
        for (size_t k = 0; k < sw->n_cases && !used; k++) used = sw->cases[k].family == f;
        if (!used) continue;
        ug_family_result *fr = &out->families[out->n_families++];
        fr->family = f;
        for (size_t b = 0; b < f->n_buffers; b++)
            if (f->buffers[b].is_output) fr->output_buffer[fr->n_outputs++] = (int)b;
        for (size_t o = 0; o < fr->n_outputs; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) UG_TRY(ug_stats_init(&fr->agg[o][m]));
    }
    out->cases = calloc(sw->n_cases ? sw->n_cases : 1, sizeof *out->cases);
    if (!out->cases) return ug_fail(UG_ENOMEM, "cannot allocate %zu case results", sw->n_cases);
    out->n_cases = sw->n_cases;
    for (size_t i = 0; i < sw->n_cases; i++) out->cases[i].c = &sw->cases[i];
    return ug_ok();
}

static ug_family_result *family_result(ug_run_result *out, const ug_family *f)
{
    for (size_t i = 0; i < out->n_families; i++)
        if (out->families[i].family == f) return &out->families[i];
    return NULL;
}

/* Worker threads take the next case of `order` until none is left or one
 * fails; each case's result goes to its own slot, and the folding is in
 * case order, so the order of work changes no figure. */
typedef struct {
    const ug_sweep *sweep;
    const ug_run_options *opt;
    ug_run_result *out;
    const size_t *order;
    pthread_mutex_t lock;
    size_t next, done;
    ug_status first_error;
    worker_pool pool;   /* lock: &lock */
    size_t running_bytes; /* the buffers of the cases running now */
    pthread_cond_t case_done;
} work_queue;

/* The bytes a case holds while it runs (0 when its buffers cannot be
 * sized: run_case reports why): its buffers, and for an accepted case one
 * slice's working set, its gathered buffers and its largest reference part
 * (harness/chain.h), which every further thread lent to its slices holds
 * once more. */
static size_t case_bytes(const ug_case *c, size_t max_bytes)
{
    const ug_family *f = c->family;
    ug_buf bufs[UG_MAX_BUFFERS];
    ug_status st = buffers_size(bufs, c, max_bytes);
    if (!ug_is_ok(&st)) return 0;
    size_t total = 0, reference = 0, count;
    for (size_t i = 0; i < f->n_buffers; i++) total += buf_bytes(&bufs[i]);
    if (c->expect_reject) return total;
    ug_slicing_plan sp;
    ug_params sub;
    ug_slice_plan(f, &c->params, &sp);
    ug_slice_params(&sp, 0, &sub);
    st = ug_case_reference_bytes(f, &sub, &reference);
    if (ug_is_ok(&st)) total += reference;
    for (size_t i = 0; i < f->n_buffers && !sp.whole; i++) {
        st = ug_family_buffer_count(f, &sub, i, &count);
        if (ug_is_ok(&st)) total += count * ug_dtype_size(f->buffers[i].dtype);
    }
    return total;
}

/* Waits (lent to the running cases' slices meanwhile) until the buffers of
 * the cases running and of case c fit under the cap together, or nothing
 * else runs; then counts c's buffers in. Under q->lock. */
static void admit(work_queue *q, size_t bytes)
{
    bool lent = false;
    while (q->running_bytes > 0 && q->running_bytes + bytes > q->opt->max_case_bytes) {
        if (!lent) q->pool.idle++;
        lent = true;
        pthread_cond_wait(&q->case_done, &q->lock);
    }
    if (lent && q->pool.idle > 0) q->pool.idle--;
    else if (lent) q->pool.owed++;
    q->running_bytes += bytes;
}

/* A case's work, for the order: the elements its outputs hold (the
 * reference's cost grows with them); a rejected shape runs no reference. */
static double case_weight(const ug_case *c)
{
    if (c->expect_reject) return 0;
    const ug_family *f = c->family;
    double elements = 0;
    for (size_t b = 0; b < f->n_buffers; b++) {
        if (!f->buffers[b].is_output) continue;
        size_t count;
        const ug_status st = ug_family_buffer_count(f, &c->params, b, &count);
        if (ug_is_ok(&st)) elements += (double)count;
    }
    return elements;
}

typedef struct {
    double weight;
    size_t index;
} weighted_case;

static int heaviest_first(const void *a, const void *b)
{
    const weighted_case *x = a, *y = b;
    if (x->weight != y->weight) return x->weight < y->weight ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The cases heaviest first, so that with several jobs no long case starts
 * last and runs alone (a longest-first schedule); ties in sweep order. */
static size_t *work_order(const ug_sweep *sw)
{
    weighted_case *w = malloc(sw->n_cases * sizeof *w + 1);
    size_t *order = malloc(sw->n_cases * sizeof *order + 1);
    if (!w || !order) {
        free(w);
        free(order);
        return NULL;
    }
    for (size_t i = 0; i < sw->n_cases; i++) w[i] = (weighted_case){case_weight(&sw->cases[i]), i};
    qsort(w, sw->n_cases, sizeof *w, heaviest_first);
    for (size_t i = 0; i < sw->n_cases; i++) order[i] = w[i].index;
    free(w);
    return order;
}

static void *worker(void *arg)
{
    work_queue *q = arg;
    /* Cannot fail: ug_run_sweep checked the count. */
    (void)ug_kernel_threads_set(q->opt->kernel_threads ? q->opt->kernel_threads : 1);
    for (;;) {
        pthread_mutex_lock(&q->lock);
        size_t i = q->next++;
        bool stop = i >= q->sweep->n_cases || !ug_is_ok(&q->first_error);
        pthread_mutex_unlock(&q->lock);
        if (stop) {
            mpfr_free_cache(); /* MPFR's constant caches are per thread */
            pthread_mutex_lock(&q->lock);
            q->pool.idle++;
            pthread_mutex_unlock(&q->lock);
            return NULL;
        }
        i = q->order[i];
        const ug_case *c = &q->sweep->cases[i];
        const size_t bytes = case_bytes(c, q->opt->max_case_bytes);
        pthread_mutex_lock(&q->lock);
        admit(q, bytes);
        pthread_mutex_unlock(&q->lock);
        ug_status st = run_case(c, q->opt, &q->pool, &q->out->cases[i]);
        pthread_mutex_lock(&q->lock);
        q->running_bytes -= bytes;
        pthread_cond_broadcast(&q->case_done);
        q->done++;
        if (!ug_is_ok(&st) && ug_is_ok(&q->first_error)) q->first_error = st;
        if (q->opt->progress)
            fprintf(stderr, "\r[%zu/%zu] %s/%s\033[K", q->done, q->sweep->n_cases, c->family->name, c->label);
        pthread_mutex_unlock(&q->lock);
    }
}

/* Folds the cases into their families in case order: the same figures and
 * hashes whatever the number of threads. */
void ug_run_result_fold_cases(ug_run_result *out)
{
    for (size_t i = 0; i < out->n_cases; i++) {
        ug_case_result *r = &out->cases[i];
        ug_family_result *fr = family_result(out, r->c->family);
        if (r->c->expect_reject) fr->cases_rejected++;
        else fr->cases_accepted++;
        fr->cases_failed += !r->passed;
        fr->plan_findings += r->plan_finding[0] != '\0';
        out->elements_checked += r->elements;
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!r->isa_ran[isa]) continue;
            fr->bits_hash[isa] = ug_fnv1a(fr->isa_ran[isa] ? fr->bits_hash[isa] : UG_FNV1A_OFFSET, &r->isa_bits[isa],
                                          sizeof r->isa_bits[isa]);
            fr->isa_ran[isa] = true;
        }
        if (r->source_ran) {
            fr->source_bits_hash = ug_fnv1a(fr->source_ran ? fr->source_bits_hash : UG_FNV1A_OFFSET, &r->bits_hash,
                                            sizeof r->bits_hash);
            fr->source_ran = true;
        }
        if (!r->pending) continue;
        for (size_t o = 0; o < fr->n_outputs; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
                ug_stats *st = &r->pending[o * UG_REF_MODE_COUNT + m];
                if (st->dist) ug_stats_merge(&fr->agg[o][m], st);
                /* The case keeps the sums of every measured path, so that a
                 * merge of shards can redo these additions in this order. */
                r->sum[o][m].sum_sq_err = st->sum.sum_sq_err;
                r->sum[o][m].sum_sq_ref = st->sum.sum_sq_ref;
                ug_stats_free(st);
            }
        free(r->pending);
        r->pending = NULL;
    }
}

ug_status ug_run_sweep(const ug_sweep *sw, const ug_run_options *opt, ug_run_result *out)
{
    memset(out, 0, sizeof *out);
    double t0 = now_seconds();
    kernel_path paths[UG_ISA_COUNT];
    if (kernel_paths(opt, paths) == 0) return ug_fail(UG_EINVAL, "no enabled ISA path is supported by this CPU: nothing would run");
    if (opt->jobs < 0 || opt->jobs > 256) return ug_fail(UG_EINVAL, "jobs (%d) must be in [0, 256]", opt->jobs);
    if (opt->kernel_threads > UG_KERNEL_MAX_THREADS)
        return ug_fail(UG_EINVAL, "kernel threads (%u) must be in [1, %d]", opt->kernel_threads, UG_KERNEL_MAX_THREADS);
    if (opt->jobs > 1 && !mpfr_buildopt_tls_p())
        return ug_fail(UG_EINVAL, "jobs (%d) > 1 needs a thread-safe MPFR; this one is not", opt->jobs);
    if (!opt->model) return ug_fail(UG_EINVAL, "no arithmetic profile: ug_run_options.model is NULL");
    if (!(opt->sample_fraction >= 0 && opt->sample_fraction <= 1))
        return ug_fail(UG_EINVAL, "sample fraction (%g) must be in [0, 1] (0: every slice)", opt->sample_fraction);
    if (opt->source && (!opt->source->name || !opt->source->run))
        return ug_fail(UG_EINVAL, "kernel source %s has no run function", opt->source->name ? opt->source->name : "(unnamed)");
    UG_TRY(ug_run_result_init(sw, opt->moderate_cond, out));
    out->source_name = opt->source ? opt->source->name : NULL;
    out->profile = opt->model->id;
    out->sample_fraction = opt->sample_fraction;
    out->sample_seed = opt->sample_seed;
    ug_isa saved = ug_isa_current(); /* the calling thread runs cases on every path */
    unsigned saved_kernel_threads = ug_kernel_threads();
    size_t *order = work_order(sw);
    if (!order) {
        ug_run_result_free(out);
        return ug_fail(UG_ENOMEM, "cannot allocate the order of %zu cases", sw->n_cases);
    }
    work_queue q = {sw, opt, out, order, PTHREAD_MUTEX_INITIALIZER, 0, 0, ug_ok(), {NULL, 0, 0}, 0,
                    PTHREAD_COND_INITIALIZER};
    q.pool.lock = &q.lock;
    /* Jobs beyond the cases would find none: their places are idle from the start (lent to the cases). */
    const int jobs = opt->jobs > 1 ? opt->jobs : 1;
    const int case_workers = sw->n_cases && (size_t)jobs > sw->n_cases ? (int)sw->n_cases : jobs;
    q.pool.idle = (size_t)(jobs - case_workers);
    pthread_t threads[256];
    int started = 0;
    for (; started < case_workers - 1; started++)
        if (pthread_create(&threads[started], NULL, worker, &q) != 0) break;
    worker(&q); /* the calling thread works too */
    for (int t = 0; t < started; t++) pthread_join(threads[t], NULL);
    free(order);
    if (opt->progress) fprintf(stderr, "\r\033[K");
    /* Restoring the settings this call found cannot fail. */
    (void)ug_isa_select(saved);
    (void)ug_kernel_threads_set(saved_kernel_threads);
    ug_run_result_fold_cases(out);
    out->wall_seconds = now_seconds() - t0;
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0) out->peak_rss_kib = (uint64_t)usage.ru_maxrss;
    return q.first_error;
}

void ug_run_result_free(ug_run_result *r)
{
    for (size_t i = 0; r->cases && i < r->n_cases; i++) ug_samples_free(&r->cases[i].samples);
    for (size_t i = 0; i < r->n_families; i++)
        for (size_t o = 0; o < r->families[i].n_outputs; o++)
            for (int m = 0; m < UG_REF_MODE_COUNT; m++) ug_stats_free(&r->families[i].agg[o][m]);
    free(r->families);
    free(r->cases);
    r->families = NULL;
    r->cases = NULL;
}
