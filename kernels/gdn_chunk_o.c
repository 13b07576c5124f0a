/* gdn_chunk_o (SPEC §1.2). Validation is the seed's validate(), rule for
 * rule. The computation follows the seed's plan: per (batch, head, chunk) the
 * attention tile Q is formed once in f32 (q k^T, the decay, the causal mask),
 * rounded to bf16 into the threadgroup tile, then every 32-wide V tile gets
 * the state term q h^T and the intra-chunk term Q v from the ISA micro-kernel
 * and is combined, scaled and rounded to bf16 on store.
 *
 * The threadgroup tile is scratch of exactly the seed's planned size
 * (BT*BT*2 bytes), guarded, so a short plan shows up as UG_EGUARD instead of
 * silent corruption. The other working arrays stand for the shader's
 * registers (simdgroup fragments) and live in one heap block. */
#include "gdn_chunk_o.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "isa.h"
#include "tensor_check.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_CHUNK_O_CORRECT
#endif

#define KERNEL "gated_delta_net_chunk_o"

/* Validation admits only bt == 64 and K == 128: one tile shape. */
enum { BT = 64, KDIM = 128, BV = 32 };
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

static bool causal(size_t i, size_t j)
{
    return UG_MUTANT == GDN_CHUNK_O_MUT_STRICT_MASK ? i > j : i >= j;
}

/* Position of index i of an n-term dot product in the packed operands: the
 * micro-kernel sums in increasing packed order, so packing reversed makes
 * every sum run backwards. */
