/* SPDX-License-Identifier: MIT */
/* head_norm_rope (SPEC §1.5, §1.6). Validation is the seed's, rule for rule
 * and in its order; the C-side additions come after the seed's rules:
 *   bf16: n_heads and head_dim > 0; half_rope_dim <= head_dim/2; input and
 *         output counts; cos_cache and sin_cache >= half_rope_dim; then
 *         [added] norm_weight count == head_dim; every buffer present, of its
 *         dtype, with data.
 *   f32:  n_heads and head_dim > 0; half_rope_dim <= head_dim/2; then
 *         [SPEC §1.5] input and output counts; [added] seq_len > 0 (checked
 *         before the counts that use it), positions count == seq_len,
 *         norm_weight count == head_dim, freq_factors >= half_rope_dim; every
 *         buffer present, of its dtype, with data.
 * The additions keep a C caller from reading or writing out of bounds where
 * the seed trusts Metal buffer bindings.
 *
 * The computation follows the shader the seed dispatches: one threadgroup per
 * (token,) head. Its tg_size threads each sum the squares of x[t], x[t+tg],
 * ... with FMAs, a tree over the threads adds the partial sums, and the
 * normalized (weighted) values are cached in threadgroup memory for the
 * rotation, which needs the partner of each element. The C kernel's
 * threadgroup memory is a guarded scratch of max(tg_size, head_dim) floats:
 * the seed's f32 host plan, and the seed's bf16 host plan wherever that plan
 * suffices (head_dim <= 256); for head_dim > 256 the bf16 host plans only
 * tg_size floats, short of the head_dim cached values (the plan audit in
 * harness/families/head_norm_rope.c reports it). The f32 kernel has one
 * threadgroup's worth per kernel thread; a head that is rotated whole goes
 * from its sum of squares straight to the output, in registers (the cache
 * only stands between values that are already at hand), and every head is
 * written to the output once (a large output with non-temporal stores).
 * The SIMD paths (head_norm_rope_paths.h) vectorize every step, the tree's
 * halving steps included, without changing a bit. */
#include "head_norm_rope.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "head_norm_rope_paths.h"
#include "isa.h"
#include "parallel.h"

#define KERNEL_BF16 "fused_head_norm_rope"
#define KERNEL_F32 "fused_head_norm_rope_f32"

/* "capped at 256 (Metal maximum for shared-memory reductions in this pattern)" */
enum { TG_SIZE_CAP = 256 };

/* ---- the seed's dispatch plan -------------------------------------------- */

uint32_t head_norm_rope_tg_size(uint32_t head_dim)
{
    uint32_t tg = 1; /* next_power_of_two(0) is 1 */
    while (tg < head_dim && tg < TG_SIZE_CAP) tg <<= 1;
    return tg;
}

uint64_t head_norm_rope_bf16_planned_bytes(uint32_t head_dim)
{
    return (uint64_t)head_norm_rope_tg_size(head_dim) * sizeof(float);
}

uint64_t head_norm_rope_f32_planned_bytes(uint32_t head_dim)
{
    uint32_t tg = head_norm_rope_tg_size(head_dim);
    return (uint64_t)(tg > head_dim ? tg : head_dim) * sizeof(float);
}

/* ---- validation ------------------------------------------------------------ */

static size_t count_of(const ug_buf *b) { return b ? b->count : 0; }

/* Each rule returns true when it holds and otherwise sets *st to its
 * UG_EINVAL message: a valid call (the 1-token bf16 variant lasts
 * microseconds) neither formats a message nor builds a status per rule. */
static bool check_heads(const char *kernel, uint32_t n_heads, uint32_t head_dim, uint32_t half_rope_dim,
                        ug_status *st)
{
    if (n_heads == 0 || head_dim == 0) {
        *st = ug_fail(UG_EINVAL, "%s: n_heads and head_dim must be > 0 (n_heads=%u, head_dim=%u)", kernel, n_heads,
                      head_dim);
        return false;
    }
    if (half_rope_dim > head_dim / 2) {
        *st = ug_fail(UG_EINVAL, "%s: half_rope_dim (%u) must be <= head_dim/2 (%u)", kernel, half_rope_dim,
                      head_dim / 2);
        return false;
    }
    return true;
}

/* expected_fmt names the expectation with its value: "seq_len (%u)". */
static bool require_count(ug_status *st, const char *kernel, const char *name, const ug_buf *b, size_t expected,
                          const char *expected_fmt, ...) __attribute__((format(printf, 6, 7)));
