/* SPDX-License-Identifier: MIT */
/* head_norm_rope: both kernels equal a plain scalar statement of their
 * documented arithmetic (kernels/head_norm_rope.h) bit for bit on every ISA
 * path, and their validation is the seed's, rule for rule and in its order,
 * writing nothing when it rejects. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "../kernels/head_norm_rope.h"
#include "../kernels/head_norm_rope_paths.h"
#include "../kernels/isa.h"
#include "tests.h"

/* A call's buffers: the third and fourth are cos/sin (bf16 variant) or
 * positions/freq_factors (f32 variant). */
enum { BUF_INPUT, BUF_OUTPUT, BUF_WEIGHT, BUF_TABLE_A, BUF_TABLE_B, N_BUFS };
static const char *const bf16_names[N_BUFS] = {"input", "output", "norm_weight", "cos_cache", "sin_cache"};
static const char *const f32_names[N_BUFS] = {"input", "output", "norm_weight", "positions", "freq_factors"};
static const ug_dtype bf16_dtypes[N_BUFS] = {UG_BF16, UG_BF16, UG_BF16, UG_F32, UG_F32};
static const ug_dtype f32_dtypes[N_BUFS] = {UG_F32, UG_F32, UG_F32, UG_U32, UG_F32};

typedef struct {
    bool f32;
    head_norm_rope_bf16_params pb;
    head_norm_rope_f32_params pf;
    bool has_weight, has_ff;
    uint32_t max_position;
} call_shape;

typedef struct {
    call_shape s;
    ug_guarded mem[N_BUFS];
    ug_buf buf[N_BUFS];
} call;

static uint64_t rng_state;

static float uniform(float lo, float hi) { return ug_test_uniform(&rng_state, lo, hi); }

static const char *const *names(const call *c) { return c->s.f32 ? f32_names : bf16_names; }

static size_t expected_count(const call_shape *s, int which)
{
    const size_t heads = s->f32 ? s->pf.n_heads : s->pb.n_heads, dim = s->f32 ? s->pf.head_dim : s->pb.head_dim;
    const size_t half = s->f32 ? s->pf.half_rope_dim : s->pb.half_rope_dim, seq = s->f32 ? s->pf.seq_len : 1;
    switch (which) {
    case BUF_INPUT: case BUF_OUTPUT: return seq * heads * dim;
    case BUF_WEIGHT: return s->has_weight ? dim : 0;
    case BUF_TABLE_A: return s->f32 ? seq : half;
    case BUF_TABLE_B: return s->f32 ? (s->has_ff ? half : 0) : half;
    }
    return 0;
}

/* Activations with a per-head scale, weights near 1, real caches, positions
 * up to max_position, factors in [1, 8]; the output pre-filled with noise. */
static void fill(call *c)
{
    const call_shape *s = &c->s;
    const size_t dim = s->f32 ? s->pf.head_dim : s->pb.head_dim;
    for (size_t i = 0; i < c->buf[BUF_INPUT].count; i++) {
        float x = uniform(-2.0f, 2.0f) * ldexpf(1.0f, (int)(i / dim % 7) - 3);
        if (s->f32) ((float *)c->buf[BUF_INPUT].data)[i] = x;
        else ((ug_bf16 *)c->buf[BUF_INPUT].data)[i] = ug_bf16_from_f32(x);
    }
    for (size_t i = 0; i < c->buf[BUF_WEIGHT].count; i++) {
        float w = uniform(0.5f, 1.5f);
        if (s->f32) ((float *)c->buf[BUF_WEIGHT].data)[i] = w;
        else ((ug_bf16 *)c->buf[BUF_WEIGHT].data)[i] = ug_bf16_from_f32(w);
    }
    if (s->f32) {
        uint32_t *pos = c->buf[BUF_TABLE_A].data;
        for (size_t t = 0; t < c->buf[BUF_TABLE_A].count; t++)
            pos[t] = t == 0 ? s->max_position : ug_test_next_u32(&rng_state) % (s->max_position + 1u);
        for (size_t i = 0; i < c->buf[BUF_TABLE_B].count; i++) ((float *)c->buf[BUF_TABLE_B].data)[i] = uniform(1, 8);
    } else {
        for (size_t i = 0; i < c->buf[BUF_TABLE_A].count; i++) {
            double angle = s->max_position * pow(10000.0, -2.0 * (double)i / (double)dim);
            ((float *)c->buf[BUF_TABLE_A].data)[i] = (float)cos(angle);
            ((float *)c->buf[BUF_TABLE_B].data)[i] = (float)sin(angle);
        }
    }
    unsigned char *out = c->buf[BUF_OUTPUT].data;
    for (size_t i = 0; i < c->buf[BUF_OUTPUT].count * ug_dtype_size(c->buf[BUF_OUTPUT].dtype); i++)
        out[i] = (unsigned char)ug_test_next_u32(&rng_state);
}

