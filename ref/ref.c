/* SPDX-License-Identifier: MIT */
#include "ref.h"

#include <math.h>
#include <stdatomic.h>

#include "../core/bf16.h"
#include "round.h"

static atomic_bool fast_path = true;

void ug_ref_set_fast(bool on) { atomic_store(&fast_path, on); }

bool ug_ref_fast(void) { return atomic_load(&fast_path); }

const char *ug_ref_mode_name(ug_ref_mode mode)
{
    return mode == UG_REF_EXACT ? "exact" : mode == UG_REF_STAGED ? "staged" : "?";
}

/* |bf16 value - x|, rounded up to a double. */
static double deviation_up(uint16_t candidate, const mpfr_t x)
{
    mpfr_t d;
    mpfr_init2(d, mpfr_get_prec(x) + 160);
    mpfr_sub_d(d, x, (double)ug_bf16_to_f32(candidate), MPFR_RNDU);
    mpfr_abs(d, d, MPFR_RNDU);
    double out = mpfr_get_d(d, MPFR_RNDU);
    mpfr_clear(d);
    return out;
}

void ug_stage_operand(const mpfr_t x, const mpfr_t radius, ug_staged *out)
{
    if (!mpfr_number_p(x)) { /* NaN or +-inf casts to itself whatever the window */
        const uint16_t rn = ug_mpfr_to_bf16(x);
        *out = (ug_staged){.rn = rn, .lo = rn, .hi = rn, .mag = INFINITY, .abs_x = INFINITY};
        return;
    }
    out->rn = ug_mpfr_to_bf16(x);
    out->abs_x = fabs(mpfr_get_d(x, MPFR_RNDA));
    ug_mpfr_bf16_window(x, radius, &out->lo, &out->hi);
    out->flagged = out->lo != out->hi;
    double lo = ug_bf16_to_f32(out->lo), hi = ug_bf16_to_f32(out->hi);
    out->mag = fmax(fabs(lo), fabs(hi));
    out->gap = out->flagged ? fabs(hi - lo) : 0.0;
    double dev_rn = deviation_up(out->rn, x);
    out->dev = out->flagged ? fmax(dev_rn, fmax(deviation_up(out->lo, x), deviation_up(out->hi, x)))
                            : dev_rn;
}

void ug_ref_finish(ug_ref_value *out, const mpfr_t r, double pre_round_bound, double abs_sum,
                   uint32_t flagged, ug_dtype dtype)
{
    out->r_hi = mpfr_get_d(r, MPFR_RNDN);
    out->r_lo = 0.0;
    if (mpfr_number_p(r) && isfinite(out->r_hi)) {
        mpfr_t rest;
        mpfr_init2(rest, mpfr_get_prec(r));
        mpfr_sub_d(rest, r, out->r_hi, MPFR_RNDN); /* exact: r_hi is r's leading bits */
        out->r_lo = mpfr_get_d(rest, MPFR_RNDN);
        mpfr_clear(rest);
    }
    ug_ref_fill(out, out->r_hi, out->r_lo, dtype == UG_BF16 ? ug_mpfr_to_bf16(r) : ug_mpfr_to_f32_bits(r),
                pre_round_bound, abs_sum, flagged, dtype);
}

void ug_ref_fill(ug_ref_value *out, double r_hi, double r_lo, uint32_t rn_bits, double pre_round_bound,
                 double abs_sum, uint32_t flagged, ug_dtype dtype)
{
    out->r_hi = r_hi;
    out->r_lo = r_lo;
    out->rn_bits = rn_bits;
    out->flagged = flagged;
    out->abs_sum = abs_sum;
    out->wild = UG_WILD_NONE;
    out->no_bound = isinf(pre_round_bound) && isfinite(r_hi);
    /* |RN(y) - r| <= |RN(y) - y| + |y - r| <= ulp(|r| + E)/2 + E, ulp monotone. */
    double magnitude = fabs(out->r_hi) + fabs(out->r_lo) + pre_round_bound;
    magnitude *= UG_F32_SLACK;
    double half_ulp = 0.5 * (dtype == UG_BF16 ? ug_ulp_bf16(magnitude) : ug_ulp_f32(magnitude));
    out->bound = isfinite(magnitude) ? (pre_round_bound + half_ulp) * UG_F32_SLACK : INFINITY;
}

void ug_ref_allow_flushed_output(const ug_f32_model *m, ug_ref_value *v, size_t n)
{
    if (!ug_f32_flushes(m)) return;
    for (size_t i = 0; i < n; i++) {
        const double magnitude = fabs(v[i].r_hi) + fabs(v[i].r_lo);
        /* a kernel value within the bound may lie below 2^-126, and so be +-0 */
        if (isfinite(magnitude) && magnitude - v[i].bound < UG_F32_MIN_NORMAL)
            v[i].bound = fmax(v[i].bound, magnitude * UG_F32_SLACK);
    }
}
