/* gdn_chunk_state (SPEC §1.3). One (batch, value head) at a time, the state
 * stays in f32 scratch across the chunks; per chunk the two products are the
 * ISA micro-kernel (ug_gemm_f32_bf16: FMA chains in index order, identical
 * bits on every path): w·bf16(S) with w widened to f32 (exact), and
 * Kᵀ·bf16(decayed v) with the chunk's widened keys read down their columns.
 * The new state is fmaf(exp(G_last), S, Kᵀ·...) elementwise; that update,
 * the bf16 roundings, the corrected values and the transposed store of h are
 * row operations of the same ISA path (isa.h); h and v_new, written once,
 * are streamed past the caches when large (a chunk's h is transposed in the
 * scratch and stored as one 32 KiB block). All tiles live in one guarded
 * scratch allocation of exactly the size they need, one per kernel thread
 * (parallel.h): the recurrence is serial over chunks, so the threads split
 * the (batch, head) pairs. */
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

/* The tiles of one (batch, head): the state and its bf16 copy [K][V], the
 * chunk's w rows widened [BT][K], w·bf16(S) [BT][V], the staged decayed v
 * [BT][V], the chunk's keys widened [BT][K] (read transposed by the
 * product), and Kᵀ·staged [K][V]; each starts on a 64-byte boundary. */
typedef struct {
    float *state, *w_rows, *w_state, *keys, *update;
    ug_bf16 *state_bf16, *staged, *h_out;
} tiles;

enum {
    TILE_STATE,
    TILE_STATE_BF16,
    TILE_W_ROWS,
    TILE_W_STATE,
    TILE_STAGED,
    TILE_KEYS,
    TILE_UPDATE,
    TILE_H_OUT,
    N_TILES
};

/* Byte offset of each tile in the scratch; offset[N_TILES] is its size. */
static void tile_offsets(const gdn_chunk_state_params *p, size_t offset[N_TILES + 1])
{
    const size_t k = p->k, v = p->v;
    const size_t bytes[N_TILES] = {
        [TILE_STATE] = k * v * sizeof(float),    [TILE_STATE_BF16] = k * v * sizeof(ug_bf16),
        [TILE_W_ROWS] = BT * k * sizeof(float),  [TILE_W_STATE] = BT * v * sizeof(float),
        [TILE_STAGED] = BT * v * sizeof(ug_bf16), [TILE_KEYS] = BT * k * sizeof(float),
        [TILE_UPDATE] = k * v * sizeof(float),   [TILE_H_OUT] = k * v * sizeof(ug_bf16),
    };
    offset[0] = 0;
    for (size_t i = 0; i < N_TILES; i++) offset[i + 1] = offset[i] + (bytes[i] + 63) / 64 * 64;
}

static tiles carve(const size_t offset[N_TILES + 1], unsigned char *base)
{
    tiles t = {.state = (float *)(base + offset[TILE_STATE]),
               .state_bf16 = (ug_bf16 *)(base + offset[TILE_STATE_BF16]),
               .w_rows = (float *)(base + offset[TILE_W_ROWS]),
               .w_state = (float *)(base + offset[TILE_W_STATE]),
               .staged = (ug_bf16 *)(base + offset[TILE_STAGED]),
               .keys = (float *)(base + offset[TILE_KEYS]),
               .update = (float *)(base + offset[TILE_UPDATE]),
               .h_out = (ug_bf16 *)(base + offset[TILE_H_OUT])};
    return t;
}

/* ---- one (batch, head) ------------------------------------------------------- */

typedef struct {
    const gdn_chunk_state_params *p;
    const ug_bf16 *k, *w, *u;
    const float *g, *h0;
    ug_bf16 *h, *v_new;
    float *final_state;
    bool stream_h, stream_v_new; /* written past the caches (isa.h) */
    size_t b, head, key_head;
    const tiles *tl;
} head_job;

static size_t token_row(const head_job *j, size_t t, size_t heads, size_t head, size_t width)
{
    return ((j->b * j->p->t + t) * heads + head) * width;
}

/* h[b,c,h] = bf16(S), V-major (mutant H_K_MAJOR: K-major), transposed in
 * the scratch and stored whole; keeps bf16(S). */
