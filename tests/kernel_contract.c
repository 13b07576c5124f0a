/* SPDX-License-Identifier: MIT */
#include "kernel_contract.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

static size_t buf_bytes(const ug_buf *b) { return b->count * ug_dtype_size(b->dtype); }

void kc_case_open(kc_case *c, const kc_kernel *k, const void *params, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->k = k;
    CU_ASSERT_FATAL(k->params_size <= sizeof c->params && k->n_buffers <= KC_MAX_BUFFERS);
    memcpy(c->params, params, k->params_size);
    for (size_t i = 0; i < k->n_buffers; i++) {
        size_t count = k->count(params, i);
        CU_ASSERT_EQUAL_FATAL(ug_guarded_alloc(&c->mem[i], count * ug_dtype_size(k->buffers[i].dtype)).code, UG_OK);
        c->buf[i] = (ug_buf){ug_guarded_data(&c->mem[i]), count, k->buffers[i].dtype};
    }
    uint64_t rng = seed ? seed : 0x9E3779B97F4A7C15u;
    k->fill(params, c->buf, &rng);
    for (size_t i = 0; i < k->n_buffers; i++) {
        if (!k->buffers[i].is_output) continue;
        unsigned char *bytes = c->buf[i].data;
        for (size_t b = 0; b < buf_bytes(&c->buf[i]); b++) bytes[b] = (unsigned char)ug_test_next_u32(&rng);
    }
}

void kc_case_close(kc_case *c)
{
    for (size_t i = 0; i < c->k->n_buffers; i++)
        CU_ASSERT_EQUAL(ug_guarded_free(&c->mem[i], c->k->buffers[i].name).code, UG_OK);
}

ug_status kc_run(const kc_case *c, const void *params, ug_buf *bufs)
{
    ug_buf local[KC_MAX_BUFFERS];
    ug_buf *ptrs[KC_MAX_BUFFERS];
    if (!bufs) {
        memcpy(local, c->buf, sizeof local);
        bufs = local;
    }
    for (size_t i = 0; i < KC_MAX_BUFFERS; i++) ptrs[i] = &bufs[i];
    return c->k->run(params, ptrs);
}

ug_status kc_run_on_empty_buffers(const kc_kernel *k, const void *params)
{
    ug_buf buf[KC_MAX_BUFFERS];
    ug_buf *ptrs[KC_MAX_BUFFERS];
    for (size_t i = 0; i < KC_MAX_BUFFERS; i++) {
        buf[i] = (ug_buf){NULL, 0, i < k->n_buffers ? k->buffers[i].dtype : UG_F32};
        ptrs[i] = &buf[i];
    }
    return k->run(params, ptrs);
}

void kc_expect_message(const kc_kernel *k, const ug_status *s, const char *const expect[KC_MAX_EXPECT])
{
    CU_ASSERT_EQUAL(s->code, UG_EINVAL);
    if (!strstr(s->msg, k->prefix)) {
        printf("\n  message \"%s\" lacks the prefix \"%s\"", s->msg, k->prefix);
        CU_FAIL("message lacks the kernel's prefix");
    }
    for (int i = 0; i < KC_MAX_EXPECT && expect[i]; i++)
        if (!strstr(s->msg, expect[i])) {
            printf("\n  message \"%s\" lacks \"%s\"", s->msg, expect[i]);
            CU_FAIL("message lacks an expected part");
        }
}

static void apply(const kc_rule *r, unsigned char *params, ug_buf *bufs)
{
    if (r->dim_offset != KC_NO_DIM) memcpy(params + r->dim_offset, &r->dim_value, sizeof r->dim_value);
    if (r->buffer != KC_NO_BUFFER) bufs[r->buffer].count++;
}

static bool same_dim(const kc_rule *a, const kc_rule *b)
{
    return a->dim_offset != KC_NO_DIM && a->dim_offset == b->dim_offset;
}

void kc_check_each_rule(const kc_kernel *k, const void *valid, const kc_rule *rules, size_t n)
{
    kc_case c;
    kc_case_open(&c, k, valid, 0);
    for (size_t i = 0; i < n; i++) {
        unsigned char params[KC_MAX_PARAMS_BYTES];
        ug_buf buf[KC_MAX_BUFFERS];
        memcpy(params, c.params, sizeof params);
        memcpy(buf, c.buf, sizeof buf);
        apply(&rules[i], params, buf);
        ug_status s = kc_run(&c, params, buf);
        kc_expect_message(k, &s, rules[i].expect);
    }
    kc_case_close(&c);
}

void kc_check_rule_order(const kc_kernel *k, const void *valid, const kc_rule *rules, size_t n)
{
    kc_case c;
    kc_case_open(&c, k, valid, 0);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            if (same_dim(&rules[i], &rules[j])) continue;
            unsigned char params[KC_MAX_PARAMS_BYTES];
            ug_buf buf[KC_MAX_BUFFERS];
            memcpy(params, c.params, sizeof params);
            memcpy(buf, c.buf, sizeof buf);
            apply(&rules[j], params, buf);
            apply(&rules[i], params, buf);
            ug_status s = kc_run(&c, params, buf);
            kc_expect_message(k, &s, rules[i].expect);
        }
    kc_case_close(&c);
}

