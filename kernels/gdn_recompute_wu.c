/* gdn_recompute_wu (SPEC §1.1). Validation is the seed's validate(), rule for
 * rule; the computation follows the seed's shader: per (batch, head, chunk)
 * the chunk's A rows go to ba_tile, then each 64-column tile of v (then k) is
 * scaled in f32, rounded to bf16 into the stage, multiplied by ba_tile and
 * rounded to bf16 on store. The scratch is the shader's threadgroup memory,
 * exactly as large as the host plans it and guarded, so a short plan shows up
 * as UG_EGUARD instead of silent corruption; with kernel threads
 * (parallel.h) each worker owns one such slice and takes contiguous ranges
 * of (batch, chunk, head) items. The staging, the product and the output
 * rounding run on the ISA path (isa.h: row operations and the packed GEMM,
 * bit-identical on every path); exp(g) is computed once per staged row. */
#include "gdn_recompute_wu.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "isa.h"
#include "parallel.h"
#include "tensor_check.h"
#include "worker_scratch.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_RECOMPUTE_WU_CORRECT
#endif

#define KERNEL "gated_delta_net_recompute_wu"

/* Validation admits only bt == 64, and BK == BV == 64: one stage shape. */
enum { BT = 64, TILE = 64 };
_Static_assert(GDN_RECOMPUTE_WU_BK == TILE && GDN_RECOMPUTE_WU_BV == TILE, "one stage width");

static const uint32_t stage_width = TILE; /* max(BV, BK) in the seed's plan */
static const uint64_t threadgroup_memory_cap = 32 * 1024;

/* ---- the seed's threadgroup plan ---------------------------------------- */

/* ba_tile: f32 [BT][BT]; the stage (bf16 [BT][max(BV, BK)]) follows it. */
static uint64_t ba_tile_bytes(uint32_t bt) { return (uint64_t)bt * bt * sizeof(float); }

static uint64_t planned_threadgroup_bytes(uint32_t bt)
{
    return ba_tile_bytes(bt) + (uint64_t)bt * stage_width * sizeof(ug_bf16);
}

/* ---- validation ---------------------------------------------------------- */

static ug_status validate(const gdn_recompute_wu_params *p, const ug_buf *k, const ug_buf *v,
                          const ug_buf *beta, const ug_buf *g, const ug_buf *a, const ug_buf *w,
                          const ug_buf *u)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"Hg", p->hg}, {"H", p->h},
                                 {"K", p->k}, {"V", p->v}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->h % p->hg != 0)
        return ug_fail(UG_EINVAL, KERNEL ": h (%u) must be a multiple of hg (%u)", p->h, p->hg);
    if (p->k > GDN_RECOMPUTE_WU_MAX_K)
        return ug_fail(UG_EINVAL, KERNEL ": K (%u) exceeds the 32 KB threadgroup memory budget (MAX_K = %u)",
                       p->k, GDN_RECOMPUTE_WU_MAX_K);
    if (p->v > GDN_RECOMPUTE_WU_MAX_V)
        return ug_fail(UG_EINVAL, KERNEL ": v (%u) must be <= MAX_V (%u)", p->v, GDN_RECOMPUTE_WU_MAX_V);
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL ": bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL ": t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    if (p->k % GDN_RECOMPUTE_WU_BK != 0)
        return ug_fail(UG_EINVAL, KERNEL ": k (%u) must be a multiple of BK (%u)", p->k, GDN_RECOMPUTE_WU_BK);
    if (p->v % GDN_RECOMPUTE_WU_BV != 0)
        return ug_fail(UG_EINVAL, KERNEL ": v (%u) must be a multiple of BV (%u)", p->v, GDN_RECOMPUTE_WU_BV);
    /* Unreachable once bt == 64 (24576 bytes); kept because the seed keeps it. */
    uint64_t shared_bytes = planned_threadgroup_bytes(p->bt);
    if (shared_bytes > threadgroup_memory_cap)
        return ug_fail(UG_EINVAL,
                       KERNEL ": threadgroup memory %llu bytes exceeds the M5 Max cap of %llu bytes "
                              "(bt=%u, stage_width=%u)",
                       (unsigned long long)shared_bytes, (unsigned long long)threadgroup_memory_cap,
                       p->bt, stage_width);

    const ug_tensor_spec tensors[] = {
        {"k", k, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"v", v, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        {"beta", beta, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"g", g, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"A", a, UG_F32, 4, {"B", "T", "H", "BT"}, {p->b, p->t, p->h, p->bt}, false},
        {"w", w, UG_BF16, 4, {"B", "T", "H", "K"}, {p->b, p->t, p->h, p->k}, false},
        {"u", u, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
    };
    return ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors);
}