static bool require_count(ug_status *st, const char *kernel, const char *name, const ug_buf *b, size_t expected,
                          const char *expected_fmt, ...)
{
    if (count_of(b) == expected) return true;
    char expected_text[192];
    va_list args;
    va_start(args, expected_fmt);
    vsnprintf(expected_text, sizeof expected_text, expected_fmt, args);
    va_end(args);
    *st = ug_fail(UG_EINVAL, "%s: %s element count %zu != %s", kernel, name, count_of(b), expected_text);
    return false;
}

static bool require_at_least(const char *kernel, const char *name, const ug_buf *b, uint32_t half_rope_dim,
                             ug_status *st)
{
    if (count_of(b) >= half_rope_dim) return true;
    *st = ug_fail(UG_EINVAL, "%s: %s element count %zu < half_rope_dim (%u)", kernel, name, count_of(b),
                  half_rope_dim);
    return false;
}

/* The element count of input and output, as the messages show it:
 * "[seq_len(S) * ]n_heads(N) * head_dim(D)" (seq_len 0: the bf16 variant). */
static void format_product(char *text, size_t size, uint32_t seq_len, uint32_t n_heads, uint32_t head_dim)
{
    if (seq_len) snprintf(text, size, "seq_len(%u) * n_heads(%u) * head_dim(%u)", seq_len, n_heads, head_dim);
    else snprintf(text, size, "n_heads(%u) * head_dim(%u)", n_heads, head_dim);
}

/* Input and output: element count `expected`, the product shown. */
static bool require_activation_counts(const char *kernel, const ug_buf *input, const ug_buf *output, size_t expected,
                                      uint32_t seq_len, uint32_t n_heads, uint32_t head_dim, ug_status *st)
{
    if (count_of(input) == expected && count_of(output) == expected) return true;
    char product[128];
    format_product(product, sizeof product, seq_len, n_heads, head_dim);
    return require_count(st, kernel, "input", input, expected, "%s = %zu", product, expected) &&
           require_count(st, kernel, "output", output, expected, "%s = %zu", product, expected);
}

static bool require_weight_count(const char *kernel, const ug_buf *norm_weight, uint32_t head_dim, ug_status *st)
{
    return !norm_weight || require_count(st, kernel, "norm_weight", norm_weight, head_dim, "head_dim (%u)", head_dim);
}

typedef struct {
    const char *name;
    const ug_buf *buf;
    ug_dtype dtype;
    bool optional;
} buffer_rule;

static bool check_buffers(const char *kernel, const buffer_rule *rules, size_t n, ug_status *st)
{
    for (size_t i = 0; i < n; i++) {
        const buffer_rule *r = &rules[i];
        if (!r->buf) {
            if (r->optional) continue;
            *st = ug_fail(UG_EINVAL, "%s: %s: no buffer (NULL)", kernel, r->name);
            return false;
        }
        if (r->buf->dtype != r->dtype) {
            *st = ug_fail(UG_EINVAL, "%s: %s must be %s (got %s)", kernel, r->name, ug_dtype_name(r->dtype),
                          ug_dtype_name(r->buf->dtype));
            return false;
        }
        if (r->buf->count && !r->buf->data) {
            *st = ug_fail(UG_EINVAL, "%s: %s has %zu elements but no data (NULL)", kernel, r->name, r->buf->count);
            return false;
        }
    }
    return true;
}

static ug_status validate_bf16(const head_norm_rope_bf16_params *p, const ug_buf *input, const ug_buf *output,
                               const ug_buf *norm_weight, const ug_buf *cos_cache, const ug_buf *sin_cache)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL_BF16 ": no params (NULL)");
    const buffer_rule buffers[] = {
        {"input", input, UG_BF16, false},         {"output", output, UG_BF16, false},
        {"norm_weight", norm_weight, UG_BF16, true}, {"cos_cache", cos_cache, UG_F32, false},
        {"sin_cache", sin_cache, UG_F32, false},
    };
    ug_status st;
    if (check_heads(KERNEL_BF16, p->n_heads, p->head_dim, p->half_rope_dim, &st) &&
        require_activation_counts(KERNEL_BF16, input, output, (size_t)p->n_heads * p->head_dim, 0, p->n_heads,
                                  p->head_dim, &st) &&
        require_at_least(KERNEL_BF16, "cos_cache", cos_cache, p->half_rope_dim, &st) &&
        require_at_least(KERNEL_BF16, "sin_cache", sin_cache, p->half_rope_dim, &st) &&
        require_weight_count(KERNEL_BF16, norm_weight, p->head_dim, &st) &&
        check_buffers(KERNEL_BF16, buffers, sizeof buffers / sizeof buffers[0], &st))
        return ug_ok();
    return st;
}

