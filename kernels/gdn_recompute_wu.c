/* SPDX-License-Identifier: MIT */
/* gdn_recompute_wu (SPEC §1.1). Validation is the seed's validate(), rule for
 * rule (its threadgroup plan is checked against the 32 KB cap as the seed
 * does); the computation follows the seed's shader per (batch, head, chunk):
 * the operand is scaled in f32 and rounded to bf16 into a stage, multiplied
 * by the chunk's A rows (the shader's ba_tile, read where they lie) and
 * rounded to bf16 on store.
 * An item of the parallel loop (parallel.h) is a group of heads of one chunk
 * (see heads_per_item), so that token rows are read and written whole; each
 * worker keeps the group's tiles in one guarded scratch slice, an overrun
 * showing up as UG_EGUARD. The staging, the product and the output rounding
 * run on the ISA path (isa.h: row operations and the packed GEMM,
 * bit-identical on every path); exp(g) is computed once per staged row. */
#include "gdn_recompute_wu.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "isa.h"
#include "parallel.h"
#include "prefetch.h"
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

/* The chunk row staged as row j. */
static size_t staged_row(size_t j)
{
    return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_ROW_OFF_BY_ONE ? (j + 1) % BT : j;
}

/* Work item x is (batch, chunk, group of `group` value heads), the group
 * varying fastest. Every tensor is [B, T, heads, dim], so one chunk's 64 rows
 * of one head are 64 pieces of dim elements a token row apart (4 KiB at
 * H 16, K 128): visited per head, each piece is a cache miss of its own that
 * the prefetchers do not see coming. A group's pieces of a token row are
 * contiguous, so the item reads them token row by token row, in one run of
 * group * dim elements each, staging every operand of the group into the
 * scratch, then multiplies there and writes its outputs the same way. The
 * staging requests its rows a few token rows ahead (ROWS_AHEAD), A's among
 * them: the products read A's rows in place, from the caches. */
enum { GROUP_BYTES_MAX = 2 << 20 }; /* an item's scratch: whole token rows at H 16, K = V = 128 */

/* One worker's scratch, carved from its guarded slice (offsets below). For
 * head e of the group: the staged operands bf16(v * beta) and
 * bf16(k * beta * exp(g)) of every column, and its u and w rows, laid out
 * token-row-major like the outputs. */
typedef struct {
    ug_bf16 *sv, *sk;     /* [group][BT][V], [group][BT][K] */
    ug_bf16 *ou, *ow;     /* [BT][group][V], [BT][group][K] */
    float *product;       /* [BT][max(V, K)]: the shader's accumulators */
    float *unrounded;     /* [group][BT][V + K]: mutant STAGE_CAST_DROPPED only */
} scratch_tiles;

enum { T_SV, T_SK, T_OU, T_OW, T_PRODUCT, T_UNROUNDED, N_TILES };

static size_t wide(const gdn_recompute_wu_params *p) { return p->v > p->k ? p->v : p->k; }

/* A row of the unrounded stage: v's columns, then k's. */
static size_t un_row(const gdn_recompute_wu_params *p) { return (size_t)p->v + p->k; }

static size_t tile_bytes(const gdn_recompute_wu_params *p, size_t group, int tile)
{
    switch (tile) {
    case T_SV: case T_OU: return group * BT * p->v * sizeof(ug_bf16);
    case T_SK: case T_OW: return group * BT * p->k * sizeof(ug_bf16);
    case T_PRODUCT: return BT * wide(p) * sizeof(float);
    default: return UG_MUTANT == GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED ? group * BT * un_row(p) * sizeof(float) : 0;
    }
}

/* offset[i]: tile i's 64-byte aligned offset; offset[N_TILES]: the size. */
static void tile_offsets(const gdn_recompute_wu_params *p, size_t group, size_t offset[N_TILES + 1])
{
    offset[0] = 0;
    for (int i = 0; i < N_TILES; i++) offset[i + 1] = offset[i] + (tile_bytes(p, group, i) + 63) / 64 * 64;
}

/* The most value heads, a divisor of H, whose scratch fits GROUP_BYTES_MAX (at least one). */
static size_t heads_per_item(const gdn_recompute_wu_params *p)
{
    size_t best = 1, offset[N_TILES + 1];
    for (size_t group = 2; group <= p->h; group++) {
        if (p->h % group) continue;
        tile_offsets(p, group, offset);
        if (offset[N_TILES] <= GROUP_BYTES_MAX) best = group;
    }
    return best;
}

typedef struct {
    const gdn_recompute_wu_params *p;
    const ug_bf16 *k, *v;
    const float *beta, *g, *a;
    ug_bf16 *w, *u;
    size_t group;
    const size_t *offset;
    bool stream_u, stream_w; /* written past the caches (isa.h) */
    const ug_worker_scratch *scratch;
} call;

