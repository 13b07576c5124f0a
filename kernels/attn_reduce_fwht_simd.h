/* SPDX-License-Identifier: MIT */
/* The vector loops of attn_reduce_fwht that are the same on every SIMD path
 * (included by attn_reduce_fwht_<isa>.c after its vec_<isa>.h and its
 * merge_strided and in_register_stages, the ISA's own shuffles), registered
 * as that ISA's paths. in_register_stages(v) runs the butterfly stages
 * h = 1, 2, ..., LANES/2 within one vector; the stages h >= LANES pair whole
 * vectors. */
#include "attn_reduce_fwht.h"
#include "attn_reduce_fwht_pairs.h"
#include "attn_reduce_fwht_paths.h"

static void butterflies(float *x, size_t n)
{
    for (size_t j = 0; j < n; j += LANES) vec_store(x + j, in_register_stages(vec_load(x + j)));
    for (size_t h = UG_MUTANT == ATTN_REDUCE_FWHT_MUT_VECTOR_STAGE_SKIPPED ? 2 * LANES : LANES; h < n; h *= 2)
        for (size_t base = 0; base < n; base += 2 * h)
            for (size_t j = base; j < base + h; j += LANES) {
                const vec a = vec_load(x + j), b = vec_load(x + j + h);
                vec_store(x + j, vec_add(a, b));
                vec_store(x + j + h, vec_sub(a, b));
            }
}

static void scale_signs(const float *x, size_t n, float scale, const uint32_t *sign_bits, float *out)
{
    const vec s = vec_set1(scale);
    for (size_t j = 0; j < n; j += LANES) vec_store(out + j, vec_xor_bits(vec_mul(vec_load(x + j), s), sign_bits + j));
}

static const attn_reduce_fwht_paths paths = {merge_partials, butterflies, scale_signs, attn_reduce_fwht_fma_chain};
UG_ISA_PATHS(attn_reduce_fwht, UG_VEC_ISA, paths);