static size_t packed(size_t i, size_t n)
{
    return UG_MUTANT == GDN_CHUNK_O_LEGIT_REVERSED_ORDER ? n - 1 - i : i;
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
 * packed for the micro-kernel and its f32 accumulators. */
typedef struct {
    float q[BT][KDIM];     /* the chunk's queries, widened to f32 (exact) */
    ug_bf16 k_t[KDIM][BT]; /* its keys, K-major: the B operand of q k^T */
    float qk[BT][BT];      /* q k^T */
    float att[BT][BT];     /* the attention tile widened to f32: the A operand of Q v */
    float decay[BT];       /* expf(g[t]) per row */
    ug_bf16 h_t[KDIM][BV]; /* one V tile of the state, K-major: the B operand of q h^T */
    ug_bf16 v_tile[BT][BV];
    float state[BT][BV]; /* q h^T */
    float intra[BT][BV]; /* Q v */
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

/* State element (v, k) of the chunk's state h[b, c, head] ([V][K], K innermost). */
static ug_bf16 state_at(const chunk_job *job, size_t col, size_t kk)
{
    const gdn_chunk_o_params *p = job->p;
    size_t nt = p->t / BT, c = job->chunk;
    if (UG_MUTANT == GDN_CHUNK_O_MUT_STATE_NEXT_CHUNK && c + 1 < nt) c++;
    size_t base = ((job->b * nt + c) * p->h + job->head) * (size_t)p->v * KDIM;
    return job->h[base + (UG_MUTANT == GDN_CHUNK_O_MUT_H_K_MAJOR ? kk * p->v + col : col * KDIM + kk)];
}

static void load_queries_and_keys(const chunk_job *job)
{
    registers *reg = job->reg;
    for (size_t i = 0; i < BT; i++) {
        const ug_bf16 *q_row = job->q + at_bthd(job, job->t0 + i, job->key_head, job->p->hg, 0, KDIM);
        const ug_bf16 *k_row = job->k + at_bthd(job, job->t0 + i, job->key_head, job->p->hg, 0, KDIM);
        for (size_t kk = 0; kk < KDIM; kk++) {
            reg->q[i][packed(kk, KDIM)] = ug_bf16_to_f32(q_row[kk]);
            reg->k_t[packed(kk, KDIM)][i] = k_row[kk];
        }
    }
}

/* The decay of row t's state term, and of its attention to row s. */
static float state_decay(const chunk_job *job, size_t t)
{
    return UG_MUTANT == GDN_CHUNK_O_MUT_STATE_DECAY_MISSING ? 1.0f : expf(gate(job, t));
}

static float intra_decay(const chunk_job *job, size_t t, size_t s)
{
    float g_t = gate(job, t), g_s = gate(job, s);
    return expf(UG_MUTANT == GDN_CHUNK_O_MUT_DECAY_SIGN ? g_s - g_t : g_t - g_s);
}

/* Q = bf16(mask * decay * q k^T) into the threadgroup tile, and its f32 copy
 * as the A operand of Q v. */
static void attention_tile(const chunk_job *job)
{
    registers *reg = job->reg;
    ug_gemm_f32_bf16(BT, BT, KDIM, reg->q[0], KDIM, reg->k_t[0], BT, reg->qk[0], BT);
    for (size_t i = 0; i < BT; i++) {
        reg->decay[i] = state_decay(job, job->t0 + i);
        for (size_t j = 0; j < BT; j++) {
            float x = causal(i, j) ? intra_decay(job, job->t0 + i, job->t0 + j) * reg->qk[i][j] : 0.0f;
            job->tile[i][j] = ug_bf16_from_f32(x);
            reg->att[i][packed(j, BT)] = attention_rounded ? ug_bf16_to_f32(job->tile[i][j]) : x;
        }
    }
}

static void value_tile(const chunk_job *job, size_t col0)
{
    registers *reg = job->reg;
    const gdn_chunk_o_params *p = job->p;
    for (size_t col = 0; col < BV; col++)
        for (size_t kk = 0; kk < KDIM; kk++) reg->h_t[packed(kk, KDIM)][col] = state_at(job, col0 + col, kk);
    for (size_t j = 0; j < BT; j++) {
        const ug_bf16 *v_row = job->v + at_bthd(job, job->t0 + j, job->head, p->h, col0, p->v);
        for (size_t col = 0; col < BV; col++) reg->v_tile[packed(j, BT)][col] = v_row[col];
    }
    ug_gemm_f32_bf16(BT, BV, KDIM, reg->q[0], KDIM, reg->h_t[0], BV, reg->state[0], BV);
    ug_gemm_f32_bf16(BT, BV, BT, reg->att[0], BT, reg->v_tile[0], BV, reg->intra[0], BV);
    for (size_t i = 0; i < BT; i++) {
        ug_bf16 *out = job->o + at_bthd(job, job->t0 + i, job->head, p->h, col0, p->v);
        for (size_t col = 0; col < BV; col++) {
            float state_term = reg->decay[i] * reg->state[i][col];
            out[col] = ug_bf16_from_f32(combine(state_term, reg->intra[i][col], p->scale));
        }
    }
}

static size_t key_head(const gdn_chunk_o_params *p, size_t h)
{
    return UG_MUTANT == GDN_CHUNK_O_MUT_WRONG_GQA_HEAD ? h % p->hg : h / (p->h / p->hg);
}

ug_status gdn_chunk_o(const gdn_chunk_o_params *p, const ug_buf *q, const ug_buf *k, const ug_buf *v,
                      const ug_buf *h, const ug_buf *g, ug_buf *o)
{
    UG_TRY(validate(p, q, k, v, h, g, o));

    registers *reg = malloc(sizeof *reg);
    if (!reg) return ug_fail(UG_ENOMEM, KERNEL ": cannot allocate %zu bytes of working registers", sizeof *reg);
    ug_guarded scratch;
    ug_status st = ug_guarded_alloc(&scratch, planned_threadgroup_bytes(p->bt));
    if (!ug_is_ok(&st)) {
        free(reg);
        return st;
    }
    chunk_job job = {
        .p = p, .q = q->data, .k = k->data, .v = v->data, .h = h->data, .g = g->data, .o = o->data,
        .tile = (ug_bf16 (*)[BT])ug_guarded_data(&scratch), .reg = reg,
    };
    for (job.b = 0; job.b < p->b; job.b++)
        for (job.head = 0; job.head < p->h; job.head++) {
            job.key_head = key_head(p, job.head);
            for (job.chunk = 0, job.t0 = 0; job.t0 < p->t; job.chunk++, job.t0 += BT) {
                load_queries_and_keys(&job);
                attention_tile(&job);
                for (size_t col0 = 0; col0 < p->v; col0 += BV) value_tile(&job, col0);
            }
        }
    free(reg);
    return ug_guarded_free(&scratch, KERNEL " threadgroup scratch");
}
