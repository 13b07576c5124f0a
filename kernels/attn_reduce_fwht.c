/* SPDX-License-Identifier: MIT */
/* attn_reduce_fwht (SPEC §1.4). Validation is the seed's (nwg > 0, then
 * head_dim in {256, 512}, with its wording) followed by this contract's
 * additions (nwg <= 32, each buffer's dtype and count). Per row the kernel
 * follows the seed's shader: the softmax statistics give m_w and 1/S, the
 * partials are merged into a staged row, the row is transformed in place and
 * written scaled and signed. The fused kernel's staged row is the shader's
 * threadgroup memory, exactly head_dim * 4 bytes as the host plans it per
 * threadgroup (one per kernel thread), and guarded. The pair writes the merged row to the output and transforms it
 * there; the operations, and so the bits, are the same. */
#include "attn_reduce_fwht.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "attn_reduce_fwht_paths.h"
#include "attn_reduce_fwht_signs.h"
#include "isa.h"
#include "parallel.h"

#define FUSED_KERNEL "flash_attn_vec_reduce_tq_hb_undo"
#define REDUCE_KERNEL "flash_attn_vec_reduce"
#define UNDO_KERNEL "fwht_sign_undo"

enum { MAX_DV = 512, GROUP = 4 };

/* ---- the seed's threadgroup plan ---------------------------------------- */

/* head_dim floats: the merged row between the reduce and the undo. */
static size_t planned_threadgroup_bytes(uint32_t head_dim) { return (size_t)head_dim * 4; }

/* ---- validation ---------------------------------------------------------- */

static bool head_dim_supported(uint32_t head_dim) { return head_dim == 256 || head_dim == 512; }

static ug_status check_head_dim(const char *kernel, uint32_t head_dim)
{
    if (!head_dim_supported(head_dim))
        return ug_fail(UG_EINVAL, "%s: unsupported head_dim %u (supported: 256, 512)", kernel, head_dim);
    return ug_ok();
}

static ug_status check_f32_buffer(const char *kernel, const char *name, const ug_buf *b, size_t expected)
{
    if (!b) return ug_fail(UG_EINVAL, "%s: %s must be f32[%zu] (got no buffer)", kernel, name, expected);
    if (b->count != expected || b->dtype != UG_F32)
        return ug_fail(UG_EINVAL, "%s: %s must be f32[%zu] (got %zu %s)", kernel, name, expected, b->count,
                       ug_dtype_name(b->dtype));
    if (!b->data && expected)
        return ug_fail(UG_EINVAL, "%s: %s has %zu elements but no data (NULL)", kernel, name, expected);
    return ug_ok();
}

/* Element count of [nrows, head_dim] (output, x). */
static ug_status row_elements(const char *kernel, const char *name, uint32_t nrows, uint32_t head_dim,
                              size_t *count)
{
    if (__builtin_mul_overflow((size_t)nrows, (size_t)head_dim, count))
        return ug_fail(UG_EINVAL, "%s: %s shape [nrows=%u, head_dim=%u] has more elements than size_t can count",
                       kernel, name, nrows, head_dim);
    return ug_ok();
}

/* htmp: nrows * nwg * head_dim partials, then nrows * nwg (S, M) pairs. */
static ug_status htmp_elements(const char *kernel, const attn_reduce_fwht_params *p, size_t *count)
{
    size_t row;
    if (__builtin_mul_overflow((size_t)p->nwg, (size_t)p->head_dim + 2, &row) ||
        __builtin_mul_overflow(row, (size_t)p->nrows, count))
        return ug_fail(UG_EINVAL,
                       "%s: htmp shape [nrows=%u, nwg=%u, head_dim+2=%llu] has more elements than size_t can count",
                       kernel, p->nrows, p->nwg, (unsigned long long)p->head_dim + 2);
    return ug_ok();
}

static ug_status validate_reduce(const char *kernel, const attn_reduce_fwht_params *p, const ug_buf *htmp,
                                 const ug_buf *output)
{
    if (!p) return ug_fail(UG_EINVAL, "%s: no params (NULL)", kernel);
    if (p->nwg == 0) return ug_fail(UG_EINVAL, "%s: nwg must be > 0 (got 0)", kernel);
    UG_TRY(check_head_dim(kernel, p->head_dim));
    if (p->nwg > ATTN_REDUCE_FWHT_MAX_NWG)
        return ug_fail(UG_EINVAL,
                       "%s: nwg (%u) must be <= %u: the merge reads one workgroup per lane of a %u-lane SIMD "
                       "group, and %u*nwg = %llu threads per threadgroup exceed the %u-thread limit",
                       kernel, p->nwg, ATTN_REDUCE_FWHT_MAX_NWG, ATTN_REDUCE_FWHT_SIMD_WIDTH,
                       ATTN_REDUCE_FWHT_SIMD_WIDTH, (unsigned long long)ATTN_REDUCE_FWHT_SIMD_WIDTH * p->nwg,
                       ATTN_REDUCE_FWHT_MAX_THREADS);
    size_t htmp_count, output_count;
    UG_TRY(htmp_elements(kernel, p, &htmp_count));
    UG_TRY(check_f32_buffer(kernel, "htmp", htmp, htmp_count));
    UG_TRY(row_elements(kernel, "output", p->nrows, p->head_dim, &output_count));
    return check_f32_buffer(kernel, "output", output, output_count);
}

