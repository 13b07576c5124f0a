/* SPDX-License-Identifier: MIT */
/* ulpgate kernel ABI: how a shared library hands its kernels to
 * `ulpgate verify --kernel-lib PATH`, which sweeps, gates and reports them like
 * the built-in kernels. Plain C; nothing here depends on ulpgate's internals.
 *
 * The library exports one symbol, ulpgate_kernels (ULPGATE_KERNEL_ENTRY),
 * returning a table of {family name, run function, user pointer}. ulpgate
 * never loads the library itself: worker processes (forks of ulpgate) do,
 * each with dlopen(RTLD_NOW | RTLD_LOCAL) and one call of ulpgate_kernels,
 * and run every kernel call there. A call that exits the process, dies on a
 * signal or outlives its time limit (verify --case-timeout) fails the case
 * it was running; a fresh worker runs the next one. ulpgate checks
 * abi_version == ULPGATE_KERNEL_ABI_VERSION and
 * that every family name is one `ulpgate list` shows (each at most once, run
 * not NULL), and sweeps only those families. It refuses the library, naming
 * the value, otherwise.
 *
 * The contract of a run function:
 *  - params: every parameter of the family, in `ulpgate list` order, by name
 *    ("B", "T", "H", ...), as doubles (shapes are integers, exact below 2^53).
 *  - tensors: every buffer of the family, in `ulpgate list` order (inputs
 *    first, then outputs), with the names, layouts and dtypes of `ulpgate list`
 *    and docs/spec.md. count is in elements. Rejected cases of a sweep pass a
 *    tensor with a wrong count or dtype on purpose: validate them as the
 *    family's seed does.
 *  - return ULPGATE_OK after writing every element of every output, except
 *    an optional one (`ulpgate list` marks it "optional"): a pipeline's
 *    intermediate (gdn_e2e's g, L, A, w, u, h, v_new). Write it whole if the
 *    kernel has it: ulpgate then checks that stage on its own, against the
 *    stage's reference computed from the kernel's own earlier intermediates;
 *    leave it untouched if the kernel fuses it away (that check is left out
 *    and the report says so; an intermediate whose stage reads one left
 *    untouched cannot be checked either, and an INFO line names the input
 *    it lacked). Optional buffers come after the others, so a
 *    library written before they existed still works;
 *    ULPGATE_EINVAL for a shape or tensor the kernel rejects, with a message
 *    naming the value and the limit (the sweep checks substrings of it, e.g.
 *    "K (256) exceeds MAX_K = 192") and WITHOUT writing any output element;
 *    ULPGATE_ENOMEM when scratch memory cannot be had; ULPGATE_ERROR for any
 *    other failure (with a message).
 *  - msg: msg_size (>= 256) bytes for a NUL-terminated message; ulpgate
 *    terminates it at msg_size - 1 in any case.
 *  - inputs must not be modified; nothing outside [data, data + count) may be
 *    read or written (ulpgate places guard zones around every tensor, checks
 *    them after each call and reports a write into them).
 *  - processes: under `--jobs N`, N worker processes each call run from one
 *    thread at a time; calls of one case may follow calls of other cases in
 *    the same process, so run must not rely on state a previous call left.
 *  - lifetime: params, tensors, their names and data, and msg are valid only
 *    during the call (do not keep them; tensors live in memory shared with
 *    ulpgate). The table, its entries and family strings must stay valid
 *    until the worker process exits (it does not dlclose).
 *
 * Build: cc -shared -fPIC -fvisibility=hidden -Wl,-Bsymbolic -I include
 * mine.c -o libmine.so (hidden visibility and -Bsymbolic keep the library's
 * own symbols from interposing on the host's, and the host's on its). */
#ifndef ULPGATE_KERNEL_ABI_H
#define ULPGATE_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of the types below. */
#define ULPGATE_KERNEL_ABI_VERSION 1u
/* The one symbol ulpgate looks up. */
#define ULPGATE_KERNEL_ENTRY "ulpgate_kernels"

#if defined(__GNUC__)
#define ULPGATE_KERNEL_EXPORT __attribute__((visibility("default")))
#else
#define ULPGATE_KERNEL_EXPORT
#endif

/* Element types: bf16 is the upper half of an IEEE binary32 (uint16_t bits). */
typedef enum {
    ULPGATE_DTYPE_BF16 = 0,
    ULPGATE_DTYPE_F32 = 1,
    ULPGATE_DTYPE_F64 = 2,
    ULPGATE_DTYPE_U32 = 3
} ulpgate_dtype;

typedef enum {
    ULPGATE_OK = 0,
    ULPGATE_EINVAL = 1, /* rejected: invalid argument (nothing written) */
    ULPGATE_ENOMEM = 2,
    ULPGATE_ERROR = 3
} ulpgate_status;

typedef struct {
    const char *name;
    double value;
} ulpgate_param;

typedef struct {
    const char *name;
    int32_t dtype;      /* an ulpgate_dtype */
    size_t count;       /* elements */
    void *data;         /* 64-byte aligned; inputs read-only */
} ulpgate_tensor;

typedef int (*ulpgate_run_fn)(void *user, const ulpgate_param *params, size_t n_params,
                              const ulpgate_tensor *tensors, size_t n_tensors, char *msg,
                              size_t msg_size);

typedef struct {
    const char *family;   /* as `ulpgate list` names it: "gdn_chunk_o" */
    ulpgate_run_fn run;
    void *user;           /* passed to run unchanged */
} ulpgate_kernel;

typedef struct {
    uint32_t abi_version; /* ULPGATE_KERNEL_ABI_VERSION */
    uint32_t n_kernels;
    const ulpgate_kernel *kernels;
} ulpgate_kernel_table;

/* The entry point every kernel library defines (with ULPGATE_KERNEL_EXPORT). */
typedef const ulpgate_kernel_table *(*ulpgate_kernels_fn)(void);
ULPGATE_KERNEL_EXPORT const ulpgate_kernel_table *ulpgate_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