static ug_status validate_f32(const head_norm_rope_f32_params *p, const ug_buf *input, const ug_buf *output,
                              const ug_buf *norm_weight, const ug_buf *positions, const ug_buf *freq_factors)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL_F32 ": no params (NULL)");
    ug_status st;
    if (!check_heads(KERNEL_F32, p->n_heads, p->head_dim, p->half_rope_dim, &st)) return st;
    if (p->seq_len == 0) return ug_fail(UG_EINVAL, KERNEL_F32 ": seq_len must be > 0 (got 0)");
    size_t elements;
    if (__builtin_mul_overflow((size_t)p->seq_len * p->n_heads, (size_t)p->head_dim, &elements)) {
        char product[128];
        format_product(product, sizeof product, p->seq_len, p->n_heads, p->head_dim);
        return ug_fail(UG_EINVAL, KERNEL_F32 ": %s does not fit in size_t", product);
    }
    const buffer_rule buffers[] = {
        {"input", input, UG_F32, false},           {"output", output, UG_F32, false},
        {"norm_weight", norm_weight, UG_F32, true}, {"positions", positions, UG_U32, false},
        {"freq_factors", freq_factors, UG_F32, true},
    };
    if (require_activation_counts(KERNEL_F32, input, output, elements, p->seq_len, p->n_heads, p->head_dim, &st) &&
        require_count(&st, KERNEL_F32, "positions", positions, p->seq_len, "seq_len (%u)", p->seq_len) &&
        require_weight_count(KERNEL_F32, norm_weight, p->head_dim, &st) &&
        (!freq_factors || require_at_least(KERNEL_F32, "freq_factors", freq_factors, p->half_rope_dim, &st)) &&
        check_buffers(KERNEL_F32, buffers, sizeof buffers / sizeof buffers[0], &st))
        return ug_ok();
    return st;
}

/* ---- one head ---------------------------------------------------------------- */

/* What every head of a call shares: the shape, eps, the input dtype and the
 * ISA path. */
typedef struct {
    const head_norm_rope_paths *path;
    uint32_t head_dim, half_rope_dim, span, tg_size;
    float eps;
    bool f32;
} head_job;

/* The shader's reduction over its tg_size threads (head_norm_rope_paths.h);
 * partial: the tg_size floats of threadgroup memory it uses. */
static float sum_of_squares(const head_job *job, const void *x, float *partial)
{
    if (job->f32) return job->path->sum_squares_f32(x, job->head_dim, job->tg_size, partial);
    return job->path->sum_squares_bf16(x, job->head_dim, job->tg_size, partial);
}

/* The count ss is divided by: head_dim (the mutant's half_rope_dim). */
static float mean_count(const head_job *job)
{
    return UG_MUTANT == HEAD_NORM_ROPE_MUT_MEAN_OVER_HALF_ROPE ? (float)job->half_rope_dim : (float)job->head_dim;
}

/* r = 1/sqrt(ss/head_dim + eps) (head_norm_rope_inverse_rms). */
static float inverse_rms(const head_job *job, float ss)
{
    if (UG_MUTANT == HEAD_NORM_ROPE_MUT_EPS_OUTSIDE_SQRT) return 1.0f / (sqrtf(ss / mean_count(job)) + job->eps);
    return head_norm_rope_inverse_rms(ss, mean_count(job), job->eps);
}

/* y[i] = fl(fl(x_i * r) * w_i), or fl(x_i * r) without a weight; x and w of
 * the call's dtype; partial: the tg_size floats of the reduction. */
static void normalize(const head_job *job, const void *x, const void *w, float *partial, float *y)
{
    const float r = inverse_rms(job, sum_of_squares(job, x, partial));
    if (UG_MUTANT == HEAD_NORM_ROPE_MUT_ONE_PLUS_WEIGHT) {
        for (uint32_t i = 0; i < job->head_dim; i++) {
            float one_plus_w = 1.0f + (w ? head_norm_rope_element(w, i, job->f32) : 0.0f);
            y[i] = head_norm_rope_scale(head_norm_rope_element(x, i, job->f32), r, w ? &one_plus_w : NULL);
        }
    } else if (job->f32) {
        job->path->scale_f32(x, w, job->head_dim, r, y);
    } else {
        job->path->scale_bf16(x, w, job->head_dim, r, y);
    }
}

