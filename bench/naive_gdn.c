/* SPDX-License-Identifier: MIT */
/* Naive baselines of the gated-delta-rule stages: straightforward scalar
 * loops in the seed's loop structure (gdn_recompute_wu: the Metal shader,
 * loop for loop; the others, which have no shader in the seeds: one loop nest
 * per output tile as SPEC §1.2-1.3 states the math), written the way a first
 * C port would be. Built with the kernels' flags minus any SIMD flag.
 *
 * They compute the same functions as the kernels, with plain `acc += a * b`
 * (a separate multiply and add: -ffp-contract=off), so their results differ
 * from the kernels' FMA chains in the last bits only; bench.c reports the
 * difference. Where an output tile is triangular, the naive loops skip the
 * zero half when the seed's math names it (a masked sum), which makes the
 * baseline faster, never slower, than a literal translation. */
#include <math.h>
#include <stdlib.h>

#include "../core/bf16.h"
#include "bench.h"

static float f32(ug_bf16 x) { return ug_bf16_to_f32(x); }
static ug_bf16 bf16(float x) { return ug_bf16_from_f32(x); }
static size_t dim(const bench_call *c, const char *name) { return (size_t)bench_param(c, name); }

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

/* ---- gdn_recompute_wu: the seed's shader, one threadgroup at a time ------- */

void naive_gdn_recompute_wu(const bench_call *c)
{
    const size_t B = dim(c, "B"), T = dim(c, "T"), Hg = dim(c, "Hg"), H = dim(c, "H"), K = dim(c, "K"),
                 V = dim(c, "V"), BT = dim(c, "BT");
    const ug_bf16 *k = bench_buffer(c, "k"), *v = bench_buffer(c, "v");
    const float *beta = bench_buffer(c, "beta"), *g = bench_buffer(c, "g"), *A = bench_buffer(c, "A");
    ug_bf16 *w = bench_buffer(c, "w"), *u = bench_buffer(c, "u");
    const size_t BV = 64, BK = 64, NT = T / BT, group = H / Hg;
    float *ba_tile = xmalloc(BT * BT * sizeof *ba_tile);
    ug_bf16 *stage = xmalloc(BT * 64 * sizeof *stage);
    for (size_t b = 0; b < B; b++)
        for (size_t ih = 0; ih < H; ih++)
            for (size_t it = 0; it < NT; it++) {
                const size_t kh = ih / group, t0 = it * BT;
                for (size_t i = 0; i < BT; i++)
                    for (size_t j = 0; j < BT; j++) ba_tile[i * BT + j] = A[((b * T + t0 + i) * H + ih) * BT + j];
                for (size_t iv = 0; iv < V / BV; iv++) {
                    for (size_t bt = 0; bt < BT; bt++)
                        for (size_t bv = 0; bv < BV; bv++) {
                            float v_val = f32(v[((b * T + t0 + bt) * H + ih) * V + iv * BV + bv]);
                            float beta_v = beta[(b * T + t0 + bt) * H + ih];
                            stage[bt * BV + bv] = bf16(v_val * beta_v);
                        }
                    for (size_t i = 0; i < BT; i++)
                        for (size_t j = 0; j < BV; j++) {
                            float acc = 0.0f;
                            for (size_t kk = 0; kk < BT; kk++) acc += ba_tile[i * BT + kk] * f32(stage[kk * BV + j]);
                            u[((b * T + t0 + i) * H + ih) * V + iv * BV + j] = bf16(acc);
                        }
                }
                for (size_t ik = 0; ik < K / BK; ik++) {
                    for (size_t bt = 0; bt < BT; bt++)
                        for (size_t bk = 0; bk < BK; bk++) {
                            float k_val = f32(k[((b * T + t0 + bt) * Hg + kh) * K + ik * BK + bk]);
                            float beta_v = beta[(b * T + t0 + bt) * H + ih];
                            float exp_g_v = expf(g[(b * T + t0 + bt) * H + ih]); /* per cell, as the shader */
                            stage[bt * BK + bk] = bf16(k_val * beta_v * exp_g_v);
                        }
                    for (size_t i = 0; i < BT; i++)
                        for (size_t j = 0; j < BK; j++) {
                            float acc = 0.0f;
                            for (size_t kk = 0; kk < BT; kk++) acc += ba_tile[i * BT + kk] * f32(stage[kk * BK + j]);
                            w[((b * T + t0 + i) * H + ih) * K + ik * BK + j] = bf16(acc);
                        }
                }
            }
    free(ba_tile);
    free(stage);
}

