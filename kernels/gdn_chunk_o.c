/* SPDX-License-Identifier: MIT */
/* gdn_chunk_o (SPEC §1.2). Validation is the seed's validate(), rule for
 * rule. The computation follows the seed's plan: per (batch, head, chunk) the
 * attention tile Q is formed once in f32 (q k^T, the decay, the causal mask),
 * rounded to bf16 into the threadgroup tile, then the state term q h^T and
 * the intra-chunk term Q v (all of V at once: the seed's 32-wide V tiles are
 * independent) come from the ISA's packed GEMM and are combined, scaled and
 * rounded to bf16 on store by a row operation of the same path (isa.h: the
 * same bits on every path). Only the causal bands of q k^T are formed.
 *
 * The threadgroup tile is scratch of exactly the seed's planned size
 * (BT*BT*2 bytes), guarded, so a short plan shows up as UG_EGUARD instead of
 * silent corruption. The other working arrays stand for the shader's
 * registers (simdgroup fragments) and live in one heap block. With kernel
 * threads (parallel.h) each worker has its own tile and registers and takes
 * contiguous ranges of (batch, chunk, head) items. */
#include "gdn_chunk_o.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "expf.h"
#include "isa.h"
#include "parallel.h"
#include "tensor_check.h"
#include "worker_scratch.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_CHUNK_O_CORRECT
#endif

#define KERNEL "gated_delta_net_chunk_o"

/* Validation admits only bt == 64 and K == 128: one tile shape. */
/* QK_BAND: the rows of one triangular band of q k^T (a whole AVX-512 vector
 * of columns: 16). */
enum { BT = 64, KDIM = 128, BV = 32, QK_BAND = 16 };
_Static_assert(GDN_CHUNK_O_MAX_K == KDIM && GDN_CHUNK_O_BV == BV, "one tile shape");

static const uint64_t threadgroup_memory_cap = 32 * 1024;

/* The seed's plan: the bf16 attention tile [BT][BT]. */
static uint64_t planned_threadgroup_bytes(uint32_t bt) { return (uint64_t)bt * bt * sizeof(ug_bf16); }

/* ---- validation ---------------------------------------------------------- */

static ug_status validate(const gdn_chunk_o_params *p, const ug_buf *q, const ug_buf *k,
                          const ug_buf *v, const ug_buf *h, const ug_buf *g, const ug_buf *o)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"Hg", p->hg}, {"H", p->h},
                                 {"K", p->k}, {"V", p->v}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->h % p->hg != 0)
        return ug_fail(UG_EINVAL, KERNEL ": h (%u) must be a multiple of hg (%u)", p->h, p->hg);
    if (p->k != GDN_CHUNK_O_MAX_K)
        return ug_fail(UG_EINVAL,
                       KERNEL ": K (%u) must equal MAX_K = %u exactly. The simdgroup_matrix MMA K-tile "
                              "loop is compile-time hard-coded at 16 (= K=128/8) in the shader; runtime "
                              "loop bounds defeat the MMA scheduler (3.15\u00d7 regression measured "
                              "2026-04-27). Future iters will lift this via FLA's b_h1..b_h4 bank-split.",
                       p->k, GDN_CHUNK_O_MAX_K);
    if (p->v > GDN_CHUNK_O_MAX_V)
        return ug_fail(UG_EINVAL, KERNEL ": v (%u) must be <= MAX_V (%u)", p->v, GDN_CHUNK_O_MAX_V);
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL " (iter 3): bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL " (iter 3): t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    /* Unreachable once K == 128; kept because the seed keeps it. */
    if (p->k % GDN_CHUNK_O_BK != 0)
        return ug_fail(UG_EINVAL, KERNEL " (iter 3): k (%u) must be a multiple of BK (%u)", p->k, GDN_CHUNK_O_BK);
    if (p->v % GDN_CHUNK_O_BV != 0)
        return ug_fail(UG_EINVAL, KERNEL " (iter 3): v (%u) must be a multiple of BV (%u)", p->v, GDN_CHUNK_O_BV);
    if (!isfinite(p->scale))
        return ug_fail(UG_EINVAL, KERNEL ": scale must be finite (got %g)", (double)p->scale);
    /* Unreachable once bt == 64 (8192 bytes); kept because the seed keeps it. */
    uint64_t shared_bytes = planned_threadgroup_bytes(p->bt);
    if (shared_bytes > threadgroup_memory_cap)
        return ug_fail(UG_EINVAL, KERNEL ": threadgroup memory %llu bytes exceeds M5 Max cap of %llu bytes (bt=%u)",
                       (unsigned long long)shared_bytes, (unsigned long long)threadgroup_memory_cap, p->bt);

    /* NT = ceil(T / BT) as the seed's num_chunks(); T % BT == 0 by now. */
    const uint32_t nt = p->t / p->bt + (p->t % p->bt != 0);
    const ug_tensor_spec tensors[] = {
        {"q", q, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"k", k, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"v", v, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        {"h", h, UG_BF16, 5, {"B", "NT", "H", "V", "K"}, {p->b, nt, p->h, p->v, p->k}, false},
        {"g", g, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"o", o, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
    };
    return ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors);
}

