/* SPDX-License-Identifier: MIT */
#include "gdn_solve_tril.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "exact_sum.h"
#include "f32_model.h"
#include "limbs256.h"
#include "rowsimd.h"

enum { START_PREC = 256, MAX_PREC = 4096 };
/* The reference's own deviation must stay below 2^-40 of the f32 subnormal
 * spacing 2^-149 (and so far below every bound). */
#define TAU_LIMIT 0x1p-190
/* Covers the binary64 roundings of the nested magnitude sums (depth < 2^13
 * roundings of nonnegative values, each 2^-53). */
#define NESTED_SLACK (1.0 + 0x1p-36)

/* The fast path (ug_ref_fast()) computes X~ at START_PREC bits as integers
 * (docs/error-model.md §2.1, "gdn_solve_tril"): an entry is ±sig·2^e with
 * sig a 256-bit integer whose top bit is set, a term L[i][m] X~[m][j] the
 * exact 280-bit product of sig and L's 24-bit significand, and each sum is
 * taken in a window of two's complement limbs whose unit lies
 * WINDOW_LOW_BITS below the highest lowest bit of its terms: exact unless a
 * term reaches below the window, and rounded once to 256 bits where the
 * dropped parts cannot change that rounding. A chunk the fast path cannot
 * certify (a non-finite L, a sum whose rounding the dropped parts might
 * change, a precision above START_PREC) goes through the MPFR path whole;
 * an entry outside the normal doubles is finished by MPFR. */
enum {
    WINDOW_LOW_BITS = 63,  /* the window's unit lies this far below the largest term's lowest bit */
    WINDOW_LIMBS = 6,      /* terms below 2^(280 + 63), fewer than 2^40 of them, and the sign */
    TERM_LIMBS = UG_LIMBS256 + 1,
    DIGIT_BITS = 52,        /* row_group_ifma's digits */
    X_DIGITS = 6,           /* sig, sig·2^26 or sig·2^52 (one digit up) */
    SUM_DIGITS = X_DIGITS + 1,
    LANES = 8,
};

typedef struct {
    uint64_t sig[TERM_LIMBS];   /* |x| = sig·2^e, sig's top bit set (limb 4 zero); unused for a zero */
    uint64_t sig32[TERM_LIMBS]; /* sig·2^32: the terms' factors for shifts of 32 to 63 bits */
    int e;
    bool neg, zero;
} wide_entry;

typedef struct {
    uint64_t sig; /* |l| = sig·2^e, sig in [2^23, 2^24); 0 for a zero (no term) */
    int e;
    bool neg;
} l_factor;

typedef struct {
    bool simd;         /* the bound's column sums on AVX-512 */
    bool ifma;         /* the sums of eight entries of a row at once on AVX-512 IFMA (row_group_ifma) */
    uint64_t *digits;  /* [BT][2][X_DIGITS][BT] by (m, form, digit, j): X~[m][j]'s sig (form 0) and
                          sig·2^26 (form 1) in 52-bit digits, for row_group_ifma */
    int32_t *ex;       /* [BT][BT] X~[m][j]'s e */
    uint64_t *nonzero, *negative; /* [BT] bit j of m: X~[m][j] is nonzero / negative */
    wide_entry *x;     /* [BT][BT] X~ by columns: x[j * BT + m] = X~[m][j] */
    l_factor *lf;      /* [BT][BT] L by rows */
    double *near;      /* [BT][BT] RN_53(X~) */
    double *away;      /* [BT][BT] |RNA_53(X~)| */
    double *rho;       /* [BT][BT] rho[m][j]: propagate_bound's rho of column j */
    double *coef;      /* [BT] the residual's gamma for m - j (index m - j) */
    mpfr_t scratch;    /* START_PREC bits: an entry finished by MPFR */
    mpz_t scratch_z;
    ug_ref_value zero_value; /* the value of an entry above the diagonal */
} fast_chunk;

typedef struct {
    size_t bt;
    const ug_f32_model *model;
    mpfr_t *x;          /* [BT][BT] the inverse, lower triangle */
    mpfr_t *l_mp;       /* [BT][BT] L's f32 values, exact at 24 bits: the terms multiply them directly */
    mpfr_t *terms;      /* [BT] */
    mpfr_ptr *term_ptrs;
    double *l, *abs_l, *abs_x, *delta, *skeel, *abs_lx; /* [BT][BT] */
    double *rho;                                          /* [BT] */
    fast_chunk fast;
} workspace;

static void workspace_free(workspace *ws)
{
    const size_t bt = ws->bt;
    if (ws->x)
        for (size_t i = 0; i < bt * bt; i++) mpfr_clear(ws->x[i]);
    if (ws->terms)
        for (size_t i = 0; i < bt; i++) mpfr_clear(ws->terms[i]);
    if (ws->l_mp)
        for (size_t i = 0; i < bt * bt; i++) mpfr_clear(ws->l_mp[i]);
    free(ws->x);
    free(ws->l_mp);
    free(ws->terms);
    free(ws->term_ptrs);
    free(ws->l);
    if (ws->fast.x) {
        mpfr_clear(ws->fast.scratch);
        mpz_clear(ws->fast.scratch_z);
    }
    free(ws->fast.x);
    free(ws->fast.lf);
    free(ws->fast.near);
    free(ws->fast.digits);
}

