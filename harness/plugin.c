/* SPDX-License-Identifier: MIT */
#include "plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/ulpgate/kernel_abi.h"

_Static_assert(ULPGATE_DTYPE_BF16 == (int)UG_BF16 && ULPGATE_DTYPE_F32 == (int)UG_F32 &&
                   ULPGATE_DTYPE_F64 == (int)UG_F64 && ULPGATE_DTYPE_U32 == (int)UG_U32,
               "the ABI's dtype codes are ug_dtype's, so tensors pass their dtype unchanged");

/* More entries than any library could mean: a table pointer to something else. */
enum { MAX_TABLE_KERNELS = 4096 };

/* The harness's handle: the library's name and the workers that load it. */
struct ug_plugin {
    char path[4096];
    const char *base;                  /* inside path */
    ug_isolate *workers;
};

/* The library as loaded in a worker process (never in the harness). */
typedef struct {
    void *handle;
    const char *path, *base;
    const ulpgate_kernel **by_family;  /* indexed like ug_family_at; NULL: not provided */
} loaded_library;

static size_t family_index(const ug_family *f)
{
    size_t i = 0;
    while (i < ug_family_count() && ug_family_at(i) != f) i++;
    return i;
}

/* Checks the table entry by entry, naming the entry and its value. */
static ug_status load_table(loaded_library *p)
{
    dlerror();
    void *sym = dlsym(p->handle, ULPGATE_KERNEL_ENTRY);
    const char *err = dlerror();
    if (err || !sym)
        return ug_fail(UG_EINVAL, "--kernel-lib %s: no symbol %s (the entry point of include/ulpgate/kernel_abi.h): %s",
                       p->path, ULPGATE_KERNEL_ENTRY, err ? err : "it is NULL");
    ulpgate_kernels_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* POSIX: dlsym's object pointer holds the function */
    const ulpgate_kernel_table *t = entry();
    if (!t) return ug_fail(UG_EINVAL, "--kernel-lib %s: %s() returned NULL", p->path, ULPGATE_KERNEL_ENTRY);
    if (t->abi_version != ULPGATE_KERNEL_ABI_VERSION)
        return ug_fail(UG_EINVAL, "--kernel-lib %s: kernel ABI version %u, this ulpgate supports version %u",
                       p->path, t->abi_version, ULPGATE_KERNEL_ABI_VERSION);
    if (t->n_kernels == 0 || t->n_kernels > MAX_TABLE_KERNELS || !t->kernels)
        return ug_fail(UG_EINVAL, "--kernel-lib %s: the kernel table has %u entries at %p (must be 1 to %d, non-NULL)",
                       p->path, t->n_kernels, (const void *)t->kernels, MAX_TABLE_KERNELS);
    for (uint32_t k = 0; k < t->n_kernels; k++) {
        const ulpgate_kernel *e = &t->kernels[k];
        if (!e->family) return ug_fail(UG_EINVAL, "--kernel-lib %s: kernel %u has no family name (NULL)", p->path, k);
        const ug_family *f = ug_family_find(e->family);
        if (!f)
            return ug_fail(UG_EINVAL, "--kernel-lib %s: kernel %u: unknown family '%.64s' (`ulpgate list` names them)",
                           p->path, k, e->family);
        if (!e->run)
            return ug_fail(UG_EINVAL, "--kernel-lib %s: kernel %u (%s): the run function is NULL", p->path, k, f->name);
        const ulpgate_kernel **slot = &p->by_family[family_index(f)];
        if (*slot)
            return ug_fail(UG_EINVAL, "--kernel-lib %s: family %s is listed twice (kernels %td and %u)", p->path,
                           f->name, *slot - t->kernels, k);
        *slot = e;
    }
    return ug_ok();
}