/* ---- the inner loops: the portable path and the ISA dispatch ------------ */

static void merge_partials_portable(const float *partials, size_t groups, size_t group_stride, size_t nwg,
                                    size_t wg_stride, const float *m, float inv_s, float *y)
{
    for (size_t i = 0; i < groups; i++)
        for (size_t c = 0; c < GROUP; c++) {
            float acc = 0.0f;
            for (size_t w = 0; w < nwg; w++) acc = fmaf(partials[i * group_stride + w * wg_stride + c], m[w], acc);
            y[GROUP * i + c] = acc * inv_s;
        }
}

static void butterflies_portable(float *x, size_t n)
{
    for (size_t h = 1; h < n; h *= 2)
        for (size_t base = 0; base < n; base += 2 * h)
            for (size_t j = base; j < base + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
}

static void scale_signs_portable(const float *x, size_t n, float scale, const uint32_t *sign_bits, float *out)
{
    for (size_t j = 0; j < n; j++) out[j] = ug_f32_from_bits(ug_f32_bits(x[j] * scale) ^ sign_bits[j]);
}

static const attn_reduce_fwht_paths path_portable = {merge_partials_portable, butterflies_portable,
                                                    scale_signs_portable, attn_reduce_fwht_fma_chain};

UG_ISA_PATHS(attn_reduce_fwht, UG_ISA_PORTABLE, path_portable);

static const attn_reduce_fwht_paths *current_path(void) { return UG_ISA_PATHS_OF(attn_reduce_fwht, ug_isa_current()); }

/* ---- the merge ------------------------------------------------------------ */

typedef struct {
    const attn_reduce_fwht_params *p;
    const float *htmp;
    const attn_reduce_fwht_paths *path;
} reduce_job;

static float stat_s(const float *row_stats, size_t w)
{
    return row_stats[2 * w + (UG_MUTANT == ATTN_REDUCE_FWHT_MUT_S_M_SWAPPED ? 1 : 0)];
}

static float stat_m(const float *row_stats, size_t w)
{
    return row_stats[2 * w + (UG_MUTANT == ATTN_REDUCE_FWHT_MUT_S_M_SWAPPED ? 0 : 1)];
}

/* m[w] = exp(M_w - M*) and the returned factor 1/S (0 when S == 0), as the
 * shader's lanes compute them: an f32 difference, expf (libm's bits, all
 * workgroups' at once on the ISA path: expf.h), an FMA chain for S. */
static float merge_weights(const reduce_job *job, const float *row_stats, size_t nwg, float *m)
{
    float max = stat_m(row_stats, 0), s_w[ATTN_REDUCE_FWHT_MAX_NWG], m_w[ATTN_REDUCE_FWHT_MAX_NWG];
    for (size_t w = 0; w < nwg; w++) {
        m_w[w] = stat_m(row_stats, w);
        s_w[w] = stat_s(row_stats, w);
        if (m_w[w] > max) max = m_w[w];
    }
    /* M_w - (+0) is M_w, -0 and NaNs included. */
    ug_rows_exp_sub(nwg, m_w, UG_MUTANT == ATTN_REDUCE_FWHT_MUT_MAX_NOT_SUBTRACTED ? 0.0f : max, m);
    const float s = job->path->fma_chain(nwg, s_w, m);
    if (s == 0.0f && UG_MUTANT != ATTN_REDUCE_FWHT_MUT_ZERO_S_UNGUARDED) return 0.0f;
    return 1.0f / s;
}

/* y = the merged row r (head_dim floats). */
static void reduce_row(const reduce_job *job, size_t r, float *y)
{
    const size_t dv = job->p->head_dim, nwg = job->p->nwg;
    const float *row_stats = job->htmp + job->p->nrows * dv * nwg + r * 2 * nwg;
    float m[ATTN_REDUCE_FWHT_MAX_NWG];
    float inv_s = merge_weights(job, row_stats, nwg, m);
    size_t group_stride = nwg * GROUP, wg_stride = GROUP;
    if (UG_MUTANT == ATTN_REDUCE_FWHT_MUT_WORKGROUP_MAJOR) group_stride = GROUP, wg_stride = dv;
    job->path->merge_partials(job->htmp + r * dv * nwg, dv / GROUP, group_stride, nwg, wg_stride, m, inv_s, y);
}

/* ---- the sign-undo -------------------------------------------------------- */

typedef struct {
    size_t dv;
    float scale;                /* 1/sqrt(DV) rounded to f32 */
    uint32_t sign_bits[MAX_DV]; /* 0x80000000 where s_j = -1 */
    const attn_reduce_fwht_paths *path;
} undo_transform;

/* 1/16 exactly for DV = 256; RN_f32(2^-4.5) for DV = 512. */
static float inverse_sqrt_head_dim(size_t dv)
{
    float scale = dv == 256 ? 0x1p-4f : 0x1.6a09e6p-5f;
    if (UG_MUTANT == ATTN_REDUCE_FWHT_MUT_NO_NORMALISATION) return 1.0f;
    if (UG_MUTANT == ATTN_REDUCE_FWHT_MUT_NORMALISATION_TWICE) return scale * scale;
    return scale;
}

static bool sign_is_negative(size_t dv, size_t j)
{
    size_t index = UG_MUTANT == ATTN_REDUCE_FWHT_MUT_SIGNS_WRAP_AT_256 && dv == 512 ? j & 255 : j;
    bool negative = attn_reduce_fwht_sign_is_negative(index);
    return UG_MUTANT == ATTN_REDUCE_FWHT_MUT_SIGN_BIT_FLIPPED && j == 43 ? !negative : negative;
}

static void undo_transform_init(undo_transform *t, uint32_t head_dim)
{
    t->dv = head_dim;
    t->scale = inverse_sqrt_head_dim(head_dim);
    for (size_t j = 0; j < t->dv; j++) t->sign_bits[j] = sign_is_negative(t->dv, j) ? 0x80000000u : 0u;
    t->path = current_path();
}

/* out = s * (H x) / sqrt(DV); x is transformed in place, out may equal x. */
static void undo_row(const undo_transform *t, float *x, float *out)
{
    t->path->butterflies(x, t->dv);
    t->path->scale_signs(x, t->dv, t->scale, t->sign_bits, out);
}

/* ---- rows over the kernel threads ------------------------------------------ */

/* Rows are independent: blocks of ROWS_PER_ITEM rows go to the kernel threads
 * (kernels/parallel.h). A row is about a microsecond of work and a thread
 * start tens of microseconds, so a call splits only where each worker gets at
 * least one full block (the bench's 32-row calls run on one thread). */
enum { ROWS_PER_ITEM = 64 };

typedef struct {
    reduce_job reduce;
    const undo_transform *undo; /* NULL: reduce only */
    float *out;
    float *staged; /* the fused kernel's threadgroup rows, head_dim floats per worker; NULL: stage in out */
    size_t nrows;
} rows_job;

static size_t row_items(size_t nrows) { return nrows / ROWS_PER_ITEM + (nrows % ROWS_PER_ITEM != 0); }

static void process_rows(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const rows_job *job = ctx;
    const size_t dv = job->reduce.p->head_dim, last = end * ROWS_PER_ITEM < job->nrows ? end * ROWS_PER_ITEM : job->nrows;
    for (size_t r = begin * ROWS_PER_ITEM; r < last; r++) {
        float *out = job->out + r * dv, *staged = job->staged ? job->staged + worker * dv : out;
        if (job->reduce.htmp) reduce_row(&job->reduce, r, staged);
        if (job->undo) undo_row(job->undo, staged, out);
    }
}

/* ---- the three entry points ---------------------------------------------- */

ug_status attn_reduce_fwht_fused(const attn_reduce_fwht_params *p, const ug_buf *htmp, ug_buf *output)
{
    UG_TRY(validate_reduce(FUSED_KERNEL, p, htmp, output));
    const size_t items = row_items(p->nrows);
    ug_guarded scratch;
    UG_TRY(ug_guarded_alloc(&scratch, ug_parallel_workers(items) * planned_threadgroup_bytes(p->head_dim)));
    undo_transform undo;
    undo_transform_init(&undo, p->head_dim);
    rows_job job = {{p, htmp->data, current_path()}, &undo, output->data, ug_guarded_data(&scratch), p->nrows};
    ug_parallel_for(items, process_rows, &job);
    return ug_guarded_free(&scratch, FUSED_KERNEL " threadgroup scratch");
}

ug_status attn_reduce(const attn_reduce_fwht_params *p, const ug_buf *htmp, ug_buf *output)
{
    UG_TRY(validate_reduce(REDUCE_KERNEL, p, htmp, output));
    rows_job job = {{p, htmp->data, current_path()}, NULL, output->data, NULL, p->nrows};
    ug_parallel_for(row_items(p->nrows), process_rows, &job);
    return ug_ok();
}

ug_status attn_fwht_sign_undo(uint32_t nrows, uint32_t head_dim, ug_buf *x)
{
    UG_TRY(check_head_dim(UNDO_KERNEL, head_dim));
    size_t count;
    UG_TRY(row_elements(UNDO_KERNEL, "x", nrows, head_dim, &count));
    UG_TRY(check_f32_buffer(UNDO_KERNEL, "x", x, count));
    undo_transform undo;
    undo_transform_init(&undo, head_dim);
    const attn_reduce_fwht_params shape = {.nrows = nrows, .head_dim = head_dim};
    rows_job job = {{&shape, NULL, NULL}, &undo, x->data, NULL, nrows};
    ug_parallel_for(row_items(nrows), process_rows, &job);
    return ug_ok();
}
