/* SPDX-License-Identifier: MIT */
/* This machine's limits, measured in the bench's own run: f32 FMA throughput
 * of one core per ISA, and streaming bandwidth (DRAM, and the cache levels a
 * kernel's working set may fit in). Every figure is the best of a few passes:
 * a peak is what the machine can do, not what it usually does. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../kernels/isa.h"
#include "bench.h"

enum { PASSES = 5 };

static cpu_set_t all_cpus;
static int pinned_cpu = -1;

int bench_pin(void)
{
    if (pinned_cpu < 0) {
        const int cpu = sched_getcpu();
        if (cpu < 0 || sched_getaffinity(0, sizeof all_cpus, &all_cpus) != 0) return -1;
        pinned_cpu = cpu;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(pinned_cpu, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0 ? pinned_cpu : -1;
}

void bench_unpin(void)
{
    if (pinned_cpu >= 0) (void)sched_setaffinity(0, sizeof all_cpus, &all_cpus);
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool bench_cpu_time = false;

double bench_clock(void)
{
    if (!bench_cpu_time) return bench_clock();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Defeats dead-code elimination of the loops' results. */
static volatile float sink;

typedef float fma_loop(size_t iters);

/* flops per iteration = 2 * chains * lanes. */
static double best_gflops(fma_loop *loop, size_t iters, double flops_per_iter)
{
    loop(iters / 10); /* wake the core's wide units (license / frequency ramp) */
    double best = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        double t0 = bench_clock();
        sink = loop(iters);
        double dt = bench_clock() - t0;
        double rate = flops_per_iter * (double)iters / dt * 1e-9;
        if (rate > best) best = rate;
    }
    return best;
}

double bench_fma_peak_avx512(void)
{
    if (!ug_isa_supported(UG_ISA_AVX512)) return 0;
    return best_gflops(bench_fma_loop_avx512, 10u << 20, 2.0 * 24 * 16);
}

double bench_dot_peak_bf16(void)
{
    if (!ug_isa_supported(UG_ISA_AVX512) || !__builtin_cpu_supports("avx512bf16")) return 0;
    return best_gflops(bench_dpbf16_loop_avx512bf16, 10u << 20, 2.0 * 24 * 32);
}

double bench_fma_peak_avx2(void)
{
    if (!ug_isa_supported(UG_ISA_AVX2)) return 0;
    return best_gflops(bench_fma_loop_avx2, 20u << 20, 2.0 * 12 * 8);
}

/* The portable path's arithmetic: fmaf() without -mfma (a libm call), eight
 * independent chains. */
enum { SCALAR_CHAINS = 8 };

static float fma_loop_scalar(size_t iters)
{
    float acc[SCALAR_CHAINS];
    for (int c = 0; c < SCALAR_CHAINS; c++) acc[c] = (float)c;
    for (size_t i = 0; i < iters; i++)
        for (int c = 0; c < SCALAR_CHAINS; c++) acc[c] = fmaf(acc[c], 0.999999f, 1e-7f);
    float sum = 0.0f;
    for (int c = 0; c < SCALAR_CHAINS; c++) sum += acc[c];
    return sum;
}

double bench_fma_peak_scalar(void)
{
    return best_gflops(fma_loop_scalar, 10u << 20, 2.0 * SCALAR_CHAINS);
}

/* ---- bandwidth ------------------------------------------------------------ */

static void *alloc_touched(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench: cannot allocate %zu bytes\n", bytes);
        exit(3);
    }
    memset(p, 1, bytes);
    return p;
}

/* a[i] = b[i] + s * c[i]: 2 reads and 1 write per element (the write's
 * read-for-ownership is not counted, as STREAM does not count it). */
static void triad(float *restrict a, const float *restrict b, const float *restrict c, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* Best rate of `passes` timed passes of memcpy(dst, src, half); a pass
 * repeats the copy until it has moved >= 1 MiB, so that the clock's own
 * cost does not count for small copies. */
static double copy_best(char *src, char *dst, size_t half, int passes)
{
    const size_t repeats = half >= ((size_t)1 << 20) ? 1 : ((size_t)1 << 20) / half;
    double best = 0;
    memcpy(dst, src, half);
    for (int pass = 0; pass < passes; pass++) {
        double t0 = bench_clock();
        for (size_t r = 0; r < repeats; r++) memcpy(dst, src, half);
        double dt = bench_clock() - t0;
        double rate = 2.0 * (double)half * (double)repeats / dt * 1e-9;
        if (rate > best) best = rate;
        src[pass] ^= 1; /* the next pass copies something else */
    }
    return best;
}

double bench_copy_rate(size_t bytes)
{
    size_t half = bytes / 2 < 64 ? 64 : bytes / 2;
    char *src = alloc_touched(half), *dst = alloc_touched(half);
    /* Enough passes for ~50 ms of copying, at least 5. */
    double t0 = bench_clock();
    memcpy(dst, src, half);
    double once = fmax(bench_clock() - t0, 1e-9) * fmax(1.0, (double)((size_t)1 << 20) / (double)half);
    int passes = (int)fmin(200.0, fmax(5.0, 0.05 / once));
    double rate = copy_best(src, dst, half, passes);
    free(src);
    free(dst);
    return rate;
}

void bench_measure_bandwidth(bench_bandwidth *out)
{
    /* 256 MiB per array: the three arrays of the triad are 7x the 105 MiB LLC
     * of the machine this was written on; any LLC up to ~64 MiB per array
     * is left far behind. */
    const size_t bytes = (size_t)256 << 20, n = bytes / sizeof(float);
    float *a = alloc_touched(bytes), *b = alloc_touched(bytes), *c = alloc_touched(bytes);
    out->dram_bytes = bytes;
    out->copy_dram = copy_best((char *)b, (char *)a, bytes, 4);
    double best = 0;
    for (int pass = 0; pass < 4; pass++) {
        double t0 = bench_clock();
        triad(a, b, c, n, 0.5f + (float)pass);
        double dt = bench_clock() - t0;
        double rate = 3.0 * (double)bytes / dt * 1e-9;
        if (rate > best) best = rate;
    }
    sink = a[n / 3];
    out->triad_dram = best;
    free(a);
    free(b);
    free(c);
    out->copy_llc = bench_copy_rate((size_t)32 << 20);
    out->copy_l2 = bench_copy_rate((size_t)512 << 10);
}
