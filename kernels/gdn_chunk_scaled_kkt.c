/* SPDX-License-Identifier: MIT */
/* gdn_chunk_scaled_kkt (SPEC §1.3). The Gram matrix of a chunk's keys
 * depends on the key head only, so it is formed once per (batch, key head,
 * chunk) with the ISA micro-kernel (ug_gemm_f32_bf16: each entry the FMA
 * chain over K in index order, identical bits on every path; the bf16
 * products are exact in f32) and then scaled for each value head of the
 * group; only its lower triangle is formed, in bands of 16 rows. The decays
 * exp(g_t - g_s) are the ISA path's ug_expf (expf.h), a row at a time, and L,
 * written once, is streamed past the caches when it is large (isa.h). The
 * key tiles and the Gram matrix live in one guarded scratch allocation of
 * exactly the size they need, one per kernel thread (parallel.h), each
 * thread taking contiguous ranges of (batch, chunk, key head) items. */
#include "gdn_chunk_scaled_kkt.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "expf.h"
#include "isa.h"
#include "parallel.h"
#include "prefetch.h"
#include "tensor_check.h"
#include "worker_scratch.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_CHUNK_SCALED_KKT_CORRECT
#endif

#define KERNEL "gated_delta_net_chunk_scaled_kkt"

/* GRAM_BAND: the rows of one triangular band of the Gram product (a whole
 * AVX-512 vector of columns: 16). */
enum { BT = GDN_CHUNK_SCALED_KKT_BT, GRAM_BAND = 16 };

static ug_status validate(const gdn_chunk_scaled_kkt_params *p, const ug_buf *k, const ug_buf *beta,
                          const ug_buf *g, const ug_buf *l)
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"Hg", p->hg}, {"H", p->h}, {"K", p->k}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->h % p->hg != 0)
        return ug_fail(UG_EINVAL, KERNEL ": h (%u) must be a multiple of hg (%u)", p->h, p->hg);
    if (p->k > GDN_CHUNK_SCALED_KKT_MAX_K)
        return ug_fail(UG_EINVAL, KERNEL ": K (%u) exceeds MAX_K = %u (the key tile of the kernel)", p->k,
                       GDN_CHUNK_SCALED_KKT_MAX_K);
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL ": bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL ": t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    const ug_tensor_spec tensors[] = {
        {"k", k, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"beta", beta, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"g", g, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"L", l, UG_F32, 4, {"B", "T", "H", "BT"}, {p->b, p->t, p->h, p->bt}, false},
    };
    return ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors);
}

/* The scratch: the chunk's keys as f32 rows [BT][K] and as bf16 columns
 * [K][BT] (the two operands of the Gram product), and the Gram matrix. */
typedef struct {
    float *rows;
    ug_bf16 *cols;
    float (*gram)[BT];
} tiles;

static size_t scratch_bytes(size_t k)
{
    return BT * k * sizeof(float) + k * BT * sizeof(ug_bf16) + BT * BT * sizeof(float);
}

static tiles carve(unsigned char *scratch, size_t k)
{
    tiles t;
    t.gram = (float (*)[BT])scratch;
    t.rows = (float *)(scratch + BT * BT * sizeof(float));
    t.cols = (ug_bf16 *)(scratch + BT * BT * sizeof(float) + BT * k * sizeof(float));
    return t;
}

static void gram_of_chunk(const gdn_chunk_scaled_kkt_params *p, const ug_bf16 *k, size_t b, size_t kh,
                          size_t t0, const tiles *tl)
{
    const size_t dim = p->k, key_stride = (size_t)p->hg * dim;
    const ug_bf16 *keys = k + ((b * p->t + t0) * p->hg + kh) * dim;
    for (size_t i = 0; i < BT; i++) ug_rows_widen(dim, keys + i * key_stride, tl->rows + i * dim);
    ug_rows_transpose(BT, dim, keys, key_stride, tl->cols, BT);
    if (UG_MUTANT != GDN_CHUNK_SCALED_KKT_LEGIT_REVERSED_DOT) {
        /* Only the lower triangle (and the diagonal, for the mutant that
         * keeps it) is ever read: each band of rows is formed up to its
         * last column; the entries right of it stay unwritten. */
        for (size_t i0 = 0; i0 < BT; i0 += GRAM_BAND)
            ug_gemm_f32_bf16(GRAM_BAND, i0 + GRAM_BAND, dim, tl->rows + i0 * dim, dim, tl->cols, BT, tl->gram[i0], BT);
        return;
    }
    for (size_t i = 0; i < BT; i++)
        for (size_t j = 0; j < BT; j++) {
            float dot = 0.0f;
            for (size_t d = dim; d-- > 0;) dot += tl->rows[i * dim + d] * tl->rows[j * dim + d];
            tl->gram[i][j] = dot;
        }
}

/* Row i of L is nonzero in columns j < kept_columns(i) (the strict lower triangle). */
static size_t kept_columns(size_t i)
{
    return UG_MUTANT == GDN_CHUNK_SCALED_KKT_MUT_MASK_INCLUDES_DIAGONAL ? i + 1 : i;
}

/* decay[j] = exp(g_t - g_s) for the n columns of row i, as the ISA path's
 * ug_expf (libm's expf, expf.h): one per entry (its argument differs per
 * entry). */
