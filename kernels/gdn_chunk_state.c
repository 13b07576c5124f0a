/* SPDX-License-Identifier: MIT */
/* gdn_chunk_state (SPEC §1.3). An item is (batch, group of value heads)
 * (see heads_per_item): its heads advance chunk by chunk in lock step, each
 * state in f32 scratch across the chunks, and the group's rows of w, u, k
 * and v_new are read and written token row by token row. Per head and chunk
 * the two products are the ISA micro-kernel (ug_gemm_f32_bf16: FMA chains
 * in index order, identical bits on every path): w·bf16(S) with w widened
 * to f32 (exact), and Kᵀ·bf16(decayed v) with the chunk's widened keys read
 * down their columns. The new state is fmaf(exp(G_last), S, Kᵀ·...)
 * elementwise; that update, the bf16 roundings, the corrected values and the
 * transposed store of h are row operations of the same ISA path (isa.h); h
 * and v_new, written once, are streamed past the caches when large (a
 * chunk's h is transposed in the scratch and stored as one 32 KiB block).
 * All tiles live in one guarded scratch allocation of exactly the size the
 * group needs, one per kernel thread (parallel.h): the recurrence is serial
 * over chunks, so the threads split the items. */
#include "gdn_chunk_state.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "isa.h"
#include "parallel.h"
#include "tensor_check.h"
#include "worker_scratch.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_CHUNK_STATE_CORRECT
#endif

#define KERNEL "gated_delta_net_chunk_state"

enum { BT = GDN_CHUNK_STATE_BT };

static ug_status validate(const gdn_chunk_state_params *p, const ug_buf *k, const ug_buf *w, const ug_buf *u,
                          const ug_buf *g, const ug_buf *h0, const ug_buf *h, const ug_buf *v_new,
                          const ug_buf *final_state)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"Hg", p->hg}, {"H", p->h},
                                 {"K", p->k}, {"V", p->v}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->has_h0 > 1) return ug_fail(UG_EINVAL, KERNEL ": has_h0 (%u) must be 0 or 1", p->has_h0);
    if (p->h % p->hg != 0)
        return ug_fail(UG_EINVAL, KERNEL ": h (%u) must be a multiple of hg (%u)", p->h, p->hg);
    if (p->k > GDN_CHUNK_STATE_MAX_K)
        return ug_fail(UG_EINVAL, KERNEL ": K (%u) exceeds MAX_K = %u (the state tile of the kernel)", p->k,
                       GDN_CHUNK_STATE_MAX_K);
    if (p->v > GDN_CHUNK_STATE_MAX_V)
        return ug_fail(UG_EINVAL, KERNEL ": V (%u) exceeds MAX_V = %u (the state tile of the kernel)", p->v,
                       GDN_CHUNK_STATE_MAX_V);
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL ": bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL ": t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    const uint32_t nt = p->t / p->bt;
    const ug_tensor_spec tensors[] = {
        {"k", k, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"w", w, UG_BF16, 4, {"B", "T", "H", "K"}, {p->b, p->t, p->h, p->k}, false},
        {"u", u, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        {"g", g, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"h0", h0, UG_F32, 4, {"B", "H", "K", "V"}, {p->b, p->h, p->k, p->v}, !p->has_h0},
        {"h", h, UG_BF16, 5, {"B", "NT", "H", "V", "K"}, {p->b, nt, p->h, p->v, p->k}, false},
        {"v_new", v_new, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        {"final_state", final_state, UG_F32, 4, {"B", "H", "K", "V"}, {p->b, p->h, p->k, p->v}, false},
    };
    return ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors);
}

/* ---- scratch ---------------------------------------------------------------- */

/* An item is (batch, group of value heads), see heads_per_item. Its tiles,
 * for head e of the group: the state [e][K][V], carried across the chunks;
 * the chunk's w rows widened [e][BT][K], whose room, once the w·bf16(S)
 * products are formed, takes the keys of the group's key heads widened
 * [kh][BT][K] (read transposed by the product); w·bf16(S) [e][BT][V]; the
 * staged decayed v [e][BT][V]. Used by one head at a time: bf16(S) [K][V],
 * its transpose for h, and Kᵀ·staged [K][V]. Each starts on a 64-byte
 * boundary. */
typedef struct {
    float *state, *rows, *w_state, *update;
    ug_bf16 *staged, *state_bf16, *h_out;
} tiles;

enum { TILE_STATE, TILE_ROWS, TILE_W_STATE, TILE_STAGED, TILE_STATE_BF16, TILE_UPDATE, TILE_H_OUT, N_TILES };

