/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the kernels' validation entry points: the bytes pick a
 * family, its parameters (small, so that accepted shapes stay cheap), one
 * buffer to make wrong (count or dtype), and fill the inputs. The kernel must
 * return a status, stay inside its guarded buffers, and write nothing when it
 * rejects. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/guard.h"
#include "../harness/family.h"

enum { MAX_BYTES = 1 << 20 };

static uint8_t take(const uint8_t **data, size_t *size)
{
    if (*size == 0) return 0;
    (*size)--;
    return *(*data)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ug_family_count() == 0) return 0;
    const ug_family *f = ug_family_at(take(&data, &size) % ug_family_count());
    ug_params p = {{0}};
    for (size_t i = 0; i < f->n_params; i++) {
        uint8_t b = take(&data, &size);
        /* Mostly the shapes kernels like (multiples of 32 up to 256), sometimes anything small. */
        p.v[i] = b & 0x80 ? (double)(32 * ((b & 7) + 1)) : (double)(b & 0x7F);
    }
    int broken = take(&data, &size) % (int)(f->n_buffers + 1) - 1;
    uint8_t how = take(&data, &size);
    ug_guarded mem[UG_MAX_BUFFERS] = {{0}};
    ug_buf bufs[UG_MAX_BUFFERS] = {{0}};
    size_t total = 0;
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (ug_family_buffer_count(f, &p, i, &bufs[i].count).code != UG_OK) goto done;
        bufs[i].dtype = f->buffers[i].dtype;
        if ((int)i == broken) {
            if (how & 1) bufs[i].count += (how & 2) ? 1 : (bufs[i].count ? (size_t)-1 : 0);
            else bufs[i].dtype = (ug_dtype)((bufs[i].dtype + 1) % UG_DTYPE_COUNT);
        }
        total += bufs[i].count * ug_dtype_size(bufs[i].dtype);
        if (bufs[i].count > MAX_BYTES || total > MAX_BYTES) goto done;
    }
    for (size_t i = 0; i < f->n_buffers; i++) {
        size_t bytes = bufs[i].count * ug_dtype_size(bufs[i].dtype);
        if (ug_guarded_alloc(&mem[i], bytes).code != UG_OK) goto done;
        bufs[i].data = ug_guarded_data(&mem[i]);
        uint8_t *d = bufs[i].data;
        for (size_t k = 0; k < bytes; k++) d[k] = f->buffers[i].is_output ? 0xA7 : (size ? data[k % size] : 0);
    }
    ug_status st = f->run(&p, bufs);
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!ug_guarded_intact(&mem[i])) abort(); /* out-of-bounds write */
        if (st.code != UG_OK && f->buffers[i].is_output) {
            const uint8_t *d = bufs[i].data;
            for (size_t k = 0; k < bufs[i].count * ug_dtype_size(bufs[i].dtype); k++)
                if (d[k] != 0xA7) abort(); /* a rejected call wrote its output */
        }
    }
done:
    for (size_t i = 0; i < f->n_buffers; i++) (void)ug_guarded_free(&mem[i], "fuzz"); /* guards checked above */
    return 0;
}