static void store_state(const head_job *j, size_t c)
{
    const size_t dk = j->p->k, dv = j->p->v, nt = j->p->t / BT;
    ug_bf16 *out = j->h + ((j->b * nt + c) * j->p->h + j->head) * dk * dv;
    ug_rows_round(dk * dv, j->tl->state, j->tl->state_bf16);
    const ug_bf16 *stored = j->tl->state_bf16;
    if (UG_MUTANT != GDN_CHUNK_STATE_MUT_H_K_MAJOR) {
        ug_rows_transpose(dk, dv, j->tl->state_bf16, dv, j->tl->h_out, dk);
        stored = j->tl->h_out;
    }
    ug_rows_store(dk * dv * sizeof(ug_bf16), stored, out, j->stream_h);
}

/* w_state = w rows · bf16(S) (mutant STATE_CAST_DROPPED: · S in f32;
 * variant REVERSED_SUMS: summed backward without FMA). */
static void w_times_state(const head_job *j, size_t t0)
{
    const size_t dk = j->p->k, dv = j->p->v;
    const tiles *tl = j->tl;
    for (size_t i = 0; i < BT; i++) ug_rows_widen(dk, j->w + token_row(j, t0 + i, j->p->h, j->head, dk), tl->w_rows + i * dk);
    if (UG_MUTANT != GDN_CHUNK_STATE_MUT_STATE_CAST_DROPPED && UG_MUTANT != GDN_CHUNK_STATE_LEGIT_REVERSED_SUMS) {
        ug_gemm_f32_bf16(BT, dv, dk, tl->w_rows, dk, tl->state_bf16, dv, tl->w_state, dv);
        return;
    }
    for (size_t i = 0; i < BT; i++)
        for (size_t vv = 0; vv < dv; vv++) {
            float acc = 0.0f;
            if (UG_MUTANT == GDN_CHUNK_STATE_MUT_STATE_CAST_DROPPED)
                for (size_t kk = 0; kk < dk; kk++) acc = fmaf(tl->w_rows[i * dk + kk], tl->state[kk * dv + vv], acc);
            else
                for (size_t kk = dk; kk-- > 0;) acc += tl->w_rows[i * dk + kk] * ug_bf16_to_f32(tl->state_bf16[kk * dv + vv]);
            tl->w_state[i * dv + vv] = acc;
        }
}

/* v = u - w·bf16(S): v_new = bf16(v), staged = bf16(exp(G_last - g) v). */
static void corrected_values(const head_job *j, size_t t0, float g_last)
{
    const size_t dv = j->p->v;
    const tiles *tl = j->tl;
    for (size_t i = 0; i < BT; i++) {
        const float g_i = j->g[(j->b * j->p->t + t0 + i) * j->p->h + j->head];
        const float decay = expf(UG_MUTANT == GDN_CHUNK_STATE_MUT_GATE_SIGN_FLIPPED ? g_i - g_last : g_last - g_i);
        const size_t row = token_row(j, t0 + i, j->p->h, j->head, dv);
        ug_bf16 v_new[GDN_CHUNK_STATE_MAX_V] __attribute__((aligned(64)));
        ug_rows_residual(dv, j->u + row, tl->w_state + i * dv, decay, v_new, tl->staged + i * dv);
        ug_rows_store(dv * sizeof(ug_bf16), v_new, j->v_new + row, j->stream_v_new);
    }
}

/* S = exp(G_last) S + Kᵀ staged (mutant MISSING_DECAY: S + Kᵀ staged;
 * variant REVERSED_SUMS: Kᵀ staged summed backward without FMA; variant
 * UNFUSED_UPDATE: the decayed state rounded before the sum). Kᵀ is the
 * product's A operand read down the columns of the widened keys. */
