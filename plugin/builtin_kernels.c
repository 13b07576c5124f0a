/* SPDX-License-Identifier: MIT */
/* The repository's own kernels as a kernel library (include/ulpgate/kernel_abi.h):
 * $(BUILD)/libulpgate_kernels.so, one entry per registered family, each
 * running the family descriptor's own `run` adapter. It is what the tests
 * load through `--kernel-lib` to show that the plugin path measures a kernel
 * exactly as the built-in path does, and a working example for authors.
 *
 * One generic adapter serves every family (the entry's user pointer is the
 * descriptor): it matches parameters and tensors to the descriptor by name,
 * so a host that passed them in another order or incompletely gets an error
 * naming the missing one rather than a kernel reading the wrong buffer. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../harness/family.h"
#include "../include/ulpgate/kernel_abi.h"

enum { MAX_FAMILIES = 64 };

static ulpgate_kernel entries[MAX_FAMILIES];
static ulpgate_kernel_table table = {ULPGATE_KERNEL_ABI_VERSION, 0, entries};
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static int status_code(ug_code code)
{
    switch (code) {
    case UG_OK: return ULPGATE_OK;
    case UG_EINVAL: return ULPGATE_EINVAL;
    case UG_ENOMEM: return ULPGATE_ENOMEM;
    default: return ULPGATE_ERROR;
    }
}

static int fail(char *msg, size_t msg_size, int code, const char *what, const char *name, const char *family)
{
    snprintf(msg, msg_size, "%s %s of family %s not passed by the host", what, name, family);
    return code;
}

static int run_family(void *user, const ulpgate_param *params, size_t n_params, const ulpgate_tensor *tensors,
                      size_t n_tensors, char *msg, size_t msg_size)
{
    const ug_family *f = user;
    ug_params p = {{0}};
    ug_buf bufs[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_params; i++) {
        size_t k = 0;
        while (k < n_params && strcmp(params[k].name, f->param_names[i]) != 0) k++;
        if (k == n_params) return fail(msg, msg_size, ULPGATE_ERROR, "parameter", f->param_names[i], f->name);
        p.v[i] = params[k].value;
    }
    for (size_t i = 0; i < f->n_buffers; i++) {
        size_t k = 0;
        while (k < n_tensors && strcmp(tensors[k].name, f->buffers[i].name) != 0) k++;
        if (k == n_tensors) return fail(msg, msg_size, ULPGATE_ERROR, "tensor", f->buffers[i].name, f->name);
        bufs[i] = (ug_buf){tensors[k].data, tensors[k].count, (ug_dtype)tensors[k].dtype};
    }
    ug_status st = f->run(&p, bufs);
    snprintf(msg, msg_size, "%s", st.msg);
    return status_code(st.code);
}

static void fill_table(void)
{
    for (size_t i = 0; i < ug_family_count() && i < MAX_FAMILIES; i++)
        entries[table.n_kernels++] = (ulpgate_kernel){ug_family_at(i)->name, run_family, (void *)ug_family_at(i)};
}

/* NULL (which the host reports) rather than a table missing families. */
ULPGATE_KERNEL_EXPORT const ulpgate_kernel_table *ulpgate_kernels(void)
{
    if (ug_family_count() > MAX_FAMILIES) return NULL;
    pthread_once(&table_once, fill_table);
    return &table;
}