static ug_status workspace_init(workspace *ws, size_t bt)
{
    ws->bt = bt;
    mpfr_t *x = calloc(bt * bt, sizeof *x), *terms = calloc(bt, sizeof *terms), *l_mp = calloc(bt * bt, sizeof *l_mp);
    ws->term_ptrs = calloc(bt, sizeof *ws->term_ptrs);
    ws->l = calloc(6 * bt * bt + bt, sizeof *ws->l);
    if (!x || !terms || !l_mp || !ws->term_ptrs || !ws->l) {
        free(x);
        free(terms);
        free(l_mp);
        ws->x = NULL;
        ws->terms = NULL;
        ws->l_mp = NULL;
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_solve_tril reference: cannot allocate a %zu x %zu workspace", bt, bt);
    }
    ws->x = x;
    ws->terms = terms;
    ws->l_mp = l_mp;
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(ws->l_mp[i], 24);
    ws->abs_l = ws->l + bt * bt;
    ws->abs_x = ws->abs_l + bt * bt;
    ws->delta = ws->abs_x + bt * bt;
    ws->skeel = ws->delta + bt * bt;
    ws->abs_lx = ws->skeel + bt * bt;
    ws->rho = ws->abs_lx + bt * bt;
    for (size_t i = 0; i < bt * bt; i++) mpfr_init2(ws->x[i], START_PREC);
    for (size_t i = 0; i < bt; i++) {
        mpfr_init2(ws->terms[i], START_PREC + 64);
        ws->term_ptrs[i] = ws->terms[i];
    }
    if (!ug_ref_fast()) return ug_ok();
    fast_chunk *f = &ws->fast;
    f->simd = ug_ref_simd_available() && __builtin_cpu_supports("avx512f") && bt % LANES == 0;
    f->ifma = ug_ref_simd_available() && __builtin_cpu_supports("avx512vl") && bt <= 64 && bt % LANES == 0;
    f->x = malloc(bt * bt * sizeof *f->x);
    f->lf = malloc(bt * bt * sizeof *f->lf);
    f->near = malloc((3 * bt * bt + bt) * sizeof *f->near);
    if (f->ifma) f->digits = calloc(2 * X_DIGITS * bt * bt + 2 * bt + bt * bt, sizeof *f->digits);
    if (!f->x || !f->lf || !f->near || (f->ifma && !f->digits)) {
        free(f->x);
        f->x = NULL; /* nothing of MPFR's to clear */
        workspace_free(ws);
        return ug_fail(UG_ENOMEM, "gdn_solve_tril reference: cannot allocate a %zu x %zu fast workspace", bt, bt);
    }
    f->away = f->near + bt * bt;
    f->rho = f->away + bt * bt;
    f->coef = f->rho + bt * bt;
    if (f->ifma) {
        f->nonzero = f->digits + 2 * X_DIGITS * bt * bt;
        f->negative = f->nonzero + bt;
        f->ex = (int32_t *)(void *)(f->negative + bt);
    }
    mpfr_init2(f->scratch, START_PREC);
    mpz_init(f->scratch_z);
    mpfr_t zero;
    mpfr_init2(zero, 2);
    mpfr_set_zero(zero, 1);
    ug_ref_finish(&f->zero_value, zero, 0, 0, 0, UG_F32);
    mpfr_clear(zero);
    return ug_ok();
}

/* X~ at prec bits: X~[i][j] = RN(-sum_{m=j}^{i-1} L[i][m] X~[m][j]), the
 * terms exact (an f32 times a prec-bit value fits in prec + 24 bits). */
static void substitute(workspace *ws, mpfr_prec_t prec)
{
    const size_t bt = ws->bt;
    for (size_t i = 0; i < bt * bt; i++) mpfr_set_prec(ws->x[i], prec);
    for (size_t i = 0; i < bt; i++) mpfr_set_prec(ws->terms[i], prec + 64);
    for (size_t i = 0; i < bt; i++) {
        for (size_t j = i; j < bt; j++) mpfr_set_ui(ws->x[i * bt + j], i == j, MPFR_RNDN);
        for (size_t j = 0; j < i; j++) {
            size_t n = 0;
            for (size_t m = j; m < i; m++) {
                if (ws->l[i * bt + m] == 0) continue; /* a zero term adds nothing */
                mpfr_mul(ws->term_ptrs[n], ws->x[m * bt + j], ws->l_mp[i * bt + m], MPFR_RNDN);
                n++;
            }
            mpfr_sum(ws->x[i * bt + j], ws->term_ptrs, n, MPFR_RNDN);
            mpfr_neg(ws->x[i * bt + j], ws->x[i * bt + j], MPFR_RNDN);
        }
    }
}

double gdn_solve_tril_kappa(size_t bt, const double *abs_l, const double *abs_x)
{
    double norm_t = 0, norm_x = 0;
    for (size_t i = 0; i < bt; i++) {
        double row_t = 1, row_x = 0;
        for (size_t j = 0; j < bt; j++) {
            if (j < i) row_t += abs_l[i * bt + j];
            if (j <= i) row_x += abs_x[i * bt + j];
        }
        norm_t = fmax(norm_t, row_t);
        norm_x = fmax(norm_x, row_x);
    }
    return norm_t * norm_x * UG_F32_SLACK * UG_F32_SLACK;
}

/* delta[i][j] >= |X^ - X| for the kernel's X^ (error model §3): per column j,
 * rho[m] bounds row m's residual, gamma_{m-j} sum_l |L[m][l]| |X^[l][j]| plus
 * underflow, with |X^| <= |X| + delta; then delta[m][j] = sum_p |X[m][p]| rho[p]. */
static void propagate_bound(workspace *ws)
{
    const size_t bt = ws->bt;
    const double *al = ws->abs_l, *ax = ws->abs_x;
    double *delta = ws->delta, *rho = ws->rho;
    for (size_t k = 0; k < bt * bt; k++) delta[k] = 0;
    for (size_t j = 0; j < bt; j++)
        for (size_t m = j + 1; m < bt; m++) {
            double s = 0;
            for (size_t l = j; l < m; l++) s += al[m * bt + l] * (ax[l * bt + j] + delta[l * bt + j]);
            /* L X^ multiplies f32 by f32: a tf32 profile rounds both operands */
            rho[m] = ug_f32_dot_gamma(ws->model, ug_f32_gamma(m - j) * UG_F32_SLACK) * s + (double)(m - j) * ug_f32_underflow(ws->model);
            double d = 0;
            for (size_t p = j + 1; p <= m; p++) d += ax[m * bt + p] * rho[p];
            delta[m * bt + j] = d;
        }
}

/* skeel = |X| |L| |X| (the first-order magnitude of the inverse's error). */
static void skeel_magnitudes(workspace *ws)
{
    const size_t bt = ws->bt;
    double *lx = ws->abs_lx;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            double s = 0;
            for (size_t m = j; m < i; m++) s += ws->abs_l[i * bt + m] * ws->abs_x[m * bt + j];
            lx[i * bt + j] = s;
        }
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            double s = 0;
            for (size_t m = j; m <= i; m++) s += ws->abs_x[i * bt + m] * lx[m * bt + j];
            ws->skeel[i * bt + j] = s;
        }
}

/* ---- the fast path ------------------------------------------------------------------ */