static void call_open(call *c, const call_shape *s)
{
    memset(c, 0, sizeof *c);
    c->s = *s;
    for (int i = 0; i < N_BUFS; i++) {
        size_t count = expected_count(s, i);
        ug_dtype dtype = s->f32 ? f32_dtypes[i] : bf16_dtypes[i];
        CU_ASSERT_EQUAL_FATAL(ug_guarded_alloc(&c->mem[i], count * ug_dtype_size(dtype)).code, UG_OK);
        c->buf[i] = (ug_buf){ug_guarded_data(&c->mem[i]), count, dtype};
    }
    fill(c);
}

static void call_close(call *c)
{
    for (int i = 0; i < N_BUFS; i++) CU_ASSERT_EQUAL(ug_guarded_free(&c->mem[i], names(c)[i]).code, UG_OK);
}

static ug_status run(const call_shape *s, ug_buf buf[N_BUFS])
{
    if (s->f32)
        return head_norm_rope_f32(&s->pf, &buf[BUF_INPUT], &buf[BUF_OUTPUT], s->has_weight ? &buf[BUF_WEIGHT] : NULL,
                                  &buf[BUF_TABLE_A], s->has_ff ? &buf[BUF_TABLE_B] : NULL);
    return head_norm_rope_bf16(&s->pb, &buf[BUF_INPUT], &buf[BUF_OUTPUT], s->has_weight ? &buf[BUF_WEIGHT] : NULL,
                               &buf[BUF_TABLE_A], &buf[BUF_TABLE_B]);
}

/* ---- the kernels' arithmetic as plain scalar loops ----------------------- */

/* Thread t of min(256, next_pow2(d)) sums x[t], x[t+tg], ... with FMAs; a
 * tree adds the threads' sums; then 1/sqrt(ss/d + eps) in f32. */
static float scalar_inverse_rms(const float *x, size_t d, float eps)
{
    size_t tg = 1;
    while (tg < d && tg < 256) tg *= 2;
    float partial[256] = {0};
    for (size_t i = 0; i < d; i++) partial[i % tg] = fmaf(x[i], x[i], partial[i % tg]);
    for (size_t stride = tg / 2; stride > 0; stride /= 2)
        for (size_t t = 0; t < stride; t++) partial[t] = partial[t] + partial[t + stride];
    return 1.0f / sqrtf(partial[0] / (float)d + eps);
}

/* y = x r (w), then pairs (i, i + span), i < pairs, rotated with one FMA each. */
static void scalar_head(float *y, size_t d, const float *w, float eps, size_t pairs, size_t span, const float *c,
                        const float *s)
{
    float r = scalar_inverse_rms(y, d, eps);
    for (size_t i = 0; i < d; i++) y[i] = w ? (y[i] * r) * w[i] : y[i] * r;
    for (size_t i = 0; i < pairs; i++) {
        float lo = y[i], hi = y[i + span];
        y[i] = fmaf(lo, c[i], -(hi * s[i]));
        y[i + span] = fmaf(hi, c[i], lo * s[i]);
    }
}

static void scalar_bf16(const call *cl, ug_bf16 *want)
{
    const head_norm_rope_bf16_params *p = &cl->s.pb;
    const size_t d = p->head_dim;
    float *y = malloc(d * sizeof *y), *w = malloc(d * sizeof *w);
    CU_ASSERT_FATAL(y && w);
    for (size_t i = 0; cl->s.has_weight && i < d; i++) w[i] = ug_bf16_to_f32(((const ug_bf16 *)cl->buf[BUF_WEIGHT].data)[i]);
    for (size_t h = 0; h < p->n_heads; h++) {
        for (size_t i = 0; i < d; i++) y[i] = ug_bf16_to_f32(((const ug_bf16 *)cl->buf[BUF_INPUT].data)[h * d + i]);
        scalar_head(y, d, cl->s.has_weight ? w : NULL, p->eps, p->half_rope_dim, p->half_rope_dim,
                    cl->buf[BUF_TABLE_A].data, cl->buf[BUF_TABLE_B].data);
        for (size_t i = 0; i < d; i++) want[h * d + i] = ug_bf16_from_f32(y[i]);
    }
    free(y);
    free(w);
}

