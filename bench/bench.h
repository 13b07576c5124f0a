/* SPDX-License-Identifier: MIT */
/* `make bench` (docs/performance.md): the kernels' speed against this
 * machine's limits, measured in one run.
 *
 * bench.c drives the registered kernel families through their descriptors
 * (the table verify runs: ug_family_buffer_count, generate, run), times every case on
 * every ISA path this CPU supports, and compares with
 *   - the peaks measured in the same run (peaks.c, peak_avx2.c,
 *     peak_avx512.c): f32 FMA throughput per ISA, streaming bandwidth;
 *   - a naive C translation of each seed's loop structure (naive_gdn.c,
 *     naive_attn.c), compiled with the kernels' non-SIMD flags;
 * then measures the MPFR reference's speed (refspeed.c) and the harness's
 * `verify --jobs 2` against `--jobs 1`. */
#ifndef UG_BENCH_H
#define UG_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../harness/family.h"

/* ---- time ---------------------------------------------------------------- */

double bench_now(void); /* CLOCK_MONOTONIC seconds */

/* The clock of the one-thread timings and of the peaks: bench_now(), or,
 * with --cpu-time (bench_cpu_time set), the calling thread's CPU time, which
 * leaves out the time other processes held its CPU: on a shared machine the
 * ratios of kernels to peaks then hold while the wall-clock figures move.
 * Time the CPU loses to other processes' cache and memory traffic still
 * counts. The 2-thread timings are wall-clock either way. */
extern bool bench_cpu_time;
double bench_clock(void);

/* ---- where it runs -------------------------------------------------------- */

/* The one-thread timings and the peaks they are compared with run on one
 * CPU: the two vCPUs of the bench machine do not always run at the same
 * speed (one was measured 20-30 % slower for seconds at a time), so a
 * migration between the peak and a kernel's timing would skew the ratio.
 * bench_pin() pins the calling thread to the CPU it is on and returns that
 * CPU (-1 when it cannot: then nothing is pinned); bench_unpin() gives back
 * every CPU, for the 2-thread timings, verify --jobs and the reference's
 * cases spread over the CPUs (threads and children inherit the mask). */
int bench_pin(void);
void bench_unpin(void);

/* ---- peaks (peaks.c) ------------------------------------------------------ */

/* f32 FMA throughput of one core in GFLOP/s (an FMA counts 2 flops), from a
 * loop of independent FMA chains long enough to saturate both FMA ports. */
double bench_fma_peak_avx512(void); /* 0 when the CPU lacks AVX-512 */
double bench_fma_peak_avx2(void);   /* 0 when the CPU lacks AVX2 + FMA */
double bench_fma_peak_scalar(void); /* fmaf() as the portable path calls it */

/* Paths of the FMA loops, built with their ISA's flags (peak_avx2.c,
 * peak_avx512.c): `iters` iterations of `chains` independent vector FMAs;
 * returns a value that depends on every FMA (so none is optimised away). */
float bench_fma_loop_avx512(size_t iters);
float bench_fma_loop_avx2(size_t iters);

/* The AVX512-BF16 vdpbf16ps rate in GFLOP/s (a bf16 product and its add = 2
 * flops; 0 when the CPU lacks AVX512-BF16), and its loop
 * (peak_avx512bf16.c): not a path of the kernels, measured for the record. */
double bench_dot_peak_bf16(void);
float bench_dpbf16_loop_avx512bf16(size_t iters);

typedef struct {
    double copy_dram, triad_dram; /* GB/s, buffers >> LLC */
    double copy_llc, copy_l2;     /* GB/s, buffers that fit in LLC / L2 */
    size_t dram_bytes;            /* size of one streaming array */
} bench_bandwidth;

void bench_measure_bandwidth(bench_bandwidth *out);

/* Read+write copy of `bytes` (half read, half written) at this working-set
 * size, best of a few passes, in GB/s: the roofline of a memory-bound kernel
 * whose working set is that large. */
double bench_copy_rate(size_t bytes);

/* ---- naive baselines (naive_gdn.c, naive_attn.c) -------------------------- */

/* A naive kernel reads the family's parameters by name and its buffers in
 * descriptor order; it writes the same output buffers the kernel writes. */
typedef struct {
    const ug_family *f;
    const ug_params *p;
    ug_buf *bufs;
} bench_call;

double bench_param(const bench_call *c, const char *name); /* aborts on an unknown name */
void *bench_buffer(const bench_call *c, const char *name); /* aborts on an unknown name */

void naive_gdn_recompute_wu(const bench_call *c);
void naive_gdn_chunk_o(const bench_call *c);
void naive_gdn_chunk_scaled_kkt(const bench_call *c);
void naive_gdn_chunk_state(const bench_call *c);
void naive_gdn_solve_tril(const bench_call *c);
void naive_gdn_chunk_cumsum(const bench_call *c);
void naive_attn_reduce_fwht(const bench_call *c);
void naive_head_norm_rope(const bench_call *c);

/* ---- the reference's speed (refspeed.c) ----------------------------------- */

/* Prints the reference-speed section; returns 0, or -1 when the family is
 * missing or a call failed (the reason printed). */
int bench_reference_speed(void);

#endif