/* Byte offset of each tile in the scratch of a group of `group` heads;
 * offset[N_TILES] is its size. */
static void tile_offsets(const gdn_chunk_state_params *p, size_t group, size_t offset[N_TILES + 1])
{
    const size_t k = p->k, v = p->v;
    const size_t bytes[N_TILES] = {
        [TILE_STATE] = group * k * v * sizeof(float),    [TILE_ROWS] = group * BT * k * sizeof(float),
        [TILE_W_STATE] = group * BT * v * sizeof(float), [TILE_STAGED] = group * BT * v * sizeof(ug_bf16),
        [TILE_STATE_BF16] = k * v * sizeof(ug_bf16),     [TILE_UPDATE] = k * v * sizeof(float),
        [TILE_H_OUT] = k * v * sizeof(ug_bf16),
    };
    offset[0] = 0;
    for (size_t i = 0; i < N_TILES; i++) offset[i + 1] = offset[i] + (bytes[i] + 63) / 64 * 64;
}

static tiles carve(const size_t offset[N_TILES + 1], unsigned char *base)
{
    tiles t = {.state = (float *)(base + offset[TILE_STATE]),
               .rows = (float *)(base + offset[TILE_ROWS]),
               .w_state = (float *)(base + offset[TILE_W_STATE]),
               .staged = (ug_bf16 *)(base + offset[TILE_STAGED]),
               .state_bf16 = (ug_bf16 *)(base + offset[TILE_STATE_BF16]),
               .update = (float *)(base + offset[TILE_UPDATE]),
               .h_out = (ug_bf16 *)(base + offset[TILE_H_OUT])};
    return t;
}

/* Every input is [B, T, heads, dim], so one chunk's 64 rows of one head are
 * 64 pieces of dim elements a token row apart (4 KiB at H 16, K 128), at
 * the bench size from DRAM: visited head by head, each piece is a miss of
 * its own that the prefetchers do not see coming. The heads' recurrences
 * are independent, so an item advances a group of heads chunk by chunk in
 * lock step and reads the group's pieces of each token row as one run.
 * The group is the most value heads, a divisor of H, whose scratch fits
 * GROUP_BYTES_MAX and that leave an item for each kernel thread where B·H
 * allows it: the recurrence is serial within an item. Larger groups measured
 * faster though their states outgrow the L2 (docs/performance.md,
 * "Measurements behind code comments"). */
enum { GROUP_BYTES_MAX = 3 << 20 }; /* all 16 heads at K = V = 128 (2.4 MiB) */

static size_t heads_per_item(const gdn_chunk_state_params *p)
{
    size_t best = 1, offset[N_TILES + 1];
    for (size_t group = 2; group <= p->h; group++) {
        if (p->h % group || (size_t)p->b * (p->h / group) < ug_kernel_threads()) continue;
        tile_offsets(p, group, offset);
        if (offset[N_TILES] <= GROUP_BYTES_MAX) best = group;
    }
    return best;
}

/* ---- one group of heads ------------------------------------------------------ */

typedef struct {
    const gdn_chunk_state_params *p;
    const ug_bf16 *k, *w, *u;
    const float *g, *h0;
    ug_bf16 *h, *v_new;
    float *final_state;
    bool stream_h, stream_v_new; /* written past the caches (isa.h) */
    size_t group;                /* value heads per item */
    size_t b, head0, key_head0;  /* the item's batch, first value head and its key head */
    const tiles *tl;
} group_job;

static size_t token_row(const group_job *j, size_t t, size_t heads, size_t head, size_t width)
{
    return ((j->b * j->p->t + t) * heads + head) * width;
}

static size_t key_head(const group_job *j, size_t head) { return head / (j->p->h / j->p->hg); }

static float *state_of(const group_job *j, size_t e) { return j->tl->state + e * j->p->k * j->p->v; }

static float gate(const group_job *j, size_t t, size_t e) { return j->g[(j->b * j->p->t + t) * j->p->h + j->head0 + e]; }

/* Rows t0 .. t0+BT-1 of heads first .. first+count-1 of src ([B, T, heads,
 * K]) widened into the rows tile, head by head, read token row by token row. */
static void stage_rows(const group_job *j, size_t t0, const ug_bf16 *src, size_t heads, size_t first, size_t count)
{
    const size_t dk = j->p->k;
    for (size_t i = 0; i < BT; i++)
        for (size_t e = 0; e < count; e++)
            ug_rows_widen(dk, src + token_row(j, t0 + i, heads, first + e, dk), j->tl->rows + (e * BT + i) * dk);
}