static void scalar_f32(const call *cl, float *want)
{
    const head_norm_rope_f32_params *p = &cl->s.pf;
    const size_t d = p->head_dim, pairs = p->half_rope_dim;
    const float *ff = cl->s.has_ff ? cl->buf[BUF_TABLE_B].data : NULL;
    const float log2_theta = (float)log2((double)p->theta);
    float *c = malloc((pairs + 1) * sizeof *c), *s = malloc((pairs + 1) * sizeof *s);
    CU_ASSERT_FATAL(c && s);
    for (size_t t = 0; t < p->seq_len; t++) {
        for (size_t i = 0; i < pairs; i++) {
            float f = exp2f(-(((float)(2 * i) / (float)d) * log2_theta));
            if (ff) f = f / ff[i];
            float angle = (float)((const uint32_t *)cl->buf[BUF_TABLE_A].data)[t] * f;
            c[i] = cosf(angle);
            s[i] = sinf(angle);
        }
        for (size_t h = 0; h < p->n_heads; h++) {
            float *y = want + (t * p->n_heads + h) * d;
            memcpy(y, (const float *)cl->buf[BUF_INPUT].data + (t * p->n_heads + h) * d, d * sizeof *y);
            scalar_head(y, d, cl->s.has_weight ? cl->buf[BUF_WEIGHT].data : NULL, p->eps, pairs, d / 2, c, s);
        }
    }
    free(c);
    free(s);
}

static call_shape bf16_shape(uint32_t heads, uint32_t dim, uint32_t half, bool weight, float eps, uint32_t position)
{
    return (call_shape){.f32 = false, .pb = {heads, dim, half, eps}, .has_weight = weight, .max_position = position};
}

static call_shape f32_shape(uint32_t heads, uint32_t dim, uint32_t half, uint32_t seq, bool weight, bool ff,
                            float theta, uint32_t position)
{
    return (call_shape){.f32 = true, .pf = {heads, dim, half, seq, 1e-6f, theta}, .has_weight = weight,
                        .has_ff = ff, .max_position = position};
}

/* Equal outputs; with nan_sign_free, a NaN of either sign matches a NaN
 * (isa.h: the compiled scalar -(h * s) flips a NaN's sign where the vector
 * fmsub does not; the payload must still be the quiet 0x7FC0). */
static bool same_outputs(const void *got, const void *want, size_t bytes, bool nan_sign_free)
{
    if (!nan_sign_free) return memcmp(got, want, bytes) == 0;
    const ug_bf16 *g = got, *w = want;
    for (size_t i = 0; i < bytes / sizeof(ug_bf16); i++)
        if (g[i] != w[i] && !((g[i] & 0x7FFFu) == 0x7FC0u && (w[i] & 0x7FFFu) == 0x7FC0u)) return false;
    return true;
}

/* The kernel's outputs on every ISA path against the scalar statement, for
 * the inputs in c (nan_sign_free: bf16 outputs, same_outputs). */
static void expect_call_matches_scalar(call *cl, bool nan_sign_free)
{
    call c = *cl;
    const call_shape *shape = &c.s;
    const size_t bytes = c.buf[BUF_OUTPUT].count * ug_dtype_size(c.buf[BUF_OUTPUT].dtype);
    void *want = malloc(bytes ? bytes : 1);
    CU_ASSERT_FATAL(want != NULL);
    if (shape->f32) scalar_f32(&c, want);
    else scalar_bf16(&c, want);
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        memset(c.buf[BUF_OUTPUT].data, 0xFF, bytes);
        ug_status st = run(&c.s, c.buf);
        CU_ASSERT_EQUAL(st.code, UG_OK);
        if (!same_outputs(c.buf[BUF_OUTPUT].data, want, bytes, nan_sign_free)) {
            printf("\n  %s variant, head_dim %u, on %s: differs from the scalar statement", shape->f32 ? "f32" : "bf16",
                   shape->f32 ? shape->pf.head_dim : shape->pb.head_dim, ug_isa_name((ug_isa)isa));
            CU_FAIL("kernel differs from the scalar statement");
        }
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
    free(want);
}

/* The same for a call with random inputs of the given shape. */
static void expect_scalar_statement(const call_shape *shape)
{
    call c;
    call_open(&c, shape);
    expect_call_matches_scalar(&c, false);
    call_close(&c);
}

