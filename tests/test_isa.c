/* SPDX-License-Identifier: MIT */
/* ISA paths: every path the CPU supports computes the documented FMA chain
 * bit for bit, and path selection refuses what the CPU cannot run. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/attn_reduce_fwht_paths.h"
#include "../kernels/gdn_chunk_cumsum_paths.h"
#include "../kernels/gdn_solve_tril_paths.h"
#include "../kernels/gemm_paths.h"
#include "../kernels/head_norm_rope_paths.h"
#include "../kernels/isa.h"
#include "tests.h"

static uint64_t rng_state;

static uint32_t next_u32(void) { return ug_test_next_u32(&rng_state); }
static float uniform(float lo, float hi) { return ug_test_uniform(&rng_state, lo, hi); }

/* Mostly U(-1, 1), with negative zeros, subnormals and large magnitudes mixed
 * in: where a path that flushed, skipped the fusion or reordered the chain
 * would differ. Large stays below 2^50 so that no sum overflows. */
static float awkward_f32(void)
{
    uint32_t sign = next_u32() & 0x80000000u;
    switch (next_u32() % 8) {
    case 0: return -0.0f;
    case 1: return ug_f32_from_bits(sign | (next_u32() % 0x7FFFFFu + 1u));
    case 2: return ug_f32_from_bits(sign | ug_f32_bits(ldexpf(uniform(1.0f, 2.0f), 49)));
    default: return uniform(-1.0f, 1.0f);
    }
}

/* The contract of isa.h written out directly: an FMA chain from +0 in
 * increasing kk. */
static float naive_element(size_t kk, const float *A, size_t lda, const ug_bf16 *B, size_t ldb,
                           size_t i, size_t j)
{
    float acc = 0.0f;
    for (size_t p = 0; p < kk; p++)
        acc = fmaf(A[i * lda + p], ug_f32_from_bits((uint32_t)B[p * ldb + j] << 16), acc);
    return acc;
}

/* Runs the selected path on one shape with padded strides; counts elements
 * that differ from the naive chain and padding columns of C it touched. */
static size_t mismatches_on_shape(size_t m, size_t n, size_t kk)
{
    size_t lda = kk + 3, ldb = n + 5, ldc = n + 2;
    float *A = malloc(m * lda * sizeof *A);
    ug_bf16 *B = malloc(kk * ldb * sizeof *B);
    float *C = malloc(m * ldc * sizeof *C);
    CU_ASSERT_FATAL(A && B && C);
    for (size_t i = 0; i < m * lda; i++) A[i] = awkward_f32();
    for (size_t i = 0; i < kk * ldb; i++) B[i] = (ug_bf16)(ug_f32_bits(awkward_f32()) >> 16);
    const uint32_t untouched = 0x7FBADBADu;
    for (size_t i = 0; i < m * ldc; i++) C[i] = ug_f32_from_bits(untouched);

    ug_gemm_f32_bf16(m, n, kk, A, lda, B, ldb, C, ldc);

    size_t bad = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < ldc; j++) {
            uint32_t want = j < n ? ug_f32_bits(naive_element(kk, A, lda, B, ldb, i, j)) : untouched;
            if (ug_f32_bits(C[i * ldc + j]) == want) continue;
            if (bad++ == 0)
                printf("\n  %s m=%zu n=%zu kk=%zu: C[%zu][%zu] = 0x%08x, want 0x%08x",
                       ug_isa_name(ug_isa_current()), m, n, kk, i, j, ug_f32_bits(C[i * ldc + j]), want);
        }
    free(A);
    free(B);
    free(C);
    return bad;
}

static void test_every_supported_path_matches_the_naive_fma_chain(void)
{
    static const size_t sizes[] = {1, 3, 17, 64, 65, 130};
    const size_t n_sizes = sizeof sizes / sizeof sizes[0];
    /* Every size still meets every other in every position, 64^3 (the
     * kernels' shape) included; the cap keeps valgrind runs short. */
    const size_t max_fmas = 300000;
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (!ug_isa_supported((ug_isa)isa)) continue;
        CU_ASSERT_EQUAL_FATAL(ug_isa_select((ug_isa)isa).code, UG_OK);
        rng_state = 0x9E3779B97F4A7C15u;
        size_t bad = 0;
        for (size_t a = 0; a < n_sizes; a++)
            for (size_t b = 0; b < n_sizes; b++)
                for (size_t c = 0; c < n_sizes; c++)
                    if (sizes[a] * sizes[b] * sizes[c] <= max_fmas)
                        bad += mismatches_on_shape(sizes[a], sizes[b], sizes[c]);
        CU_ASSERT_EQUAL(bad, 0);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
}

