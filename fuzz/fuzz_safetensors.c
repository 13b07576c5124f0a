/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the safetensors reader (core/safetensors.c): any
 * bytes must give a status, never a crash, a hang, a leak or a read outside
 * them; when they parse, every tensor's elements are copied out (so ASan sees
 * each range the reader vouched for) and the metadata is looked up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so a read past the end is caught. */
    unsigned char *bytes = malloc(size ? size : 1);
    if (!bytes) return 0;
    memcpy(bytes, data, size);
    ug_st_file f;
    if (ug_st_parse("fuzz", bytes, size, &f).code == UG_OK) {
        for (size_t i = 0; i < f.n; i++) {
            const ug_st_tensor *t = &f.tensors[i];
            void *out = malloc(t->count * ug_dtype_size(t->dtype) + 1);
            if (out) ug_st_copy(t, out);
            free(out);
            if (ug_st_find(&f, t->name) == NULL) abort(); /* every listed tensor is found by its name */
        }
        (void)ug_st_metadata(&f, "format");
        ug_st_free(&f);
    }
    free(bytes);
    return 0;
}
