/* SPDX-License-Identifier: MIT */
#include "runner.h"

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

/* Poison of unwritten outputs: the bytes A7 7F repeated read as the
 * signalling NaN 0x7FA7 in bf16 and 0x7FA77FA7 in f32, values no rounding
 * produces (kernels write quiet NaNs), so a poisoned element is unwritten. */
static const unsigned char poison[2] = {0xA7, 0x7F};
static const unsigned char input_fill_byte = 0x3C;

static void fill_poison(void *data, size_t bytes)
{
    unsigned char *p = data;
    for (size_t k = 0; k < bytes; k++) p[k] = poison[k % 2];
}

static bool is_poison(const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t k = 0; k < bytes; k++)
        if (p[k] != poison[k % 2]) return false;
    return true;
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

ug_status ug_case_generate(const ug_case *c, ug_buf *bufs)
{
    for (size_t i = 0; i < c->family->n_buffers; i++)
        if (!c->family->buffers[i].is_output) memset(bufs[i].data, input_fill_byte, buf_bytes(&bufs[i]));
    if (c->load_inputs) return c->load_inputs(c->inputs_ctx, c, bufs);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) return ug_fail(UG_ENOMEM, "cannot allocate a random generator");
    gsl_rng_set(rng, c->seed);
    ug_status st = c->family->generate(&c->params, c->regime, rng, bufs);
    gsl_rng_free(rng);
    return st;
}

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

static bool element_is_poison(const ug_buf *b, size_t i)
{
    size_t size = ug_dtype_size(b->dtype);
    return is_poison((const unsigned char *)b->data + i * size, size);
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

static ug_status run_kernel_on(const ug_case *c, case_buffers *cb, const kernel_path *path, uint64_t input_hash,
                               ug_case_result *r, ug_status *kernel_status)
{
    if (!path->source) UG_TRY(ug_isa_select(path->isa));
    poison_outputs(cb);
    double t0 = now_seconds();
    const ug_kernel_source *through = path->source ? path->source : path->isolated;
    *kernel_status = through ? through->run(through->ctx, c, cb->buf) : c->family->run(&c->params, cb->buf);
    r->kernel_seconds += now_seconds() - t0;
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

typedef struct {
    ug_ref_value *ref[UG_MAX_BUFFERS][UG_REF_MODE_COUNT]; /* per output ordinal */
    size_t n_outputs;
    int out_buf[UG_MAX_BUFFERS];
} case_reference;

static void reference_free(case_reference *cr)
{
    for (size_t o = 0; o < cr->n_outputs; o++)
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) free(cr->ref[o][m]);
}

static ug_status reference_compute(const ug_case *c, const ug_f32_model *model, const case_buffers *cb,
                                   case_reference *cr)
{
    const ug_family *f = c->family;
    memset(cr, 0, sizeof *cr);
    for (size_t i = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) cr->out_buf[cr->n_outputs++] = (int)i;
    for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
        ug_ref_value *outs[UG_MAX_BUFFERS];
        for (size_t o = 0; o < cr->n_outputs; o++) {
            size_t n = cb->buf[cr->out_buf[o]].count;
            cr->ref[o][m] = calloc(n ? n : 1, sizeof(ug_ref_value));
            if (!cr->ref[o][m]) return ug_fail(UG_ENOMEM, "reference of %s: %zu elements", f->name, n);
            outs[o] = cr->ref[o][m];
        }
        UG_TRY(f->reference(&c->params, cb->buf, model, (ug_ref_mode)m, outs));
        for (size_t o = 0; o < cr->n_outputs; o++)
            ug_ref_allow_flushed_output(model, outs[o], cb->buf[cr->out_buf[o]].count);
    }
    return ug_ok();
}

static ug_status keep_sample(ug_case_result *r, const ug_buf *b, const ug_ref_value *ref, const ug_elem_error *e,
                             size_t output, int mode)
{
    double ulp = b->dtype == UG_BF16 ? ug_ulp_bf16(ref->r_hi) : ug_ulp_f32(ref->r_hi);
    ug_sample x = {(uint8_t)output, (uint8_t)mode, e->cond, e->ulp_err, isfinite(ref->r_hi) ? ref->bound / ulp : NAN};
    return ug_samples_push(&r->samples, &x);
}

