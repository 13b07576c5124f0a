/* SPDX-License-Identifier: MIT */
#include "bf16.h"

#include <math.h>
#include <string.h>

double ug_ulp_special(double x, int fraction_bits, int min_exp)
{
    int e;
    if (x == 0) return ldexp(1.0, min_exp);
    frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    int q = e - 1 - fraction_bits;
    return ldexp(1.0, q < min_exp ? min_exp : q);
}

/* Maps sign-magnitude bits onto a line where adjacent values differ by one. */
static int64_t ordered_key(uint32_t bits, uint32_t sign_bit)
{
    int64_t magnitude = bits & (sign_bit - 1);
    return (bits & sign_bit) ? -magnitude : magnitude;
}

static uint32_t key_dist(int64_t a, int64_t b)
{
    return (uint32_t)(a > b ? a - b : b - a);
}

uint32_t ug_ordered_dist_bf16(ug_bf16 a, ug_bf16 b)
{
    return key_dist(ordered_key(a, 0x8000u), ordered_key(b, 0x8000u));
}

uint32_t ug_ordered_dist_f32(uint32_t a_bits, uint32_t b_bits)
{
    return key_dist(ordered_key(a_bits, 0x80000000u), ordered_key(b_bits, 0x80000000u));
}