/* L's entries as factors (f->lf); false when one is not finite. */
static bool load_factors(fast_chunk *f, size_t bt, const double *l)
{
    for (size_t k = 0; k < bt * bt; k++) {
        l_factor *o = &f->lf[k];
        o->sig = 0;
        if (!isfinite(l[k])) return false;
        if (l[k] == 0) continue;
        /* an f32 as a double: normal, its significand's low 29 bits zero */
        uint64_t bits;
        memcpy(&bits, &l[k], sizeof bits);
        o->sig = ((bits & ((UINT64_C(1) << 52) - 1)) | UINT64_C(1) << 52) >> 29;
        o->e = (int)(bits >> 52 & 0x7FF) - 1075 + 29;
        o->neg = l[k] < 0;
    }
    return true;
}

/* acc += (-1)^(mask & 1) t, mod 2^(64 WINDOW_LIMBS): inline adc on x86-64
 * (GCC 12 carries the C loop through memory and setc). */
static inline void add_signed(uint64_t acc[WINDOW_LIMBS], const uint64_t t[WINDOW_LIMBS], uint64_t mask)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t t0 = t[0], t1 = t[1], t2 = t[2], t3 = t[3], t4 = t[4], t5 = t[5];
    __asm__("xor %[m], %[t0]\n\txor %[m], %[t1]\n\txor %[m], %[t2]\n\txor %[m], %[t3]\n\txor %[m], %[t4]\n\t"
            "xor %[m], %[t5]\n\tbt $0, %[m]\n\tadc %[t0], %[a0]\n\tadc %[t1], %[a1]\n\tadc %[t2], %[a2]\n\t"
            "adc %[t3], %[a3]\n\tadc %[t4], %[a4]\n\tadc %[t5], %[a5]"
            : [a0] "+m"(acc[0]), [a1] "+m"(acc[1]), [a2] "+m"(acc[2]), [a3] "+m"(acc[3]), [a4] "+m"(acc[4]),
              [a5] "+m"(acc[5]), [t0] "+&r"(t0), [t1] "+&r"(t1), [t2] "+&r"(t2), [t3] "+&r"(t3), [t4] "+&r"(t4),
              [t5] "+&r"(t5)
            : [m] "r"(mask)
            : "cc");
#else
    uint64_t carry = mask & 1;
    for (int k = 0; k < WINDOW_LIMBS; k++) {
        const unsigned __int128 s = (unsigned __int128)acc[k] + (t[k] ^ mask) + carry;
        acc[k] = (uint64_t)s;
        carry = (uint64_t)(s >> 64);
    }
#endif
}

/* acc += ±x·l·2^off for a term at or above the window's unit (0 <= off <
 * 64): the shift goes into l's factor (below 2^56) and, from 32 bits on,
 * into x's (sig32), so the product lands on the unit without shifting. On
 * x86-64 the product and the signed add are one block of mul and adc in
 * registers (GCC 12 passed the C version's top limbs through the stack). */
static inline void add_term(uint64_t acc[WINDOW_LIMBS], const wide_entry *x, const l_factor *l, int off)
{
    const uint64_t *c = off < 32 ? x->sig : x->sig32, k = l->sig << (off & 31);
    const uint64_t mask = l->neg != x->neg ? ~UINT64_C(0) : 0;
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t p0, p1, p2, p3, p4, p5;
    __asm__("movq %[c0], %%rax\n\tmulq %[k]\n\tmovq %%rax, %[p0]\n\tmovq %%rdx, %[p1]\n\t"
            "movq %[c1], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p1]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p2]\n\t"
            "movq %[c2], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p2]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p3]\n\t"
            "movq %[c3], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p3]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p4]\n\t"
            "movq %[c4], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p4]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p5]\n\t"
            "xorq %[m], %[p0]\n\txorq %[m], %[p1]\n\txorq %[m], %[p2]\n\txorq %[m], %[p3]\n\t"
            "xorq %[m], %[p4]\n\txorq %[m], %[p5]\n\tbtq $0, %[m]\n\t"
            "adcq %[p0], %[a0]\n\tadcq %[p1], %[a1]\n\tadcq %[p2], %[a2]\n\tadcq %[p3], %[a3]\n\t"
            "adcq %[p4], %[a4]\n\tadcq %[p5], %[a5]"
            : [a0] "+m"(acc[0]), [a1] "+m"(acc[1]), [a2] "+m"(acc[2]), [a3] "+m"(acc[3]), [a4] "+m"(acc[4]),
              [a5] "+m"(acc[5]), [p0] "=&r"(p0), [p1] "=&r"(p1), [p2] "=&r"(p2), [p3] "=&r"(p3), [p4] "=&r"(p4),
              [p5] "=&r"(p5)
            : [k] "r"(k), [m] "r"(mask), [c0] "m"(c[0]), [c1] "m"(c[1]), [c2] "m"(c[2]), [c3] "m"(c[3]),
              [c4] "m"(c[4])
            : "rax", "rdx", "cc");
#else
    uint64_t p[WINDOW_LIMBS];
    ug_limbs256_mul_1(k, c, p);
    const unsigned __int128 top = (unsigned __int128)c[UG_LIMBS256] * k + p[UG_LIMBS256];
    p[UG_LIMBS256] = (uint64_t)top;
    p[UG_LIMBS256 + 1] = (uint64_t)(top >> 64);
    add_signed(acc, p, mask);
#endif
}

/* acc += ±floor(x·l·2^off) for a term reaching below the unit (off < 0);
 * returns whether nonzero bits fell below. */
static bool add_term_below(uint64_t acc[WINDOW_LIMBS], const wide_entry *x, const l_factor *l, int off)
{
    uint64_t p[TERM_LIMBS], t[WINDOW_LIMBS] = {0};
    ug_limbs256_mul_1(l->sig, x->sig, p); /* < 2^280 */
    if (-off >= 64 * TERM_LIMBS) return true;
    const int q = -off >> 6, r = -off & 63;
    bool dropped = (p[q] & ((UINT64_C(1) << r) - 1)) != 0;
    for (int k = 0; k < q; k++) dropped |= p[k] != 0;
    for (int k = 0; k + q < TERM_LIMBS; k++)
        t[k] = p[k + q] >> r | (k + q + 1 < TERM_LIMBS ? (p[k + q + 1] << 1) << (63 - r) : 0);
    add_signed(acc, t, l->neg != x->neg ? ~UINT64_C(0) : 0);
    return dropped;
}