/* ---- layouts -------------------------------------------------------------- */

/* Element (b, t, head, d) of a [B, T, heads, dim] tensor: k, v, A, w, u. */
static size_t at_bthd(const gdn_recompute_wu_params *p, size_t b, size_t t, size_t head,
                      size_t heads, size_t d, size_t dim)
{
    return ((b * p->t + t) * heads + head) * dim + d;
}

/* Element (b, t, h) of a [B, T, H] tensor: beta, g. */
static size_t at_bth(const gdn_recompute_wu_params *p, size_t b, size_t t, size_t h)
{
    return (b * p->t + t) * p->h + h;
}

/* ---- the computation ------------------------------------------------------ */

/* Mutants TRUNCATE_STAGE_CAST and OUTPUT_TRUNCATED round this way. */
static ug_bf16 bf16_truncated(float x) { return (ug_bf16)(ug_f32_bits(x) >> 16); }

static ug_bf16 stage_cast(float x)
{
    return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_TRUNCATE_STAGE_CAST ? bf16_truncated(x) : ug_bf16_from_f32(x);
}

static ug_bf16 output_cast(float x)
{
    return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_OUTPUT_TRUNCATED ? bf16_truncated(x) : ug_bf16_from_f32(x);
}

static size_t key_head(const gdn_recompute_wu_params *p, size_t h)
{
    return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_WRONG_GQA_HEAD ? h % p->hg : h / (p->h / p->hg);
}

/* exp(g), once per staged row. */
static float exp_gate(float g)
{
    return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_EXP_AS_ONE_PLUS_G ? 1.0f + g : expf(g);
}

/* One of the two products: u from v (staged as v*beta) or w from k (staged
 * as (k*beta)*exp(g)). Source and destination rows are dim wide. */
typedef struct {
    const ug_bf16 *src;
    size_t src_heads;
    ug_bf16 *dst;
    size_t dim;
    bool gated;
} wy_product;

/* The (batch, value head, chunk) a threadgroup owns, and its scratch. */
typedef struct {
    const gdn_recompute_wu_params *p;
    const float *beta, *g;
    size_t b, h, t0;
    float (*ba_tile)[BT];   /* the chunk's A rows */
    ug_bf16 (*stage)[TILE]; /* the staged operand of one column tile */
    float gates[BT];        /* exp(g) of each staged row, shared by the column tiles of w */
} chunk_job;

/* The chunk row staged as row j. */
static size_t staged_row(size_t j)
{
    return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_ROW_OFF_BY_ONE ? (j + 1) % BT : j;
}

/* exp(g) once per staged row and chunk (the K/64 column tiles of w share it). */
static void load_gates(chunk_job *job)
{
    for (size_t j = 0; j < BT; j++)
        job->gates[j] = exp_gate(job->g[at_bth(job->p, job->b, job->t0 + staged_row(j), job->h)]);
}

static void load_ba_tile(const chunk_job *job, const float *a)
{
    for (size_t i = 0; i < BT; i++)
        memcpy(job->ba_tile[i], a + at_bthd(job->p, job->b, job->t0 + i, job->h, job->p->h, 0, BT),
               sizeof job->ba_tile[i]);
}

static size_t source_head(const chunk_job *job, const wy_product *prod)
{
    return prod->gated ? key_head(job->p, job->h) : job->h;
}

/* stage[j][c] = bf16(x[t0 + j][col0 + c] * beta * gate) with gate = exp(g)
 * (gated) or 1 (an exact product), the f32 product formed left to right as
 * the shader forms it. `unrounded` receives the f32 values for mutant
 * STAGE_CAST_DROPPED only. */
static void stage_tile(const chunk_job *job, const wy_product *prod, size_t col0, float unrounded[][TILE])
{
    const bool scalar_cast = UG_MUTANT == GDN_RECOMPUTE_WU_MUT_TRUNCATE_STAGE_CAST ||
                             UG_MUTANT == GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED;
    for (size_t j = 0; j < BT; j++) {
        size_t t = job->t0 + staged_row(j);
        float beta_t = job->beta[at_bth(job->p, job->b, t, job->h)];
        float gate = prod->gated ? job->gates[j] : 1.0f;
        const ug_bf16 *x =
            prod->src + at_bthd(job->p, job->b, t, source_head(job, prod), prod->src_heads, col0, prod->dim);
        if (!scalar_cast) {
            ug_rows_scale_round(TILE, x, beta_t, gate, job->stage[j]);
            continue;
        }
        for (size_t c = 0; c < TILE; c++) {
            float scaled = ug_bf16_to_f32(x[c]) * beta_t * gate;
            job->stage[j][c] = stage_cast(scaled);
            unrounded[j][c] = scaled;
        }
    }
}

