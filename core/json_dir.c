/* SPDX-License-Identifier: MIT */
#include "json_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"

bool ug_is_directory(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

ug_status ug_make_dirs(const char *dir)
{
    char p[1024];
    if (!*dir || strlen(dir) >= sizeof p) return ug_fail(UG_EIO, "directory '%s': empty or too long", dir);
    strcpy(p, dir);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return ug_fail(UG_EIO, "cannot create directory '%s': %s", p, strerror(errno));
        *s = c;
        if (!c) break;
    }
    if (!ug_is_directory(dir)) return ug_fail(UG_EIO, "'%s' is not a directory", dir);
    return ug_ok();
}

static int is_json_name(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
}

ug_status ug_for_each_json_file(const char *dir, ug_status (*fn)(const char *path, int index, void *ctx),
                                void *ctx)
{
    struct dirent **names;
    int n = scandir(dir, &names, is_json_name, alphasort);
    if (n < 0) return ug_fail(UG_EINPUT, "cannot read directory '%s': %s", dir, strerror(errno));
    ug_status st = n == 0 ? ug_fail(UG_EPARSE, "directory '%s' holds no *.json file", dir) : ug_ok();
    for (int i = 0; i < n; i++) {
        char path[1024];
        if (ug_is_ok(&st) && (size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name) >= sizeof path)
            st = ug_fail(UG_EIO, "path '%s/%s' is too long", dir, names[i]->d_name);
        if (ug_is_ok(&st)) st = fn(path, i, ctx);
        free(names[i]);
    }
    free(names);
    return st;
}

ug_status ug_write_json_file(const char *path, const json_t *root)
{
    ug_atomic_file f;
    UG_TRY(ug_atomic_open(&f, path));
    if (json_dumpf(root, f.fp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 || fputc('\n', f.fp) == EOF) {
        ug_atomic_abort(&f);
        return ug_fail(UG_EIO, "writing '%s' failed", path);
    }
    return ug_atomic_commit(&f);
}
