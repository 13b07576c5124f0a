/* SPDX-License-Identifier: MIT */
#include "report_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_dir.h"

#define STAGING_TAG ".ulpgate-new-"
#define ASIDE_TAG ".ulpgate-old-"
#define LOCK_TAG ".ulpgate-lock"
/* mkdtemp's suffix: what tells our leftovers from another target's names. */
enum { TEMP_SUFFIX = 6 };

static int remove_entry(const char *path, __attribute__((unused)) const struct stat *sb,
                        __attribute__((unused)) int flag, __attribute__((unused)) struct FTW *ftw)
{
    return remove(path);
}

static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void split_target(const ug_report_dir *d, char *parent, char *name)
{
    char copy[PATH_MAX];
    strcpy(copy, d->target);
    strcpy(parent, dirname(copy));
    strcpy(copy, d->target);
    strcpy(name, basename(copy));
}

/* PARENT/.NAME<tag>, e.g. the lock file or a mkdtemp template. */
static ug_status beside(const ug_report_dir *d, const char *tag, const char *suffix, char *out)
{
    char parent[PATH_MAX], name[PATH_MAX];
    split_target(d, parent, name);
    if (snprintf(out, PATH_MAX, "%s/.%s%s%s", parent, name, tag, suffix) >= PATH_MAX)
        return ug_fail(UG_EINVAL, "--reports %s: path longer than %d bytes", d->shown, PATH_MAX - 1);
    return ug_ok();
}

/* The target as an absolute path with its symlinks resolved; missing parents are created. */
static ug_status resolve_target(ug_report_dir *d, const char *path)
{
    char copy[PATH_MAX], parent[PATH_MAX];
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    if (len == 0 || len >= sizeof copy) return ug_fail(UG_EINVAL, "--reports '%s': empty or too long", path);
    memcpy(copy, path, len);
    copy[len] = '\0';
    struct stat sb;
    if (stat(copy, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) return ug_fail(UG_EINVAL, "--reports %s: exists and is not a directory", path);
        if (!realpath(copy, d->target)) return ug_fail(UG_EINVAL, "--reports %s: %s", path, strerror(errno));
        return ug_ok();
    }
    if (errno != ENOENT) return ug_fail(UG_EINVAL, "--reports %s: %s", path, strerror(errno));
    char name[PATH_MAX];
    strcpy(name, basename(copy));
    strcpy(copy, path);
    copy[len] = '\0';
    strcpy(parent, dirname(copy));
    ug_status st = ug_make_dirs(parent);
    if (!ug_is_ok(&st)) return ug_fail(UG_EINVAL, "--reports %s: %s", path, st.msg);
    if (!realpath(parent, copy)) return ug_fail(UG_EINVAL, "--reports %s: %s: %s", path, parent, strerror(errno));
    if (snprintf(d->target, sizeof d->target, "%s/%s", strcmp(copy, "/") ? copy : "", name) >= (int)sizeof d->target)
        return ug_fail(UG_EINVAL, "--reports %s: path longer than %zu bytes", path, sizeof d->target - 1);
    return ug_ok();
}

static void unlock(ug_report_dir *d)
{
    if (!d->locked) return;
    unlink(d->lock_path); /* before the unlock: a waiter then sees a fresh file (see take_lock) */
    close(d->lock_fd);
    d->locked = false;
}

/* flock on the lock file beside the target. A holder removes the file before
 * it unlocks, so a lock taken on a file no longer at lock_path is stale: retry. */
static ug_status take_lock(ug_report_dir *d)
{
    UG_TRY(beside(d, LOCK_TAG, "", d->lock_path));
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(d->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            return ug_fail(UG_EINVAL, "--reports %s: cannot create the lock file %s: %s", d->shown, d->lock_path,
                           strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            char pid[32] = "";
            ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
            pid[n > 0 ? strcspn(pid, "\n") : 0] = '\0';
            close(fd);
            return ug_fail(UG_EINVAL,
                           "--reports %s: another ulpgate run (pid %s) is writing reports there (it holds %s); "
                           "wait for it or give another directory",
                           d->shown, pid[0] ? pid : "?", d->lock_path);
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(d->lock_path, &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev) {
            d->lock_fd = fd;
            d->locked = true;
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid, (size_t)n, 0); /* only for a second run's message */
            return ug_ok();
        }
        close(fd);
    }
    return ug_fail(UG_EINVAL, "--reports %s: the lock file %s keeps changing (other runs?)", d->shown, d->lock_path);
}