static void test_bf16_matches_the_scalar_statement_on_every_isa(void)
{
    rng_state = 0x2545F4914F6CDD1Du;
    const call_shape shapes[] = {
        bf16_shape(4, 64, 32, true, 1e-6f, 500000),  bf16_shape(2, 64, 16, false, 1e-5f, 4096),
        bf16_shape(3, 128, 64, true, 0.1f, 77),      bf16_shape(2, 256, 0, true, 1e-6f, 9),
        bf16_shape(2, 512, 256, true, 1e-6f, 123457), bf16_shape(2, 512, 100, false, 1e-6f, 31),
        bf16_shape(5, 97, 48, true, 1e-6f, 1000),    bf16_shape(2, 1, 0, true, 1e-6f, 1),
        bf16_shape(2, 3, 1, false, 1e-6f, 5),        bf16_shape(1, 257, 128, true, 1e-6f, 65536),
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) expect_scalar_statement(&shapes[i]);
}

/* NaN inputs with payloads: every element of their heads is a NaN that
 * carries the payload, which the bf16 rounding must turn into sign | 0x7FC0
 * (the SIMD paths round whole heads without the NaN case and redo a head
 * that has one). Heads 1 and 3 of 4 get one NaN each, head 2 a NaN weight
 * element reaches every head's element 40. */
static void test_bf16_nan_payloads_on_every_isa(void)
{
    rng_state = 0x0123456789ABCDEFu;
    static const uint32_t dims[] = {64, 128, 256};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        const uint32_t d = dims[k];
        const call_shape shape = bf16_shape(4, d, d / 2, true, 1e-6f, 77);
        call c;
        call_open(&c, &shape);
        ug_bf16 *in = c.buf[BUF_INPUT].data;
        in[1 * d + 5] = 0x7F81;      /* signalling, payload 1 */
        in[3 * d + d - 3] = 0xFFA5;  /* negative, quiet, payload */
        ((ug_bf16 *)c.buf[BUF_WEIGHT].data)[40] = 0x7FC3;
        expect_call_matches_scalar(&c, true);
        call_close(&c);
    }
}

static void test_f32_matches_the_scalar_statement_on_every_isa(void)
{
    rng_state = 0x9E3779B97F4A7C15u;
    const call_shape shapes[] = {
        f32_shape(2, 64, 32, 3, true, true, 10000.0f, 500000),   f32_shape(2, 64, 16, 4, false, false, 1e6f, 4096),
        f32_shape(3, 128, 64, 2, true, false, 10000.0f, 1 << 24), f32_shape(2, 256, 0, 2, true, true, 1e6f, 9),
        f32_shape(2, 512, 256, 2, true, true, 1e6f, 500000),     f32_shape(1, 512, 64, 3, false, true, 10000.0f, 31),
        f32_shape(2, 97, 48, 3, true, true, 10000.0f, 1000),     f32_shape(2, 1, 0, 1, true, false, 10000.0f, 0),
        f32_shape(1, 3, 1, 5, false, true, 10000.0f, 4000000000u), f32_shape(1, 257, 128, 2, true, false, 1e6f, 65536),
        /* Outputs over the kernel's streaming threshold (4 MiB): heads of 97
         * floats at every alignment, and heads rotated whole. */
        f32_shape(8, 97, 48, 1400, true, false, 10000.0f, 8191), f32_shape(4, 128, 64, 2100, false, true, 1e6f, 8191),
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) expect_scalar_statement(&shapes[i]);
}

/* The SIMD paths' bf16 output rounding is ug_bf16_from_f32 on every bit
 * pattern class: ties to even both ways, carries into the exponent and up to
 * inf, subnormals, signed zeros, infinities, NaNs of both signs with payloads
 * (quieted to 0x7FC0 | sign). 37 values: whole vectors and a scalar tail. */