/* ---- gdn_chunk_o: per chunk the attention tile, then every output --------- */

void naive_gdn_chunk_o(const bench_call *c)
{
    const size_t B = dim(c, "B"), T = dim(c, "T"), Hg = dim(c, "Hg"), H = dim(c, "H"), K = dim(c, "K"),
                 V = dim(c, "V"), BT = dim(c, "BT");
    const float scale = ug_f32_from_bits((uint32_t)bench_param(c, "scale_bits"));
    const ug_bf16 *q = bench_buffer(c, "q"), *k = bench_buffer(c, "k"), *v = bench_buffer(c, "v"),
                  *state = bench_buffer(c, "h");
    const float *g = bench_buffer(c, "g");
    ug_bf16 *o = bench_buffer(c, "o");
    const size_t NT = T / BT, group = H / Hg;
    float *att = xmalloc(BT * BT * sizeof *att);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t ch = 0; ch < NT; ch++) {
                const size_t kh = h / group, t0 = ch * BT;
                for (size_t i = 0; i < BT; i++)
                    for (size_t j = 0; j < BT; j++) {
                        if (j > i) {
                            att[i * BT + j] = 0.0f;
                            continue;
                        }
                        const ug_bf16 *qi = q + ((b * T + t0 + i) * Hg + kh) * K;
                        const ug_bf16 *kj = k + ((b * T + t0 + j) * Hg + kh) * K;
                        float dot = 0.0f;
                        for (size_t kk = 0; kk < K; kk++) dot += f32(qi[kk]) * f32(kj[kk]);
                        float decay = expf(g[(b * T + t0 + i) * H + h] - g[(b * T + t0 + j) * H + h]);
                        att[i * BT + j] = f32(bf16(decay * dot));
                    }
                for (size_t i = 0; i < BT; i++) {
                    const ug_bf16 *qi = q + ((b * T + t0 + i) * Hg + kh) * K;
                    for (size_t vv = 0; vv < V; vv++) {
                        const ug_bf16 *hv = state + (((b * NT + ch) * H + h) * V + vv) * K;
                        float dot = 0.0f;
                        for (size_t kk = 0; kk < K; kk++) dot += f32(qi[kk]) * f32(hv[kk]);
                        float p = expf(g[(b * T + t0 + i) * H + h]) * dot;
                        float intra = 0.0f;
                        for (size_t j = 0; j < BT; j++)
                            intra += att[i * BT + j] * f32(v[((b * T + t0 + j) * H + h) * V + vv]);
                        o[((b * T + t0 + i) * H + h) * V + vv] = bf16(p * scale + intra * scale);
                    }
                }
            }
    free(att);
}

/* ---- gdn_chunk_scaled_kkt: per value head, the strictly lower tile -------- */

void naive_gdn_chunk_scaled_kkt(const bench_call *c)
{
    const size_t B = dim(c, "B"), T = dim(c, "T"), Hg = dim(c, "Hg"), H = dim(c, "H"), K = dim(c, "K"),
                 BT = dim(c, "BT");
    const ug_bf16 *k = bench_buffer(c, "k");
    const float *beta = bench_buffer(c, "beta"), *g = bench_buffer(c, "g");
    float *L = bench_buffer(c, "L");
    const size_t group = H / Hg;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t0 = 0; t0 < T; t0 += BT)
                for (size_t i = 0; i < BT; i++) {
                    const size_t row = (b * T + t0 + i) * H + h;
                    for (size_t j = 0; j < BT; j++) {
                        if (j >= i) {
                            L[row * BT + j] = 0.0f;
                            continue;
                        }
                        const size_t col = (b * T + t0 + j) * H + h;
                        const ug_bf16 *ki = k + ((b * T + t0 + i) * Hg + h / group) * K;
                        const ug_bf16 *kj = k + ((b * T + t0 + j) * Hg + h / group) * K;
                        float dot = 0.0f;
                        for (size_t d = 0; d < K; d++) dot += f32(ki[d]) * f32(kj[d]);
                        L[row * BT + j] = beta[row] * expf(g[row] - g[col]) * dot;
                    }
                }
}

/* ---- gdn_chunk_state: the recurrence, one (batch, head) at a time ---------- */

