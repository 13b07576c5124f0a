/* SPDX-License-Identifier: MIT */
/* A kernel family as the harness sees it: one descriptor per family.
 *
 * The harness iterates the registered descriptors and never names a kernel.
 * A family contributes three files: kernels/<name>.c (the optimized kernel and
 * its validation), ref/<name>.c (the MPFR reference and its bounds) and
 * harness/families/<name>.c (this descriptor: parameters, buffers, input
 * generators, and the adapters to the kernel and the reference); its sweeps,
 * budgets and baseline entries live in fixtures/. Descriptors register
 * themselves with UG_REGISTER_FAMILY, so no list elsewhere needs editing. */
#ifndef UG_FAMILY_H
#define UG_FAMILY_H

#include <gsl/gsl_rng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/status.h"
#include "../ref/ref.h"

enum { UG_MAX_PARAMS = 16, UG_MAX_BUFFERS = 16 };

/* Parameter values, indexed like ug_family.param_names. Integers are stored
 * exactly (all shapes are < 2^53). */
typedef struct {
    double v[UG_MAX_PARAMS];
} ug_params;

/* A buffer's layout is declared once, as its dimensions (outermost first):
 * parameter indices, or UG_DIM_DERIVED(k) for the family's k-th derived
 * dimension (the chunk count NT, a table length that is a sum).
 * The layout text of `ulpgate list`, the overflow-checked element count and
 * the export shape all come from it. A buffer may exist only in some cases
 * (a variant's buffers, h0 with has_h0): it has elements only when every
 * condition holds, and is written "(variant 0, has_weight)" after the dims. */
enum { UG_LAYOUT_MAX_DIMS = 5, UG_MAX_CONDITIONS = 2, UG_IF_SET = -1 };
#define UG_DIM_DERIVED(k) (-1 - (k))

typedef struct {
    int param;
    int value;          /* the parameter's value, or UG_IF_SET: any nonzero value */
} ug_condition;

typedef struct {
    const char *name;   /* as the layouts write it: "NT" */
    size_t (*value)(const ug_params *p);
} ug_derived_dim;

typedef struct {
    const char *name;   /* as in SPEC and the seed: "k", "beta", "w" */
    ug_dtype dtype;
    bool is_output;
    size_t rank;        /* set with UG_DIMS */
    int dims[UG_LAYOUT_MAX_DIMS];
    size_t n_conditions; /* set with UG_ONLY_IF */
    ug_condition only_if[UG_MAX_CONDITIONS];
    /* A buffer that is no array of dimensions (attn_reduce_fwht's htmp:
     * partials, then (S, M) pairs) states its layout in words and its
     * count by a function instead of dims (false: more than SIZE_MAX
     * elements); it exports flat, [count]. */
    const char *layout_words;
    bool (*count)(const ug_params *p, size_t *count);
    /* An output a kernel may leave unwritten as a whole: a pipeline's
     * intermediate, which a kernel that fuses stages does not have. Every
     * element untouched: not handed over, not checked, and the report says
     * so; some elements written: the unwritten ones fail as for any output. */
    bool optional;
} ug_buffer_desc;

#define UG_DIMS(...) .rank = sizeof((int[]){__VA_ARGS__}) / sizeof(int), .dims = {__VA_ARGS__}
#define UG_ONLY_IF(...) \
    .n_conditions = sizeof((ug_condition[]){__VA_ARGS__}) / sizeof(ug_condition), .only_if = {__VA_ARGS__}

typedef struct {
    int id;             /* value of UG_MUTANT that builds it (1, 2, ...) */
    const char *name;
    const char *what;   /* the bug it plants, in one line */
    bool vector_only;   /* planted in the family's vector paths (kernels/FAMILY_simd.h): it shows only where
                         * the CPU runs one of them */
} ug_mutant_desc;

/* A seed host's dispatch plan for one shape, against what its algorithm
 * needs (SPEC §1.6): threads per threadgroup and threadgroup memory. */
enum { UG_PLAN_MAX_THREADS = 1024, UG_PLAN_MAX_TG_BYTES = 32 * 1024 };

typedef struct {
    uint64_t threads_planned, threads_needed;
    uint64_t tg_bytes_planned, tg_bytes_needed;
} ug_plan;

/* A family whose math is independent per batch entry and value head names
 * those parameters (harness/slice.h): the runner then computes and measures
 * the reference one (b, h) sub-case at a time, in parallel, with memory
 * bounded by one slice. key_head: the parameter of the key heads a value
 * head shares (h reads key head h / (H / Hg)), or -1; batch or head may be
 * -1 too (none). */
typedef struct {
    bool on;
    int batch, head, key_head;
} ug_slicing;
#define UG_SLICE_BY(b, h, kh) .slicing = {true, (b), (h), (kh)}

/* One stage of a pipeline family (chained verification, harness/chain.h):
 * a registered family whose reference checks the pipeline's outputs of the
 * same names, computed from the pipeline's inputs and the kernel's own
 * outputs of earlier stages. Buffers and parameters map by name, except
 * the renames {stage name, pipeline name}; param gives the value of a stage
 * parameter the pipeline has none of that name for. */
typedef struct {
    const char *family;
    const char *renames[2][2];
    double (*param)(const ug_params *pipeline, const char *name);
} ug_stage_desc;

