/* SPDX-License-Identifier: MIT */
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a non-regular file is, for messages. */
static const char *kind_of(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static ug_status stat_failure(const char *what, const char *path, int err)
{
    if (err == ENOENT || err == ENOTDIR) return ug_fail(UG_EINPUT, "%s '%s' does not exist", what, path);
    return ug_fail(UG_EINPUT, "%s '%s' cannot be accessed: %s", what, path, strerror(err));
}

static ug_status check_regular(const char *what, const char *path, const struct stat *sb, size_t max_size)
{
    if (!S_ISREG(sb->st_mode))
        return ug_fail(UG_EINPUT, "%s '%s' is %s, not a regular file", what, path, kind_of(sb->st_mode));
    if ((unsigned long long)sb->st_size > max_size)
        return ug_fail(UG_EINPUT, "%s '%s' is %llu bytes, over the cap of %zu bytes", what, path,
                       (unsigned long long)sb->st_size, max_size);
    return ug_ok();
}

ug_status ug_input_read(const char *what, const char *path, size_t max_size, unsigned char **bytes, size_t *size)
{
    *bytes = NULL;
    *size = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) return stat_failure(what, path, errno);
    UG_TRY(check_regular(what, path, &sb, max_size));
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == EACCES) return ug_fail(UG_EINPUT, "%s '%s' is not readable: %s", what, path, strerror(err));
        return stat_failure(what, path, err);
    }
    ug_status st = fstat(fd, &sb) == 0 ? check_regular(what, path, &sb, max_size)
                                       : ug_fail(UG_EIO, "%s '%s': fstat failed: %s", what, path, strerror(errno));
    /* Room for one byte past the size seen, to notice a file that grows. */
    size_t cap = ug_is_ok(&st) ? (size_t)sb.st_size + 1 : 0;
    unsigned char *buf = ug_is_ok(&st) ? malloc(cap + 1) : NULL;
    if (ug_is_ok(&st) && !buf) st = ug_fail(UG_ENOMEM, "cannot allocate %zu bytes to read %s '%s'", cap, what, path);
    size_t got = 0;
    while (ug_is_ok(&st) && got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) st = ug_fail(UG_EIO, "reading %s '%s' failed after %zu bytes: %s", what, path, got, strerror(errno));
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (ug_is_ok(&st) && got > (size_t)sb.st_size)
        st = ug_fail(UG_EINPUT, "%s '%s' grew while it was read (more than the %llu bytes it had)", what, path,
                     (unsigned long long)sb.st_size);
    if (!ug_is_ok(&st)) {
        free(buf);
        return st;
    }
    buf[got] = '\0';
    *bytes = buf;
    *size = got;
    return ug_ok();
}

ug_status ug_input_check_dir(const char *what, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return stat_failure(what, path, errno);
    if (!S_ISDIR(sb.st_mode)) return ug_fail(UG_EINPUT, "%s '%s' is %s, not a directory", what, path,
                                             S_ISREG(sb.st_mode) ? "a regular file" : kind_of(sb.st_mode));
    if (access(path, R_OK | X_OK) != 0)
        return ug_fail(UG_EINPUT, "%s directory '%s' is not readable: %s", what, path, strerror(errno));
    return ug_ok();
}