/* The item's (batch, chunk, first head). */
typedef struct {
    size_t b, t0, h0;
} item;

static item locate_item(const call *c, size_t x)
{
    const size_t groups = c->p->h / c->group, chunks = c->p->t / BT;
    return (item){.b = x / groups / chunks, .t0 = x / groups % chunks * BT, .h0 = x % groups * c->group};
}

/* bf16(x * beta * gate) of one source row piece, the f32 product formed left
 * to right as the shader forms it; mutant STAGE_CAST_DROPPED keeps the f32
 * values (unrounded) for multiply_unrounded. */
static void stage_row(size_t n, const ug_bf16 *x, float beta, float gate, ug_bf16 *out, float *unrounded)
{
    if (UG_MUTANT != GDN_RECOMPUTE_WU_MUT_TRUNCATE_STAGE_CAST && UG_MUTANT != GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED) {
        ug_rows_scale_round(n, x, beta, gate, out);
        return;
    }
    for (size_t c = 0; c < n; c++) {
        float scaled = ug_bf16_to_f32(x[c]) * beta * gate;
        out[c] = stage_cast(scaled);
        if (unrounded) unrounded[c] = scaled;
    }
}

/* Token rows the staging requests ahead of the one it reads (prefetch.h):
 * each is a new page for every tensor, which the hardware prefetchers do not
 * enter. Two measured as good as more (docs/performance.md). */
enum { ROWS_AHEAD = 2 };

/* The key heads an item reads: a contiguous piece of each k row. */
typedef struct {
    size_t first, count;
} key_span;

static key_span keys_of_item(const call *c, const item *it)
{
    size_t first = key_head(c->p, it->h0), last = first;
    for (size_t e = 1; e < c->group; e++) {
        const size_t kh = key_head(c->p, it->h0 + e);
        first = kh < first ? kh : first;
        last = kh > last ? kh : last;
    }
    return (key_span){first, last - first + 1};
}

/* Requests the item's pieces of A, v, k, beta and g in chunk row i. */
static void prefetch_chunk_row(const call *c, const item *it, const key_span *keys, size_t i)
{
    const gdn_recompute_wu_params *p = c->p;
    const size_t group = c->group, t = it->t0 + i;
    ug_prefetch_rows(c->a + at_bthd(p, it->b, t, it->h0, p->h, 0, BT), 1, 0, group * BT * sizeof(float));
    ug_prefetch_rows(c->v + at_bthd(p, it->b, t, it->h0, p->h, 0, p->v), 1, 0, group * p->v * sizeof(ug_bf16));
    ug_prefetch_rows(c->k + at_bthd(p, it->b, t, keys->first, p->hg, 0, p->k), 1, 0,
                     keys->count * p->k * sizeof(ug_bf16));
    ug_prefetch_rows(c->beta + at_bth(p, it->b, t, it->h0), 1, 0, group * sizeof(float));
    ug_prefetch_rows(c->g + at_bth(p, it->b, t, it->h0), 1, 0, group * sizeof(float));
}

/* Reads the item's rows of v, k, beta and g token row by token row (and
 * requests A's). */
static void stage_item(const call *c, const item *it, const scratch_tiles *s)
{
    const gdn_recompute_wu_params *p = c->p;
    const size_t group = c->group;
    const key_span keys = keys_of_item(c, it);
    for (size_t j = 0; j < ROWS_AHEAD; j++) prefetch_chunk_row(c, it, &keys, staged_row(j));
    for (size_t j = 0; j < BT; j++) {
        if (j + ROWS_AHEAD < BT) prefetch_chunk_row(c, it, &keys, staged_row(j + ROWS_AHEAD));
        const size_t t = it->t0 + staged_row(j);
        for (size_t e = 0; e < group; e++) {
            const size_t h = it->h0 + e;
            const float beta = c->beta[at_bth(p, it->b, t, h)], gate = exp_gate(c->g[at_bth(p, it->b, t, h)]);
            float *un = s->unrounded ? s->unrounded + (e * BT + j) * un_row(p) : NULL;
            stage_row(p->v, c->v + at_bthd(p, it->b, t, h, p->h, 0, p->v), beta, 1.0f,
                      s->sv + (e * BT + j) * p->v, un);
            stage_row(p->k, c->k + at_bthd(p, it->b, t, key_head(p, h), p->hg, 0, p->k), beta, gate,
                      s->sk + (e * BT + j) * p->k, un ? un + p->v : NULL);
        }
    }
}

/* Mutant STAGE_CAST_DROPPED only: ba_tile times the f32 stage. */
static void multiply_unrounded(const float *ba_tile, size_t lda, const float *unrounded, size_t ldu, size_t n,
                               size_t terms, float *product)
{
    for (size_t i = 0; i < BT; i++)
        for (size_t c = 0; c < n; c++) {
            float acc = 0.0f;
            for (size_t j = 0; j < terms; j++) acc = fmaf(ba_tile[i * lda + j], unrounded[j * ldu + c], acc);
            product[i * n + c] = acc;
        }
}

