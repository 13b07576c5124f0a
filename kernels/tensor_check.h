/* SPDX-License-Identifier: MIT */
/* Validation helpers shared by the kernels' validate() functions: the
 * "all dims must be > 0" rule and the element-count/dtype rule of every
 * buffer, with the seeds' wording ("<kernel>: k must be bf16[N] (got M f32)")
 * plus what the seeds leave out: element counts are formed in size_t with
 * overflow checks (a shape too large to count is itself a rejection naming
 * the shape) and a buffer without data is rejected instead of dereferenced. */
#ifndef UG_KERNEL_TENSOR_CHECK_H
#define UG_KERNEL_TENSOR_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"

enum { UG_TENSOR_MAX_RANK = 5 };

/* What a kernel demands of one buffer. An absent optional buffer (absent
 * true) must have 0 elements and may have no data. */
typedef struct {
    const char *name;
    const ug_buf *buf;
    ug_dtype dtype;
    size_t rank;
    const char *dim_names[UG_TENSOR_MAX_RANK];
    uint32_t dims[UG_TENSOR_MAX_RANK];
    bool absent;
} ug_tensor_spec;

typedef struct {
    const char *name;
    uint32_t value;
} ug_named_dim;

/* "<kernel>: all dims must be > 0: T (0) must be > 0" for the first zero dim. */
ug_status ug_check_dims_positive(const char *kernel, size_t n, const ug_named_dim *dims);

/* Each tensor in order: count and dtype, then data. */
ug_status ug_check_tensors(const char *kernel, size_t n, const ug_tensor_spec *tensors);

#endif
