/* SPDX-License-Identifier: MIT */
/* Measures this machine's libm (and IEEE division and square root) in f32:
 * the largest error, in ulps of the exact result, of each operation the cpu
 * profile declares (fixtures/profiles/cpu.json), over the arguments the
 * families use. `make libm-ulp` builds and runs it; docs/profiles.md#cpu
 * records its output.
 *
 * Arguments: every f32 of each range, or every STRIDE-th one (default 7, a
 * prime, so every exponent and mantissa pattern class is visited; STRIDE 1
 * is exhaustive). The reference is the binary64 function (glibc's are
 * within 1 binary64 ulp: a 2^-28 f32-ulp uncertainty); each operation's
 * worst argument is then re-measured against MPFR at 200 bits, and that
 * figure is the one printed.
 *
 * usage: libm_ulp [STRIDE] */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { EXP, EXP2, LOG2, POW, RSQRT, SQRT, DIV, SIN, COS, N_OPS } op;
static const char *const op_names[N_OPS] = {"exp", "exp2", "log2", "pow", "rsqrt", "sqrt", "div", "sin", "cos"};

/* The second operand of the two-argument operations: pow's base (a RoPE theta)
 * and div's dividend. */
static float second_operand = 1.0f;

static float f32_of(op o, float x)
{
    switch (o) {
    case EXP: return expf(x);
    case EXP2: return exp2f(x);
    case LOG2: return log2f(x);
    case POW: return powf(second_operand, x);
    case RSQRT: return 1.0f / sqrtf(x);
    case SQRT: return sqrtf(x);
    case DIV: return second_operand / x;
    case SIN: return sinf(x);
    case COS: return cosf(x);
    default: return NAN;
    }
}

static double f64_of(op o, double x)
{
    switch (o) {
    case EXP: return exp(x);
    case EXP2: return exp2(x);
    case LOG2: return log2(x);
    case POW: return pow(second_operand, x);
    case RSQRT: return 1.0 / sqrt(x);
    case SQRT: return sqrt(x);
    case DIV: return second_operand / x;
    case SIN: return sin(x);
    case COS: return cos(x);
    default: return NAN;
    }
}

static void mpfr_of(op o, mpfr_t y, float x)
{
    mpfr_t t;
    mpfr_init2(t, 200);
    mpfr_set_flt(t, x, MPFR_RNDN);
    switch (o) {
    case EXP: mpfr_exp(y, t, MPFR_RNDN); break;
    case EXP2: mpfr_exp2(y, t, MPFR_RNDN); break;
    case LOG2: mpfr_log2(y, t, MPFR_RNDN); break;
    case POW: {
        mpfr_t b;
        mpfr_init2(b, 200);
        mpfr_set_flt(b, second_operand, MPFR_RNDN);
        mpfr_pow(y, b, t, MPFR_RNDN);
        mpfr_clear(b);
        break;
    }
    case RSQRT: mpfr_rec_sqrt(y, t, MPFR_RNDN); break;
    case SQRT: mpfr_sqrt(y, t, MPFR_RNDN); break;
    case DIV: mpfr_d_div(y, (double)second_operand, t, MPFR_RNDN); break;
    case SIN: mpfr_sin(y, t, MPFR_RNDN); break;
    case COS: mpfr_cos(y, t, MPFR_RNDN); break;
    default: mpfr_set_nan(y);
    }
    mpfr_clear(t);
}

/* The f32 ulp at |y|: 2^(e-24) for y in [2^(e-1), 2^e), 2^-149 below 2^-126. */
static double ulp_f32(double y)
{
    int e;
    frexp(fabs(y), &e);
    return e - 24 < -149 ? 0x1p-149 : ldexp(1.0, e - 24);
}

static double ulps_f64(op o, float x)
{
    const double ref = f64_of(o, x);
    const float got = f32_of(o, x);
    if (!isfinite(ref) || !isfinite(got) || fabs(ref) > FLT_MAX) return 0; /* overflow and poles: not ranges the families use */
    return fabs((double)got - ref) / ulp_f32(ref);
}