void naive_gdn_chunk_state(const bench_call *c)
{
    const size_t B = dim(c, "B"), T = dim(c, "T"), Hg = dim(c, "Hg"), H = dim(c, "H"), K = dim(c, "K"),
                 V = dim(c, "V"), BT = dim(c, "BT");
    const bool has_h0 = bench_param(c, "has_h0") != 0;
    const ug_bf16 *k = bench_buffer(c, "k"), *w = bench_buffer(c, "w"), *u = bench_buffer(c, "u");
    const float *g = bench_buffer(c, "g"), *h0 = bench_buffer(c, "h0");
    ug_bf16 *hout = bench_buffer(c, "h"), *v_new = bench_buffer(c, "v_new");
    float *final_state = bench_buffer(c, "final_state");
    const size_t NT = T / BT, group = H / Hg;
    float *S = xmalloc(K * V * sizeof *S);
    ug_bf16 *S_bf16 = xmalloc(K * V * sizeof *S_bf16), *staged = xmalloc(BT * V * sizeof *staged);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const size_t kh = h / group;
            for (size_t x = 0; x < K * V; x++) S[x] = has_h0 ? h0[(b * H + h) * K * V + x] : 0.0f;
            for (size_t ch = 0; ch < NT; ch++) {
                const size_t t0 = ch * BT;
                const float g_last = g[(b * T + t0 + BT - 1) * H + h];
                for (size_t kk = 0; kk < K; kk++)
                    for (size_t vv = 0; vv < V; vv++) {
                        S_bf16[kk * V + vv] = bf16(S[kk * V + vv]);
                        hout[(((b * NT + ch) * H + h) * V + vv) * K + kk] = S_bf16[kk * V + vv];
                    }
                for (size_t i = 0; i < BT; i++) {
                    const size_t row = (b * T + t0 + i) * H + h;
                    const float decay = expf(g_last - g[row]);
                    for (size_t vv = 0; vv < V; vv++) {
                        float acc = 0.0f;
                        for (size_t kk = 0; kk < K; kk++) acc += f32(w[row * K + kk]) * f32(S_bf16[kk * V + vv]);
                        float value = f32(u[row * V + vv]) - acc;
                        v_new[row * V + vv] = bf16(value);
                        staged[i * V + vv] = bf16(decay * value);
                    }
                }
                const float chunk_decay = expf(g_last);
                for (size_t kk = 0; kk < K; kk++)
                    for (size_t vv = 0; vv < V; vv++) {
                        float acc = 0.0f;
                        for (size_t i = 0; i < BT; i++)
                            acc += f32(k[((b * T + t0 + i) * Hg + kh) * K + kk]) * f32(staged[i * V + vv]);
                        S[kk * V + vv] = chunk_decay * S[kk * V + vv] + acc;
                    }
            }
            for (size_t x = 0; x < K * V; x++) final_state[(b * H + h) * K * V + x] = S[x];
        }
    free(S);
    free(S_bf16);
    free(staged);
}

/* ---- gdn_solve_tril: forward substitution, element by element ------------- */

void naive_gdn_solve_tril(const bench_call *c)
{
    const size_t B = dim(c, "B"), T = dim(c, "T"), H = dim(c, "H"), BT = dim(c, "BT");
    const float *L = bench_buffer(c, "L");
    float *A = bench_buffer(c, "A");
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t0 = 0; t0 < T; t0 += BT)
                for (size_t i = 0; i < BT; i++) {
                    const size_t row_i = ((b * T + t0 + i) * H + h) * BT;
                    for (size_t j = 0; j < BT; j++) {
                        if (j >= i) {
                            A[row_i + j] = j == i ? 1.0f : 0.0f;
                            continue;
                        }
                        float acc = 0.0f;
                        for (size_t m = j; m < i; m++) acc += L[row_i + m] * A[((b * T + t0 + m) * H + h) * BT + j];
                        A[row_i + j] = -acc;
                    }
                }
}

/* ---- gdn_chunk_cumsum: one running sum per (batch, head) ------------------- */

void naive_gdn_chunk_cumsum(const bench_call *c)
{
    const size_t B = dim(c, "B"), T = dim(c, "T"), H = dim(c, "H"), BT = dim(c, "BT");
    const float *g_raw = bench_buffer(c, "g_raw");
    float *g = bench_buffer(c, "g");
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            float sum = 0.0f;
            for (size_t t = 0; t < T; t++) {
                if (t % BT == 0) sum = 0.0f;
                sum += g_raw[(b * T + t) * H + h];
                g[(b * T + t) * H + h] = sum;
            }
        }
}