/* Keeps the indices of the UG_SAMPLES_WORST largest ratios (earlier first on ties). */
static void keep_if_worse(size_t *worst, double *ratio, size_t *n, size_t index, double value)
{
    if (!(value > 0)) return;
    size_t at = *n < UG_SAMPLES_WORST ? (*n)++ : UG_SAMPLES_WORST;
    while (at > 0 && ratio[at - 1] < value) {
        if (at < UG_SAMPLES_WORST) worst[at] = worst[at - 1], ratio[at] = ratio[at - 1];
        at--;
    }
    if (at < UG_SAMPLES_WORST) worst[at] = index, ratio[at] = value;
}

/* Measures the outputs against the reference into the case's own
 * statistics (merged into the family's in case order after the run, so the
 * figures do not depend on the number of worker threads); reports the first
 * failing element. */
static ug_status measure(const ug_case *c, const case_buffers *cb, const case_reference *cr, const char *label,
                         double moderate_cond, const ug_f32_model *model, ug_case_result *r)
{
    if (!r->pending) {
        r->pending = calloc(cr->n_outputs * UG_REF_MODE_COUNT, sizeof *r->pending);
        if (!r->pending) return ug_fail(UG_ENOMEM, "cannot allocate statistics for %zu outputs", cr->n_outputs);
        for (size_t k = 0; k < cr->n_outputs * UG_REF_MODE_COUNT; k++) UG_TRY(ug_stats_init(&r->pending[k]));
    }
    for (size_t o = 0; o < cr->n_outputs; o++) {
        const ug_buf *b = &cb->buf[cr->out_buf[o]];
        const char *name = c->family->buffers[cr->out_buf[o]].name;
        for (size_t i = 0; i < b->count; i++)
            if (element_is_poison(b, i)) {
                set_failure(r, "[%s] %s[%zu] was never written", label, name, i);
                break;
            }
        for (int m = 0; m < UG_REF_MODE_COUNT; m++) {
            ug_stats st;
            UG_TRY(ug_stats_init(&st));
            const ug_ref_value *ref = cr->ref[o][m];
            size_t stride = b->count / UG_SAMPLES_SPREAD + 1, worst[UG_SAMPLES_WORST];
            double worst_ratio[UG_SAMPLES_WORST];
            size_t n_worst = 0;
            /* Every exact regime's math takes exp(0): only a target that
             * computes it exactly keeps every intermediate exact (docs/ties.md). */
            const bool exact_inputs = m == UG_REF_STAGED && (c->family->exact_regimes >> c->regime & 1u) &&
                                      model->ops[UG_F32_EXP].exact_at_zero;
            for (size_t i = 0; i < b->count; i++) {
                ug_elem_error e = ug_measure(element_bits(b, i), b->dtype, &ref[i]);
                if (exact_inputs && element_bits(b, i) != ref[i].rn_bits)
                    set_failure(r, "[%s] %s[%zu] %s: y=%a is not RN(r)=%a bit for bit: on regime %s every "
                                "intermediate is exact, so only the output's rounding (to nearest, ties to "
                                "even) may differ from r", label, name, i, ug_ref_mode_name((ug_ref_mode)m),
                                bits_value(b->dtype, element_bits(b, i)), bits_value(b->dtype, ref[i].rn_bits),
                                c->family->regimes[c->regime]);
                ug_stats_add(&st, &e, ref[i].flagged, moderate_cond, i);
                if (i % stride == 0) UG_TRY(keep_sample(r, b, &ref[i], &e, o, m));
                else keep_if_worse(worst, worst_ratio, &n_worst, i, e.ratio);
                if (ref[i].no_bound && ref[i].wild == UG_WILD_NONE)
                    set_failure(r, "[%s] %s[%zu] %s: no bound: an operation it depends on has an argument outside "
                                "the declared range of profile %s", label, name, i, ug_ref_mode_name((ug_ref_mode)m),
                                model->id.name);
                if (!e.class_ok || e.ratio > 1.0)
                    set_failure(r, "[%s] %s[%zu] %s: y=%a r=%a bound=%.3g ratio=%.3g ulp_err=%.3g%s", label,
                                name, i, ug_ref_mode_name((ug_ref_mode)m),
                                bits_value(b->dtype, element_bits(b, i)),
                                ref[i].r_hi, ref[i].bound, e.ratio, e.ulp_err,
                                e.class_ok ? "" : " (non-finite rule)");
            }
            for (size_t k = 0; k < n_worst; k++) {
                ug_elem_error e = ug_measure(element_bits(b, worst[k]), b->dtype, &ref[worst[k]]);
                UG_TRY(keep_sample(r, b, &ref[worst[k]], &e, o, m));
            }
            ug_summary s = ug_stats_summary(&st);
            if (s.max_ratio > r->sum[o][m].max_ratio || r->sum[o][m].elements == 0) r->sum[o][m] = s;
            ug_stats_merge(&r->pending[o * UG_REF_MODE_COUNT + m], &st);
            ug_stats_free(&st);
        }
    }
    return ug_ok();
}