/* Whether the low `bits` bits of mag (complemented within them when
 * `complement`) are at least n (n < 2^62). */
static bool low_bits_at_least(const uint64_t *mag, int bits, bool complement, uint64_t n)
{
    for (int k = (bits - 1) >> 6; k >= 0; k--) {
        const int width = bits - 64 * k >= 64 ? 64 : bits - 64 * k;
        const uint64_t mask = width == 64 ? ~UINT64_C(0) : (UINT64_C(1) << width) - 1;
        const uint64_t word = (complement ? ~mag[k] : mag[k]) & mask;
        if (k > 0 ? word != 0 : word >= n) return true;
    }
    return false;
}

static bool bit_set(const uint64_t *mag, int bit) { return mag[bit >> 6] >> (bit & 63) & 1; }

/* Bits [pos, pos + 64) of mag[0 .. n) (pos may be negative: zeros below). */
static inline uint64_t word_at_bit(const uint64_t *mag, int n, int pos)
{
    const int q = pos >> 6, r = pos & 63; /* floor */
    const uint64_t lo = q >= 0 && q < n ? mag[q] : 0, hi = q + 1 >= 0 && q + 1 < n ? mag[q + 1] : 0;
    return r ? lo >> r | hi << (64 - r) : lo;
}

/* sig's limb 4 and sig32 from sig[0 .. 4). */
static void set_factors(wide_entry *x)
{
    x->sig[UG_LIMBS256] = 0;
    x->sig32[0] = x->sig[0] << 32;
    for (int k = 1; k < TERM_LIMBS; k++) x->sig32[k] = x->sig[k] << 32 | x->sig[k - 1] >> 32;
}

/* x = -RN_START_PREC(S) for the window's sum S (acc·2^unit exactly, or
 * within `dropped` units when that many terms lost bits below the window);
 * false when the dropped bits might change the rounding. A zero S is
 * exact only without dropped bits, and then +0 (its terms were not all
 * zeros: sum_entry): x = -0. */
static bool round_window(const uint64_t acc[WINDOW_LIMBS], int unit, unsigned dropped, wide_entry *x)
{
    uint64_t mag[WINDOW_LIMBS];
    const bool neg = ug_xwin_magnitude(acc, WINDOW_LIMBS, mag);
    const int len = ug_xwin_bit_length(mag, WINDOW_LIMBS);
    x->neg = !neg;
    x->zero = len == 0;
    if (len == 0) {
        x->neg = true;
        return dropped == 0;
    }
    const int cut = len - START_PREC; /* bits below the rounded value's unit (none when <= 0) */
    bool up = false;
    if (cut <= 0 && dropped) return false;
    if (cut > 0) {
        const bool half = bit_set(mag, cut - 1);
        if (dropped) {
            /* S lies within `dropped` units of the window's value: it rounds
             * as the window's value when no midpoint is that close and the
             * cut unit is wide enough that S keeps the value's binade or
             * rounds to its end (2^(cut - 2) > dropped). */
            if (cut < 2 || (cut - 2 < 62 && (UINT64_C(1) << (cut - 2)) <= dropped)) return false;
            if (!low_bits_at_least(mag, cut - 1, !half, half ? dropped : dropped - 1)) return false;
            up = half;
        } else {
            up = half && (low_bits_at_least(mag, cut - 1, false, 1) || bit_set(mag, cut));
        }
    }
    uint64_t carry = up;
    for (int k = 0; k < UG_LIMBS256; k++) {
        x->sig[k] = word_at_bit(mag, WINDOW_LIMBS, cut + 64 * k) + carry;
        carry = carry && x->sig[k] == 0;
    }
    x->e = unit + cut;
    if (carry) { /* 2^256: the next binade */
        x->sig[UG_LIMBS256 - 1] = UINT64_C(1) << 63;
        x->e++;
    }
    set_factors(x);
    return true;
}

/* X~[i][j] = -RN_START_PREC(sum_{m=j}^{i-1} L[i][m] X~[m][j]), the terms
 * and zeros as substitute() has them; false when uncertified. */
static bool sum_entry(const fast_chunk *f, size_t bt, size_t i, size_t j, wide_entry *out)
{
    const l_factor *row = f->lf + i * bt;
    const wide_entry *col = f->x + j * bt;
    size_t n = 0;
    bool only_negative_zeros = true;
    int top = INT_MIN;
    for (size_t m = j; m < i; m++) {
        if (!row[m].sig) continue; /* a zero L adds no term */
        n++;
        if (col[m].zero) {
            only_negative_zeros &= row[m].neg != col[m].neg;
            continue;
        }
        only_negative_zeros = false;
        if (row[m].e + col[m].e > top) top = row[m].e + col[m].e;
    }
    if (top == INT_MIN) {
        /* no term, or zeros only: mpfr_sum's exact zero is -0 when every
         * term is -0 (at least one), +0 otherwise; X~ is its negation */
        out->zero = true;
        out->neg = !(n > 0 && only_negative_zeros);
        return true;
    }
    const int unit = top - WINDOW_LOW_BITS;
    uint64_t acc[WINDOW_LIMBS] = {0};
    unsigned dropped = 0;
    for (size_t m = j; m < i; m++) {
        if (!row[m].sig || col[m].zero) continue;
        const int off = row[m].e + col[m].e - unit;
        if (off >= 0)
            add_term(acc, &col[m], &row[m], off);
        else
            dropped += add_term_below(acc, &col[m], &row[m], off);
    }
    return round_window(acc, unit, dropped, out);
}

