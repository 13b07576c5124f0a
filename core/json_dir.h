/* SPDX-License-Identifier: MIT */
/* Fixture directories: one JSON file per kernel family, so adding a family
 * adds files instead of editing shared ones. */
#ifndef UG_JSON_DIR_H
#define UG_JSON_DIR_H

#include <jansson.h>
#include <stdbool.h>

#include "status.h"

bool ug_is_directory(const char *path);
/* mkdir -p: creates dir and its missing parents; fails naming the directory
 * that could not be made, or a path that exists and is not a directory. */
ug_status ug_make_dirs(const char *dir);
/* Writes root to path atomically (core/atomic_file), pretty-printed with
 * sorted keys. */
ug_status ug_write_json_file(const char *path, const json_t *root);
/* Calls fn(path, index, ctx) for every *.json file of dir in name order
 * (hidden files skipped), stopping at the first failure; an unreadable
 * directory is UG_EINPUT, one with no such file UG_EPARSE, each naming it.
 * fn opens each path itself (through core/input_file, which refuses a link to
 * a device or FIFO among the entries). */
ug_status ug_for_each_json_file(const char *dir, ug_status (*fn)(const char *path, int index, void *ctx),
                                void *ctx);

#endif