/* The NeoX rotation of the normalized values in place: pairs (i, i + span)
 * for i < half_rope_dim; the rest of the head passes through untouched. */
static void rotate(const head_job *job, float *y, const float *c, const float *s)
{
    uint32_t pairs = job->half_rope_dim;
    if (UG_MUTANT == HEAD_NORM_ROPE_MUT_PASS_THROUGH_OFF_BY_ONE && pairs > 0) pairs--;
    if (UG_MUTANT == HEAD_NORM_ROPE_MUT_NEIGHBOUR_PAIRS) {
        for (uint32_t k = 0; k < pairs; k++) head_norm_rope_rotate_pair(&y[2 * k], &y[2 * k + 1], c[k], s[k]);
    } else if (UG_MUTANT == HEAD_NORM_ROPE_MUT_SIN_SIGN_FLIPPED) {
        for (uint32_t k = 0; k < pairs; k++) head_norm_rope_rotate_pair(&y[k], &y[k + job->span], c[k], -s[k]);
    } else {
        job->path->rotate(y, y + job->span, c, s, pairs);
    }
}

static void store_bf16(const head_job *job, const float *y, ug_bf16 *out)
{
    if (UG_MUTANT == HEAD_NORM_ROPE_MUT_OUTPUT_TRUNCATED)
        for (uint32_t i = 0; i < job->head_dim; i++) out[i] = (ug_bf16)(ug_f32_bits(y[i]) >> 16);
    else ug_rows_round(job->head_dim, y, out);
}

static head_job job_for(uint32_t head_dim, uint32_t half_rope_dim, uint32_t span, float eps, bool f32)
{
    return (head_job){
        .path = UG_ISA_PATHS_OF(head_norm_rope, ug_isa_current()),
        .head_dim = head_dim,
        .half_rope_dim = half_rope_dim,
        .span = span,
        .tg_size = head_norm_rope_tg_size(head_dim),
        .eps = eps,
        .f32 = f32,
    };
}

/* ---- bf16: one token, cos/sin from the caches --------------------------------- */

/* The mutants of the normalization and the rotation are in normalize() and
 * rotate(): their builds take those steps on every head. */
#define STEPS_MUTATED                                                                                               \
    (UG_MUTANT == HEAD_NORM_ROPE_MUT_ONE_PLUS_WEIGHT || UG_MUTANT == HEAD_NORM_ROPE_MUT_NEIGHBOUR_PAIRS ||           \
     UG_MUTANT == HEAD_NORM_ROPE_MUT_PASS_THROUGH_OFF_BY_ONE || UG_MUTANT == HEAD_NORM_ROPE_MUT_SIN_SIGN_FLIPPED)

/* A head whose every element is in a pair goes from its sum of squares to
 * the output in registers (scale_rotate_round_bf16), as the f32 kernel's do;
 * any other is finished in threadgroup memory as in the shader. A block of
 * heads is taken one step at a time: the sums of squares, then the inverse
 * RMS side by side (each a serial division, square root and division: one
 * vector of them on the SIMD paths instead of a stall per head), then the
 * scaling, rotation and rounding, one path call per step for the block. */
enum { RMS_BLOCK_HEADS = 16 };

static void bf16_heads_whole(const head_job *job, size_t n_heads, const ug_bf16 *in, const ug_bf16 *w,
                             const float *c, const float *s, float *threadgroup, ug_bf16 *out)
{
    const size_t d = job->head_dim;
    for (size_t first = 0; first < n_heads; first += RMS_BLOCK_HEADS) {
        const size_t heads = n_heads - first < RMS_BLOCK_HEADS ? n_heads - first : RMS_BLOCK_HEADS;
        float r[RMS_BLOCK_HEADS];
        for (size_t h = 0; h < heads; h++) r[h] = sum_of_squares(job, in + (first + h) * d, threadgroup);
        if (UG_MUTANT == HEAD_NORM_ROPE_MUT_EPS_OUTSIDE_SQRT)
            for (size_t h = 0; h < heads; h++) r[h] = inverse_rms(job, r[h]);
        else job->path->inverse_rms(r, heads, mean_count(job), job->eps, r);
        job->path->scale_rotate_round_bf16(in + first * d, heads, w, r, c, s, job->half_rope_dim, out + first * d);
    }
}