static ug_status audit_plan(const ug_case *c, ug_case_result *r)
{
    if (!c->family->plan) return ug_ok();
    UG_TRY(c->family->plan(&c->params, &r->plan));
    r->has_plan = true;
    ug_plan_finding(&r->plan, r->plan_finding, sizeof r->plan_finding);
    return ug_ok();
}

static ug_status run_accepted(const ug_case *c, const ug_run_options *opt, case_buffers *cb, ug_case_result *r)
{
    UG_TRY(audit_plan(c, r));
    UG_TRY(ug_case_generate(c, cb->buf));
    case_reference cr;
    double t0 = now_seconds();
    ug_status st = reference_compute(c, opt->model, cb, &cr);
    r->reference_seconds = now_seconds() - t0;
    uint64_t input_hash = hash_buffers(cb, false);
    bool first = true;
    r->isa_bits_agree = true;
    kernel_path paths[UG_ISA_COUNT];
    size_t n_paths = kernel_paths(opt, paths);
    for (size_t k = 0; k < n_paths && ug_is_ok(&st); k++) {
        const kernel_path *path = &paths[k];
        ug_status ks;
        st = run_kernel_on(c, cb, path, input_hash, r, &ks);
        if (!ug_is_ok(&st)) break;
        if (ks.code != UG_OK) {
            set_failure(r, "[%s] kernel returned %s: %s", path->label, ug_code_name(ks.code), ks.msg);
            r->kernel_status = ks;
            continue;
        }
        uint64_t bits = hash_buffers(cb, true);
        if (path->source) {
            r->source_ran = true;
        } else {
            r->isa_ran[path->isa] = true;
            r->isa_bits[path->isa] = bits;
        }
        if (first) {
            r->bits_hash = bits;
            r->kernel_status = ks;
        } else if (bits == r->bits_hash) {
            continue; /* same bits, same figures */
        } else {
            r->isa_bits_agree = false;
        }
        first = false;
        st = measure(c, cb, &cr, path->label, opt->moderate_cond, opt->model, r);
        for (size_t o = 0; o < cr.n_outputs; o++) r->elements += cb->buf[cr.out_buf[o]].count;
    }
    reference_free(&cr);
    return st;
}

static ug_status run_rejected(const ug_case *c, const ug_run_options *opt, case_buffers *cb, ug_case_result *r)
{
    uint64_t input_hash = hash_buffers(cb, false);
    kernel_path paths[UG_ISA_COUNT];
    size_t n_paths = kernel_paths(opt, paths);
    for (size_t k = 0; k < n_paths; k++) {
        ug_status ks;
        UG_TRY(run_kernel_on(c, cb, &paths[k], input_hash, r, &ks));
        if (k == 0) r->kernel_status = ks;
        check_rejection(c, cb, paths[k].label, &ks, r);
    }
    return ug_ok();
}

static ug_status run_case(const ug_case *c, const ug_run_options *opt, ug_case_result *r)
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
    st = c->expect_reject ? run_rejected(c, opt, &cb, r) : run_accepted(c, opt, &cb, r);
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
} work_queue;

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
            return NULL;
        }
        i = q->order[i];
        const ug_case *c = &q->sweep->cases[i];
        ug_status st = run_case(c, q->opt, &q->out->cases[i]);
        pthread_mutex_lock(&q->lock);
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
    if (opt->source && (!opt->source->name || !opt->source->run))
        return ug_fail(UG_EINVAL, "kernel source %s has no run function", opt->source->name ? opt->source->name : "(unnamed)");
    UG_TRY(ug_run_result_init(sw, opt->moderate_cond, out));
    out->source_name = opt->source ? opt->source->name : NULL;
    out->profile = opt->model->id;
    ug_isa saved = ug_isa_current(); /* the calling thread runs cases on every path */
    unsigned saved_kernel_threads = ug_kernel_threads();
    size_t *order = work_order(sw);
    if (!order) {
        ug_run_result_free(out);
        return ug_fail(UG_ENOMEM, "cannot allocate the order of %zu cases", sw->n_cases);
    }
    work_queue q = {sw, opt, out, order, PTHREAD_MUTEX_INITIALIZER, 0, 0, ug_ok()};
    pthread_t threads[256];
    int started = 0;
    for (; started < opt->jobs - 1; started++)
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
