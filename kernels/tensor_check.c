/* SPDX-License-Identifier: MIT */
#include "tensor_check.h"

#include <stdio.h>

ug_status ug_check_dims_positive(const char *kernel, size_t n, const ug_named_dim *dims)
{
    for (size_t i = 0; i < n; i++)
        if (dims[i].value == 0)
            return ug_fail(UG_EINVAL, "%s: all dims must be > 0: %s (0) must be > 0", kernel, dims[i].name);
    return ug_ok();
}

static ug_status check_tensor(const char *kernel, const ug_tensor_spec *t)
{
    size_t expected = 1;
    for (size_t i = 0; i < t->rank && !t->absent; i++) {
        if (!__builtin_mul_overflow(expected, (size_t)t->dims[i], &expected)) continue;
        char shape[160];
        int len = 0;
        for (size_t d = 0; d < t->rank; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%s=%u", d ? ", " : "",
                            t->dim_names[d], t->dims[d]);
        return ug_fail(UG_EINVAL, "%s: %s shape [%s] has more elements than size_t can count", kernel,
                       t->name, shape);
    }
    if (t->absent) expected = 0;
    if (!t->buf)
        return ug_fail(UG_EINVAL, "%s: %s must be %s[%zu] (got no buffer)", kernel, t->name,
                       ug_dtype_name(t->dtype), expected);
    if (t->buf->count != expected || t->buf->dtype != t->dtype)
        return ug_fail(UG_EINVAL, "%s: %s must be %s[%zu] (got %zu %s)", kernel, t->name,
                       ug_dtype_name(t->dtype), expected, t->buf->count, ug_dtype_name(t->buf->dtype));
    if (expected && !t->buf->data)
        return ug_fail(UG_EINVAL, "%s: %s has %zu elements but no data (NULL)", kernel, t->name, expected);
    return ug_ok();
}

ug_status ug_check_tensors(const char *kernel, size_t n, const ug_tensor_spec *tensors)
{
    for (size_t i = 0; i < n; i++) UG_TRY(check_tensor(kernel, &tensors[i]));
    return ug_ok();
}
