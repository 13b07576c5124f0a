/* SPDX-License-Identifier: MIT */
#include "buf.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[UG_DTYPE_COUNT] = {
    [UG_BF16] = {"bf16", 2},
    [UG_F32] = {"f32", 4},
    [UG_F64] = {"f64", 8},
    [UG_U32] = {"u32", 4},
};

size_t ug_dtype_size(ug_dtype t)
{
    return t < UG_DTYPE_COUNT ? dtype_info[t].size : 0;
}

const char *ug_dtype_name(ug_dtype t)
{
    return t < UG_DTYPE_COUNT ? dtype_info[t].name : "?";
}

ug_dtype ug_dtype_parse(const char *name)
{
    for (int t = 0; t < UG_DTYPE_COUNT; t++)
        if (strcmp(name, dtype_info[t].name) == 0) return (ug_dtype)t;
    return UG_DTYPE_COUNT;
}