/* .NAME<tag>XXXXXX for one of our tags and exactly a mkdtemp suffix. */
static bool is_leftover(const char *entry, const char *name, const char *tag)
{
    size_t n = strlen(name), t = strlen(tag);
    return entry[0] == '.' && strncmp(entry + 1, name, n) == 0 && strncmp(entry + 1 + n, tag, t) == 0 &&
           strlen(entry + 1 + n + t) == TEMP_SUFFIX;
}

/* Staging and set-aside directories of killed runs (we hold the lock: no live run owns one). */
static void remove_leftovers(const ug_report_dir *d)
{
    char parent[PATH_MAX], name[PATH_MAX];
    split_target(d, parent, name);
    DIR *dir = opendir(parent);
    if (!dir) return;
    for (struct dirent *e; (e = readdir(dir));) {
        if (!is_leftover(e->d_name, name, STAGING_TAG) && !is_leftover(e->d_name, name, ASIDE_TAG)) continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", parent, e->d_name) < (int)sizeof path) remove_tree(path);
    }
    closedir(dir);
}

static bool is_set_file(const char *entry, const char *const *names, size_t n_names)
{
    for (size_t i = 0; i < n_names; i++) {
        size_t n = strlen(names[i]);
        if (strcmp(entry, names[i]) == 0) return true;
        if (strncmp(entry, names[i], n) == 0 && strncmp(entry + n, ".tmp", 4) == 0 && strlen(entry + n + 4) == TEMP_SUFFIX)
            return true;
    }
    return false;
}

/* The existing target must be a previous set that the swap may replace. */
static ug_status check_existing(const ug_report_dir *d, const char *const *names, size_t n_names)
{
    struct stat self, up;
    char parent[PATH_MAX], name[PATH_MAX];
    split_target(d, parent, name);
    if (strcmp(d->target, "/") == 0 || stat(d->target, &self) != 0 || stat(parent, &up) != 0 ||
        self.st_dev != up.st_dev || self.st_ino == up.st_ino)
        return ug_fail(UG_EINVAL,
                       "--reports %s: is the root or a mount point, which the report set (swapped in by a rename) "
                       "cannot replace; give a directory inside it",
                       d->shown);
    struct stat cwd;
    if (stat(".", &cwd) == 0 && cwd.st_dev == self.st_dev && cwd.st_ino == self.st_ino)
        return ug_fail(UG_EINVAL, "--reports %s: is the current directory, which a run would replace; give a "
                       "directory of its own", d->shown);
    if (access(d->target, W_OK | X_OK) != 0)
        return ug_fail(UG_EINVAL, "--reports %s: the directory is not writable: %s", d->shown, strerror(errno));
    DIR *dir = opendir(d->target);
    if (!dir) return ug_fail(UG_EINVAL, "--reports %s: cannot read the directory: %s", d->shown, strerror(errno));
    ug_status st = ug_ok();
    for (struct dirent *e; ug_is_ok(&st) && (e = readdir(dir));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || is_set_file(e->d_name, names, n_names))
            continue;
        st = ug_fail(UG_EINVAL,
                     "--reports %s: holds '%s', which is not a report file; a run replaces the whole directory, "
                     "so give an empty or new directory (or move '%s' away)",
                     d->shown, e->d_name, e->d_name);
    }
    closedir(dir);
    return st;
}