/* One token is microseconds of work: it runs on the calling thread (a thread
 * start would cost more than the call). */
ug_status head_norm_rope_bf16(const head_norm_rope_bf16_params *p, const ug_buf *input, ug_buf *output,
                              const ug_buf *norm_weight, const ug_buf *cos_cache, const ug_buf *sin_cache)
{
    UG_TRY(validate_bf16(p, input, output, norm_weight, cos_cache, sin_cache));
    const head_job job = job_for(p->head_dim, p->half_rope_dim, p->half_rope_dim, p->eps, false);
    ug_guarded scratch;
    UG_TRY(ug_guarded_alloc(&scratch, head_norm_rope_f32_planned_bytes(p->head_dim)));
    float *threadgroup = ug_guarded_data(&scratch);
    const ug_bf16 *in = input->data, *w = norm_weight ? norm_weight->data : NULL;
    ug_bf16 *out = output->data;
    if (!STEPS_MUTATED && UG_MUTANT != HEAD_NORM_ROPE_MUT_OUTPUT_TRUNCATED && 2 * p->half_rope_dim == p->head_dim) {
        bf16_heads_whole(&job, p->n_heads, in, w, cos_cache->data, sin_cache->data, threadgroup, out);
    } else {
        for (size_t head = 0; head < p->n_heads; head++) {
            /* The partial sums are dead once r is known: the cached values
             * reuse the same threadgroup memory, as in the shader. */
            normalize(&job, in + head * p->head_dim, w, threadgroup, threadgroup);
            rotate(&job, threadgroup, cos_cache->data, sin_cache->data);
            store_bf16(&job, threadgroup, out + head * p->head_dim);
        }
    }
    return ug_guarded_free(&scratch, KERNEL_BF16 " threadgroup scratch");
}

/* ---- f32: a sequence, angles from positions, theta and freq_factors ------------ */

/* The per-pair frequencies f_i of the angle formula (head_norm_rope.h), in
 * f32 exactly as stated there; computed once per call. */
static void frequencies(const head_norm_rope_f32_params *p, const float *freq_factors, float *f)
{
    const float log2_theta = (float)log2((double)p->theta);
    const float exponent_dim = UG_MUTANT == HEAD_NORM_ROPE_MUT_EXPONENT_OVER_ROPE_DIM
                                   ? (float)(2u * p->half_rope_dim)
                                   : (float)p->head_dim;
    for (uint32_t i = 0; i < p->half_rope_dim; i++) {
        float e = (float)(2u * i) / exponent_dim;
        float w = exp2f(-(e * log2_theta));
        if (freq_factors)
            w = UG_MUTANT == HEAD_NORM_ROPE_MUT_FREQ_FACTOR_MULTIPLIES ? w * freq_factors[i] : w / freq_factors[i];
        f[i] = w;
    }
}

/* Tokens are independent: ranges of them go to the kernel threads
 * (kernels/parallel.h). Each worker has its own threadgroup memory and its
 * own cos/sin tables. The threadgroup memory holds the partial sums; a head
 * whose every element is in a pair is then scaled, rotated and stored in one
 * step, any other is finished in threadgroup memory as in the shader (its
 * cached values, rotated there) and then stored; either way each output
 * element is written once. */
typedef struct {
    const head_norm_rope_f32_params *p;
    head_job head;
    const float *in, *w, *f;
    float *out;
    const uint32_t *pos;
    float *threadgroup; /* tg_slice floats per worker */
    float *tables;      /* TABLE_FLOATS(half_rope_dim) per worker */
    size_t tg_slice;
    bool stream;
    bool whole_head_rotates; /* every element in a pair: one path step per head */
} f32_job;

/* A worker's tables: cos and sin of the current token's angles and of the
 * next token's. */
#define TABLE_FLOATS(half_rope_dim) (4 * (size_t)(half_rope_dim))

/* An output this large is not read back from the caches before they have
 * turned over (the L2 is a few MiB): it is written with non-temporal stores,
 * which skip the read-for-ownership of each line (a third of the kernel's
 * DRAM traffic) and leave the caches to the input. A smaller output stays in
 * the cache for its consumer. */