/* out rows (BT of them, `ldo` apart) = bf16(ba_tile x stage), ba_tile's
 * rows `lda` apart, stage [BT][n]. */
static void multiply(const scratch_tiles *s, const float *ba_tile, size_t lda, const ug_bf16 *stage,
                     const float *unrounded, size_t ldu, size_t n, ug_bf16 *out, size_t ldo)
{
    const size_t terms = UG_MUTANT == GDN_RECOMPUTE_WU_MUT_DROPPED_LAST_TERM ? BT - 1 : BT;
    if (UG_MUTANT == GDN_RECOMPUTE_WU_MUT_STAGE_CAST_DROPPED)
        multiply_unrounded(ba_tile, lda, unrounded, ldu, n, terms, s->product);
    else
        ug_gemm_f32_bf16(BT, n, terms, ba_tile, lda, stage, n, s->product, n);
    for (size_t i = 0; i < BT; i++) {
        const float *row = s->product + i * n;
        if (UG_MUTANT != GDN_RECOMPUTE_WU_MUT_OUTPUT_TRUNCATED) ug_rows_round(n, row, out + i * ldo);
        else
            for (size_t col = 0; col < n; col++) out[i * ldo + col] = output_cast(row[col]);
    }
}

static void run_items(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const call *c = ctx;
    const gdn_recompute_wu_params *p = c->p;
    const size_t group = c->group;
    unsigned char *base = ug_worker_scratch_data(c->scratch, worker);
    const scratch_tiles s = {
        .sv = (ug_bf16 *)(base + c->offset[T_SV]),
        .sk = (ug_bf16 *)(base + c->offset[T_SK]),
        .ou = (ug_bf16 *)(base + c->offset[T_OU]),
        .ow = (ug_bf16 *)(base + c->offset[T_OW]),
        .product = (float *)(base + c->offset[T_PRODUCT]),
        .unrounded = c->offset[T_UNROUNDED + 1] > c->offset[T_UNROUNDED] ? (float *)(base + c->offset[T_UNROUNDED]) : NULL,
    };
    for (size_t x = begin; x < end; x++) {
        const item it = locate_item(c, x);
        stage_item(c, &it, &s);
        for (size_t e = 0; e < group; e++) {
            const float *un = s.unrounded ? s.unrounded + e * BT * un_row(p) : NULL;
            const float *ba_tile = c->a + at_bthd(p, it.b, it.t0, it.h0 + e, p->h, 0, BT);
            const size_t lda = (size_t)p->h * BT;
            multiply(&s, ba_tile, lda, s.sv + e * BT * p->v, un, un_row(p), p->v, s.ou + e * p->v, group * p->v);
            multiply(&s, ba_tile, lda, s.sk + e * BT * p->k, un ? un + p->v : NULL, un_row(p), p->k, s.ow + e * p->k,
                     group * p->k);
        }
        for (size_t i = 0; i < BT; i++) {
            ug_rows_store(group * p->v * sizeof(ug_bf16), s.ou + i * group * p->v,
                          c->u + at_bthd(p, it.b, it.t0 + i, it.h0, p->h, 0, p->v), c->stream_u);
            ug_rows_store(group * p->k * sizeof(ug_bf16), s.ow + i * group * p->k,
                          c->w + at_bthd(p, it.b, it.t0 + i, it.h0, p->h, 0, p->k), c->stream_w);
        }
    }
    if (c->stream_u || c->stream_w) ug_rows_stream_end();
}

ug_status gdn_recompute_wu(const gdn_recompute_wu_params *p, const ug_buf *k, const ug_buf *v,
                           const ug_buf *beta, const ug_buf *g, const ug_buf *a, ug_buf *w, ug_buf *u)
{
    UG_TRY(validate(p, k, v, beta, g, a, w, u));

    const size_t group = heads_per_item(p), items = (size_t)p->b * (p->t / BT) * (p->h / group);
    size_t offset[N_TILES + 1];
    tile_offsets(p, group, offset);
    ug_worker_scratch scratch;
    UG_TRY(ug_worker_scratch_alloc(&scratch, ug_parallel_workers(items), offset[N_TILES]));
    call c = {.p = p, .k = k->data, .v = v->data, .beta = beta->data, .g = g->data, .a = a->data, .w = w->data,
              .u = u->data, .group = group, .offset = offset,
              .stream_u = u->count * sizeof(ug_bf16) >= UG_STREAM_MIN_BYTES,
              .stream_w = w->count * sizeof(ug_bf16) >= UG_STREAM_MIN_BYTES, .scratch = &scratch};
    ug_parallel_for(items, run_items, &c);
    return ug_worker_scratch_free(&scratch, KERNEL " scratch");
}
