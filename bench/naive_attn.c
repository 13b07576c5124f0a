/* SPDX-License-Identifier: MIT */
/* Naive baselines of the attention-side kernels, in the seeds' loop
 * structure: attn_reduce_fwht as its shader runs (one row per threadgroup:
 * the merge, the butterflies over the staged row, the signed scaled store),
 * head_norm_rope as one threadgroup per (token, head) (the f32 variant's
 * angles computed per head and pair, as each head's threads compute them).
 * Plain scalar loops, built with the kernels' flags minus any SIMD flag; the
 * sign table is SPEC §1.4's, copied here independently of the kernel's. */
#include <math.h>
#include <stdlib.h>

#include "../core/bf16.h"
#include "bench.h"

static size_t dim(const bench_call *c, const char *name) { return (size_t)bench_param(c, name); }

/* ---- attn_reduce_fwht ---------------------------------------------------- */

static const unsigned char SIGNS[64] = {
    0xa7, 0x3b, 0x91, 0xf4, 0x6d, 0xc2, 0x58, 0x0e, 0xb3, 0x7f, 0x24, 0xd6, 0x89, 0x45, 0xea, 0x1c,
    0x63, 0xaf, 0xd8, 0x52, 0x97, 0x0b, 0xe1, 0x3d, 0x76, 0xc4, 0x19, 0xfe, 0x4a, 0x85, 0x2c, 0xdb,
    0xd3, 0x4e, 0xa8, 0x17, 0x9c, 0x5b, 0xe6, 0x31, 0x72, 0xb9, 0x0d, 0xf5, 0x43, 0x8a, 0x6e, 0xc7,
    0x58, 0x2f, 0x94, 0xe1, 0xb6, 0x3d, 0x0a, 0x7c, 0xc5, 0x61, 0xd8, 0x4f, 0xa3, 0x97, 0x1e, 0x85,
};

void naive_attn_reduce_fwht(const bench_call *c)
{
    const size_t nrows = dim(c, "nrows"), dv = dim(c, "head_dim"), nwg = dim(c, "nwg");
    const float *htmp = bench_buffer(c, "htmp");
    float *out = bench_buffer(c, "output");
    const float *stats = htmp + nrows * dv * nwg;
    const float scale = 1.0f / sqrtf((float)dv);
    float m[64], y[512];
    for (size_t r = 0; r < nrows; r++) {
        const float *row_stats = stats + r * 2 * nwg;
        float max = row_stats[1];
        for (size_t w = 1; w < nwg; w++)
            if (row_stats[2 * w + 1] > max) max = row_stats[2 * w + 1];
        float s = 0.0f;
        for (size_t w = 0; w < nwg; w++) {
            m[w] = expf(row_stats[2 * w + 1] - max);
            s += row_stats[2 * w] * m[w];
        }
        const float inv_s = s == 0.0f ? 0.0f : 1.0f / s;
        for (size_t d = 0; d < dv; d++) {
            float acc = 0.0f;
            for (size_t w = 0; w < nwg; w++) acc += htmp[(r * dv / 4 * nwg + d / 4 * nwg + w) * 4 + d % 4] * m[w];
            y[d] = acc * inv_s;
        }
        for (size_t h = 1; h < dv; h *= 2)
            for (size_t j = 0; j < dv; j++)
                if ((j & h) == 0) {
                    float a = y[j], b = y[j + h];
                    y[j] = a + b;
                    y[j + h] = a - b;
                }
        for (size_t j = 0; j < dv; j++) {
            float z = y[j] * scale;
            out[r * dv + j] = SIGNS[j >> 3] >> (j & 7) & 1 ? -z : z;
        }
    }
}

/* ---- head_norm_rope -------------------------------------------------------- */

typedef struct {
    size_t dim, half, span;
    float eps;
} head_shape;

/* y = x * r (* w), rotated pairwise, of one head; x, w in f32. */
static void norm_rope_head(const head_shape *s, const float *x, const float *w, const float *cs, const float *sn,
                           float *y)
{
    float ss = 0.0f;
    for (size_t i = 0; i < s->dim; i++) ss += x[i] * x[i];
    const float r = 1.0f / sqrtf(ss / (float)s->dim + s->eps);
    for (size_t i = 0; i < s->dim; i++) y[i] = w ? x[i] * r * w[i] : x[i] * r;
    for (size_t i = 0; i < s->half; i++) {
        float lo = y[i], hi = y[i + s->span];
        y[i] = lo * cs[i] - hi * sn[i];
        y[i + s->span] = hi * cs[i] + lo * sn[i];
    }
}

void naive_head_norm_rope(const bench_call *c)
{
    const size_t heads = dim(c, "n_heads"), hd = dim(c, "head_dim"), half = dim(c, "half_rope_dim");
    const float eps = (float)pow(10.0, -bench_param(c, "eps_exp10"));
    const bool weighted = bench_param(c, "has_weight") != 0;
    float *x = malloc(2 * hd * sizeof *x + 3 * hd * sizeof *x);
    if (!x) abort();
    float *y = x + hd, *w = y + hd, *cs = w + hd, *sn = cs + hd;
    if (bench_param(c, "variant") == 0) { /* bf16, one token, cached cos/sin */
        const ug_bf16 *in = bench_buffer(c, "input_bf16"), *wb = bench_buffer(c, "norm_weight_bf16");
        const float *cos_cache = bench_buffer(c, "cos_cache"), *sin_cache = bench_buffer(c, "sin_cache");
        ug_bf16 *out = bench_buffer(c, "output_bf16");
        const head_shape s = {hd, half, half, eps};
        for (size_t i = 0; weighted && i < hd; i++) w[i] = ug_bf16_to_f32(wb[i]);
        for (size_t h = 0; h < heads; h++) {
            for (size_t i = 0; i < hd; i++) x[i] = ug_bf16_to_f32(in[h * hd + i]);
            norm_rope_head(&s, x, weighted ? w : NULL, cos_cache, sin_cache, y);
            for (size_t i = 0; i < hd; i++) out[h * hd + i] = ug_bf16_from_f32(y[i]);
        }
    } else { /* f32 sequence, angles from positions */
        const size_t seq = dim(c, "seq_len");
        const float *in = bench_buffer(c, "input_f32"), *wf = bench_buffer(c, "norm_weight_f32");
        const float *ff = bench_param(c, "has_ff") != 0 ? bench_buffer(c, "freq_factors") : NULL;
        const uint32_t *pos = bench_buffer(c, "positions");
        float *out = bench_buffer(c, "output_f32");
        const head_shape s = {hd, half, hd / 2, eps};
        const float log2_theta = (float)log2(bench_param(c, "theta"));
        for (size_t t = 0; t < seq; t++)
            for (size_t h = 0; h < heads; h++) {
                for (size_t i = 0; i < half; i++) { /* each head's threads compute their angles */
                    float f = exp2f(-((float)(2 * i) / (float)hd * log2_theta));
                    if (ff) f = f / ff[i];
                    float angle = (float)pos[t] * f;
                    cs[i] = cosf(angle);
                    sn[i] = sinf(angle);
                }
                norm_rope_head(&s, in + (t * heads + h) * hd, weighted ? wf : NULL, cs, sn, out + (t * heads + h) * hd);
            }
    }
    free(x);
}