/* h[b,c,h] = bf16(S), V-major (mutant H_K_MAJOR: K-major), transposed in
 * the scratch and stored whole; keeps bf16(S). */
static void store_state(const group_job *j, size_t e, size_t c)
{
    const size_t dk = j->p->k, dv = j->p->v, nt = j->p->t / BT;
    ug_bf16 *out = j->h + ((j->b * nt + c) * j->p->h + j->head0 + e) * dk * dv;
    ug_rows_round(dk * dv, state_of(j, e), j->tl->state_bf16);
    const ug_bf16 *stored = j->tl->state_bf16;
    if (UG_MUTANT != GDN_CHUNK_STATE_MUT_H_K_MAJOR) {
        ug_rows_transpose(dk, dv, j->tl->state_bf16, dv, j->tl->h_out, dk);
        stored = j->tl->h_out;
    }
    ug_rows_store(dk * dv * sizeof(ug_bf16), stored, out, j->stream_h);
}

/* Head e's w_state = its w rows · bf16(S) (mutant STATE_CAST_DROPPED: · S
 * in f32; variant REVERSED_SUMS: summed backward without FMA). */
static void w_times_state(const group_job *j, size_t e)
{
    const size_t dk = j->p->k, dv = j->p->v;
    const tiles *tl = j->tl;
    const float *w_rows = tl->rows + e * BT * dk, *state = state_of(j, e);
    float *w_state = tl->w_state + e * BT * dv;
    if (UG_MUTANT != GDN_CHUNK_STATE_MUT_STATE_CAST_DROPPED && UG_MUTANT != GDN_CHUNK_STATE_LEGIT_REVERSED_SUMS) {
        ug_gemm_f32_bf16(BT, dv, dk, w_rows, dk, tl->state_bf16, dv, w_state, dv);
        return;
    }
    for (size_t i = 0; i < BT; i++)
        for (size_t vv = 0; vv < dv; vv++) {
            float acc = 0.0f;
            if (UG_MUTANT == GDN_CHUNK_STATE_MUT_STATE_CAST_DROPPED)
                for (size_t kk = 0; kk < dk; kk++) acc = fmaf(w_rows[i * dk + kk], state[kk * dv + vv], acc);
            else
                for (size_t kk = dk; kk-- > 0;) acc += w_rows[i * dk + kk] * ug_bf16_to_f32(tl->state_bf16[kk * dv + vv]);
            w_state[i * dv + vv] = acc;
        }
}

/* v = u - w·bf16(S): v_new = bf16(v), staged = bf16(exp(G_last - g) v),
 * token row by token row across the group. */
static void corrected_values(const group_job *j, size_t t0)
{
    const size_t dv = j->p->v;
    const tiles *tl = j->tl;
    for (size_t i = 0; i < BT; i++)
        for (size_t e = 0; e < j->group; e++) {
            const float g_i = gate(j, t0 + i, e), g_last = gate(j, t0 + BT - 1, e);
            const float decay = expf(UG_MUTANT == GDN_CHUNK_STATE_MUT_GATE_SIGN_FLIPPED ? g_i - g_last : g_last - g_i);
            const size_t row = token_row(j, t0 + i, j->p->h, j->head0 + e, dv), at = (e * BT + i) * dv;
            ug_bf16 v_new[GDN_CHUNK_STATE_MAX_V] __attribute__((aligned(64)));
            ug_rows_residual(dv, j->u + row, tl->w_state + at, decay, v_new, tl->staged + at);
            ug_rows_store(dv * sizeof(ug_bf16), v_new, j->v_new + row, j->stream_v_new);
        }
}

/* Head e's S = exp(G_last) S + Kᵀ staged (mutant MISSING_DECAY: S + Kᵀ
 * staged; variant REVERSED_SUMS: Kᵀ staged summed backward without FMA;
 * variant UNFUSED_UPDATE: the decayed state rounded before the sum). Kᵀ is
 * the product's A operand read down the columns of its key head's rows. */
