/* SPDX-License-Identifier: MIT */
/* A directory whose files are replaced as one set: the reports of one run
 * appear together or not at all (docs/report-format.md, "The report set").
 *
 * For a target PARENT/NAME:
 *   ug_report_dir_open   (before the run) resolves NAME (a symlink is
 *                        followed), creates missing parents, locks
 *                        PARENT/.NAME.ulpgate-lock (flock, exclusive; a second
 *                        run fails at once naming the pid that holds it),
 *                        removes what killed runs left beside NAME
 *                        (.NAME.ulpgate-new-XXXXXX, .NAME.ulpgate-old-XXXXXX),
 *                        checks that NAME is absent or a directory holding
 *                        only set files (the names given, or a name plus
 *                        ".tmpXXXXXX" left by older versions), not the root
 *                        nor a mount point, and creates the staging directory
 *                        PARENT/.NAME.ulpgate-new-XXXXXX, which proves PARENT
 *                        writable. Failures: UG_EINVAL (a usage error, exit 2)
 *                        naming the path and the reason; nothing is changed.
 *   ug_report_dir_add    writes one file of the set into the staging
 *                        directory (write(2), then fsync). A failed write
 *                        (ENOSPC, EFBIG under `ulimit -f` with SIGXFSZ
 *                        ignored, EIO) is UG_EIO naming NAME/FILE, the reason
 *                        and the bytes written; the old set is untouched.
 *   ug_report_dir_commit syncs the staging directory, then swaps it with NAME
 *                        in one renameat2(RENAME_EXCHANGE) (a plain rename
 *                        when NAME does not exist), syncs PARENT, removes the
 *                        previous set and releases the lock. Where the
 *                        filesystem cannot exchange, NAME is renamed aside
 *                        first (a moment with no NAME; never a mixed set).
 *   ug_report_dir_close  removes the staging directory if not committed and
 *                        releases the lock (removing the lock file); safe on
 *                        a zeroed struct and after commit.
 * A killed run leaves NAME whole (old or new set) and, at most, the staging
 * directory and the lock file, which the next run removes. */
#ifndef UG_REPORT_DIR_H
#define UG_REPORT_DIR_H

#include <limits.h>
#include <stddef.h>

#include "status.h"

typedef struct {
    char shown[PATH_MAX];   /* the target as the caller named it (messages) */
    char target[PATH_MAX];  /* resolved: PARENT/NAME */
    char staging[PATH_MAX]; /* PARENT/.NAME.ulpgate-new-XXXXXX, "" when none */
    char lock_path[PATH_MAX];
    int lock_fd;
    bool locked; /* lock_fd holds the lock (false in a zeroed struct) */
} ug_report_dir;

ug_status ug_report_dir_open(ug_report_dir *d, const char *path, const char *const *names, size_t n_names);
ug_status ug_report_dir_add(ug_report_dir *d, const char *name, const void *data, size_t size);
ug_status ug_report_dir_commit(ug_report_dir *d);
void ug_report_dir_close(ug_report_dir *d);

#endif