static ug_status make_staging(ug_report_dir *d)
{
    UG_TRY(beside(d, STAGING_TAG, "XXXXXX", d->staging));
    if (!mkdtemp(d->staging)) {
        int err = errno;
        d->staging[0] = '\0';
        return ug_fail(UG_EINVAL, "--reports %s: cannot create a directory beside it: %s", d->shown, strerror(err));
    }
    /* mkdtemp makes 0700; the set is an ordinary directory. */
    mode_t mask = umask(0);
    umask(mask);
    chmod(d->staging, 0777 & ~mask);
    return ug_ok();
}

ug_status ug_report_dir_open(ug_report_dir *d, const char *path, const char *const *names, size_t n_names)
{
    memset(d, 0, sizeof *d);
    if (snprintf(d->shown, sizeof d->shown, "%s", path) >= (int)sizeof d->shown)
        return ug_fail(UG_EINVAL, "--reports: path longer than %zu bytes", sizeof d->shown - 1);
    ug_status st = resolve_target(d, path);
    if (ug_is_ok(&st)) st = take_lock(d);
    if (ug_is_ok(&st)) {
        remove_leftovers(d);
        if (access(d->target, F_OK) == 0) st = check_existing(d, names, n_names);
    }
    if (ug_is_ok(&st)) st = make_staging(d);
    if (!ug_is_ok(&st)) ug_report_dir_close(d);
    return st;
}

ug_status ug_report_dir_add(ug_report_dir *d, const char *name, const void *data, size_t size)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", d->staging, name) >= (int)sizeof path)
        return ug_fail(UG_EIO, "%s/%s: path too long", d->shown, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return ug_fail(UG_EIO, "%s/%s: cannot create: %s; the previous set is unchanged", d->shown, name,
                               strerror(errno));
    size_t done = 0;
    int err = 0;
    while (done < size && !err) {
        ssize_t n = write(fd, (const char *)data + done, size - done);
        if (n > 0) done += (size_t)n;
        else if (n == 0 || errno != EINTR) err = n == 0 ? EIO : errno;
    }
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (err)
        return ug_fail(UG_EIO, "%s/%s: write failed after %zu of %zu bytes: %s; the previous set is unchanged",
                       d->shown, name, done, size, strerror(err));
    return ug_ok();
}

static void sync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

/* Where the filesystem cannot exchange two names: the old set aside, then the new one in. */
static ug_status swap_in_two_steps(ug_report_dir *d, char *aside)
{
    UG_TRY(beside(d, ASIDE_TAG, "XXXXXX", aside));
    if (!mkdtemp(aside) || rename(d->target, aside) != 0)
        return ug_fail(UG_EIO, "%s: cannot move the previous set aside: %s", d->shown, strerror(errno));
    if (rename(d->staging, d->target) != 0) {
        int err = errno;
        rename(aside, d->target);
        return ug_fail(UG_EIO, "%s: cannot rename the new set in: %s; the previous set is unchanged", d->shown,
                       strerror(err));
    }
    return ug_ok();
}

ug_status ug_report_dir_commit(ug_report_dir *d)
{
    char parent[PATH_MAX], name[PATH_MAX], old[PATH_MAX] = "";
    split_target(d, parent, name);
    sync_dir(d->staging);
    if (access(d->target, F_OK) != 0) {
        if (rename(d->staging, d->target) != 0)
            return ug_fail(UG_EIO, "%s: cannot rename the new set in: %s", d->shown, strerror(errno));
    } else if (renameat2(AT_FDCWD, d->staging, AT_FDCWD, d->target, RENAME_EXCHANGE) == 0) {
        strcpy(old, d->staging); /* the previous set, now under the staging name */
    } else if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
        UG_TRY(swap_in_two_steps(d, old));
    } else {
        return ug_fail(UG_EIO, "%s: cannot swap the new set in: %s; the previous set is unchanged", d->shown,
                       strerror(errno));
    }
    d->staging[0] = '\0';
    sync_dir(parent);
    if (old[0]) remove_tree(old); /* a failure leaves a leftover that the next run removes */
    unlock(d);
    return ug_ok();
}

void ug_report_dir_close(ug_report_dir *d)
{
    if (d->staging[0]) remove_tree(d->staging);
    d->staging[0] = '\0';
    unlock(d);
}