static void advance_state(const head_job *j, size_t t0, float g_last)
{
    const size_t dk = j->p->k, dv = j->p->v;
    const tiles *tl = j->tl;
    for (size_t i = 0; i < BT; i++)
        ug_rows_widen(dk, j->k + token_row(j, t0 + i, j->p->hg, j->key_head, dk), tl->keys + i * dk);
    if (UG_MUTANT != GDN_CHUNK_STATE_LEGIT_REVERSED_SUMS) {
        const ug_gemm_operands keys_t_staged = {.m = dk, .n = dv, .kk = BT,
                                                .a = tl->keys, .a_row = 1, .a_col = (ptrdiff_t)dk,
                                                .b = tl->staged, .b_row = (ptrdiff_t)dv, .b_col = 1,
                                                .c = tl->update, .ldc = dv};
        ug_gemm(&keys_t_staged);
    } else
        for (size_t kk = 0; kk < dk; kk++)
            for (size_t vv = 0; vv < dv; vv++) {
                float acc = 0.0f;
                for (size_t i = BT; i-- > 0;) acc += tl->keys[i * dk + kk] * ug_bf16_to_f32(tl->staged[i * dv + vv]);
                tl->update[kk * dv + vv] = acc;
            }
    const float decay = UG_MUTANT == GDN_CHUNK_STATE_MUT_MISSING_DECAY ? 1.0f : expf(g_last);
    if (UG_MUTANT != GDN_CHUNK_STATE_LEGIT_UNFUSED_UPDATE) ug_rows_fma(dk * dv, decay, tl->state, tl->update);
    else
        for (size_t x = 0; x < dk * dv; x++) tl->state[x] = decay * tl->state[x] + tl->update[x];
}

static void run_head(const head_job *j)
{
    const size_t kv = (size_t)j->p->k * j->p->v;
    if (j->h0) memcpy(j->tl->state, j->h0 + (j->b * j->p->h + j->head) * kv, kv * sizeof(float));
    else
        for (size_t x = 0; x < kv; x++) j->tl->state[x] = 0.0f;
    for (size_t t0 = 0, c = 0; t0 < j->p->t; t0 += BT, c++) {
        const float g_last = j->g[(j->b * j->p->t + t0 + BT - 1) * j->p->h + j->head];
        store_state(j, c);
        w_times_state(j, t0);
        corrected_values(j, t0, g_last);
        advance_state(j, t0, g_last);
    }
    memcpy(j->final_state + (j->b * j->p->h + j->head) * kv, j->tl->state, kv * sizeof(float));
}

/* Work item x of the parallel loop is (batch, value head) x: the recurrence
 * is serial over the chunks of one head, independent across heads. Each
 * worker carries its heads' states in its own tiles. */
typedef struct {
    head_job proto; /* the tensors; the head and the tiles are filled in per worker */
    const size_t *offset;
    const ug_worker_scratch *scratch;
} call;

static void run_heads(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const call *c = ctx;
    const tiles tl = carve(c->offset, ug_worker_scratch_data(c->scratch, worker));
    head_job job = c->proto;
    job.tl = &tl;
    const size_t group = job.p->h / job.p->hg;
    for (size_t x = begin; x < end; x++) {
        job.b = x / job.p->h;
        job.head = x % job.p->h;
        job.key_head = job.head / group;
        run_head(&job);
    }
    if (job.stream_h || job.stream_v_new) ug_rows_stream_end();
}

ug_status gdn_chunk_state(const gdn_chunk_state_params *p, const ug_buf *k, const ug_buf *w,
                          const ug_buf *u, const ug_buf *g, const ug_buf *h0, ug_buf *h,
                          ug_buf *v_new, ug_buf *final_state)
{
    UG_TRY(validate(p, k, w, u, g, h0, h, v_new, final_state));
    size_t offset[N_TILES + 1];
    tile_offsets(p, offset);
    const size_t items = (size_t)p->b * p->h;
    ug_worker_scratch scratch;
    UG_TRY(ug_worker_scratch_alloc(&scratch, ug_parallel_workers(items), offset[N_TILES]));
    call c = {.proto = {.p = p, .k = k->data, .w = w->data, .u = u->data, .g = g->data,
                        .h0 = p->has_h0 ? h0->data : NULL, .h = h->data, .v_new = v_new->data,
                        .final_state = final_state->data,
                        .stream_h = h->count * sizeof(ug_bf16) >= UG_STREAM_MIN_BYTES,
                        .stream_v_new = v_new->count * sizeof(ug_bf16) >= UG_STREAM_MIN_BYTES},
              .offset = offset, .scratch = &scratch};
    ug_parallel_for(items, run_heads, &c);
    return ug_worker_scratch_free(&scratch, KERNEL " scratch");
}