/* X~[m][j] as row_group_ifma reads it (digits, exponent, sign and nonzero bits). */
static void store_digits(fast_chunk *f, size_t bt, size_t m, size_t j)
{
    const wide_entry *x = &f->x[j * bt + m];
    const uint64_t bit = UINT64_C(1) << j, mask = (UINT64_C(1) << DIGIT_BITS) - 1;
    f->nonzero[m] = (f->nonzero[m] & ~bit) | (x->zero ? 0 : bit);
    f->negative[m] = (f->negative[m] & ~bit) | (x->neg ? bit : 0);
    f->ex[m * bt + j] = x->e;
#pragma GCC unroll 2
    for (int form = 0; form < 2; form++)
#pragma GCC unroll 6
        for (int d = 0; d < X_DIGITS; d++)
            f->digits[((m * 2 + form) * X_DIGITS + d) * bt + j] =
                x->zero ? 0 : word_at_bit(x->sig, UG_LIMBS256, DIGIT_BITS * d - 26 * form) & mask;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* sum_entry for the entries X~[i][j0 .. j0 + 8) below the diagonal at
 * once, the same windows as exact sums: a lane per column, each term's
 * shift split into a form of X~[m][j] (sig, sig·2^26, or sig one digit up)
 * and a shift of L's significand below 26 bits (the factor below 2^49),
 * the products' 52-bit halves added by vpmadd52luq / huq into digit sums
 * of the positive and of the negative terms (each below 2^59: fewer than
 * 64 terms), read into the window's limbs per lane. Terms below a lane's
 * window and lanes without a nonzero term go through the scalar code. */
__attribute__((target("avx512f,avx512vl,avx512ifma"))) static bool row_group_ifma(fast_chunk *f, size_t bt,
                                                                                   size_t i, size_t j0)
{
    const l_factor *row = f->lf + i * bt;
    const __mmask8 valid = (__mmask8)((1u << (i - j0 < LANES ? i - j0 : LANES)) - 1);
    __m256i top = _mm256_set1_epi32(INT_MIN);
    for (size_t m = j0; m < i; m++) {
        if (!row[m].sig) continue;
        const __mmask8 started = m - j0 >= LANES - 1 ? 0xFF : (__mmask8)((2u << (m - j0)) - 1);
        const __mmask8 on = valid & started & (__mmask8)(f->nonzero[m] >> j0);
        const __m256i e = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(f->ex + m * bt + j0)),
                                           _mm256_set1_epi32(row[m].e));
        top = _mm256_mask_max_epi32(top, on, top, e);
    }
    const __mmask8 live = valid & _mm256_cmpneq_epi32_mask(top, _mm256_set1_epi32(INT_MIN));
    const __m256i unit = _mm256_maskz_sub_epi32(live, top, _mm256_set1_epi32(WINDOW_LOW_BITS));
    int32_t units[LANES];
    _mm256_storeu_si256((__m256i *)(void *)units, unit);
    __m512i pos[SUM_DIGITS], neg[SUM_DIGITS]; /* in registers: the digit loops unrolled */
#pragma GCC unroll 8
    for (int d = 0; d < SUM_DIGITS; d++) pos[d] = neg[d] = _mm512_setzero_si512();
    uint64_t below[LANES][WINDOW_LIMBS]; /* the terms below a lane's window (lanes in any_below) */
    unsigned dropped[LANES] = {0};
    __mmask8 any_below = 0;
    for (size_t m = j0; m < i; m++) {
        if (!row[m].sig) continue;
        const __mmask8 started = m - j0 >= LANES - 1 ? 0xFF : (__mmask8)((2u << (m - j0)) - 1);
        __mmask8 on = live & started & (__mmask8)(f->nonzero[m] >> j0);
        if (!on) continue;
        const __m256i off = _mm256_sub_epi32(
            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(f->ex + m * bt + j0)),
                             _mm256_set1_epi32(row[m].e)),
            unit);
        const __mmask8 under = on & _mm256_cmplt_epi32_mask(off, _mm256_setzero_si256());
        for (unsigned left = under; left; left &= left - 1) {
            const int l = __builtin_ctz(left);
            if (!(any_below >> l & 1)) memset(below[l], 0, sizeof below[l]);
            dropped[l] += add_term_below(below[l], &f->x[(j0 + l) * bt + m], &row[m],
                                         row[m].e + f->ex[m * bt + j0 + l] - units[l]);
        }
        any_below |= under;
        on &= (__mmask8)~under;
        const __mmask8 form26 = _mm256_cmpge_epi32_mask(off, _mm256_set1_epi32(26));
        const __mmask8 up52 = _mm256_cmpge_epi32_mask(off, _mm256_set1_epi32(2 * 26));
        __m256i shift = _mm256_mask_sub_epi32(off, form26, off, _mm256_set1_epi32(26));
        shift = _mm256_mask_sub_epi32(shift, up52, off, _mm256_set1_epi32(DIGIT_BITS));
        const __m512i factor = _mm512_sllv_epi64(_mm512_set1_epi64((long long)row[m].sig), _mm512_cvtepi32_epi64(shift));
        const __mmask8 minus = on & (__mmask8)((f->negative[m] >> j0) ^ (row[m].neg ? 0xFF : 0)), plus = on & ~minus;
        const uint64_t *form0 = f->digits + (m * 2 * X_DIGITS) * bt + j0, *form1 = form0 + X_DIGITS * bt;
        __m512i lower = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int d = 0; d < X_DIGITS; d++) {
            const __m512i x0 = _mm512_loadu_si512(form0 + d * bt);
            __m512i v = _mm512_mask_blend_epi64(form26, x0, _mm512_loadu_si512(form1 + d * bt));
            v = _mm512_mask_blend_epi64(up52, v, lower);
            lower = x0;
            pos[d] = _mm512_mask_madd52lo_epu64(pos[d], plus, v, factor);
            neg[d] = _mm512_mask_madd52lo_epu64(neg[d], minus, v, factor);
            pos[d + 1] = _mm512_mask_madd52hi_epu64(pos[d + 1], plus, v, factor);
            neg[d + 1] = _mm512_mask_madd52hi_epu64(neg[d + 1], minus, v, factor);
        }
    }
    /* each lane's sum as 52-bit digits (carried, the last one signed), then as limbs */
    const __m512i digit_mask = _mm512_set1_epi64((long long)((UINT64_C(1) << DIGIT_BITS) - 1));
    __m512i carry = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int d = 0; d < SUM_DIGITS; d++) {
        const __m512i t = _mm512_add_epi64(_mm512_sub_epi64(pos[d], neg[d]), carry);
        carry = _mm512_srai_epi64(t, DIGIT_BITS);
        pos[d] = _mm512_and_si512(t, digit_mask);
    }
    uint64_t limbs[WINDOW_LIMBS][LANES];
