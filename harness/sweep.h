/* SPDX-License-Identifier: MIT */
/* Sweep files (fixtures/sweeps/NAME.json): which shapes each family is run on.
 *
 * Format (schema "ulpgate-sweep/1"):
 * { "schema": "ulpgate-sweep/1", "seed": 20261122,
 *   "families": { "<family>": {
 *       "accepted": [ { "<param>": [values...], "<p1>/<p2>": [[v1, v2], ...],
 *                       "regime": ["realistic", ...] }, ... ],
 *       "rejected": [ { "name": "K=256", "params": { "<param>": value, ... },
 *                       "buffer": { "name": "k", "count_delta": -1, "dtype": "f32" },
 *                       "expect": ["256", "MAX_K = 192"] }, ... ] } } }
 * Each accepted entry is a grid: the Cartesian product of its axes; an axis
 * named "p1/p2" lists tuples (so GQA pairs Hg/H are listed, not crossed).
 * Every parameter of the family must be given exactly once per entry, as a
 * JSON integer in [0, 2^32) (1.5, 2.0 and -0.0 are refused); in accepted
 * entries a dimension (a parameter among a buffer's dims, "K" of
 * [B,T,Hg,K]) must be positive, zero shapes belong under "rejected". A
 * rejected entry gives one shape; "buffer" optionally makes one buffer's
 * element count or dtype wrong; "expect" lists 1 to UG_MAX_EXPECT non-empty
 * substrings the kernel's error message must contain. Cases are expanded in file order; each case's seed is
 * derived from the sweep seed, the family name and the case label, so a case
 * draws the same inputs whatever else the sweep holds.
 *
 * A sweep may also be a directory: every *.json file in it, in name order,
 * one file per family by convention; content_hash then covers all files.
 * Every file is read once through core/input_file (a missing, special or
 * oversized file is UG_EINPUT before a byte is hashed) and parsed by the
 * strict reader of core/json (messages name the file and the JSON path). */
#ifndef UG_SWEEP_H
#define UG_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "family.h"

enum { UG_MAX_EXPECT = 6, UG_EXPECT_LEN = 96, UG_LABEL_LEN = 192 };

typedef struct {
    int buffer;           /* index in the family's buffers; -1 when none */
    long long count_delta;
    ug_dtype dtype;       /* UG_DTYPE_COUNT: the expected dtype */
} ug_buffer_override;

typedef struct ug_case {
    const ug_family *family;
    char label[UG_LABEL_LEN];   /* unique within the family */
    ug_params params;
    size_t regime;              /* accepted cases; family->n_regimes: user-supplied inputs */
    bool expect_reject;
    ug_buffer_override override;
    size_t n_expect;
    char expect[UG_MAX_EXPECT][UG_EXPECT_LEN];
    uint64_t seed;
    size_t index;               /* position in the (filtered, unsharded) sweep */
    /* NULL: the inputs are drawn from seed. Otherwise the user supplied them
     * (`ulpgate reference`) and this fills the input buffers (ug_case_generate). */
    ug_status (*load_inputs)(const void *ctx, const struct ug_case *c, ug_buf *bufs);
    const void *inputs_ctx;
} ug_case;

typedef struct {
    char path[512];
    uint64_t seed;
    uint64_t content_hash;      /* FNV-1a of the file's bytes */
    size_t n_cases;
    ug_case *cases;
    char filter[128];           /* the --filter applied, "" for none */
    size_t shard_index, shard_count; /* shard_count 0: not sharded */
} ug_sweep;

ug_status ug_sweep_load(const char *path, ug_sweep *out);
void ug_sweep_free(ug_sweep *s);
/* Whether case c's "<family>/<label>" contains filter (what --filter keeps). */
bool ug_case_matches(const ug_case *c, const char *filter);
/* Keeps only the cases ug_case_matches (and renumbers their index). */
ug_status ug_sweep_filter(ug_sweep *s, const char *filter);
/* Keeps the cases keep() accepts, in order, and renumbers their index. */
void ug_sweep_keep(ug_sweep *s, bool (*keep)(const ug_case *c, const void *ctx), const void *ctx);
/* Keeps the cases whose index % count == index: shards of one sweep are
 * disjoint, cover it, and do not depend on the machine that runs them. */
ug_status ug_sweep_shard(ug_sweep *s, size_t index, size_t count);

#endif