enum { STREAM_MIN_BYTES = 4 << 20 };

/* The input this far ahead of the head in hand is requested into L1: a few
 * heads, about a DRAM latency of work, which the hardware prefetchers (they
 * stop at each 4 KiB page) do not cover reliably (the distance was measured:
 * docs/performance.md). A hint only: no effect on any result. */
enum { PREFETCH_AHEAD_FLOATS = 2048 / sizeof(float), CACHE_LINE_FLOATS = 64 / sizeof(float) };

/* c[i], s[i] for from <= i < to: cos and sin of token t's angles. */
static void angles(const f32_job *job, size_t t, uint32_t from, uint32_t to, float *c, float *s)
{
    const float position = (float)job->pos[t];
    for (uint32_t i = from; i < to; i++) {
        float angle = position * job->f[i];
        c[i] = cosf(angle);
        s[i] = sinf(angle);
    }
}

/* The sines and cosines are pure arithmetic, about a third of the work:
 * the next token's are computed a slice before each head of this one, so
 * that they run while the heads' loads and stores are in flight rather than
 * with the memory idle between tokens. */
static void f32_tokens(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const f32_job *job = ctx;
    const head_norm_rope_f32_params *p = job->p;
    const head_norm_rope_paths *path = job->head.path;
    const uint32_t half = p->half_rope_dim, slice = (half + p->n_heads - 1) / p->n_heads;
    float *threadgroup = job->threadgroup + worker * job->tg_slice;
    float *tables = job->tables + worker * TABLE_FLOATS(half);
    const size_t range_end = end * p->n_heads * p->head_dim;
    angles(job, begin, 0, half, tables, tables + half);
    for (size_t t = begin; t < end; t++) {
        /* The tokens of the range use the two halves of the tables in turn. */
        float *c = tables + (t - begin) % 2 * 2 * half, *s = c + half;
        float *next_c = tables + (t - begin + 1) % 2 * 2 * half, *next_s = next_c + half;
        for (size_t head = 0; head < p->n_heads; head++) {
            const uint32_t from = head * slice < half ? head * slice : half;
            if (t + 1 < end) angles(job, t + 1, from, half - from < slice ? half : from + slice, next_c, next_s);
            const size_t offset = (t * p->n_heads + head) * p->head_dim;
            const size_t ahead = offset + PREFETCH_AHEAD_FLOATS;
            if (ahead + p->head_dim <= range_end)
                for (uint32_t i = 0; i < p->head_dim; i += CACHE_LINE_FLOATS)
                    __builtin_prefetch(job->in + ahead + i, 0, 3);
            if (job->whole_head_rotates) {
                const float r = inverse_rms(&job->head, sum_of_squares(&job->head, job->in + offset, threadgroup));
                path->scale_rotate_store_f32(job->in + offset, job->w, r, c, s, half, job->out + offset, job->stream);
            } else {
                normalize(&job->head, job->in + offset, job->w, threadgroup, threadgroup);
                rotate(&job->head, threadgroup, c, s);
                path->store_f32(job->out + offset, threadgroup, p->head_dim, job->stream);
            }
        }
    }
    if (job->stream) path->end_stream();
}

ug_status head_norm_rope_f32(const head_norm_rope_f32_params *p, const ug_buf *input, ug_buf *output,
                             const ug_buf *norm_weight, const ug_buf *positions, const ug_buf *freq_factors)
{
    UG_TRY(validate_f32(p, input, output, norm_weight, positions, freq_factors));
    const unsigned workers = ug_parallel_workers(p->seq_len);
    const size_t tg_slice = head_norm_rope_f32_planned_bytes(p->head_dim) / sizeof(float);
    ug_guarded scratch, table_memory;
    UG_TRY(ug_guarded_alloc(&scratch, workers * tg_slice * sizeof(float)));
    /* What each shader thread holds in registers: f_i, then cos and sin of
     * the current token's angles (per worker, and the next token's). */
    ug_status st = ug_guarded_alloc(&table_memory, (p->half_rope_dim + workers * TABLE_FLOATS(p->half_rope_dim)) *
                                                       sizeof(float));
    if (!ug_is_ok(&st)) {
        (void)ug_guarded_free(&scratch, KERNEL_F32 " threadgroup scratch"); /* never written */
        return st;
    }
    float *f = ug_guarded_data(&table_memory);
    frequencies(p, freq_factors ? freq_factors->data : NULL, f);
    f32_job job = {
        .p = p,
        .head = job_for(p->head_dim, p->half_rope_dim, p->head_dim / 2, p->eps, true),
        .in = input->data,
        .w = norm_weight ? norm_weight->data : NULL,
        .f = f,
        .out = output->data,
        .pos = positions->data,
        .threadgroup = ug_guarded_data(&scratch),
        .tables = f + p->half_rope_dim,
        .tg_slice = tg_slice,
        .stream = output->count * sizeof(float) >= STREAM_MIN_BYTES,
        .whole_head_rotates = !STEPS_MUTATED && 2 * p->half_rope_dim == p->head_dim,
    };
    ug_parallel_for(p->seq_len, f32_tokens, &job);
    st = ug_guarded_free(&table_memory, KERNEL_F32 " angle tables");
    ug_status freed = ug_guarded_free(&scratch, KERNEL_F32 " threadgroup scratch");
    return ug_is_ok(&st) ? freed : st;
}

