/* SPDX-License-Identifier: MIT */
/* safetensors files: the tensor format of Hugging Face, PyTorch and MLX, so a
 * kernel that runs elsewhere (a GPU) can read ulpgate's inputs and hand back
 * its outputs (docs/interop.md).
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON (an object
 * mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
 * end]}, plus an optional "__metadata__" object of strings), then the data;
 * offsets are relative to the start of the data, tensors are row-major,
 * little-endian. Only the dtypes ulpgate's buffers use are accepted: BF16,
 * F32, F64, U32.
 *
 * Reading is strict, and every rejection names the file, the tensor, the
 * value and the limit: header length within the file and at most
 * UG_ST_MAX_HEADER; a JSON object without duplicate keys; known dtype; shape
 * of at most UG_ST_MAX_RANK non-negative integers whose byte size
 * (overflow-checked) equals end - begin; every range inside the data, and the
 * ranges together covering the data exactly (no overlap, no hole, no trailing
 * byte), as the format's reference implementation requires.
 *
 * Writing goes through core/atomic_file: a file is complete or absent. The
 * header is padded with spaces to a multiple of 8 bytes and the tensors are
 * laid out by decreasing element size, so each starts aligned to its element
 * (as the reference writer does). */
#ifndef UG_SAFETENSORS_H
#define UG_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "status.h"

enum { UG_ST_MAX_RANK = 8 };
/* The reference implementation's cap: a larger header is refused before it
 * is read. */
#define UG_ST_MAX_HEADER ((uint64_t)100 << 20)

typedef struct {
    const char *name;       /* owned by the file */
    ug_dtype dtype;
    size_t rank;
    uint64_t shape[UG_ST_MAX_RANK];
    size_t count;           /* elements: the product of shape */
    const unsigned char *data; /* count * ug_dtype_size(dtype) bytes; not aligned in general */
} ug_st_tensor;

typedef struct {
    unsigned char *bytes;   /* the whole file (owned when read from a path) */
    size_t size;
    void *header;           /* the parsed JSON header (jansson) */
    size_t n;
    ug_st_tensor *tensors;  /* in data order */
} ug_st_file;

/* Parses size bytes (kept, not copied: they must outlive the file); `what`
 * names them in messages. */
ug_status ug_st_parse(const char *what, const unsigned char *bytes, size_t size, ug_st_file *out);
/* Reads a whole file through core/input_file (a missing, special or
 * unreadable path, or one larger than max_size bytes, is UG_EINPUT, unread). */
ug_status ug_st_read(const char *path, size_t max_size, ug_st_file *out);
void ug_st_free(ug_st_file *f);
/* NULL when the file has no tensor of that name. */
const ug_st_tensor *ug_st_find(const ug_st_file *f, const char *name);
/* The __metadata__ value of key, NULL when absent. */
const char *ug_st_metadata(const ug_st_file *f, const char *key);
/* Copies a tensor's elements to dst (count elements of its dtype). */
void ug_st_copy(const ug_st_tensor *t, void *dst);

/* "BF16", "F32", "F64", "U32". */
const char *ug_st_dtype_name(ug_dtype t);

typedef struct {
    const char *name;
    ug_dtype dtype;
    size_t rank;
    uint64_t shape[UG_ST_MAX_RANK];
    const void *data;       /* product(shape) elements */
} ug_st_entry;

/* Writes the tensors (header in the order given), with metadata as n_meta key/value
 * pairs (meta[2i], meta[2i+1]); names must be distinct and not
 * "__metadata__". */
ug_status ug_st_write(const char *path, const ug_st_entry *tensors, size_t n, const char *const *meta,
                      size_t n_meta);

#endif