/* ---- variants -------------------------------------------------------------- */

static const bool attention_rounded = UG_MUTANT != GDN_CHUNK_O_MUT_ATTENTION_UNROUNDED;

/* Row i of Q is causal (kept) in columns j < causal_columns(i). */
static size_t causal_columns(size_t i)
{
    return UG_MUTANT == GDN_CHUNK_O_MUT_STRICT_MASK ? i : i + 1;
}

/* Every dot product runs in increasing index order, or in decreasing order
 * for variant REVERSED_ORDER: its operands are then walked from their last
 * term with negated strides (the micro-kernel sums in its p order). */
static const bool reversed = UG_MUTANT == GDN_CHUNK_O_LEGIT_REVERSED_ORDER;

/* C[m][n] = A B over kk terms: A f32 rows a_ld apart; B(p, j) bf16 at
 * b[p * b_term + j * b_col] (B stored by rows: b_col = 1; by columns, as the
 * keys and the state are: b_term = 1). */
static void product(size_t m, size_t n, size_t kk, const float *a, size_t a_ld, const ug_bf16 *b, size_t b_term,
                    size_t b_col, float *c, size_t ldc)
{
    const ptrdiff_t step = reversed ? -1 : 1;
    const size_t first = reversed ? kk - 1 : 0;
    const ug_gemm_operands g = {.m = m, .n = n, .kk = kk,
                                .a = a + first, .a_row = (ptrdiff_t)a_ld, .a_col = step,
                                .b = b + first * b_term, .b_row = step * (ptrdiff_t)b_term, .b_col = (ptrdiff_t)b_col,
                                .c = c, .ldc = ldc};
    ug_gemm(&g);
}

/* o before its bf16 rounding, from P (state term) and Q v (intra-chunk term). */
static float combine(float state_term, float intra, float scale)
{
    switch (UG_MUTANT) {
    case GDN_CHUNK_O_LEGIT_SCALE_ONCE: return (state_term + intra) * scale;
    case GDN_CHUNK_O_LEGIT_FUSED_EPILOGUE: return fmaf(state_term, scale, intra * scale);
    case GDN_CHUNK_O_MUT_STATE_UNSCALED: return state_term + intra * scale;
    default: return state_term * scale + intra * scale;
    }
}

/* ---- the computation ------------------------------------------------------ */

/* The shader's per-threadgroup registers (simdgroup fragments): operands
 * packed for the micro-kernel and its f32 accumulators, one set per worker. */
typedef struct {
    float q[BT][KDIM];     /* the chunk's queries, widened to f32 (exact) */
    float qk[BT][BT];      /* q k^T */
    float att[BT][BT];     /* the attention tile widened to f32: the A operand of Q v */
    float gates[BT];       /* g[t] of the chunk's rows */
    float decay[BT];       /* expf(g[t]) per row */
    float intra_decay[BT]; /* expf(g[t] - g[s]) along one row */
    float masked[BT];      /* one row of the attention tile before its rounding */
    float state[BT * GDN_CHUNK_O_MAX_V];   /* q h^T [BT][V] */
    float intra[BT * GDN_CHUNK_O_MAX_V];   /* Q v [BT][V] */
} registers;

