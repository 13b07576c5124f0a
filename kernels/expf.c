/* SPDX-License-Identifier: MIT */
#include "expf.h"

#include <math.h>

#include "../core/bf16.h"

const ug_expf_constants ug_expf_data = {
    .tab = {0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
            0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
            0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
            0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
            0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
            0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
            0x3fefa4afa2a490da, 0x3fefd0765b6e4540},
    .inv_ln2_n = 0x40471547652b82fe,
    .shift = 0x4338000000000000,
    .c0 = 0x3ebc6af84b912394,
    .c1 = 0x3f2ebfce50fac4f3,
    .c2 = 0x3f962e42ff0c52d6,
};

/* The overflow and underflow results are products of two floats, as libm
 * forms them (so that they raise its exceptions); volatile keeps them
 * products at run time. */
static float xflow(float half)
{
    volatile float h = half;
    return h * h;
}

float ug_expf(float x)
{
    const ug_expf_constants *d = &ug_expf_data;
    const uint32_t bits = ug_f32_bits(x);
    if (ug_expf_special(bits)) {
        if (bits == 0xFF800000u) return 0.0f;       /* -inf */
        if (((bits >> 20) & 0x7FF) >= 0x7F8) return x + x; /* +inf, NaN */
        if (x > 0x1.62e42ep6f) return xflow(0x1p97f); /* above log(0x1p128): +inf */
        if (x < -0x1.9fe368p6f) return xflow(0x1p-95f); /* below log(0x1p-150): +0 */
        if (x < -0x1.9d1d9ep6f) return xflow(0x1.4p-75f); /* below log(0x1p-149): the least subnormal */
    }
    const double xd = x, inv_ln2_n = ug_expf_constant(d->inv_ln2_n), shift = ug_expf_constant(d->shift);
    const double shifted = fma(inv_ln2_n, xd, shift);
    uint64_t ki;
    memcpy(&ki, &shifted, sizeof ki);
    const double kd = shifted - shift, r = fma(inv_ln2_n, xd, -kd);
    const double s = ug_expf_constant(d->tab[ki % UG_EXPF_TABLE_SIZE] + (ki << (52 - UG_EXPF_TABLE_BITS)));
    const double z = fma(r, ug_expf_constant(d->c0), ug_expf_constant(d->c1));
    const double y = fma(r, ug_expf_constant(d->c2), 1.0);
    return (float)(fma(z, r * r, y) * s);
}
