/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

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
