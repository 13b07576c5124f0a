/* SPDX-License-Identifier: MIT */
/* Whole-file writes that never leave a partial file: data goes to a
 * temporary file beside the target, is flushed and synced, and is renamed
 * over the target only when every write succeeded. */
#ifndef UG_ATOMIC_FILE_H
#define UG_ATOMIC_FILE_H

#include <stdio.h>

#include "status.h"

typedef struct {
    FILE *fp;
    char path[1024];
    char tmp_path[1040];
} ug_atomic_file;

ug_status ug_atomic_open(ug_atomic_file *f, const char *path);
/* Closes and renames; on any earlier write error (ferror) removes the
 * temporary file and reports the path. */
ug_status ug_atomic_commit(ug_atomic_file *f);
/* Removes the temporary file (used on an error path). */
void ug_atomic_abort(ug_atomic_file *f);

#endif