#pragma GCC unroll 8
    for (int k = 0; k < WINDOW_LIMBS; k++) {
        /* limb k: bits [64 k, 64 k + 64) of the digits, and the carry's sign above them */
        __m512i w = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int d = 0; d <= SUM_DIGITS; d++) {
            const int at = DIGIT_BITS * d - 64 * k; /* the digit's lowest bit within the limb */
            if (at <= -DIGIT_BITS || at >= 64) continue;
            const __m512i v = d < SUM_DIGITS ? pos[d] : carry;
            w = _mm512_or_si512(w, at >= 0 ? _mm512_slli_epi64(v, (unsigned)at) : _mm512_srli_epi64(v, (unsigned)-at));
        }
        _mm512_storeu_si512(limbs[k], w);
    }
    for (unsigned l = 0; l < LANES; l++) {
        if (!(valid >> l & 1)) break;
        const size_t j = j0 + l;
        wide_entry *x = &f->x[j * bt + i];
        if (live >> l & 1) {
            uint64_t window[WINDOW_LIMBS];
            for (int k = 0; k < WINDOW_LIMBS; k++) window[k] = limbs[k][l];
            if (any_below >> l & 1) add_signed(window, below[l], 0);
            if (!round_window(window, units[l], dropped[l], x)) return false;
        } else if (!sum_entry(f, bt, i, j, x)) {
            return false;
        }
        store_digits(f, bt, i, j);
    }
    return true;
}
#endif

/* Row i of X~ below the diagonal; false where a sum is not certified. */
static bool substitute_row(fast_chunk *f, size_t bt, size_t i)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (f->ifma) {
        for (size_t j0 = 0; j0 < i; j0 += LANES)
            if (!row_group_ifma(f, bt, i, j0)) return false;
        return true;
    }
#endif
    for (size_t j = 0; j < i; j++)
        if (!sum_entry(f, bt, i, j, &f->x[j * bt + i])) return false;
    return true;
}

/* A nonzero entry read as an exact value (its 128 leading bits, round and sticky). */
static ug_xval entry_value(const wide_entry *x)
{
    return (ug_xval){.neg = x->neg,
                     .m = (ug_u128)x->sig[3] << 64 | x->sig[2],
                     .e = x->e + 128,
                     .round = x->sig[1] >> 63,
                     .sticky = (x->sig[1] << 1 | x->sig[0]) != 0};
}

/* Where an entry's r_hi, |RNA_53|, r_lo and RN_f32 are normal numbers and
 * come from its limbs by the hardware's conversions (finish_entry). */
enum { NORMAL_TOP_MIN = -700, NORMAL_TOP_MAX = 1000 };

