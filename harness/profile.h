/* SPDX-License-Identifier: MIT */
/* Arithmetic profiles: fixtures/profiles/NAME.json, read strictly into the
 * f32 model every reference's bound flows through (ref/f32_model.h; format in
 * docs/profiles.md).
 *
 * Strict: an unknown or duplicate key, a value of the wrong type, a negative
 * error, a range with lo > hi, an unknown op, subnormal mode or product mode,
 * or a missing op is UG_EPARSE naming the file, the key and the value. Every
 * op of ug_f32_op must be declared. */
#ifndef UG_PROFILE_H
#define UG_PROFILE_H

#include "../core/status.h"
#include "../ref/f32_model.h"

/* The profile the harness uses when none is named. */
#define UG_PROFILE_DEFAULT "cpu"

/* Loads the profile file at path into out (id.origin = path, id.hash = FNV-1a
 * of its bytes). UG_EINPUT when it is missing, unreadable or oversized, UG_EPARSE when malformed. */
ug_status ug_profile_load(const char *path, ug_f32_model *out);

/* Resolves --profile's argument and loads it: a PATH contains a '/' or ends
 * in ".json"; a NAME is looked up as fixtures/profiles/NAME.json relative to
 * the current directory, then relative to the directory above the
 * executable's (exe_path's) directory. UG_EINVAL naming both places when
 * neither holds it; NAME must be [A-Za-z0-9_-]+. exe_path may be NULL. */
ug_status ug_profile_resolve(const char *name_or_path, const char *exe_path, ug_f32_model *out);

/* {"name", "hash", "origin", "products"}: how reports, manifests and
 * baselines name the profile a run used. NULL when out of memory. */
struct json_t;
struct json_t *ug_profile_id_json(const ug_profile_id *id);

#endif