/* Mutant STAGE_CAST_DROPPED only: ba_tile times the f32 stage. */
static void multiply_unrounded(float (*ba_tile)[BT], float unrounded[][TILE], size_t terms,
                               float product[][TILE])
{
    for (size_t i = 0; i < BT; i++)
        for (size_t c = 0; c < TILE; c++) {
            float acc = 0.0f;
            for (size_t j = 0; j < terms; j++) acc = fmaf(ba_tile[i][j], unrounded[j][c], acc);
            product[i][c] = acc;
        }
}

static void column_tile(const chunk_job *job, const wy_product *prod, size_t col0)
{
    float product[BT][TILE];         /* the shader's per-thread accumulators */
    float unrounded_stage[BT][TILE]; /* mutant STAGE_CAST_DROPPED only */
    size_t terms = UG_MUTANT == GDN_RECOMPUTE_WU_MUT_DROPPED_LAST_TERM ? BT - 1 : BT;

    stage_tile(job, prod, col0, unrounded_stage);
    if (UG_MUTANT == GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED)
        multiply_unrounded(job->ba_tile, unrounded_stage, terms, product);
    else
        ug_gemm_f32_bf16(BT, TILE, terms, job->ba_tile[0], BT, job->stage[0], TILE, product[0], TILE);

    for (size_t i = 0; i < BT; i++) {
        ug_bf16 *out = prod->dst + at_bthd(job->p, job->b, job->t0 + i, job->h, job->p->h, col0, prod->dim);
        if (UG_MUTANT != GDN_RECOMPUTE_WU_MUT_OUTPUT_TRUNCATED) ug_rows_round(TILE, product[i], out);
        else
            for (size_t c = 0; c < TILE; c++) out[c] = output_cast(product[i][c]);
    }
}

/* Work item x of the parallel loop is (batch, chunk, value head), the head
 * varying fastest, so that consecutive items read neighbouring parts of the
 * same token rows; a worker's threadgroup memory is its own scratch slice. */
typedef struct {
    const gdn_recompute_wu_params *p;
    const ug_buf *k, *v, *beta, *g, *a;
    ug_buf *w, *u;
    const ug_worker_scratch *scratch;
} call;

static void locate_item(chunk_job *job, size_t x)
{
    const gdn_recompute_wu_params *p = job->p;
    const size_t chunks = p->t / BT;
    job->h = x % p->h;
    job->t0 = x / p->h % chunks * BT;
    job->b = x / p->h / chunks;
}

static void run_chunks(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const call *c = ctx;
    const gdn_recompute_wu_params *p = c->p;
    unsigned char *threadgroup_memory = ug_worker_scratch_data(c->scratch, worker);
    chunk_job job = {
        .p = p,
        .beta = c->beta->data,
        .g = c->g->data,
        .ba_tile = (float (*)[BT])threadgroup_memory,
        .stage = (ug_bf16 (*)[TILE])(threadgroup_memory + ba_tile_bytes(p->bt)),
    };
    const wy_product u_from_v = {.src = c->v->data, .src_heads = p->h, .dst = c->u->data, .dim = p->v, .gated = false};
    const wy_product w_from_k = {.src = c->k->data, .src_heads = p->hg, .dst = c->w->data, .dim = p->k, .gated = true};
    for (size_t x = begin; x < end; x++) {
        locate_item(&job, x);
        load_ba_tile(&job, c->a->data);
        load_gates(&job);
        for (size_t col0 = 0; col0 < p->v; col0 += TILE) column_tile(&job, &u_from_v, col0);
        for (size_t col0 = 0; col0 < p->k; col0 += TILE) column_tile(&job, &w_from_k, col0);
    }
}

ug_status gdn_recompute_wu(const gdn_recompute_wu_params *p, const ug_buf *k, const ug_buf *v,
                           const ug_buf *beta, const ug_buf *g, const ug_buf *a, ug_buf *w, ug_buf *u)
{
    UG_TRY(validate(p, k, v, beta, g, a, w, u));

    const size_t items = (size_t)p->b * p->h * (p->t / BT);
    ug_worker_scratch scratch;
    UG_TRY(ug_worker_scratch_alloc(&scratch, ug_parallel_workers(items), planned_threadgroup_bytes(p->bt)));
    call c = {.p = p, .k = k, .v = v, .beta = beta, .g = g, .a = a, .w = w, .u = u, .scratch = &scratch};
    ug_parallel_for(items, run_chunks, &c);
    return ug_worker_scratch_free(&scratch, KERNEL " threadgroup scratch");
}