/* 2^q as a double, q in [-1022, 1023]. */
static double pow2_normal(int q)
{
    const uint64_t bits = (uint64_t)(q + 1023) << 52;
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The leading 64 bits of the nonzero d[0 .. 4) with a sticky bit or'ed into
 * the lowest (below any rounding position of a double or a float: their
 * conversions round it as the whole value), and the exponent of its unit. */
static uint64_t leading_64(const uint64_t d[UG_LIMBS256], int *unit)
{
    int t = UG_LIMBS256 - 1;
    while (!d[t]) t--;
    const int length = 64 * t + 64 - __builtin_clzll(d[t]);
    *unit = length - 64;
    const uint64_t lead = word_at_bit(d, UG_LIMBS256, length - 64);
    return lead | (length > 64 && low_bits_at_least(d, length - 64, false, 1));
}

/* ug_ref_finish of the entry (r_hi = near, the entry's RN_53, a normal
 * double): r - r_hi is the entry's bits below r_hi's unit 2^(e + 203), less
 * that unit when r_hi rounded up, exact (as the MPFR path's mpfr_sub_d). */
static void finish_entry(fast_chunk *f, const wide_entry *x, double near, double pre_round_bound, double abs_sum,
                         ug_ref_value *o)
{
    const int top = x->e + START_PREC - 1; /* |x| in [2^top, 2^(top + 1)) */
    if (!x->zero && (top < -1022 || top > 1022)) { /* r_hi subnormal or near overflow: MPFR's rules */
        mpz_import(f->scratch_z, UG_LIMBS256, -1, sizeof x->sig[0], 0, 0, x->sig);
        mpfr_set_z_2exp(f->scratch, f->scratch_z, x->e, MPFR_RNDN); /* exact: 256 bits */
        if (x->neg) mpfr_neg(f->scratch, f->scratch, MPFR_RNDN);
        ug_ref_finish(o, f->scratch, pre_round_bound, abs_sum, 0, UG_F32);
        return;
    }
    if (x->zero) {
        ug_ref_fill(o, near, 0.0, x->neg ? 0x80000000u : 0u, pre_round_bound, abs_sum, 0, UG_F32);
        return;
    }
    enum { R_HI_CUT = START_PREC - 53, CUT_LIMB = R_HI_CUT / 64, CUT_BIT = R_HI_CUT % 64 };
    const uint64_t *sig = x->sig;
    uint64_t low[UG_XWIN_LIMBS] = {sig[0], sig[1], sig[2], sig[3], 0};
    low[CUT_LIMB] &= (UINT64_C(1) << CUT_BIT) - 1;
    for (int k = CUT_LIMB + 1; k < UG_LIMBS256; k++) low[k] = 0;
    const bool half = bit_set(sig, R_HI_CUT - 1);
    const bool below = low_bits_at_least(sig, R_HI_CUT - 1, false, 1);
    const bool up = half && (below || bit_set(sig, R_HI_CUT));
    if (up) { /* 2^R_HI_CUT - low = -low mod 2^R_HI_CUT (low >= 2^(R_HI_CUT - 1)) */
        uint64_t carry = 1;
        for (int k = 0; k <= CUT_LIMB; k++) {
            low[k] = ~low[k] + carry;
            carry = carry && low[k] == 0;
        }
        low[CUT_LIMB] &= (UINT64_C(1) << CUT_BIT) - 1;
    }
    double r_lo = 0.0;
    uint32_t rn_bits;
    if (top >= NORMAL_TOP_MIN && top <= NORMAL_TOP_MAX) {
        if (low[0] | low[1] | low[2] | low[3]) {
            int unit;
            const double rest = (double)leading_64(low, &unit) * pow2_normal(unit + x->e);
            r_lo = x->neg != up ? -rest : rest;
        }
    } else {
        ug_xval rest = ug_xwin_read(low, UG_XWIN_LIMBS, x->e);
        if (!rest.zero) {
            rest.neg = x->neg != up;
            r_lo = ug_xval_to_double(&rest, MPFR_RNDN);
        }
    }
    if (top >= -126 && top <= 127) { /* a normal float or its overflow to infinity */
        int unit;
        const float rn = (float)((double)(float)leading_64(sig, &unit) * pow2_normal(unit + x->e));
        memcpy(&rn_bits, &rn, sizeof rn_bits);
        rn_bits |= x->neg ? 0x80000000u : 0u;
    } else {
        const ug_xval v = entry_value(x);
        rn_bits = ug_xval_rn_bits(&v, UG_F32);
    }
    ug_ref_fill(o, near, r_lo, rn_bits, pre_round_bound, abs_sum, 0, UG_F32);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Lane l < 8 of sum_{t = begin + l}^{end - 1} a[t] (x[t][j0 + l] + z[t][j0 + l])
 * (z optional): the scalar bound loops' sums of columns j0 .. j0 + 7, each
 * lane's terms in increasing t from +0, eight columns an instruction (no
 * fused multiply-add). */
__attribute__((target("avx512f"))) static __m512d block_sum(const double *a, const double *x, const double *z,
                                                            size_t bt, size_t j0, size_t begin, size_t end)
{
    __m512d s = _mm512_setzero_pd();
    for (size_t t = begin; t < end; t++) {
        const __mmask8 begun = t - begin >= LANES - 1 ? 0xFF : (__mmask8)((2u << (t - begin)) - 1);
        __m512d v = _mm512_loadu_pd(x + t * bt + j0);
        if (z) v = _mm512_add_pd(v, _mm512_loadu_pd(z + t * bt + j0));
        s = _mm512_mask_add_pd(s, begun, s, _mm512_mul_pd(_mm512_set1_pd(a[t]), v));
    }
    return s;
}

static __mmask8 lanes_below(size_t j0, size_t n) { return n - j0 >= LANES ? 0xFF : (__mmask8)((1u << (n - j0)) - 1); }

/* propagate_bound's delta, eight columns at a time (rho kept per column). */
__attribute__((target("avx512f"))) static void propagate_bound_avx512(workspace *ws)
{
    const size_t bt = ws->bt;
    const fast_chunk *f = &ws->fast;
    const double *al = ws->abs_l, *ax = ws->abs_x, underflow = ug_f32_underflow(ws->model);
    double *delta = ws->delta, *rho = f->rho;
    for (size_t k = 0; k < bt * bt; k++) delta[k] = rho[k] = 0;
    for (size_t m = 1; m < bt; m++) {
        for (size_t j0 = 0; j0 < m; j0 += LANES) {
            double s[LANES];
            _mm512_storeu_pd(s, block_sum(al + m * bt, ax, delta, bt, j0, j0, m));
            for (size_t j = j0; j < m && j < j0 + LANES; j++)
                rho[m * bt + j] = f->coef[m - j] * s[j - j0] + (double)(m - j) * underflow;
        }
        for (size_t j0 = 0; j0 < m; j0 += LANES)
            _mm512_mask_storeu_pd(delta + m * bt + j0, lanes_below(j0, m),
                                  block_sum(ax + m * bt, rho, NULL, bt, j0, j0 + 1, m + 1));
    }
}

/* skeel_magnitudes' values, eight columns at a time. */
__attribute__((target("avx512f"))) static void skeel_magnitudes_avx512(workspace *ws)
{
    const size_t bt = ws->bt;
    double *lx = ws->abs_lx, *skeel = ws->skeel;
    for (size_t k = 0; k < bt * bt; k++) lx[k] = skeel[k] = 0;
    for (size_t i = 0; i < bt; i++) {
        for (size_t j0 = 0; j0 < i; j0 += LANES)
            _mm512_mask_storeu_pd(lx + i * bt + j0, lanes_below(j0, i),
                                  block_sum(ws->abs_l + i * bt, ws->abs_x, NULL, bt, j0, j0, i));
        for (size_t j0 = 0; j0 <= i; j0 += LANES)
            _mm512_mask_storeu_pd(skeel + i * bt + j0, lanes_below(j0, i + 1),
                                  block_sum(ws->abs_x + i * bt, lx, NULL, bt, j0, j0, i + 1));
    }
}
#endif

/* The bound's sums: the MPFR path's loops, or the same sums by column vectors. */
static void bound_sums(workspace *ws, double *kappa)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (ws->fast.simd) {
        propagate_bound_avx512(ws);
        *kappa = gdn_solve_tril_kappa(ws->bt, ws->abs_l, ws->abs_x);
        skeel_magnitudes_avx512(ws);
        return;
    }
#endif
    propagate_bound(ws);
    *kappa = gdn_solve_tril_kappa(ws->bt, ws->abs_l, ws->abs_x);
    skeel_magnitudes(ws);
}

/* The chunk on the fast path, every output as the MPFR path would give it;
 * false (nothing written) where the fast path does not certify it. */