static void test_simd_bf16_rounding_is_the_scalar_rounding(void)
{
    static const uint32_t bits[] = {
        0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x3F807FFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu,
        0x00000001u, 0x80008000u, 0x00018000u, 0x007FFFFFu, 0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
        0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FA7FFA7u, 0xFFC12345u, 0x3F7FFFFFu, 0xBF7FFFFFu,
        0x40490FDBu, 0xC0490FDBu, 0x33D6BF95u, 0x4B7FFFFFu, 0x3EAAAAABu, 0xBEAAAAABu, 0x7F000000u, 0x7EFF8000u,
        0x00FF8000u, 0x80FF7FFFu, 0x3F800000u, 0x12345678u, 0x87654321u,
    };
    enum { N = sizeof bits / sizeof bits[0] };
    float y[N];
    ug_bf16 want[N], got[N];
    for (size_t i = 0; i < N; i++) {
        y[i] = ug_f32_from_bits(bits[i]);
        want[i] = ug_bf16_from_f32(y[i]);
    }
    /* ug_rows_round; the kernel's whole-head store: test_bf16_nan_payloads_on_every_isa. */
    const ug_isa isas[] = {UG_ISA_AVX2, UG_ISA_AVX512};
    for (size_t k = 0; k < 2; k++) {
        if (!ug_isa_supported(isas[k])) continue;
        memset(got, 0, sizeof got);
        CU_ASSERT_EQUAL_FATAL(ug_isa_select(isas[k]).code, UG_OK);
        ug_rows_round(N, y, got);
        for (size_t i = 0; i < N; i++)
            if (got[i] != want[i]) {
                printf("\n  %s: 0x%08X rounds to 0x%04X, not 0x%04X", ug_isa_name(isas[k]), bits[i], got[i], want[i]);
                CU_FAIL("SIMD bf16 rounding differs");
            }
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

/* The SIMD paths' output store writes exactly out[0 .. n), streaming or
 * not, from every alignment of out: the unaligned start, the non-temporal
 * whole vectors and the tail. */
static void test_simd_store_writes_exactly_the_row_from_every_alignment(void)
{
    enum { MAX_N = 70, PAD = 16 };
    float y[MAX_N], row[PAD + MAX_N + PAD] __attribute__((aligned(64)));
    for (size_t i = 0; i < MAX_N; i++) y[i] = (float)i + 0.5f;
    for (int isa = UG_ISA_PORTABLE + 1; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        const head_norm_rope_paths *path = UG_ISA_PATHS_OF(head_norm_rope, (ug_isa)isa);
        for (int stream = 0; stream < 2; stream++)
            for (size_t shift = 0; shift < PAD; shift++)
                for (size_t n = 0; n <= MAX_N; n++) {
                    memset(row, 0xFF, sizeof row);
                    path->store_f32(row + shift, y, n, stream);
                    path->end_stream();
                    bool ok = true;
                    for (size_t i = 0; i < sizeof row / sizeof row[0]; i++) {
                        uint32_t got = ug_f32_bits(row[i]);
                        ok &= i >= shift && i < shift + n ? got == ug_f32_bits(y[i - shift]) : got == 0xFFFFFFFFu;
                    }
                    if (!ok) {
                        printf("\n  %s: store of %zu floats at +%zu, stream %d", ug_isa_name((ug_isa)isa), n, shift,
                               stream);
                        CU_FAIL("SIMD store differs from a copy of the row");
                    }
                }
    }
}

/* ---- properties that need no scalar statement ----------------------------- */

static void test_unit_weight_equals_no_weight_and_position_zero_rotates_nothing(void)
{
    rng_state = 7;
    call_shape shape = f32_shape(2, 64, 20, 1, true, false, 10000.0f, 0);
    call c;
    call_open(&c, &shape);
    for (size_t i = 0; i < 64; i++) ((float *)c.buf[BUF_WEIGHT].data)[i] = 1.0f;
    const size_t n = c.buf[BUF_OUTPUT].count;
    float *with_weight = malloc(n * sizeof *with_weight);
    CU_ASSERT_FATAL(with_weight != NULL);
    CU_ASSERT_EQUAL(run(&c.s, c.buf).code, UG_OK);
    memcpy(with_weight, c.buf[BUF_OUTPUT].data, n * sizeof *with_weight);
    c.s.has_weight = false;
    CU_ASSERT_EQUAL(run(&c.s, c.buf).code, UG_OK);
    CU_ASSERT_EQUAL(memcmp(with_weight, c.buf[BUF_OUTPUT].data, n * sizeof *with_weight), 0);
    /* Position 0: cos 1, sin 0, every element is x r. */
    c.s.pf.half_rope_dim = 0;
    CU_ASSERT_EQUAL(run(&c.s, c.buf).code, UG_OK);
    CU_ASSERT_EQUAL(memcmp(with_weight, c.buf[BUF_OUTPUT].data, n * sizeof *with_weight), 0);
    free(with_weight);
    call_close(&c);
}

static void test_all_zero_head_gives_zeros(void)
{
    rng_state = 11;
    call_shape shape = bf16_shape(2, 128, 64, true, 1e-6f, 500000);
    call c;
    call_open(&c, &shape);
    memset(c.buf[BUF_INPUT].data, 0, 128 * sizeof(ug_bf16)); /* head 0 */
    CU_ASSERT_EQUAL(run(&c.s, c.buf).code, UG_OK);
    for (size_t i = 0; i < 128; i++) CU_ASSERT_EQUAL(ug_bf16_to_f32(((ug_bf16 *)c.buf[BUF_OUTPUT].data)[i]), 0.0f);
    call_close(&c);
}

/* The seed's host plan, and the bf16 host's shortfall above head_dim 256. */
static void test_plan_formulas_are_the_seeds(void)
{
    static const struct {
        uint32_t head_dim, tg, bf16_bytes, f32_bytes;
    } rows[] = {{0, 1, 4, 4},       {1, 1, 4, 4},       {3, 4, 16, 16},     {64, 64, 256, 256},
                {65, 128, 512, 512}, {97, 128, 512, 512}, {256, 256, 1024, 1024}, {257, 256, 1024, 1028},
                {512, 256, 1024, 2048}, {513, 256, 1024, 2052}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CU_ASSERT_EQUAL(head_norm_rope_tg_size(rows[i].head_dim), rows[i].tg);
        CU_ASSERT_EQUAL(head_norm_rope_bf16_planned_bytes(rows[i].head_dim), rows[i].bf16_bytes);
        CU_ASSERT_EQUAL(head_norm_rope_f32_planned_bytes(rows[i].head_dim), rows[i].f32_bytes);
    }
    CU_ASSERT_EQUAL(head_norm_rope_tg_size(UINT32_MAX), 256);
}

/* ---- rejections ------------------------------------------------------------ */

enum { NO_BUFFER = -1, MAX_EXPECT = 3 };
typedef enum { SET_NONE, SET_N_HEADS, SET_HEAD_DIM, SET_HALF, SET_SEQ } param_edit;

/* One broken rule: a parameter set to a bad value, or a buffer's count moved
 * by delta or its dtype replaced. Listed in the seed's order. */
typedef struct {
    param_edit edit;
    uint32_t value;
    int buffer;
    long delta;
    int dtype; /* -1: keep */
    const char *expect[MAX_EXPECT];
} broken_rule;

#define PARAM(which, v, ...) {which, v, NO_BUFFER, 0, -1, {__VA_ARGS__}}
#define COUNT(which, d, ...) {SET_NONE, 0, which, d, -1, {__VA_ARGS__}}
#define DTYPE(which, t, ...) {SET_NONE, 0, which, 0, t, {__VA_ARGS__}}

/* On bf16_shape(4, 64, 16, weight): */
static const broken_rule bf16_rules[] = {
    PARAM(SET_N_HEADS, 0, "fused_head_norm_rope: n_heads and head_dim must be > 0", "n_heads=0"),
    PARAM(SET_HEAD_DIM, 0, "fused_head_norm_rope: n_heads and head_dim must be > 0", "head_dim=0"),
    PARAM(SET_HALF, 33, "half_rope_dim (33) must be <= head_dim/2 (32)"),
    COUNT(BUF_INPUT, 1, "fused_head_norm_rope: input element count 257 != n_heads(4) * head_dim(64) = 256"),
    COUNT(BUF_OUTPUT, -1, "output element count 255 != n_heads(4) * head_dim(64) = 256"),
    COUNT(BUF_TABLE_A, -1, "cos_cache element count 15 < half_rope_dim (16)"),
    COUNT(BUF_TABLE_B, -1, "sin_cache element count 15 < half_rope_dim (16)"),
    COUNT(BUF_WEIGHT, 1, "norm_weight element count 65 != head_dim (64)"),
    DTYPE(BUF_INPUT, UG_F32, "input must be bf16 (got f32)"),
    DTYPE(BUF_OUTPUT, UG_F32, "output must be bf16 (got f32)"),
    DTYPE(BUF_WEIGHT, UG_F32, "norm_weight must be bf16 (got f32)"),
    DTYPE(BUF_TABLE_A, UG_BF16, "cos_cache must be f32 (got bf16)"),
    DTYPE(BUF_TABLE_B, UG_F64, "sin_cache must be f32 (got f64)"),
};

/* On f32_shape(2, 64, 16, 3, weight, ff): */
static const broken_rule f32_rules[] = {
    PARAM(SET_N_HEADS, 0, "fused_head_norm_rope_f32: n_heads and head_dim must be > 0", "n_heads=0"),
    PARAM(SET_HEAD_DIM, 0, "fused_head_norm_rope_f32: n_heads and head_dim must be > 0", "head_dim=0"),
    PARAM(SET_HALF, 33, "half_rope_dim (33) must be <= head_dim/2 (32)"),
    PARAM(SET_SEQ, 0, "fused_head_norm_rope_f32: seq_len must be > 0"),
    COUNT(BUF_INPUT, -1, "input element count 383 != seq_len(3) * n_heads(2) * head_dim(64) = 384"),
    COUNT(BUF_OUTPUT, 1, "output element count 385 != seq_len(3) * n_heads(2) * head_dim(64) = 384"),
    COUNT(BUF_TABLE_A, 1, "positions element count 4 != seq_len (3)"),
    COUNT(BUF_WEIGHT, -1, "norm_weight element count 63 != head_dim (64)"),
    COUNT(BUF_TABLE_B, -1, "freq_factors element count 15 < half_rope_dim (16)"),
    DTYPE(BUF_INPUT, UG_BF16, "input must be f32 (got bf16)"),
    DTYPE(BUF_OUTPUT, UG_BF16, "output must be f32 (got bf16)"),
    DTYPE(BUF_WEIGHT, UG_U32, "norm_weight must be f32 (got u32)"),
    DTYPE(BUF_TABLE_A, UG_F32, "positions must be u32 (got f32)"),
    DTYPE(BUF_TABLE_B, UG_BF16, "freq_factors must be f32 (got bf16)"),
};

static void apply(const broken_rule *r, call_shape *s, ug_buf buf[N_BUFS])
{
    uint32_t *field = NULL;
    switch (r->edit) {
    case SET_N_HEADS: field = s->f32 ? &s->pf.n_heads : &s->pb.n_heads; break;
    case SET_HEAD_DIM: field = s->f32 ? &s->pf.head_dim : &s->pb.head_dim; break;
    case SET_HALF: field = s->f32 ? &s->pf.half_rope_dim : &s->pb.half_rope_dim; break;
    case SET_SEQ: field = &s->pf.seq_len; break;
    case SET_NONE: break;
    }
    if (field) *field = r->value;
    if (r->buffer == NO_BUFFER) return;
    buf[r->buffer].count += (size_t)r->delta;
    if (r->dtype >= 0) buf[r->buffer].dtype = (ug_dtype)r->dtype;
}

static bool conflict(const broken_rule *a, const broken_rule *b)
{
    return (a->edit != SET_NONE && a->edit == b->edit) || (a->buffer != NO_BUFFER && a->buffer == b->buffer);
}

static void expect_message(const ug_status *s, const char *const expect[MAX_EXPECT])
{
    CU_ASSERT_EQUAL(s->code, UG_EINVAL);
    for (int i = 0; i < MAX_EXPECT && expect[i]; i++)
        if (!strstr(s->msg, expect[i])) {
            printf("\n  message \"%s\" lacks \"%s\"", s->msg, expect[i]);
            CU_FAIL("message lacks an expected part");
        }
}

/* Runs a call with rules i and j broken (j == i: one rule) and asserts the
 * message of the earlier one and an untouched output. */
static void rejected_pair(call *c, const broken_rule *rules, size_t i, size_t j)
{
    call_shape s = c->s;
    ug_buf buf[N_BUFS];
    memcpy(buf, c->buf, sizeof buf);
    if (j != i) apply(&rules[j], &s, buf);
    apply(&rules[i], &s, buf);
    const size_t bytes = c->buf[BUF_OUTPUT].count * ug_dtype_size(c->buf[BUF_OUTPUT].dtype);
    unsigned char *before = malloc(bytes);
    CU_ASSERT_FATAL(before != NULL);
    memcpy(before, c->buf[BUF_OUTPUT].data, bytes);
    ug_status st = run(&s, buf);
    expect_message(&st, rules[i].expect);
    CU_ASSERT_EQUAL(memcmp(before, c->buf[BUF_OUTPUT].data, bytes), 0);
    free(before);
}

static void check_rules(const call_shape *shape, const broken_rule *rules, size_t n)
{
    call c;
    call_open(&c, shape);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++)
            if (j == i || !conflict(&rules[i], &rules[j])) rejected_pair(&c, rules, i, j);
    call_close(&c);
}

static void test_bf16_rules_fire_in_the_seed_order_and_write_nothing(void)
{
    rng_state = 3;
    const call_shape shape = bf16_shape(4, 64, 16, true, 1e-6f, 100);
    check_rules(&shape, bf16_rules, sizeof bf16_rules / sizeof bf16_rules[0]);
}

static void test_f32_rules_fire_in_the_seed_order_and_write_nothing(void)
{
    rng_state = 5;
    const call_shape shape = f32_shape(2, 64, 16, 3, true, true, 10000.0f, 100);
    check_rules(&shape, f32_rules, sizeof f32_rules / sizeof f32_rules[0]);
}

/* Caches and freq_factors longer than half_rope_dim are accepted (the
 * contract says ">= half_rope_dim") and only their first entries are read. */
static void test_longer_tables_are_accepted(void)
{
    rng_state = 13;
    const call_shape shapes[] = {bf16_shape(2, 64, 16, false, 1e-6f, 100),
                                 f32_shape(2, 64, 16, 2, false, true, 10000.0f, 100)};
    for (size_t k = 0; k < 2; k++) {
        call c;
        call_open(&c, &shapes[k]);
        call_shape shorter = c.s;
        if (shorter.f32) shorter.pf.half_rope_dim = 9;
        else shorter.pb.half_rope_dim = 9;
        CU_ASSERT_EQUAL(run(&shorter, c.buf).code, UG_OK);
        call_close(&c);
    }
}

static void test_missing_buffers_and_data_are_rejected_naming_them(void)
{
    rng_state = 17;
    call_shape shape = bf16_shape(2, 64, 0, true, 1e-6f, 100);
    call c;
    call_open(&c, &shape);
    ug_buf buf[N_BUFS];
    memcpy(buf, c.buf, sizeof buf);
    /* half_rope_dim 0: empty caches pass the count rule, but must exist. */
    ug_status st = head_norm_rope_bf16(&c.s.pb, &buf[BUF_INPUT], &buf[BUF_OUTPUT], NULL, NULL, &buf[BUF_TABLE_B]);
    const char *const no_cos[MAX_EXPECT] = {"fused_head_norm_rope: cos_cache: no buffer (NULL)"};
    expect_message(&st, no_cos);
    st = head_norm_rope_bf16(&c.s.pb, NULL, &buf[BUF_OUTPUT], NULL, &buf[BUF_TABLE_A], &buf[BUF_TABLE_B]);
    const char *const no_input[MAX_EXPECT] = {"input element count 0 != n_heads(2) * head_dim(64) = 128"};
    expect_message(&st, no_input);
    buf[BUF_WEIGHT].data = NULL;
    st = run(&c.s, buf);
    const char *const no_data[MAX_EXPECT] = {"norm_weight has 64 elements but no data (NULL)"};
    expect_message(&st, no_data);
    CU_ASSERT_EQUAL(head_norm_rope_bf16(NULL, &buf[BUF_INPUT], &buf[BUF_OUTPUT], NULL, &buf[BUF_TABLE_A],
                                        &buf[BUF_TABLE_B]).code, UG_EINVAL);
    CU_ASSERT_EQUAL(head_norm_rope_f32(NULL, &buf[BUF_INPUT], &buf[BUF_OUTPUT], NULL, &buf[BUF_TABLE_A], NULL).code,
                    UG_EINVAL);
    call_close(&c);
}

/* seq_len * n_heads * head_dim beyond size_t is a rejection naming the product. */
static void test_f32_count_beyond_size_t_is_rejected(void)
{
    const head_norm_rope_f32_params p = {1u << 31, 1u << 31, 0, 1u << 31, 1e-6f, 10000.0f};
    ug_buf empty[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) empty[i] = (ug_buf){NULL, 0, f32_dtypes[i]};
    ug_status st = head_norm_rope_f32(&p, &empty[BUF_INPUT], &empty[BUF_OUTPUT], NULL, &empty[BUF_TABLE_A], NULL);
    const char *const expect[MAX_EXPECT] = {"seq_len(2147483648) * n_heads(2147483648) * head_dim(2147483648)",
                                            "does not fit in size_t"};
    expect_message(&st, expect);
}

UG_TEST_SUITE(head_norm_rope_kernel_suite, "kernel_head_norm_rope",
              UG_TEST(test_bf16_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_bf16_nan_payloads_on_every_isa),
              UG_TEST(test_f32_matches_the_scalar_statement_on_every_isa),
              UG_TEST(test_simd_bf16_rounding_is_the_scalar_rounding),
              UG_TEST(test_simd_store_writes_exactly_the_row_from_every_alignment),
              UG_TEST(test_unit_weight_equals_no_weight_and_position_zero_rotates_nothing),
              UG_TEST(test_all_zero_head_gives_zeros),
              UG_TEST(test_plan_formulas_are_the_seeds),
              UG_TEST(test_bf16_rules_fire_in_the_seed_order_and_write_nothing),
              UG_TEST(test_f32_rules_fire_in_the_seed_order_and_write_nothing),
              UG_TEST(test_longer_tables_are_accepted),
              UG_TEST(test_missing_buffers_and_data_are_rejected_naming_them),
              UG_TEST(test_f32_count_beyond_size_t_is_rejected));