/* The (batch, value head, chunk) a threadgroup owns. */
typedef struct {
    const gdn_chunk_o_params *p;
    const ug_bf16 *q, *k, *v, *h;
    const float *g;
    ug_bf16 *o;
    size_t b, head, key_head, chunk, t0;
    ug_bf16 (*tile)[BT]; /* threadgroup memory: the bf16 attention tile */
    registers *reg;
} chunk_job;

/* Element (b, t, head, d) of a [B, T, heads, dim] tensor: q, k, v, o. */
static size_t at_bthd(const chunk_job *job, size_t t, size_t head, size_t heads, size_t d, size_t dim)
{
    return ((job->b * job->p->t + t) * heads + head) * dim + d;
}

/* g[b, t, head]. */
static float gate(const chunk_job *job, size_t t)
{
    return job->g[(job->b * job->p->t + t) * job->p->h + job->head];
}

/* The chunk's state h[b, c, head], stored [V][K]: the B operand of q h^T
 * (B(k, v) = h[v][k]) is read by columns (mutant H_K_MAJOR reads it as if
 * stored [K][V]). */
static const ug_bf16 *state_of_chunk(const chunk_job *job)
{
    const gdn_chunk_o_params *p = job->p;
    size_t nt = p->t / BT, c = job->chunk;
    if (UG_MUTANT == GDN_CHUNK_O_MUT_STATE_NEXT_CHUNK && c + 1 < nt) c++;
    return job->h + ((job->b * nt + c) * p->h + job->head) * (size_t)p->v * KDIM;
}

static void load_queries(const chunk_job *job)
{
    for (size_t i = 0; i < BT; i++)
        ug_rows_widen(KDIM, job->q + at_bthd(job, job->t0 + i, job->key_head, job->p->hg, 0, KDIM), job->reg->q[i]);
}

/* The decay of row t's state term, and of its attention to row s. */
static float state_decay(const chunk_job *job, size_t t)
{
    return UG_MUTANT == GDN_CHUNK_O_MUT_STATE_DECAY_MISSING ? 1.0f : expf(gate(job, t));
}

/* Q = bf16(mask * decay * q k^T) into the threadgroup tile, and its f32 copy
 * as the A operand of Q v. The decays, the products (1 * decay * qk = decay
 * * qk exactly), the rounding and the widening by row on the ISA path. */
static void attention_tile(const chunk_job *job)
{
    registers *reg = job->reg;
    /* Only the causal entries of q k^T are read: each band of rows is formed
     * up to its last column (the same chains; the rest stays unwritten). */
    const ug_bf16 *keys = job->k + at_bthd(job, job->t0, job->key_head, job->p->hg, 0, KDIM);
    for (size_t i0 = 0; i0 < BT; i0 += QK_BAND) /* B(k, s) = k[s][k]: the keys by columns */
        product(QK_BAND, i0 + QK_BAND, KDIM, reg->q[i0], KDIM, keys, 1, (size_t)job->p->hg * KDIM, reg->qk[i0], BT);
    for (size_t i = 0; i < BT; i++) reg->gates[i] = gate(job, job->t0 + i);
    for (size_t i = 0; i < BT; i++) {
        const size_t n = causal_columns(i);
        reg->decay[i] = state_decay(job, job->t0 + i);
        /* Row i's decays to the rows s < n, expf(g[t] - g[s]) as the ISA
         * path's ug_expf (libm's expf, expf.h), one per causal entry (each
         * has its own argument), times 1 and q k^T in one pass. */
        if (UG_MUTANT != GDN_CHUNK_O_MUT_DECAY_SIGN) {
            ug_rows_decay_mul(n, reg->gates[i], reg->gates, 1.0f, reg->qk[i], reg->masked);
        } else {
            for (size_t j = 0; j < n; j++) reg->intra_decay[j] = ug_expf(reg->gates[j] - reg->gates[i]);
            ug_rows_mul3(n, 1.0f, reg->intra_decay, reg->qk[i], reg->masked);
        }
        for (size_t j = n; j < BT; j++) reg->masked[j] = 0.0f;
        ug_rows_round(BT, reg->masked, job->tile[i]);
        if (attention_rounded) ug_rows_widen(BT, job->tile[i], reg->att[i]);
        else memcpy(reg->att[i], reg->masked, sizeof reg->att[i]);
    }
}

/* o = bf16(P * scale + Q v * scale) over all of V at once (the seed's 32-wide
 * V tiles are independent: the same sums, in the same order). */