/* ---- the portable path ----------------------------------------------------------- */

static float sum_squares_portable(const void *x, size_t n, size_t tg, float *partial, bool bf16)
{
    memset(partial, 0, tg * sizeof(float));
    for (size_t base = 0; base < n; base += tg)
        for (size_t t = 0; t < tg && base + t < n; t++) {
            float v = head_norm_rope_element(x, base + t, !bf16);
            partial[t] = fmaf(v, v, partial[t]);
        }
    for (size_t stride = tg / 2; stride > 0; stride /= 2) head_norm_rope_fold(partial, stride);
    return partial[0];
}

static float sum_squares_bf16_portable(const ug_bf16 *x, size_t n, size_t tg, float *partial)
{
    return sum_squares_portable(x, n, tg, partial, true);
}

static float sum_squares_f32_portable(const float *x, size_t n, size_t tg, float *partial)
{
    return sum_squares_portable(x, n, tg, partial, false);
}

static void scale_bf16_portable(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y)
{
    for (size_t i = 0; i < n; i++) {
        float wi = w ? ug_bf16_to_f32(w[i]) : 0.0f;
        y[i] = head_norm_rope_scale(ug_bf16_to_f32(x[i]), r, w ? &wi : NULL);
    }
}

static void scale_f32_portable(const float *x, const float *w, size_t n, float r, float *y)
{
    for (size_t i = 0; i < n; i++) y[i] = head_norm_rope_scale(x[i], r, w ? w + i : NULL);
}

static void rotate_portable(float *lo, float *hi, const float *c, const float *s, size_t n)
{
    for (size_t k = 0; k < n; k++) head_norm_rope_rotate_pair(lo + k, hi + k, c[k], s[k]);
}

static void scale_rotate_store_f32_portable(const float *x, const float *w, float r, const float *c, const float *s,
                                            size_t half, float *out, __attribute__((unused)) bool stream)
{
    head_norm_rope_scale_rotate_pairs(x, w, r, c, s, 0, half, out, true);
}

static void inverse_rms_portable(const float *ss, size_t n, float count, float eps, float *r)
{
    for (size_t i = 0; i < n; i++) r[i] = head_norm_rope_inverse_rms(ss[i], count, eps);
}

static void scale_rotate_round_bf16_portable(const ug_bf16 *x, size_t heads, const ug_bf16 *w, const float *r,
                                             const float *c, const float *s, size_t half, ug_bf16 *out)
{
    for (size_t h = 0; h < heads; h++)
        head_norm_rope_scale_rotate_pairs(x + h * 2 * half, w, r[h], c, s, 0, half, out + h * 2 * half, false);
}

/* Ordinary stores: the portable path is the statement the others are
 * checked against, not a fast path. */
static void store_f32_portable(float *out, const float *y, size_t n, __attribute__((unused)) bool stream)
{
    memcpy(out, y, n * sizeof(float));
}

static void end_stream_portable(void) {}

static const head_norm_rope_paths path_portable = {
    sum_squares_bf16_portable,       sum_squares_f32_portable, scale_bf16_portable, scale_f32_portable, rotate_portable,
    scale_rotate_store_f32_portable, scale_rotate_round_bf16_portable, inverse_rms_portable, store_f32_portable,
    end_stream_portable,
};
UG_ISA_PATHS(head_norm_rope, UG_ISA_PORTABLE, path_portable);
