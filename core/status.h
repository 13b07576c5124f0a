/* SPDX-License-Identifier: MIT */
/* Status values returned by every public ulpgate function.
 *
 * Contract: a function either returns UG_OK (msg empty) or a failure code with
 * a one-line message that names the offending value and the limit it broke,
 * e.g. "K (256) exceeds ... MAX_K = 192". Nothing aborts; callers propagate. */
#ifndef UG_STATUS_H
#define UG_STATUS_H

#include <stdbool.h>

typedef enum {
    UG_OK = 0,
    UG_EINVAL,   /* invalid argument or shape (a kernel's validation) */
    UG_ENOMEM,   /* allocation failed */
    UG_EIO,      /* file could not be read or written */
    UG_EPARSE,   /* malformed input file (JSON, sweep, budgets, baseline) */
    UG_EGUARD,   /* guard zone overwritten: out-of-bounds write detected */
    UG_EREF,     /* the reference could not compute a value */
    UG_EKERNEL,  /* a kernel library reported a failure of its own */
    UG_EINPUT    /* an input path is missing, unreadable, not a regular file
                    or over its size cap (exit 2, like UG_EPARSE) */
} ug_code;

enum { UG_MSG_MAX = 512 };

/* A status cannot be dropped silently: the type is nodiscard, so every function
 * and function pointer returning it is covered, and the Makefile makes the
 * warning an error (-Werror=unused-result). A deliberate drop is written as
 * `(void)call(...)` with a comment saying why. GCC takes C23's [[nodiscard]] on
 * a type in C11 mode; clang (make fuzz) takes warn_unused_result on a type. */
#if defined(__has_c_attribute)
#if __has_c_attribute(nodiscard)
#define UG_NODISCARD_TYPE [[nodiscard]]
#endif
#endif
#ifndef UG_NODISCARD_TYPE
#define UG_NODISCARD_TYPE __attribute__((warn_unused_result))
#endif

typedef struct UG_NODISCARD_TYPE {
    ug_code code;
    char msg[UG_MSG_MAX];
} ug_status;

ug_status ug_ok(void);
ug_status ug_fail(ug_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline bool ug_is_ok(const ug_status *s) { return s->code == UG_OK; }
const char *ug_code_name(ug_code code);

/* Propagate a failure from an expression returning ug_status. */
#define UG_TRY(expr)                                   \
    do {                                               \
        ug_status ug_try_s_ = (expr);                  \
        if (ug_try_s_.code != UG_OK) return ug_try_s_; \
    } while (0)

#endif
