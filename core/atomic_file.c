/* SPDX-License-Identifier: MIT */
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ug_status ug_atomic_open(ug_atomic_file *f, const char *path)
{
    f->fp = NULL;
    if (strlen(path) >= sizeof f->path)
        return ug_fail(UG_EIO, "path '%s' is longer than %zu bytes", path, sizeof f->path - 1);
    strcpy(f->path, path);
    snprintf(f->tmp_path, sizeof f->tmp_path, "%s.tmpXXXXXX", path);
    int fd = mkstemp(f->tmp_path);
    if (fd < 0) return ug_fail(UG_EIO, "cannot create a temporary file for '%s': %s", path, strerror(errno));
    /* mkstemp creates 0600; a report or baseline is an ordinary file. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    f->fp = fdopen(fd, "w");
    if (!f->fp) {
        int err = errno;
        close(fd);
        unlink(f->tmp_path);
        return ug_fail(UG_EIO, "cannot open '%s': %s", f->tmp_path, strerror(err));
    }
    return ug_ok();
}

ug_status ug_atomic_commit(ug_atomic_file *f)
{
    bool failed = ferror(f->fp) != 0;
    int err = errno;
    if (fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0) {
        failed = true;
        err = errno;
    }
    if (fclose(f->fp) != 0 && !failed) {
        failed = true;
        err = errno;
    }
    f->fp = NULL;
    if (failed) {
        unlink(f->tmp_path);
        return ug_fail(UG_EIO, "writing '%s' failed: %s", f->path, strerror(err));
    }
    if (rename(f->tmp_path, f->path) != 0) {
        err = errno;
        unlink(f->tmp_path);
        return ug_fail(UG_EIO, "cannot rename '%s' to '%s': %s", f->tmp_path, f->path, strerror(err));
    }
    return ug_ok();
}

void ug_atomic_abort(ug_atomic_file *f)
{
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    unlink(f->tmp_path);
}
