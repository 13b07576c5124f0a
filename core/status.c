/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

/* Only the code and the terminating NUL are written: msg is a C string, and
 * filling (then copying) all its bytes on every successful call cost a
 * measurable part of a microsecond kernel (docs/performance.md). Out of
 * line, so that the compiler sees ug_ok's code no more than ug_fail's (an
 * inline one made it warn about out-parameters on the failure paths). */
ug_status ug_ok(void)
{
    ug_status s;
    s.code = UG_OK;
    s.msg[0] = '\0';
    return s;
}

ug_status ug_fail(ug_code code, const char *fmt, ...)
{
    ug_status s;
    s.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s.msg, sizeof s.msg, fmt, ap);
    va_end(ap);
    return s;
}

const char *ug_code_name(ug_code code)
{
    switch (code) {
    case UG_OK: return "ok";
    case UG_EINVAL: return "invalid-argument";
    case UG_ENOMEM: return "out-of-memory";
    case UG_EIO: return "io-error";
    case UG_EPARSE: return "parse-error";
    case UG_EGUARD: return "guard-overwritten";
    case UG_EREF: return "reference-error";
    case UG_EKERNEL: return "kernel-error";
    case UG_EINPUT: return "input-error";
    }
    return "unknown";
}
