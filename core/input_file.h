/* SPDX-License-Identifier: MIT */
/* Input files: the one way ulpgate opens a file it reads (sweeps, budgets,
 * baselines, reports, manifests, safetensors fixtures and candidates).
 *
 * Contract: before a byte is read, the path must name an existing, readable
 * regular file (symbolic links followed) of at most max_size bytes; a missing
 * or unreadable path, a directory, FIFO, socket or device, or a file over its
 * cap is UG_EINPUT (exit 2), with a message naming what the file is for, the
 * path and what was found there. The file is opened with O_NONBLOCK (a FIFO
 * swapped in after the check cannot block open) and checked again with
 * fstat; the read stops at max_size + 1 bytes, so no input, not even one
 * that grows while it is read, is read or hashed beyond its cap. */
#ifndef UG_INPUT_FILE_H
#define UG_INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* The cap of every JSON input (sweep file, budgets, baseline, report.json,
 * manifest): 64 MiB, twenty times the largest report.json of the default
 * sweep. */
#define UG_INPUT_MAX_JSON ((size_t)64 << 20)

/* The cap of a kernel library read to hash its content (verify --kernel-lib). */
#define UG_INPUT_MAX_LIBRARY ((size_t)1 << 30)

/* Reads the whole file into *bytes (malloc'd, size + 1 bytes, NUL-terminated
 * after the data). what names the file's role in messages ("sweep",
 * "budgets", "candidate"). Errors after a successful open are UG_EIO. */
ug_status ug_input_read(const char *what, const char *path, size_t max_size, unsigned char **bytes, size_t *size);

/* A path that must be a directory (a sweep or budgets folder, fixtures,
 * candidates): UG_EINPUT naming the path and what it is otherwise. */
ug_status ug_input_check_dir(const char *what, const char *path);

#endif