static bool fast_reference_chunk(workspace *ws, ug_ref_value *chunk_out, size_t row_stride)
{
    const size_t bt = ws->bt;
    fast_chunk *f = &ws->fast;
    if (!load_factors(f, bt, ws->l)) return false;
    for (size_t j = 0; j < bt; j++) {
        f->x[j * bt + j] = (wide_entry){.sig = {0, 0, 0, UINT64_C(1) << 63}, .e = 1 - START_PREC}; /* 1 */
        set_factors(&f->x[j * bt + j]);
        if (f->ifma) store_digits(f, bt, j, j);
    }
    for (size_t i = 1; i < bt; i++)
        if (!substitute_row(f, bt, i)) return false;
    double max_x = 0;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            const size_t k = i * bt + j;
            const wide_entry *x = &f->x[j * bt + i];
            f->near[k] = f->away[k] = 0;
            if (j > i) continue;
            if (x->zero) {
                f->near[k] = x->neg ? -0.0 : 0.0;
                continue;
            }
            const int top = x->e + START_PREC - 1;
            if (top >= NORMAL_TOP_MIN && top <= NORMAL_TOP_MAX) {
                /* RN by the conversion of the leading 64 bits and a sticky bit; RNA by a carry */
                const uint64_t lead = x->sig[3], rest = lead & 0x7FF, below = x->sig[2] | x->sig[1] | x->sig[0];
                const double scale = pow2_normal(x->e + START_PREC - 64);
                f->near[k] = (double)(lead | (below != 0)) * scale;
                f->away[k] = (double)((lead >> 11) + ((rest | below) != 0)) * (scale * 0x1p11);
                if (x->neg) f->near[k] = -f->near[k];
            } else {
                const ug_xval v = entry_value(x);
                const ug_xval_doubles d = ug_xval_to_doubles(&v);
                f->near[k] = d.nearest;
                f->away[k] = fabs(d.away);
            }
            max_x = fmax(max_x, f->away[k]);
        }
    const double n_max = ldexp((double)bt * max_x, 1 - START_PREC);
    const double tau = n_max <= 0.5 ? 2 * n_max * max_x * UG_F32_SLACK : INFINITY;
    if (!(tau <= TAU_LIMIT)) return false; /* a higher precision: the MPFR path */
    for (size_t k = 0; k < bt * bt; k++) {
        ws->abs_l[k] = fabs(ws->l[k]);
        ws->abs_x[k] = k / bt < k % bt ? 0.0 : f->away[k] + tau;
    }
    double kappa;
    bound_sums(ws, &kappa);
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            ug_ref_value *o = &chunk_out[i * row_stride + j];
            if (j > i) {
                *o = f->zero_value;
                continue;
            }
            const size_t k = i * bt + j;
            double bound = (ws->delta[k] * NESTED_SLACK + tau) * UG_F32_SLACK;
            const double abs_x = f->away[k];
            double abs_sum = fmax(kappa * abs_x, abs_x + ws->skeel[k] * NESTED_SLACK);
            if (isnan(bound)) bound = INFINITY; /* 0 * inf of overflowed magnitudes, as on the MPFR path */
            if (isnan(abs_sum)) abs_sum = INFINITY;
            finish_entry(f, &f->x[j * bt + i], f->near[k], bound, abs_sum, o);
        }
    return true;
}

static ug_status reference_chunk(workspace *ws, const gdn_solve_tril_shape *s, const float *l, size_t b,
                                 size_t h, size_t t0, ug_ref_value *out)
{
    const size_t bt = ws->bt;
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++)
            ws->l[i * bt + j] = j < i ? (double)l[((b * s->t + t0 + i) * s->h + h) * bt + j] : 0.0;
    if (ws->fast.x && fast_reference_chunk(ws, &out[((b * s->t + t0) * s->h + h) * bt], s->h * bt)) return ug_ok();
    for (size_t k = 0; k < bt * bt; k++) mpfr_set_d(ws->l_mp[k], ws->l[k], MPFR_RNDN); /* exact: an f32 */
    double tau = INFINITY;
    for (mpfr_prec_t prec = START_PREC; prec <= MAX_PREC && !(tau <= TAU_LIMIT); prec *= 2) {
        substitute(ws, prec);
        /* Non-finite L entries give non-finite entries of X (MPFR's extended
         * reals: inf * 0 and inf - inf are NaN); they are exact, and only the
         * finite ones need the precision. */
        double max_x = 0;
        for (size_t k = 0; k < bt * bt; k++)
            if (mpfr_number_p(ws->x[k])) max_x = fmax(max_x, fabs(mpfr_get_d(ws->x[k], MPFR_RNDA)));
        const double n_max = ldexp((double)bt * max_x, 1 - (int)prec);
        tau = n_max <= 0.5 ? 2 * n_max * max_x * UG_F32_SLACK : INFINITY;
    }
    if (!(tau <= TAU_LIMIT))
        return ug_fail(UG_EREF, "gdn_solve_tril reference: the inverse of chunk t0=%zu (b=%zu, h=%zu) needs "
                       "more than %d bits", t0, b, h, MAX_PREC);
    for (size_t k = 0; k < bt * bt; k++) {
        ws->abs_l[k] = fabs(ws->l[k]);
        ws->abs_x[k] = k / bt < k % bt ? 0.0 : mpfr_number_p(ws->x[k]) ? fabs(mpfr_get_d(ws->x[k], MPFR_RNDA)) + tau
                                                                        : INFINITY;
    }
    propagate_bound(ws);
    const double kappa = gdn_solve_tril_kappa(bt, ws->abs_l, ws->abs_x);
    skeel_magnitudes(ws);
    mpfr_t zero;
    mpfr_init2(zero, 2);
    mpfr_set_zero(zero, 1);
    for (size_t i = 0; i < bt; i++)
        for (size_t j = 0; j < bt; j++) {
            ug_ref_value *o = &out[((b * s->t + t0 + i) * s->h + h) * bt + j];
            if (j > i) {
                ug_ref_finish(o, zero, 0, 0, 0, UG_F32);
                continue;
            }
            const mpfr_ptr x = ws->x[i * bt + j];
            double bound = (ws->delta[i * bt + j] * NESTED_SLACK + tau) * UG_F32_SLACK;
            /* condition max(kappa, 1 + (|X||L||X|)_ij / |X_ij|): see the header */
            const double abs_x = fabs(mpfr_get_d(x, MPFR_RNDA));
            double abs_sum = fmax(kappa * abs_x, abs_x + ws->skeel[i * bt + j] * NESTED_SLACK);
            /* a non-finite L makes 0 * inf in these magnitudes: no bound */
            if (isnan(bound)) bound = INFINITY;
            if (isnan(abs_sum)) abs_sum = INFINITY;
            ug_ref_finish(o, x, bound, abs_sum, 0, UG_F32);
        }
    mpfr_clear(zero);
    return ug_ok();
}

ug_status gdn_solve_tril_reference(const gdn_solve_tril_shape *s, const float *l, const ug_f32_model *model,
                                   ug_ref_mode mode, ug_ref_value *a)
{
    (void)mode; /* no staged cast: both modes are the exact inverse */
    workspace ws = {.model = model};
    UG_TRY(workspace_init(&ws, s->bt));
    if (ws.fast.x)
        for (size_t k = 1; k < s->bt; k++) ws.fast.coef[k] = ug_f32_dot_gamma(model, ug_f32_gamma(k) * UG_F32_SLACK);
    ug_status st = ug_ok();
    for (size_t b = 0; b < s->b && ug_is_ok(&st); b++)
        for (size_t h = 0; h < s->h && ug_is_ok(&st); h++)
            for (size_t t0 = 0; t0 < s->t && ug_is_ok(&st); t0 += s->bt)
                st = reference_chunk(&ws, s, l, b, h, t0, a);
    workspace_free(&ws);
    return st;
}
