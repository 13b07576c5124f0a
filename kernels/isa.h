/* SPDX-License-Identifier: MIT */
/* Instruction-set paths for the kernels' micro-kernels, chosen at run time.
 *
 * BLIS-style: the loop structure of a kernel family is written once; the
 * matrix products and the elementwise row operations around them are
 * implemented per ISA (gemm_paths.h). The portable path is always built and
 * always tested. Every path computes each output element with the same
 * sequence of IEEE operations, so all paths produce identical bits. */
#ifndef UG_ISA_H
#define UG_ISA_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/bf16.h"
#include "../core/status.h"

typedef enum { UG_ISA_PORTABLE = 0, UG_ISA_AVX2, UG_ISA_AVX512, UG_ISA_COUNT } ug_isa;

const char *ug_isa_name(ug_isa isa);        /* "portable", "avx2", "avx512" */
bool ug_isa_parse(const char *name, ug_isa *out);
bool ug_isa_supported(ug_isa isa);          /* CPU (CPUID) and OS support */
ug_isa ug_isa_best(void);                   /* the default path */
/* Forces a path for the calling thread (harness, tests); other threads keep
 * theirs (default: ug_isa_best()). Fails naming the path when the CPU cannot
 * run it. */
ug_status ug_isa_select(ug_isa isa);
ug_isa ug_isa_current(void);

/* Path selection by table, BLIS-style: a kernel with per-ISA code declares
 * one struct of function pointers (its "paths" type), and each of its ISA
 * files defines one such struct and registers it with
 * UG_ISA_PATHS(kernel, isa, object) (object of type kernel##_paths);
 * UG_ISA_PATHS_OF(kernel, isa) then gives isa's struct (ug_isa_current():
 * the calling thread's), or the portable one where the kernel has none for
 * that ISA. The registrations live in a linker section per kernel, so
 * neither the framework nor a kernel lists ISAs: adding an ISA touches its
 * value in ug_isa and row in isa.c, its vec_<isa>.h and the kernels' files
 * for it. Every kernel registers a UG_ISA_PORTABLE struct. */
typedef struct {
    ug_isa isa;
    const void *paths;
} ug_isa_paths_entry;