static void row_decays(const float gates[BT], size_t i, size_t n, float decay[BT])
{
    if (UG_MUTANT != GDN_CHUNK_SCALED_KKT_MUT_GATE_SIGN_FLIPPED) {
        ug_rows_exp_diff(n, gates[i], gates, decay);
        return;
    }
    for (size_t j = 0; j < n; j++) decay[j] = ug_expf(gates[j] - gates[i]);
}

/* L rows of value head h: beta_t * exp(g_t - g_s) * gram[i][j] below the
 * diagonal; the decays and the products by row on the ISA path. Each row is
 * formed whole in `out` and then stored (streamed when L is large: a row is
 * 64 floats, whole cache lines, in its own page). */
static void scale_rows(const gdn_chunk_scaled_kkt_params *p, const float *beta, const float *g, size_t b,
                       size_t h, size_t t0, float (*gram)[BT], float *l, bool stream)
{
    const bool scalar_products = UG_MUTANT == GDN_CHUNK_SCALED_KKT_MUT_BETA_OF_COLUMN ||
                                 UG_MUTANT == GDN_CHUNK_SCALED_KKT_LEGIT_BETA_LAST;
    float gates[BT], decay[BT], out[BT] __attribute__((aligned(64)));
    for (size_t i = 0; i < BT; i++) gates[i] = g[(b * p->t + t0 + i) * p->h + h];
    for (size_t i = 0; i < BT; i++) {
        const size_t row = (b * p->t + t0 + i) * p->h + h, n = kept_columns(i);
        if (!scalar_products && UG_MUTANT != GDN_CHUNK_SCALED_KKT_MUT_GATE_SIGN_FLIPPED) {
            /* beta_t * decay * gram in one pass (mul3's order), the decays never stored. */
            ug_rows_decay_mul(n, gates[i], gates, beta[row], gram[i], out);
        } else {
            row_decays(gates, i, n, decay);
            if (!scalar_products) ug_rows_mul3(n, beta[row], decay, gram[i], out);
            else
                for (size_t j = 0; j < n; j++) {
                    const size_t col = (b * p->t + t0 + j) * p->h + h;
                    float scale = UG_MUTANT == GDN_CHUNK_SCALED_KKT_MUT_BETA_OF_COLUMN ? beta[col] : beta[row];
                    out[j] = UG_MUTANT == GDN_CHUNK_SCALED_KKT_LEGIT_BETA_LAST ? scale * (decay[j] * gram[i][j])
                                                                              : scale * decay[j] * gram[i][j];
                }
        }
        memset(out + n, 0, (BT - n) * sizeof out[0]);
        ug_rows_store(sizeof out, out, l + row * BT, stream);
    }
}

/* Work item x of the parallel loop is (batch, chunk, key head), the key head
 * varying fastest so that consecutive items read neighbouring parts of the
 * same token rows; each worker has its own tiles. */
typedef struct {
    const gdn_chunk_scaled_kkt_params *p;
    const ug_bf16 *k;
    const float *beta, *g;
    float *l;
    bool stream; /* L is streamed past the caches (isa.h) */
    const ug_worker_scratch *scratch;
} call;

typedef struct {
    size_t b, kh, t0;
} item;

static item locate_item(const gdn_chunk_scaled_kkt_params *p, size_t x)
{
    const size_t chunks = p->t / BT;
    return (item){.b = x / p->hg / chunks, .kh = x % p->hg, .t0 = x / p->hg % chunks * BT};
}

static void run_chunks(void *ctx, unsigned worker, size_t begin, size_t end)
{
    const call *c = ctx;
    const gdn_chunk_scaled_kkt_params *p = c->p;
    const tiles tl = carve(ug_worker_scratch_data(c->scratch, worker), p->k);
    const size_t group = p->h / p->hg, key_stride = (size_t)p->hg * p->k;
    for (size_t x = begin; x < end; x++) {
        if (x + 1 < end) { /* the next item's keys (see prefetch.h) */
            const item next = locate_item(p, x + 1);
            ug_prefetch_rows(c->k + ((next.b * p->t + next.t0) * p->hg + next.kh) * p->k, BT,
                             key_stride * sizeof(ug_bf16), p->k * sizeof(ug_bf16));
        }
        const item it = locate_item(p, x);
        gram_of_chunk(p, c->k, it.b, it.kh, it.t0, &tl);
        for (size_t h = it.kh * group; h < (it.kh + 1) * group; h++)
            scale_rows(p, c->beta, c->g, it.b, h, it.t0, tl.gram, c->l, c->stream);
    }
    if (c->stream) ug_rows_stream_end();
}

ug_status gdn_chunk_scaled_kkt(const gdn_chunk_scaled_kkt_params *p, const ug_buf *k,
                               const ug_buf *beta, const ug_buf *g, ug_buf *l)
{
    UG_TRY(validate(p, k, beta, g, l));
    const size_t items = (size_t)p->b * p->hg * (p->t / BT);
    ug_worker_scratch scratch;
    UG_TRY(ug_worker_scratch_alloc(&scratch, ug_parallel_workers(items), scratch_bytes(p->k)));
    call c = {.p = p, .k = k->data, .beta = beta->data, .g = g->data, .l = l->data,
              .stream = l->count * sizeof(float) >= UG_STREAM_MIN_BYTES, .scratch = &scratch};
    ug_parallel_for(items, run_chunks, &c);
    return ug_worker_scratch_free(&scratch, KERNEL " scratch");
}