static double ulps_mpfr(op o, float x)
{
    mpfr_t y, d;
    mpfr_inits2(200, y, d, (mpfr_ptr)0);
    mpfr_of(o, y, x);
    mpfr_sub_d(d, y, (double)f32_of(o, x), MPFR_RNDN);
    const double ulps = fabs(mpfr_get_d(d, MPFR_RNDA)) / ulp_f32(mpfr_get_d(y, MPFR_RNDN));
    mpfr_clears(y, d, (mpfr_ptr)0);
    return ulps;
}

/* Ordered f32 values: an integer key whose order is the floats'. */
static int64_t key_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b >> 31 ? -(int64_t)(b & 0x7FFFFFFFu) : (int64_t)b;
}

static float float_of(int64_t k)
{
    uint32_t b = k < 0 ? (uint32_t)(-k) | 0x80000000u : (uint32_t)k;
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

typedef struct {
    op o;
    float lo, hi;
    float second; /* pow's base or div's dividend */
    const char *what;
} range;

static void measure(const range *r, long stride)
{
    second_operand = r->second;
    double worst = -1;
    float at = r->lo;
    for (int64_t k = key_of(r->lo), end = key_of(r->hi); k <= end; k += stride) {
        const float x = float_of(k);
        const double e = ulps_f64(r->o, x);
        if (e > worst) worst = e, at = x;
    }
    /* the binary64 reference's own error may hide a neighbour: re-measure the
     * worst argument and its two neighbours in MPFR */
    double exact = 0;
    for (int d = -1; d <= 1; d++) {
        const float x = float_of(key_of(at) + d);
        if (x >= r->lo && x <= r->hi) exact = fmax(exact, ulps_mpfr(r->o, x));
    }
    printf("%-6s %-44s max %.6f ulp at x = %a (%.9g)\n", op_names[r->o], r->what, exact, (double)at, (double)at);
}

int main(int argc, char **argv)
{
    const long stride = argc > 1 ? strtol(argv[1], NULL, 10) : 7;
    if (stride < 1) {
        fprintf(stderr, "libm_ulp: STRIDE must be a positive integer\n");
        return 2;
    }
    /* The families' arguments: gates and gate differences (exp), the RoPE
     * exponent -2i/d log2(theta) (exp2), log2(theta), theta^(-2i/d) (pow),
     * 1/sqrt of a mean square plus eps and 1/sqrt(DV) (rsqrt, sqrt), the
     * softmax 1/S and ss/d (div), and angles pos * inv_freq up to the largest
     * position the sweeps use, 2^19 (sin, cos). */
    const range ranges[] = {
        {EXP, -104.0f, 88.0f, 1, "expf, x in [-104, 88]"},
        {EXP2, -150.0f, 127.0f, 1, "exp2f, x in [-150, 127]"},
        {LOG2, FLT_TRUE_MIN, FLT_MAX, 1, "log2f, x in (0, FLT_MAX]"},
        {POW, -1.0f, 0.0f, 10000.0f, "powf(10000, x), x in [-1, 0]"},
        {POW, -1.0f, 0.0f, 500000.0f, "powf(500000, x), x in [-1, 0]"},
        {POW, -1.0f, 0.0f, 1000000.0f, "powf(1e6, x), x in [-1, 0]"},
        {RSQRT, FLT_TRUE_MIN, FLT_MAX, 1, "1/sqrtf(x), x in (0, FLT_MAX]"},
        {SQRT, 0.0f, FLT_MAX, 1, "sqrtf(x), x in [0, FLT_MAX]"},
        {DIV, 0x1p-60f, 0x1p60f, 1.0f, "1/x, x in [2^-60, 2^60]"},
        {DIV, 0x1p-60f, 0x1p60f, 3.0f, "3/x, x in [2^-60, 2^60]"},
        {SIN, -524288.0f, 524288.0f, 1, "sinf(x), |x| <= 2^19"},
        {COS, -524288.0f, 524288.0f, 1, "cosf(x), |x| <= 2^19"},
    };
    printf("libm_ulp: stride %ld (every %ld-th f32 of each range)\n", stride, stride);
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) measure(&ranges[i], stride);
    mpfr_free_cache();
    return 0;
}
