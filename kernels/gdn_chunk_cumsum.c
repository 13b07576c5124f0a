/* SPDX-License-Identifier: MIT */
/* gdn_chunk_cumsum (SPEC §1.3). Heads are innermost in [B,T,H], so the
 * kernel walks the tokens of a chunk once and keeps the running sums of a
 * block of heads side by side (in vector registers on the SIMD paths): the
 * inner loop over heads is contiguous in memory and each head's sum is the
 * same sequence of f32 additions in token order, whatever the block width,
 * so every path gives identical bits (gdn_chunk_cumsum_paths.h). Mutant
 * builds run the scalar statement on every path. */
#include "gdn_chunk_cumsum.h"

#include <stddef.h>

#include "gdn_chunk_cumsum_paths.h"
#include "isa.h"
#include "parallel.h"
#include "tensor_check.h"

#define KERNEL "gated_delta_net_chunk_cumsum"

enum { BT = GDN_CHUNK_CUMSUM_BT, HEAD_BLOCK = 64, SCAN_BLOCK = 16 };

static ug_status validate(const gdn_chunk_cumsum_params *p, const ug_buf *g_raw, const ug_buf *g)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"H", p->h}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL ": bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL ": t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    const ug_tensor_spec tensors[] = {
        {"g_raw", g_raw, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"g", g, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
    };
    return ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors);
}

/* Rows after which the running sums restart (mutants move the boundary). */
static size_t restart_period(const gdn_chunk_cumsum_params *p)
{
    switch (UG_MUTANT) {
    case GDN_CHUNK_CUMSUM_MUT_NO_RESET: return p->t;
    case GDN_CHUNK_CUMSUM_MUT_CHUNK_OF_32: return 32;
    default: return BT;
    }
}

/* The scalar statement with every mutant's change: blocks of HEAD_BLOCK
 * heads side by side, one running sum each, over all of a batch's tokens. */
static void scan_scalar(const gdn_chunk_cumsum_params *p, const float *in, float *out)
{
    const size_t heads = p->h, period = restart_period(p);
    for (size_t b = 0; b < p->b; b++)
        for (size_t h0 = 0; h0 < heads; h0 += HEAD_BLOCK) {
            const size_t width = heads - h0 < HEAD_BLOCK ? heads - h0 : HEAD_BLOCK;
            /* carried: the totals of the chunk's earlier 16-row blocks
             * (variant TWO_LEVEL_SCAN only; zero otherwise) */
            float sum[HEAD_BLOCK], carried[HEAD_BLOCK];
            for (size_t t = 0; t < p->t; t++) {
                if (t % period == 0)
                    for (size_t i = 0; i < width; i++) sum[i] = carried[i] = 0.0f;
                else if (UG_MUTANT == GDN_CHUNK_CUMSUM_LEGIT_TWO_LEVEL_SCAN && t % SCAN_BLOCK == 0)
                    for (size_t i = 0; i < width; i++) carried[i] += sum[i], sum[i] = 0.0f;
                const size_t row = (b * p->t + t) * heads + h0;
                for (size_t i = 0; i < width; i++) {
                    float before = sum[i];
                    sum[i] += in[row + i];
                    out[row + i] = UG_MUTANT == GDN_CHUNK_CUMSUM_MUT_EXCLUSIVE_SCAN ? before
                                   : UG_MUTANT == GDN_CHUNK_CUMSUM_LEGIT_TWO_LEVEL_SCAN ? carried[i] + sum[i]
                                                                                        : sum[i];
                }
            }
        }
}

/* The portable scan of gdn_chunk_cumsum_paths.h. */
static void scan_chunk_portable(const float *in, float *out, size_t rows, size_t heads, size_t stride)
{
    for (size_t h0 = 0; h0 < heads; h0 += HEAD_BLOCK) {
        const size_t width = heads - h0 < HEAD_BLOCK ? heads - h0 : HEAD_BLOCK;
        float sum[HEAD_BLOCK] = {0};
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < width; i++) out[r * stride + h0 + i] = sum[i] += in[r * stride + h0 + i];
    }
}

/* The correct kernel: the chunks of every batch, each scanned by the ISA
 * path; blocks of CHUNKS_PER_ITEM consecutive chunks go to the kernel threads
 * (kernels/parallel.h). A chunk of 16 heads is a fraction of a microsecond on
 * the SIMD paths and a thread start tens of microseconds, so a call splits
 * only where each worker gets at least one full block (the bench's 64-chunk
 * call runs on one thread). */
enum { CHUNKS_PER_ITEM = 256 };

typedef struct {
    const gdn_chunk_cumsum_params *p;
    const float *in;
    float *out;
    const gdn_chunk_cumsum_paths *path;
} scan_job;

static void scan_chunks(void *ctx, __attribute__((unused)) unsigned worker, size_t begin, size_t end)
{
    const scan_job *job = ctx;
    const size_t chunks = (size_t)job->p->b * (job->p->t / BT);
    const size_t last = end * CHUNKS_PER_ITEM < chunks ? end * CHUNKS_PER_ITEM : chunks;
    for (size_t chunk = begin * CHUNKS_PER_ITEM; chunk < last; chunk++) {
        const size_t first = chunk * BT * job->p->h; /* chunks of all batches are consecutive */
        job->path->scan(job->in + first, job->out + first, BT, job->p->h, job->p->h);
    }
}

static const gdn_chunk_cumsum_paths paths_portable = {scan_chunk_portable};
UG_ISA_PATHS(gdn_chunk_cumsum, UG_ISA_PORTABLE, paths_portable);

ug_status gdn_chunk_cumsum(const gdn_chunk_cumsum_params *p, const ug_buf *g_raw, ug_buf *g)
{
    UG_TRY(validate(p, g_raw, g));
    /* a bug planted in the scalar scan must run there, one in the vector paths there */
    if (UG_MUTANT != GDN_CHUNK_CUMSUM_CORRECT && UG_MUTANT != GDN_CHUNK_CUMSUM_MUT_VECTOR_TAIL_LANE_DROPPED) {
        scan_scalar(p, g_raw->data, g->data);
        return ug_ok();
    }
    scan_job job = {p, g_raw->data, g->data, UG_ISA_PATHS_OF(gdn_chunk_cumsum, ug_isa_current())};
    const size_t chunks = (size_t)p->b * (p->t / BT);
    ug_parallel_for(chunks / CHUNKS_PER_ITEM + (chunks % CHUNKS_PER_ITEM != 0), scan_chunks, &job);
    return ug_ok();
}