#define UG_ISA_PATHS(kernel, isa, object) UG_ISA_PATHS_(kernel, isa, object)
#define UG_ISA_PATHS_(kernel, isa, object)                                                                  \
    static const kernel##_paths *const kernel##_paths_typed_##isa __attribute__((unused)) = &(object);    \
    static const ug_isa_paths_entry kernel##_paths_entry_##isa = {isa, &(object)};                         \
    static const ug_isa_paths_entry *const kernel##_paths_entry_ptr_##isa                                  \
        __attribute__((used, section("ug_isa_paths_" #kernel), aligned(sizeof(void *)))) = &kernel##_paths_entry_##isa

/* In the kernel's paths header, after its paths type `kernel##_paths`. */
#define UG_ISA_PATHS_DECLARE(kernel)                                             \
    extern const ug_isa_paths_entry *const __start_ug_isa_paths_##kernel[];      \
    extern const ug_isa_paths_entry *const __stop_ug_isa_paths_##kernel[]
#define UG_ISA_PATHS_OF(kernel, isa) \
    ((const kernel##_paths *)ug_isa_paths_pick(__start_ug_isa_paths_##kernel, __stop_ug_isa_paths_##kernel, isa))

/* The entry of isa in [begin, end), else the UG_ISA_PORTABLE one (NULL if
 * neither is registered). */
const void *ug_isa_paths_pick(const ug_isa_paths_entry *const *begin, const ug_isa_paths_entry *const *end,
                              ug_isa isa);

/* The matrix product every GDN kernel is made of, BLIS-style operands:
 * A(i, p) = a[i*a_row + p*a_col] (f32), B(p, j) = b[p*b_row + j*b_col] (bf16,
 * widened exactly), for i < m, j < n, p < kk; strides may be negative (a
 * reversed operand). C[i*ldc + j] is overwritten with
 *   fma(A(i,kk-1), B(kk-1,j), ... fma(A(i,0), B(0,j), +0.0f))
 * the FMA chain in increasing p on every path: all paths give identical bits.
 * Operands must not overlap C. */
typedef struct {
    size_t m, n, kk;
    const float *a;
    ptrdiff_t a_row, a_col;
    const ug_bf16 *b;
    ptrdiff_t b_row, b_col;
    float *c;
    size_t ldc;
} ug_gemm_operands;
void ug_gemm(const ug_gemm_operands *g);

/* ug_gemm with A and B row-major (A: lda, B: ldb). */
void ug_gemm_f32_bf16(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                      const ug_bf16 *B, size_t ldb, float *C, size_t ldc);

/* Elementwise rows around the products, on the same run-time path. Each
 * output element is the scalar expression in its comment, evaluated with the
 * same IEEE operations in the same order on every path (bf16() is
 * ug_bf16_from_f32, widen() ug_bf16_to_f32, fma fmaf), so the paths agree
 * bit for bit; they differ only in how many elements one instruction does.
 * One thing IEEE 754 leaves open: when two NaNs meet in one operation (or an
 * invalid operation's default NaN meets a NaN operand), which one propagates;
 * such an element is NaN on every path, but its sign (and f32 payload) may
 * differ between the compiled scalar code and the vector instructions. */
void ug_rows_widen(size_t n, const ug_bf16 *x, float *out);          /* out = widen(x) */
void ug_rows_round(size_t n, const float *x, ug_bf16 *out);          /* out = bf16(x) */
void ug_rows_scale_round(size_t n, const ug_bf16 *x, float s1, float s2,
                         ug_bf16 *out);                              /* out = bf16(widen(x) * s1 * s2) */
void ug_rows_mul3(size_t n, float s, const float *x, const float *y,
                  float *out);                                       /* out = s * x * y */
void ug_rows_fma(size_t n, float d, float *acc, const float *add);   /* acc = fma(d, acc, add) */
void ug_rows_scaled_sum_round(size_t n, float d, const float *x, const float *y, float scale,
                              ug_bf16 *out);                         /* out = bf16(d * x * scale + y * scale) */
void ug_rows_residual(size_t n, const ug_bf16 *u, const float *x, float d, ug_bf16 *v,
                      ug_bf16 *dv);                                  /* r = widen(u) - x: v = bf16(r), dv = bf16(d * r) */
void ug_rows_exp_diff(size_t n, float a, const float *x, float *out); /* out = ug_expf(a - x) (expf.h) */
void ug_rows_exp_sub(size_t n, const float *x, float a, float *out);  /* out = ug_expf(x - a) (expf.h) */
void ug_rows_decay_mul(size_t n, float a, const float *x, float s, const float *y,
                       float *out);                                  /* out = s * ug_expf(a - x) * y */
/* dst = src (bytes). stream: the whole 64-byte lines of dst are written past
 * the caches where the path can (non-temporal stores: no read-for-ownership
 * of lines about to be overwritten, no eviction of the inputs), for outputs
 * written once and not read again soon, i.e. those of UG_STREAM_MIN_BYTES or
 * more (an L2 and then some: smaller ones stay cached for their consumer).
 * A kernel that streamed calls ug_rows_stream_end() (an sfence) at the end
 * of each worker's range, before its output is read by another thread. */
enum { UG_STREAM_MIN_BYTES = 4 << 20 };
void ug_rows_store(size_t bytes, const void *src, void *dst, bool stream);
void ug_rows_stream_end(void);
/* dst[j*ldd + i] = src[i*lds + j] for i < rows, j < cols (bf16 moved, not rounded). */
void ug_rows_transpose(size_t rows, size_t cols, const ug_bf16 *src, size_t lds, ug_bf16 *dst,
                       size_t ldd);

#endif
