/* SPDX-License-Identifier: MIT */
/* MPFR reference of gdn_chunk_cumsum (SPEC §1.3), independent of
 * kernels/gdn_chunk_cumsum.c.
 *
 *   g[t] = sum_{s = chunk start}^{t} g_raw[s]
 *
 * formed exactly (a sum of at most 64 f32 values spans fewer than 300 bits)
 * and rounded once to f32. The stage has no deliberate intermediate rounding,
 * so the staged mode is the exact mode. Per element: the bound of an f32
 * running sum of i + 1 terms in any order (docs/error-model-gdn_stages.md §1)
 * and sum |g_raw| for the condition number. Shapes must satisfy the kernel's
 * validation (the caller checks). With ug_ref_fast(), a chunk whose terms
 * fit one 128-bit integer is summed there (the same values, bit for bit:
 * docs/error-model.md §2.1). */
#ifndef UG_REF_GDN_CHUNK_CUMSUM_H
#define UG_REF_GDN_CHUNK_CUMSUM_H

#include <stddef.h>

#include "../core/status.h"
#include "ref.h"

typedef struct {
    size_t b, t, h, bt;
} gdn_chunk_cumsum_shape;

ug_status gdn_chunk_cumsum_reference(const gdn_chunk_cumsum_shape *s, const float *g_raw,
                                     const ug_f32_model *model, ug_ref_mode mode, ug_ref_value *g);

#endif
