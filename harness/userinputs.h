/* SPDX-License-Identifier: MIT */
/* The reference on a user's own tensors (`ulpgate reference`,
 * docs/interop.md "Your own inputs").
 *
 * A safetensors file holds a family's input buffers under their SPEC names,
 * dtypes and shapes (`ulpgate list`); the family's parameters come from its
 * __metadata__ (string values) and/or the command line, which wins. Before
 * anything is computed the inputs must pass, each failure naming the tensor,
 * the index and the value: every parameter given (none unknown, none twice),
 * every input present with its dtype and shape and no other tensor, the
 * built-in kernel's validation of the shape, and the family's data contract
 * (finite gates and betas, A lower-triangular, L strictly lower-triangular,
 * htmp's S finite and >= 0 and M finite or -inf with one finite M per row).
 * The reference, both modes and the bounds under the profile, is then
 * written as a fixture directory in export's layout (ug_export_user), which
 * `score` reads like an exported one, taking the inputs from the case file.
 * Every rejection is UG_EINVAL, UG_EPARSE or UG_EINPUT (exit 2). */
#ifndef UG_USERINPUTS_H
#define UG_USERINPUTS_H

#include "profile.h"
#include "sweep.h"

typedef struct {
    const char *family;
    const char *inputs;          /* the safetensors file */
    const char *out;             /* the fixture directory: absent or empty */
    const char *const *params;   /* "NAME=VALUE", n_params of them */
    size_t n_params;
    size_t max_case_bytes;       /* cap on the case's buffers (and the file) */
} ug_user_request;

ug_status ug_user_reference(const ug_user_request *rq, const ug_f32_model *model);

#endif
