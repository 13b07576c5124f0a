/* SPDX-License-Identifier: MIT */
#include "gdn_chunk_cumsum.h"

#include <math.h>

/* Holds any sum of at most 64 f32 values exactly: their bits span from
 * 2^-149 to below 2^134. */
enum { EXACT_SUM_PREC = 320 };

ug_status gdn_chunk_cumsum_reference(const gdn_chunk_cumsum_shape *s, const float *g_raw,
                                     const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *g)
{
    (void)mode; /* no staged cast: both modes are the exact sum */
    mpfr_t sum;
    mpfr_init2(sum, EXACT_SUM_PREC);
    for (size_t b = 0; b < s->b; b++)
        for (size_t h = 0; h < s->h; h++) {
            double abs_sum = 0;
            for (size_t t = 0; t < s->t; t++) {
                const size_t i = t % s->bt, at = (b * s->t + t) * s->h + h;
                if (i == 0) {
                    mpfr_set_zero(sum, 1);
                    abs_sum = 0;
                }
                mpfr_add_d(sum, sum, g_raw[at], MPFR_RNDN); /* exact */
                abs_sum += fabs((double)g_raw[at]);
                /* i additions after the first term; under gradual underflow
                 * an f32 addition is exact below 2^-126, so the absolute
                 * term is only a flushing profile's. */
                const double bounded = abs_sum * UG_F32_SLACK;
                const double flushed = ug_f32_flushes(model) ? (double)i * ug_f32_underflow(model) : 0;
                ug_ref_finish(&g[at], sum, ug_f32_gamma(i) * bounded * UG_F32_SLACK + flushed, bounded, 0, UG_F32);
            }
        }
    mpfr_clear(sum);
    return ug_ok();
}
