/* SPDX-License-Identifier: MIT */
/* Run-time choice of the micro-kernel path. __builtin_cpu_supports reads
 * CPUID and XCR0, so a path counts as supported only when the OS also saves
 * its registers. Under valgrind CPUID hides AVX-512, and the AVX2 path is
 * chosen there by the same rule. */
#include "isa.h"

#include <string.h>

#include "gemm_paths.h"

static bool cpu_needs_nothing(void) { return true; }

static bool cpu_has_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

static bool cpu_has_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
}

/* One row per path, the only place that lists them: its name, what it
 * needs from the CPU (in words, and the test ug_isa_supported runs). */
static const struct {
    const char *name, *requirements;
    bool (*supported)(void);
} isas[UG_ISA_COUNT] = {
    [UG_ISA_PORTABLE] = {"portable", "nothing", cpu_needs_nothing},
    [UG_ISA_AVX2] = {"avx2", "avx2, fma", cpu_has_avx2},
    [UG_ISA_AVX512] = {"avx512", "avx512f, avx512bw, avx512vl, avx512dq, fma", cpu_has_avx512},
};

/* The products' and rows' paths, resolved once per ISA before main: the
 * row operations are called per row, too often for a lookup each. */
static const ug_gemm_paths *gemm_paths[UG_ISA_COUNT];

/* The process default is settled before main, so the dispatch never races
 * on a lazy first choice (a constructor must initialise the CPU model
 * itself); a thread that selects a path overrides it for itself only, so the
 * harness's worker threads can each run their case on every path. */
static ug_isa default_isa = UG_ISA_PORTABLE;
static _Thread_local int thread_isa = -1;

__attribute__((constructor)) static void select_best_isa(void)
{
    __builtin_cpu_init();
    default_isa = ug_isa_best();
    for (int isa = 0; isa < UG_ISA_COUNT; isa++)
        gemm_paths[isa] = ug_isa_paths_pick(__start_ug_isa_paths_ug_gemm, __stop_ug_isa_paths_ug_gemm, (ug_isa)isa);
}

const void *ug_isa_paths_pick(const ug_isa_paths_entry *const *begin, const ug_isa_paths_entry *const *end,
                              ug_isa isa)
{
    const void *portable = NULL;
    for (const ug_isa_paths_entry *const *e = begin; e < end; e++) {
        if ((*e)->isa == isa) return (*e)->paths;
        if ((*e)->isa == UG_ISA_PORTABLE) portable = (*e)->paths;
    }
    return portable;
}

const char *ug_isa_name(ug_isa isa)
{
    return (unsigned)isa < UG_ISA_COUNT ? isas[isa].name : "?";
}

bool ug_isa_parse(const char *name, ug_isa *out)
{
    for (int isa = 0; name && isa < UG_ISA_COUNT; isa++)
        if (strcmp(name, isas[isa].name) == 0) {
            *out = (ug_isa)isa;
            return true;
        }
    return false;
}

bool ug_isa_supported(ug_isa isa) { return (unsigned)isa < UG_ISA_COUNT && isas[isa].supported(); }

ug_isa ug_isa_best(void)
{
    for (int isa = UG_ISA_COUNT - 1; isa > UG_ISA_PORTABLE; isa--)
        if (ug_isa_supported((ug_isa)isa)) return (ug_isa)isa;
    return UG_ISA_PORTABLE;
}

ug_status ug_isa_select(ug_isa isa)
{
    if ((unsigned)isa >= UG_ISA_COUNT)
        return ug_fail(UG_EINVAL, "isa: no such path (%d)", (int)isa);
    if (!ug_isa_supported(isa))
        return ug_fail(UG_EINVAL, "isa: this CPU lacks the %s path (it needs %s)", isas[isa].name,
                       isas[isa].requirements);
    thread_isa = (int)isa;
    return ug_ok();
}

ug_isa ug_isa_current(void) { return thread_isa < 0 ? default_isa : (ug_isa)thread_isa; }

static const ug_gemm_paths *path(void) { return gemm_paths[ug_isa_current()]; }

void ug_gemm(const ug_gemm_operands *g) { path()->gemm(g); }

void ug_gemm_f32_bf16(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                      const ug_bf16 *B, size_t ldb, float *C, size_t ldc)
{
    const ug_gemm_operands g = {.m = m, .n = n, .kk = kk, .a = A, .a_row = (ptrdiff_t)lda, .a_col = 1,
                                .b = B, .b_row = (ptrdiff_t)ldb, .b_col = 1, .c = C, .ldc = ldc};
    path()->gemm(&g);
}

void ug_rows_widen(size_t n, const ug_bf16 *x, float *out) { path()->widen(n, x, out); }
void ug_rows_round(size_t n, const float *x, ug_bf16 *out) { path()->round(n, x, out); }

void ug_rows_scale_round(size_t n, const ug_bf16 *x, float s1, float s2, ug_bf16 *out)
{
    path()->scale_round(n, x, s1, s2, out);
}

void ug_rows_mul3(size_t n, float s, const float *x, const float *y, float *out) { path()->mul3(n, s, x, y, out); }
void ug_rows_fma(size_t n, float d, float *acc, const float *add) { path()->fma(n, d, acc, add); }

void ug_rows_scaled_sum_round(size_t n, float d, const float *x, const float *y, float scale, ug_bf16 *out)
{
    path()->scaled_sum_round(n, d, x, y, scale, out);
}

void ug_rows_residual(size_t n, const ug_bf16 *u, const float *x, float d, ug_bf16 *v, ug_bf16 *dv)
{
    path()->residual(n, u, x, d, v, dv);
}

void ug_rows_exp_diff(size_t n, float a, const float *x, float *out) { path()->exp_diff(n, a, x, out); }
void ug_rows_exp_sub(size_t n, const float *x, float a, float *out) { path()->exp_sub(n, x, a, out); }

void ug_rows_decay_mul(size_t n, float a, const float *x, float s, const float *y, float *out)
{
    path()->decay_mul(n, a, x, s, y, out);
}

void ug_rows_store(size_t bytes, const void *src, void *dst, bool stream) { path()->store(bytes, src, dst, stream); }
void ug_rows_stream_end(void) { path()->stream_end(); }

void ug_rows_transpose(size_t rows, size_t cols, const ug_bf16 *src, size_t lds, ug_bf16 *dst, size_t ldd)
{
    path()->transpose(rows, cols, src, lds, dst, ldd);
}
