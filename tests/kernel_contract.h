/* SPDX-License-Identifier: MIT */
/* Checks of a kernel's validation contract, shared by the kernel tests: every
 * rule reports what it checks (value and limit), rules fire in the declared
 * order, a rejected call writes nothing, and each buffer's count, dtype and
 * data are checked by name. A test file describes its kernel once (buffers,
 * expected counts, a run adapter, valid inputs) and lists its broken rules in
 * the kernel's order; these functions do the rest. */
#ifndef UG_TESTS_KERNEL_CONTRACT_H
#define UG_TESTS_KERNEL_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/guard.h"
#include "../core/status.h"
#include "tests.h"

enum { KC_MAX_BUFFERS = 8, KC_MAX_EXPECT = 4, KC_MAX_PARAMS_BYTES = 64 };

typedef struct {
    const char *name;
    ug_dtype dtype;
    bool is_output;
} kc_buffer;

typedef struct {
    const char *prefix;        /* "gated_delta_net_solve_tril: " */
    size_t n_buffers;
    const kc_buffer *buffers;  /* in the kernel's argument order */
    size_t params_size;        /* <= KC_MAX_PARAMS_BYTES; every field 4 bytes (u32 or f32) */
    /* Element count of buffer i the kernel expects for params p. */
    size_t (*count)(const void *p, size_t i);
    /* Calls the kernel; p and any buffer pointer may be NULL. */
    ug_status (*run)(const void *p, ug_buf *const *bufs);
    /* Valid inputs for params p (outputs are filled with noise by the case). */
    void (*fill)(const void *p, ug_buf *bufs, uint64_t *rng);
} kc_kernel;

/* One call's buffers, each between guard zones. */
typedef struct {
    const kc_kernel *k;
    unsigned char params[KC_MAX_PARAMS_BYTES];
    ug_guarded mem[KC_MAX_BUFFERS];
    ug_buf buf[KC_MAX_BUFFERS];
} kc_case;

void kc_case_open(kc_case *c, const kc_kernel *k, const void *params, uint64_t seed);
void kc_case_close(kc_case *c);
/* Runs the kernel on the case's buffers (or on bufs when not NULL). */
ug_status kc_run(const kc_case *c, const void *params, ug_buf *bufs);
/* Runs the kernel on empty buffers of the declared dtypes, with no data: for
 * shapes rejected before any buffer is read (a count beyond size_t). */
ug_status kc_run_on_empty_buffers(const kc_kernel *k, const void *params);

/* A broken rule: one 4-byte parameter set to a value, or one buffer given an
 * element too many. The value's bytes are stored as they are, so a float field
 * takes its bit pattern (KC_F32_INF for +inf). */
#define KC_NO_DIM SIZE_MAX
#define KC_NO_BUFFER (-1)
#define KC_F32_INF 0x7F800000u
typedef struct {
    size_t dim_offset;
    uint32_t dim_value;
    int buffer;
    const char *expect[KC_MAX_EXPECT];
} kc_rule;
#define KC_DIM(type, field, value, ...) {offsetof(type, field), value, KC_NO_BUFFER, {__VA_ARGS__}}
#define KC_BUFFER(which, ...) {KC_NO_DIM, 0, which, {__VA_ARGS__}}

/* s is UG_EINVAL with the kernel's prefix and every expected substring. */
void kc_expect_message(const kc_kernel *k, const ug_status *s, const char *const expect[KC_MAX_EXPECT]);

void kc_check_each_rule(const kc_kernel *k, const void *valid, const kc_rule *rules, size_t n);
/* Every pair of rules that can coexist: the earlier one is reported. */
void kc_check_rule_order(const kc_kernel *k, const void *valid, const kc_rule *rules, size_t n);
/* Every rule and pair, and every spoiled buffer (other dtype, an element too
 * many or too few, NULL data): the outputs keep their bytes. */
void kc_check_rejections_leave_outputs_untouched(const kc_kernel *k, const void *valid, const kc_rule *rules,
                                                 size_t n);
/* "<name> must be <dtype>[N] (got M <dtype>)" for a count off by one either
 * way and for every other dtype; "<name> has N elements but no data" for a
 * NULL data pointer; "(got 0 <dtype>)" for an empty buffer with no data;
 * "(got no buffer)" for a NULL buffer; a NULL params
 * pointer is rejected. Buffers the shape leaves empty are skipped. */
void kc_check_each_buffer_by_name(const kc_kernel *k, const void *valid);

/* The four contract tests of a kernel test file, written once: the rules and
 * their order and the untouched outputs on the first valid shape, the buffers
 * by name on every shape given (a kernel with an optional buffer passes one
 * shape with it and one without). KC_CONTRACT_TEST_LIST lists them for
 * UG_TEST_SUITE. */
#define KC_CONTRACT_TESTS(kernel, rules, n_rules, ...)                                                                 \
    static const void *const kc_valid_shapes[] = {__VA_ARGS__};                                                        \
    static void test_each_rule_reports_what_it_checks(void)                                                            \
    {                                                                                                                  \
        kc_check_each_rule(&(kernel), kc_valid_shapes[0], rules, n_rules);                                             \
    }                                                                                                                  \
    static void test_rules_fire_in_order(void)                                                                         \
    {                                                                                                                  \
        kc_check_rule_order(&(kernel), kc_valid_shapes[0], rules, n_rules);                                            \
    }                                                                                                                  \
    static void test_rejections_leave_the_outputs_untouched(void)                                                      \
    {                                                                                                                  \
        kc_check_rejections_leave_outputs_untouched(&(kernel), kc_valid_shapes[0], rules, n_rules);                    \
    }                                                                                                                  \
    static void test_each_buffer_is_checked_by_name(void)                                                              \
    {                                                                                                                  \
        for (size_t i = 0; i < sizeof kc_valid_shapes / sizeof kc_valid_shapes[0]; i++)                                \
            kc_check_each_buffer_by_name(&(kernel), kc_valid_shapes[i]);                                               \
    }
#define KC_CONTRACT_TEST_LIST                                                                                          \
    UG_TEST(test_each_rule_reports_what_it_checks), UG_TEST(test_rules_fire_in_order),                                 \
        UG_TEST(test_rejections_leave_the_outputs_untouched), UG_TEST(test_each_buffer_is_checked_by_name)

#endif