static void advance_state(const group_job *j, size_t e, float g_last)
{
    const size_t dk = j->p->k, dv = j->p->v;
    const tiles *tl = j->tl;
    const float *keys = tl->rows + (key_head(j, j->head0 + e) - j->key_head0) * BT * dk;
    const ug_bf16 *staged = tl->staged + e * BT * dv;
    float *state = state_of(j, e);
    if (UG_MUTANT != GDN_CHUNK_STATE_LEGIT_REVERSED_SUMS) {
        const ug_gemm_operands keys_t_staged = {.m = dk, .n = dv, .kk = BT,
                                                .a = keys, .a_row = 1, .a_col = (ptrdiff_t)dk,
                                                .b = staged, .b_row = (ptrdiff_t)dv, .b_col = 1,
                                                .c = tl->update, .ldc = dv};
        ug_gemm(&keys_t_staged);
    } else
        for (size_t kk = 0; kk < dk; kk++)
            for (size_t vv = 0; vv < dv; vv++) {
                float acc = 0.0f;
                for (size_t i = BT; i-- > 0;) acc += keys[i * dk + kk] * ug_bf16_to_f32(staged[i * dv + vv]);
                tl->update[kk * dv + vv] = acc;
            }
    const float decay = UG_MUTANT == GDN_CHUNK_STATE_MUT_MISSING_DECAY ? 1.0f : expf(g_last);
    if (UG_MUTANT != GDN_CHUNK_STATE_LEGIT_UNFUSED_UPDATE) ug_rows_fma(dk * dv, decay, state, tl->update);
    else
        for (size_t x = 0; x < dk * dv; x++) state[x] = decay * state[x] + tl->update[x];
}

static void run_group(const group_job *j)
{
    const size_t kv = (size_t)j->p->k * j->p->v, first = j->b * j->p->h + j->head0;
    const size_t key_heads = key_head(j, j->head0 + j->group - 1) - j->key_head0 + 1;
    if (j->h0) memcpy(j->tl->state, j->h0 + first * kv, j->group * kv * sizeof(float));
    else
        memset(j->tl->state, 0, j->group * kv * sizeof(float));
    for (size_t t0 = 0, c = 0; t0 < j->p->t; t0 += BT, c++) {
        stage_rows(j, t0, j->w, j->p->h, j->head0, j->group);
        for (size_t e = 0; e < j->group; e++) {
            store_state(j, e, c);
            w_times_state(j, e);
        }
        corrected_values(j, t0);
        stage_rows(j, t0, j->k, j->p->hg, j->key_head0, key_heads);
        for (size_t e = 0; e < j->group; e++) advance_state(j, e, gate(j, t0 + BT - 1, e));
    }
    memcpy(j->final_state + first * kv, j->tl->state, j->group * kv * sizeof(float));
}

/* Work item x of the parallel loop is (batch, group of value heads) x, the
 * group varying fastest. Each worker carries its group's states in its own
 * tiles. */
typedef struct {
    group_job proto; /* the tensors and the group size; the item and the tiles are filled in per worker */
    const size_t *offset;
    const ug_worker_scratch *scratch;
} call;

static void run_groups(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const call *c = ctx;
    const tiles tl = carve(c->offset, ug_worker_scratch_data(c->scratch, worker));
    group_job job = c->proto;
    job.tl = &tl;
    const size_t groups = job.p->h / job.group;
    for (size_t x = begin; x < end; x++) {
        job.b = x / groups;
        job.head0 = x % groups * job.group;
        job.key_head0 = key_head(&job, job.head0);
        run_group(&job);
    }
    if (job.stream_h || job.stream_v_new) ug_rows_stream_end();
}

ug_status gdn_chunk_state(const gdn_chunk_state_params *p, const ug_buf *k, const ug_buf *w,
                          const ug_buf *u, const ug_buf *g, const ug_buf *h0, ug_buf *h,
                          ug_buf *v_new, ug_buf *final_state)
{
    UG_TRY(validate(p, k, w, u, g, h0, h, v_new, final_state));
    const size_t group = heads_per_item(p), items = (size_t)p->b * (p->h / group);
    size_t offset[N_TILES + 1];
    tile_offsets(p, group, offset);
    ug_worker_scratch scratch;
    UG_TRY(ug_worker_scratch_alloc(&scratch, ug_parallel_workers(items), offset[N_TILES]));
    call c = {.proto = {.p = p, .k = k->data, .w = w->data, .u = u->data, .g = g->data,
                        .h0 = p->has_h0 ? h0->data : NULL, .h = h->data, .v_new = v_new->data,
                        .final_state = final_state->data,
                        .stream_h = h->count * sizeof(ug_bf16) >= UG_STREAM_MIN_BYTES,
                        .stream_v_new = v_new->count * sizeof(ug_bf16) >= UG_STREAM_MIN_BYTES,
                        .group = group},
              .offset = offset, .scratch = &scratch};
    ug_parallel_for(items, run_groups, &c);
    return ug_worker_scratch_free(&scratch, KERNEL " scratch");
}