static ug_status library_run(void *state, const ug_case *c, ug_buf *bufs)
{
    const loaded_library *p = state;
    const ug_family *f = c->family;
    const ulpgate_kernel *k = p->by_family[family_index(f)];
    /* Not UG_EINVAL: a missing kernel must never pass for a rejection. */
    if (!k) return ug_fail(UG_EKERNEL, "--kernel-lib %s provides no kernel for family %s", p->base, f->name);
    ulpgate_param params[UG_MAX_PARAMS];
    ulpgate_tensor tensors[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_params; i++) params[i] = (ulpgate_param){f->param_names[i], c->params.v[i]};
    for (size_t i = 0; i < f->n_buffers; i++)
        tensors[i] = (ulpgate_tensor){f->buffers[i].name, (int32_t)bufs[i].dtype, bufs[i].count, bufs[i].data};
    char msg[UG_MSG_MAX] = "";
    int rc = k->run(k->user, params, f->n_params, tensors, f->n_buffers, msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    switch (rc) {
    case ULPGATE_OK: return ug_ok();
    case ULPGATE_EINVAL: return ug_fail(UG_EINVAL, "%s", msg);
    case ULPGATE_ENOMEM: return ug_fail(UG_ENOMEM, "%s", msg);
    case ULPGATE_ERROR: return ug_fail(UG_EKERNEL, "%s", msg);
    }
    return ug_fail(UG_EKERNEL, "%s returned %d, not an ulpgate_status (0 to 3): %s", p->base, rc, msg);
}

/* In a fresh worker: dlopen, then the table's checks. */
static ug_status library_load(void *arg, void **state, bool *provided)
{
    const ug_plugin *plugin = arg;
    loaded_library *p = calloc(1, sizeof *p);
    if (p) p->by_family = calloc(ug_family_count() + 1, sizeof *p->by_family);
    if (!p || !p->by_family) {
        free(p);
        return ug_fail(UG_ENOMEM, "cannot allocate the plugin state for %s", plugin->path);
    }
    p->path = plugin->path;
    p->base = plugin->base;
    p->handle = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    ug_status st =
        p->handle ? load_table(p) : ug_fail(UG_EINVAL, "--kernel-lib %s: cannot load: %s", p->path, dlerror());
    if (!ug_is_ok(&st)) {
        if (p->handle) dlclose(p->handle);
        free(p->by_family);
        free(p);
        return st;
    }
    for (size_t f = 0; f < ug_family_count(); f++) provided[f] = p->by_family[f] != NULL;
    *state = p; /* until the worker exits */
    return ug_ok();
}

ug_status ug_plugin_open(const char *path, double case_timeout, ug_plugin **out)
{
    *out = NULL;
    ug_plugin *p = calloc(1, sizeof *p);
    if (!p) return ug_fail(UG_ENOMEM, "cannot allocate the plugin state for %s", path);
    /* A name without a slash is a file here, not a name for the library search path. */
    int n = snprintf(p->path, sizeof p->path, "%s%s", strchr(path, '/') ? "" : "./", path);
    if (n < 0 || (size_t)n >= sizeof p->path) {
        ug_plugin_close(p);
        return ug_fail(UG_EINVAL, "--kernel-lib: path longer than %zu bytes: %.64s...", sizeof p->path - 1, path);
    }
    const char *slash = strrchr(p->path, '/');
    p->base = slash + 1;
    const ug_worker_kernels library = {p->base, library_load, library_run, p};
    ug_status st = ug_isolate_open(&library, "plugin", case_timeout, &p->workers);
    if (!ug_is_ok(&st)) {
        ug_plugin_close(p);
        return st;
    }
    *out = p;
    return ug_ok();
}

void ug_plugin_close(ug_plugin *p)
{
    if (!p) return;
    ug_isolate_close(p->workers);
    free(p);
}

const ug_kernel_source *ug_plugin_source(const ug_plugin *p) { return ug_isolate_source(p->workers); }

const char *ug_plugin_basename(const ug_plugin *p) { return p->base; }

bool ug_plugin_provides(const ug_plugin *p, const ug_family *f) { return ug_isolate_provides(p->workers, f); }

static bool provided(const ug_case *c, const void *p) { return ug_plugin_provides(p, c->family); }

ug_status ug_plugin_restrict_sweep(const ug_plugin *p, ug_sweep *s, char *skipped, size_t size)
{
    size_t used = 0;
    skipped[0] = '\0';
    for (size_t i = 0; i < ug_family_count(); i++) {
        const ug_family *f = ug_family_at(i);
        bool in_sweep = false;
        for (size_t k = 0; k < s->n_cases && !in_sweep; k++) in_sweep = s->cases[k].family == f;
        if (!in_sweep || ug_plugin_provides(p, f) || used >= size) continue;
        used += (size_t)snprintf(skipped + used, size - used, "%s%s", used ? ", " : "", f->name);
    }
    ug_sweep_keep(s, provided, p);
    if (s->n_cases == 0)
        return ug_fail(UG_EINVAL, "--kernel-lib %s: the sweep %s has no case of the families the library provides",
                       p->base, s->path);
    return ug_ok();
}