static void output_rows(const chunk_job *job)
{
    registers *reg = job->reg;
    const gdn_chunk_o_params *p = job->p;
    const size_t dv = p->v;
    const bool k_major = UG_MUTANT == GDN_CHUNK_O_MUT_H_K_MAJOR;
    product(BT, dv, KDIM, reg->q[0], KDIM, state_of_chunk(job), k_major ? dv : 1, k_major ? 1 : KDIM, reg->state, dv);
    product(BT, dv, BT, reg->att[0], BT, job->v + at_bthd(job, job->t0, job->head, p->h, 0, dv), (size_t)p->h * dv, 1,
            reg->intra, dv);
    const bool scalar_epilogue = UG_MUTANT == GDN_CHUNK_O_LEGIT_SCALE_ONCE ||
                                 UG_MUTANT == GDN_CHUNK_O_LEGIT_FUSED_EPILOGUE ||
                                 UG_MUTANT == GDN_CHUNK_O_MUT_STATE_UNSCALED;
    for (size_t i = 0; i < BT; i++) {
        ug_bf16 *out = job->o + at_bthd(job, job->t0 + i, job->head, p->h, 0, dv);
        const float *state = reg->state + i * dv, *intra = reg->intra + i * dv;
        if (!scalar_epilogue) ug_rows_scaled_sum_round(dv, reg->decay[i], state, intra, p->scale, out);
        else
            for (size_t col = 0; col < dv; col++)
                out[col] = ug_bf16_from_f32(combine(reg->decay[i] * state[col], intra[col], p->scale));
    }
}

static size_t key_head(const gdn_chunk_o_params *p, size_t h)
{
    return UG_MUTANT == GDN_CHUNK_O_MUT_WRONG_GQA_HEAD ? h % p->hg : h / (p->h / p->hg);
}

/* Work item x of the parallel loop is (batch, chunk, value head), the head
 * varying fastest: the heads of a group share their queries and keys, and
 * consecutive items read neighbouring parts of the same token rows. Each
 * worker has its own threadgroup tile and registers. */
typedef struct {
    chunk_job proto; /* the tensors; the item and the worker's memory are filled in per worker */
    const ug_worker_scratch *scratch;
    registers *regs;
} call;

static void locate_item(chunk_job *job, size_t x)
{
    const gdn_chunk_o_params *p = job->p;
    const size_t chunks = p->t / BT;
    job->head = x % p->h;
    job->key_head = key_head(p, job->head);
    job->chunk = x / p->h % chunks;
    job->t0 = job->chunk * BT;
    job->b = x / p->h / chunks;
}

static void run_chunks(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const call *c = ctx;
    chunk_job job = c->proto;
    job.tile = (ug_bf16 (*)[BT])ug_worker_scratch_data(c->scratch, worker);
    job.reg = &c->regs[worker];
    for (size_t x = begin; x < end; x++) {
        locate_item(&job, x);
        load_queries(&job);
        attention_tile(&job);
        output_rows(&job);
    }
}

ug_status gdn_chunk_o(const gdn_chunk_o_params *p, const ug_buf *q, const ug_buf *k, const ug_buf *v,
                      const ug_buf *h, const ug_buf *g, ug_buf *o)
{
    UG_TRY(validate(p, q, k, v, h, g, o));

    const size_t items = (size_t)p->b * p->h * (p->t / BT);
    const unsigned workers = ug_parallel_workers(items);
    registers *regs = malloc(workers * sizeof *regs);
    if (!regs)
        return ug_fail(UG_ENOMEM, KERNEL ": cannot allocate %zu bytes of working registers", workers * sizeof *regs);
    ug_worker_scratch scratch;
    ug_status st = ug_worker_scratch_alloc(&scratch, workers, planned_threadgroup_bytes(p->bt));
    if (!ug_is_ok(&st)) {
        free(regs);
        return st;
    }
    call c = {.proto = {.p = p, .q = q->data, .k = k->data, .v = v->data, .h = h->data, .g = g->data, .o = o->data},
              .scratch = &scratch, .regs = regs};
    ug_parallel_for(items, run_chunks, &c);
    free(regs);
    return ug_worker_scratch_free(&scratch, KERNEL " threadgroup scratch");
}
