/* Instruction-set paths for the kernels' micro-kernels, chosen at run time.
 *
 * BLIS-style: the loop structure of a kernel family is written once; the inner
 * products are micro-kernels per ISA. The portable path is always built and
 * always tested. Every path computes each output element with the same
 * sequence of fused multiply-adds, so all paths produce identical bits. */
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

/* C[i][j] = fma(A[i][kk-1], B[kk-1][j], ... fma(A[i][0], B[0][j], +0.0f))
 * for i < m, j < n: A f32 row-major (row stride lda), B bf16 row-major (ldb),
 * C f32 (ldc). The FMA chain runs in increasing index order on every path. */
void ug_gemm_f32_bf16(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                      const ug_bf16 *B, size_t ldb, float *C, size_t ldc);

#endif