static void test_select_rejects_a_path_the_cpu_lacks(void)
{
    ug_isa before = ug_isa_current();
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        if (ug_isa_supported((ug_isa)isa)) continue;
        ug_status s = ug_isa_select((ug_isa)isa);
        CU_ASSERT_EQUAL(s.code, UG_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, ug_isa_name((ug_isa)isa)));
        CU_ASSERT_PTR_NOT_NULL(strstr(s.msg, "lacks"));
        CU_ASSERT_EQUAL(ug_isa_current(), before);
    }
    CU_ASSERT_EQUAL(ug_isa_select(UG_ISA_COUNT).code, UG_EINVAL);
    CU_ASSERT_EQUAL(ug_isa_current(), before);
}

static void test_best_is_the_widest_supported_path(void)
{
    ug_isa best = ug_isa_best();
    CU_ASSERT(ug_isa_supported(best));
    CU_ASSERT(ug_isa_supported(UG_ISA_PORTABLE));
    for (int isa = best + 1; isa < UG_ISA_COUNT; isa++) CU_ASSERT(!ug_isa_supported((ug_isa)isa));
    CU_ASSERT_EQUAL(ug_isa_select(best).code, UG_OK);
    CU_ASSERT_EQUAL(ug_isa_current(), best);
}

static void test_parse_round_trips_every_name(void)
{
    for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
        ug_isa parsed = UG_ISA_COUNT;
        CU_ASSERT(ug_isa_parse(ug_isa_name((ug_isa)isa), &parsed));
        CU_ASSERT_EQUAL(parsed, (ug_isa)isa);
    }
    ug_isa untouched = UG_ISA_AVX2;
    CU_ASSERT(!ug_isa_parse("AVX2", &untouched));
    CU_ASSERT(!ug_isa_parse("sse4", &untouched));
    CU_ASSERT(!ug_isa_parse("", &untouched));
    CU_ASSERT(!ug_isa_parse(NULL, &untouched));
    CU_ASSERT_EQUAL(untouched, UG_ISA_AVX2);
    CU_ASSERT_STRING_EQUAL(ug_isa_name(UG_ISA_COUNT), "?");
}

/* Each kernel's ISA files registered their own paths, and the table hands
 * them out: were the lookup to fall back to portable, every path would
 * still agree with every other, and nothing else would notice. */
static void test_every_kernel_has_its_own_simd_paths(void)
{
#define UG_DISTINCT_PATHS(kernel)                                                                            \
    do {                                                                                                     \
        const void *portable = UG_ISA_PATHS_OF(kernel, UG_ISA_PORTABLE);                                     \
        CU_ASSERT_PTR_NOT_NULL(portable);                                                                    \
        CU_ASSERT(UG_ISA_PATHS_OF(kernel, UG_ISA_AVX2) != portable);                                         \
        CU_ASSERT(UG_ISA_PATHS_OF(kernel, UG_ISA_AVX512) != portable);                                       \
        CU_ASSERT(UG_ISA_PATHS_OF(kernel, UG_ISA_AVX512) != (const void *)UG_ISA_PATHS_OF(kernel, UG_ISA_AVX2)); \
    } while (0)
    UG_DISTINCT_PATHS(ug_gemm);
    UG_DISTINCT_PATHS(attn_reduce_fwht);
    UG_DISTINCT_PATHS(gdn_chunk_cumsum);
    UG_DISTINCT_PATHS(gdn_solve_tril);
    UG_DISTINCT_PATHS(head_norm_rope);
#undef UG_DISTINCT_PATHS
}

/* A kernel without a path for an ISA runs its portable one there. */
static void test_missing_path_falls_back_to_portable(void)
{
    static const int portable = 0, avx2 = 2;
    const ug_isa_paths_entry entries[] = {{UG_ISA_AVX2, &avx2}, {UG_ISA_PORTABLE, &portable}};
    const ug_isa_paths_entry *const table[] = {&entries[0], &entries[1]};
    CU_ASSERT_PTR_EQUAL(ug_isa_paths_pick(table, table + 2, UG_ISA_AVX2), &avx2);
    CU_ASSERT_PTR_EQUAL(ug_isa_paths_pick(table, table + 2, UG_ISA_AVX512), &portable);
    CU_ASSERT_PTR_EQUAL(ug_isa_paths_pick(table, table + 2, UG_ISA_PORTABLE), &portable);
}

UG_TEST_SUITE(isa_suite, "isa",
              UG_TEST(test_every_supported_path_matches_the_naive_fma_chain),
              UG_TEST(test_select_rejects_a_path_the_cpu_lacks),
              UG_TEST(test_best_is_the_widest_supported_path),
              UG_TEST(test_parse_round_trips_every_name),
              UG_TEST(test_every_kernel_has_its_own_simd_paths),
              UG_TEST(test_missing_path_falls_back_to_portable));
