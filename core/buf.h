/* SPDX-License-Identifier: MIT */
/* Typed, counted buffers: what a kernel receives instead of a bare pointer, so
 * that it can validate element count and dtype exactly as the seeds' host code
 * validates MlxBuffer::element_count() and dtype(). */
#ifndef UG_BUF_H
#define UG_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef enum { UG_BF16 = 0, UG_F32, UG_F64, UG_U32, UG_DTYPE_COUNT } ug_dtype;

typedef struct {
    void *data;
    size_t count;   /* elements, not bytes */
    ug_dtype dtype;
} ug_buf;

size_t ug_dtype_size(ug_dtype t);
/* "bf16", "f32", "f64", "u32" (the names the seeds print); "?" otherwise. */
const char *ug_dtype_name(ug_dtype t);
/* Parses the names above; returns UG_DTYPE_COUNT for anything else. */
ug_dtype ug_dtype_parse(const char *name);

#endif