/* Runs a call that must be rejected and checks that no output changed. */
static void rejected_call(const kc_case *c, const void *params, ug_buf *bufs)
{
    unsigned char *before[KC_MAX_BUFFERS] = {0};
    for (size_t i = 0; i < c->k->n_buffers; i++) {
        if (!c->k->buffers[i].is_output) continue;
        before[i] = malloc(buf_bytes(&c->buf[i]) + 1);
        CU_ASSERT_FATAL(before[i] != NULL);
        memcpy(before[i], c->buf[i].data, buf_bytes(&c->buf[i]));
    }
    ug_status s = kc_run(c, params, bufs);
    CU_ASSERT_NOT_EQUAL(s.code, UG_OK);
    for (size_t i = 0; i < c->k->n_buffers; i++) {
        if (!before[i]) continue;
        CU_ASSERT_EQUAL(memcmp(before[i], c->buf[i].data, buf_bytes(&c->buf[i])), 0);
        free(before[i]);
    }
}

void kc_check_rejections_leave_outputs_untouched(const kc_kernel *k, const void *valid, const kc_rule *rules,
                                                 size_t n)
{
    kc_case c;
    kc_case_open(&c, k, valid, 0);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            if (j != i && same_dim(&rules[i], &rules[j])) continue;
            unsigned char params[KC_MAX_PARAMS_BYTES];
            ug_buf buf[KC_MAX_BUFFERS];
            memcpy(params, c.params, sizeof params);
            memcpy(buf, c.buf, sizeof buf);
            apply(&rules[j], params, buf);
            apply(&rules[i], params, buf);
            rejected_call(&c, params, buf);
        }
    for (size_t which = 0; which < k->n_buffers; which++) {
        ug_buf buf[KC_MAX_BUFFERS];
        memcpy(buf, c.buf, sizeof buf);
        buf[which].dtype = buf[which].dtype == UG_BF16 ? UG_F32 : UG_BF16;
        rejected_call(&c, c.params, buf);
        memcpy(buf, c.buf, sizeof buf);
        buf[which].count++;
        rejected_call(&c, c.params, buf);
        if (c.buf[which].count == 0) continue;
        memcpy(buf, c.buf, sizeof buf);
        buf[which].count--;
        rejected_call(&c, c.params, buf);
        memcpy(buf, c.buf, sizeof buf);
        buf[which].data = NULL;
        rejected_call(&c, c.params, buf);
    }
    kc_case_close(&c);
}

static void expect_buffer_message(const kc_case *c, ug_buf *buf, const char *want)
{
    const char *const expect[KC_MAX_EXPECT] = {want};
    ug_status s = kc_run(c, c->params, buf);
    kc_expect_message(c->k, &s, expect);
}

void kc_check_each_buffer_by_name(const kc_kernel *k, const void *valid)
{
    kc_case c;
    kc_case_open(&c, k, valid, 0);
    for (size_t which = 0; which < k->n_buffers; which++) {
        const char *name = k->buffers[which].name, *dtype = ug_dtype_name(k->buffers[which].dtype);
        const size_t count = c.buf[which].count;
        char want[160];
        ug_buf buf[KC_MAX_BUFFERS];
        for (int delta = -1; delta <= 1; delta += 2) {
            if (count == 0 && delta < 0) continue;
            memcpy(buf, c.buf, sizeof buf);
            buf[which].count = count + (size_t)(ptrdiff_t)delta;
            snprintf(want, sizeof want, "%s must be %s[%zu] (got %zu %s)", name, dtype, count, buf[which].count, dtype);
            expect_buffer_message(&c, buf, want);
        }
        for (int other = 0; other < UG_DTYPE_COUNT; other++) {
            if (other == (int)k->buffers[which].dtype) continue;
            memcpy(buf, c.buf, sizeof buf);
            buf[which].dtype = (ug_dtype)other;
            snprintf(want, sizeof want, "%s must be %s[%zu] (got %zu %s)", name, dtype, count, count,
                     ug_dtype_name((ug_dtype)other));
            expect_buffer_message(&c, buf, want);
        }
        if (count == 0) continue;
        memcpy(buf, c.buf, sizeof buf);
        buf[which].data = NULL;
        snprintf(want, sizeof want, "%s has %zu elements but no data", name, count);
        expect_buffer_message(&c, buf, want);
        memcpy(buf, c.buf, sizeof buf);
        buf[which] = (ug_buf){NULL, 0, k->buffers[which].dtype};
        snprintf(want, sizeof want, "%s must be %s[%zu] (got 0 %s)", name, dtype, count, dtype);
        expect_buffer_message(&c, buf, want);
        ug_buf *ptrs[KC_MAX_BUFFERS];
        memcpy(buf, c.buf, sizeof buf);
        for (size_t i = 0; i < KC_MAX_BUFFERS; i++) ptrs[i] = &buf[i];
        ptrs[which] = NULL;
        ug_status s = k->run(c.params, ptrs);
        snprintf(want, sizeof want, "%s must be %s[%zu] (got no buffer)", name, dtype, count);
        const char *const expect[KC_MAX_EXPECT] = {want};
        kc_expect_message(k, &s, expect);
    }
    ug_buf *ptrs[KC_MAX_BUFFERS];
    for (size_t i = 0; i < KC_MAX_BUFFERS; i++) ptrs[i] = &c.buf[i];
    ug_status s = k->run(NULL, ptrs);
    const char *const expect[KC_MAX_EXPECT] = {"no params"};
    kc_expect_message(k, &s, expect);
    kc_case_close(&c);
}