typedef struct ug_family {
    const char *name;
    const char *spec_section;   /* "SPEC 1.1" */
    size_t n_params;
    const char *const *param_names;
    size_t n_buffers;
    const ug_buffer_desc *buffers;   /* inputs first, then outputs */
    size_t n_derived_dims;
    const ug_derived_dim *derived_dims; /* what UG_DIM_DERIVED(k) stands for */
    size_t n_regimes;
    const char *const *regimes;      /* input distributions, see generate */
    /* Bit r set: regime r draws inputs on which every intermediate of the
     * family's math is exact in f32 whatever the order of its sums (small
     * dyadic grids, zero gates, powers of two), so the only rounding a
     * correct kernel commits is the output's: every output element must then
     * equal the staged reference's round-to-nearest-even value bit for bit,
     * exact midpoints included (docs/ties.md). */
    uint32_t exact_regimes;
    size_t n_mutants;
    const ug_mutant_desc *mutants;      /* broken builds: the gate must fail */
    size_t n_variants;
    const ug_mutant_desc *variants;     /* legitimate rewrites (another order,
                                           one scale instead of two): built the
                                           same way, the gate must pass */

    /* Optional (NULL: every value has its buffers). Refuses parameter values
     * for which no buffer layout is defined (head_norm_rope's variant 2),
     * naming the value; ug_family_buffer_count calls it first. */
    ug_status (*check_params)(const ug_params *p);
    /* Fills the input buffers from rng for a shape the kernel accepts. */
    ug_status (*generate)(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs);
    /* Runs the kernel under test on bufs (descriptor order). */
    ug_status (*run)(const ug_params *p, ug_buf *bufs);
    /* Computes the reference of every output element in the given mode,
     * its bound under the arithmetic profile model (ref/f32_model.h);
     * outs[o] has ug_family_buffer_count() entries for the o-th output buffer
     * (a pipeline's: NULL for an intermediate a stage produces, which its
     * own reference leaves to that stage, harness/chain.h). */
    ug_status (*reference)(const ug_params *p, const ug_buf *bufs, const ug_f32_model *model, ug_ref_mode mode,
                           ug_ref_value *const *outs);
    /* The staged reference is the exact one (the spec names no cast inside
     * the family's math): computed once for both modes, also as a
     * pipeline's stage (ug_case_reference_streamed). tests/test_slice.c checks
     * the claim. */
    bool staged_is_exact;
    /* Optional (NULL: the seed has no host plan). The seed host's plan and
     * the algorithm's need for a shape the kernel accepts. */
    ug_status (*plan)(const ug_params *p, ug_plan *out);
    ug_slicing slicing;
    /* Optional (NULL: the kernel keeps nothing between calls). Frees what
     * the built-in kernel keeps between calls (gdn_e2e's scratch for the
     * last shape) and is idle; the runner calls it after the kernel ran,
     * before the reference, so that a case holds its buffers and references. */
    void (*release)(void);
    /* A pipeline's stages, in order (n_stages 0: none). Each output a
     * stage computes is checked against that stage's reference on the
     * kernel's own upstream outputs: an optional output in both modes; any
     * other in the staged mode, its exact mode staying this family's
     * reference (the end-to-end comparison). */
    size_t n_stages;
    const ug_stage_desc *stages;
} ug_family;

/* One line when the plan exceeds a limit or falls short of the need, else
 * an empty string. */
void ug_plan_finding(const ug_plan *p, char *out, size_t size);

/* The fields every descriptor in harness/families/ fills alike, from its own
 * tables and functions of these names: param_names[N_PARAMS],
 * buffers[N_BUFFERS], mutants[] (and variants[], derived_dims[]); generate,
 * run, reference. */
#define UG_FAMILY_COMMON_FIELDS                                                          \
    .n_params = N_PARAMS, .param_names = param_names, .n_buffers = N_BUFFERS, .buffers = buffers, \
    .n_mutants = sizeof mutants / sizeof mutants[0], .mutants = mutants, \
    .generate = generate, .run = run, .reference = reference
#define UG_FAMILY_VARIANT_FIELDS .n_variants = sizeof variants / sizeof variants[0], .variants = variants
#define UG_FAMILY_DERIVED_DIM_FIELDS \
    .n_derived_dims = sizeof derived_dims / sizeof derived_dims[0], .derived_dims = derived_dims

/* Element count buffer i must have for params p: the product of its dims, 0
 * when a condition fails. Fails, naming the family, the buffer and its
 * layout, when the product exceeds SIZE_MAX; params may be any values a
 * sweep names, valid for the kernel or not. */
ug_status ug_family_buffer_count(const ug_family *f, const ug_params *p, size_t i, size_t *count);
/* Buffer i's layout as `ulpgate list` shows it: "[B,NT,H,V,K]",
 * "[B,H,K,V] (none without has_h0)". Truncated to size. */
void ug_family_buffer_layout(const ug_family *f, size_t i, char *out, size_t size);
/* Buffer i's shape for params p, whose element count is count: its dims, or
 * [count] for a buffer absent in this case or declared in words. */
void ug_family_buffer_shape(const ug_family *f, const ug_params *p, size_t i, size_t count,
                            uint64_t shape[UG_LAYOUT_MAX_DIMS], size_t *rank);

#define UG_REGISTER_FAMILY(desc)                                              \
    static const ug_family *const ug_family_entry_##desc                     \
        __attribute__((used, section("ug_families"), aligned(sizeof(void *)))) = &desc

/* The registered families, sorted by name (stable across link orders). */
size_t ug_family_count(void);
const ug_family *ug_family_at(size_t i);
const ug_family *ug_family_find(const char *name);
/* Index of a parameter / buffer by name, or -1. */
int ug_family_param_index(const ug_family *f, const char *name);
int ug_family_buffer_index(const ug_family *f, const char *name);

#endif
