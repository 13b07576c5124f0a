/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_cumsum.h"

#include <math.h>
#include <string.h>

#include "exact_sum.h"

/* Holds any sum of at most 64 f32 values exactly: their bits span from
 * 2^-149 to below 2^134. */
enum { EXACT_SUM_PREC = 320 };

/* The fast path sums a chunk in one 128-bit two's complement integer on the
 * grid of its lowest f32 quantum: exact when every term is finite and the
 * terms' bits, with the carries of n terms, stay below bit 127. Then every
 * prefix has at most 127 significant bits, so the MPFR path's exact value at
 * EXACT_SUM_PREC bits is that integer too, and ug_xval_finish rounds it as
 * ug_ref_finish does (its RN_128 is the identity). A zero prefix is +0 on
 * both paths: +0 + -0 and exact cancellation give +0 under RNDN. */
enum { WINDOW_BITS = 127, F32_SIGNIFICAND = 24 };

/* An f32's quantum exponent (2^-149 for a subnormal), or false for inf/NaN. */
static bool f32_quantum(float x, int *e)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const int biased = (int)(bits >> 23 & 0xFF);
    *e = (biased ? biased : 1) - 150;
    return biased != 0xFF;
}

/* The grid of chunk terms x[0], x[stride], ... (n of them), or false when the
 * fast path cannot hold them. */
static bool chunk_grid(const float *x, size_t stride, size_t n, int *grid)
{
    int lowest = 0, highest = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        int e;
        if (!f32_quantum(x[i * stride], &e)) return false;
        if (x[i * stride] == 0) continue;
        lowest = any && lowest < e ? lowest : e;
        highest = any && highest > e ? highest : e;
        any = true;
    }
    const int carries = 64 - __builtin_clzll((uint64_t)n); /* sum of n terms < n 2^(top) */
    *grid = lowest;
    return highest + F32_SIGNIFICAND + carries - lowest <= WINDOW_BITS;
}

/* acc += x (finite) on the grid 2^grid. */
static void window_add(__int128 *acc, float x, int grid)
{
    if (x == 0) return; /* off the grid (chunk_grid skips zeros), and it adds nothing */
    int e;
    (void)f32_quantum(x, &e);
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const __int128 m = (__int128)((bits & 0x7FFFFFu) | ((bits >> 23 & 0xFF) ? 0x800000u : 0)) << (e - grid);
    *acc += bits >> 31 ? -m : m;
}

/* A prefix below 2^53 units (the common case) is its own double, exactly
 * (scale = 2^grid >= 2^-149 keeps it normal), so r_lo = +0 and RN_f32 is the
 * hardware's conversion; a wider one goes through the window's read. */
static void window_finish(__int128 acc, ug_ref_value *out, double bound, double abs_sum, int grid, double scale)
{
    const __int128 limit = (__int128)1 << 53;
    if (acc < limit && acc > -limit) {
        const double r = (double)(int64_t)acc * scale;
        const float rn = (float)r;
        uint32_t bits;
        memcpy(&bits, &rn, sizeof bits);
        ug_ref_fill(out, r, 0.0, bits, bound, abs_sum, 0, UG_F32);
        return;
    }
    const uint64_t limbs[2] = {(uint64_t)acc, (uint64_t)((unsigned __int128)acc >> 64)};
    const ug_xval exact = ug_xwin_read(limbs, 2, grid);
    ug_xval_finish(&exact, out, bound, abs_sum, 0, UG_F32);
}

ug_status gdn_chunk_cumsum_reference(const gdn_chunk_cumsum_shape *s, const float *g_raw,
                                     const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *g)
{
    (void)mode; /* no staged cast: both modes are the exact sum */
    mpfr_t sum;
    mpfr_init2(sum, EXACT_SUM_PREC);
    const bool flushes = ug_f32_flushes(model);
    const double underflow = ug_f32_underflow(model);
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++) {
            double abs_sum = 0;
            __int128 acc = 0;
            int grid = 0;
            double scale = 1;
            bool fast = false;
            for (size_t t = 0; t < s->t; t++) {
                const size_t i = t % s->bt, at = (b * s->t + t) * s->h + h;
                if (i == 0) {
                    const size_t n = s->t - t < s->bt ? s->t - t : s->bt;
                    fast = ug_ref_fast() && chunk_grid(&g_raw[at], s->h, n, &grid);
                    scale = ldexp(1.0, grid);
                    mpfr_set_zero(sum, 1);
                    acc = 0;
                    abs_sum = 0;
                }
                abs_sum += fabs((double)g_raw[at]);
                /* i additions after the first term; under gradual underflow
                 * an f32 addition is exact below 2^-126, so the absolute
                 * term is only a flushing profile's. */
                const double bounded = abs_sum * UG_F32_SLACK;
                const double flushed = flushes ? (double)i * underflow : 0;
                const double bound = ug_f32_gamma(i) * bounded * UG_F32_SLACK + flushed;
                if (fast) {
                    window_add(&acc, g_raw[at], grid);
                    window_finish(acc, &g[at], bound, bounded, grid, scale);
                } else {
                    mpfr_add_d(sum, sum, g_raw[at], MPFR_RNDN); /* exact */
                    ug_ref_finish(&g[at], sum, bound, bounded, 0, UG_F32);
                }
            }
        }
    mpfr_clear(sum);
    return ug_ok();
}
