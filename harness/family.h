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

typedef struct {
    const char *name;   /* as in SPEC and the seed: "k", "beta", "w" */
    ug_dtype dtype;
    bool is_output;
    const char *layout; /* "[B,T,Hg,K]" */
} ug_buffer_desc;

typedef struct {
    int id;             /* value of UG_MUTANT that builds it (1, 2, ...) */
    const char *name;
    const char *what;   /* the bug it plants, in one line */
} ug_mutant_desc;

/* A seed host's dispatch plan for one shape, against what its algorithm
 * needs (SPEC §1.6): threads per threadgroup and threadgroup memory. */
enum { UG_PLAN_MAX_THREADS = 1024, UG_PLAN_MAX_TG_BYTES = 32 * 1024 };

typedef struct {
    uint64_t threads_planned, threads_needed;
    uint64_t tg_bytes_planned, tg_bytes_needed;
} ug_plan;

typedef struct ug_family {
    const char *name;
    const char *spec_section;   /* "SPEC 1.1" */
    size_t n_params;
    const char *const *param_names;
    size_t n_buffers;
    const ug_buffer_desc *buffers;   /* inputs first, then outputs */
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

    /* Element count buffer i must have for params p. Fails (naming the
     * parameter) when the count does not fit in size_t; params may be any
     * values a sweep names, valid for the kernel or not. */
    ug_status (*buffer_count)(const ug_params *p, size_t i, size_t *count);
    /* Fills the input buffers from rng for a shape the kernel accepts. */
    ug_status (*generate)(const ug_params *p, size_t regime, gsl_rng *rng, ug_buf *bufs);
    /* Runs the kernel under test on bufs (descriptor order). */
    ug_status (*run)(const ug_params *p, ug_buf *bufs);
    /* Computes the reference of every output element in the given mode;
     * outs[o] has buffer_count() entries for the o-th output buffer. */
    ug_status (*reference)(const ug_params *p, const ug_buf *bufs, ug_ref_mode mode,
                           ug_ref_value *const *outs);
    /* Optional (NULL: the seed has no host plan). The seed host's plan and
     * the algorithm's need for a shape the kernel accepts. */
    ug_status (*plan)(const ug_params *p, ug_plan *out);
} ug_family;

/* One line when the plan exceeds a limit or falls short of the need, else
 * an empty string. */
void ug_plan_finding(const ug_plan *p, char *out, size_t size);

/* The fields every descriptor in harness/families/ fills alike, from its own
 * tables and functions of these names: param_names[N_PARAMS],
 * buffers[N_BUFFERS], mutants[] (and variants[]); buffer_count, generate,
 * run, reference. */
#define UG_FAMILY_COMMON_FIELDS                                                          \
    .n_params = N_PARAMS, .param_names = param_names, .n_buffers = N_BUFFERS, .buffers = buffers, \
    .n_mutants = sizeof mutants / sizeof mutants[0], .mutants = mutants, .buffer_count = buffer_count, \
    .generate = generate, .run = run, .reference = reference
#define UG_FAMILY_VARIANT_FIELDS .n_variants = sizeof variants / sizeof variants[0], .variants = variants

/* A buffer's element count from its layout written as parameter indices,
 * outermost first, ended by UG_DIM_END or after UG_LAYOUT_MAX_DIMS;
 * UG_DIM_CHUNKS stands for the chunk count, which the family defines and
 * passes as `chunks`. Fails, naming the family, the buffer and its layout,
 * when the product exceeds SIZE_MAX. */
enum { UG_DIM_END = -1, UG_DIM_CHUNKS = -2, UG_LAYOUT_MAX_DIMS = 5 };
ug_status ug_layout_count(const char *family, const ug_buffer_desc *buf, const int dims[UG_LAYOUT_MAX_DIMS],
                          const ug_params *p, size_t chunks, size_t *count);

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
