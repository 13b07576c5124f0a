/* Run-time choice of the micro-kernel path. __builtin_cpu_supports reads
 * CPUID and XCR0, so a path counts as supported only when the OS also saves
 * its registers. Under valgrind CPUID hides AVX-512, and the AVX2 path is
 * chosen there by the same rule. */
#include "isa.h"

#include <string.h>

#include "gemm_paths.h"

static const char *const isa_names[UG_ISA_COUNT] = {
    [UG_ISA_PORTABLE] = "portable",
    [UG_ISA_AVX2] = "avx2",
    [UG_ISA_AVX512] = "avx512",
};

/* What each path needs from the CPU; ug_isa_supported tests exactly these. */
static const char *const isa_requirements[UG_ISA_COUNT] = {
    [UG_ISA_PORTABLE] = "nothing",
    [UG_ISA_AVX2] = "avx2, fma",
    [UG_ISA_AVX512] = "avx512f, avx512bw, avx512vl, avx512dq, fma",
};

static ug_gemm_f32_bf16_fn *const gemm_paths[UG_ISA_COUNT] = {
    [UG_ISA_PORTABLE] = ug_gemm_f32_bf16_portable,
    [UG_ISA_AVX2] = ug_gemm_f32_bf16_avx2,
    [UG_ISA_AVX512] = ug_gemm_f32_bf16_avx512,
};

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
}

const char *ug_isa_name(ug_isa isa)
{
    return (unsigned)isa < UG_ISA_COUNT ? isa_names[isa] : "?";
}

bool ug_isa_parse(const char *name, ug_isa *out)
{
    for (int isa = 0; name && isa < UG_ISA_COUNT; isa++)
        if (strcmp(name, isa_names[isa]) == 0) {
            *out = (ug_isa)isa;
            return true;
        }
    return false;
}

bool ug_isa_supported(ug_isa isa)
{
    switch (isa) {
    case UG_ISA_PORTABLE: return true;
    case UG_ISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case UG_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("fma");
    case UG_ISA_COUNT: break;
    }
    return false;
}

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
        return ug_fail(UG_EINVAL, "isa: this CPU lacks the %s path (it needs %s)", isa_names[isa],
                       isa_requirements[isa]);
    thread_isa = (int)isa;
    return ug_ok();
}

ug_isa ug_isa_current(void) { return thread_isa < 0 ? default_isa : (ug_isa)thread_isa; }

void ug_gemm_f32_bf16(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                      const ug_bf16 *B, size_t ldb, float *C, size_t ldc)
{
    gemm_paths[ug_isa_current()](m, n, kk, A, lda, B, ldb, C, ldc);
}
