/* SPDX-License-Identifier: MIT */
/* Kernel threads (kernels/parallel.h): for every registered family, table-
 * driven through its descriptor (generate, run), the outputs of every
 * accepted case of the smoke and threads sweeps are bit-identical at 1, 2
 * and 3 kernel threads, on every ISA path this CPU supports. A kernel that does not split
 * its work passes trivially; one whose bits depend on the split fails. */
#include <stdlib.h>
#include <string.h>

#include "../core/guard.h"
#include "../harness/family.h"
#include "../harness/runner.h"
#include "../harness/sweep.h"
#include "../kernels/isa.h"
#include "../kernels/parallel.h"
#include "tests.h"

enum { MAX_THREADS_TRIED = 3 };

typedef struct {
    ug_guarded mem[UG_MAX_BUFFERS];
    ug_buf buf[UG_MAX_BUFFERS];
    void *first[UG_MAX_BUFFERS]; /* the outputs at 1 kernel thread */
} case_buffers;

static size_t bytes_of(const ug_buf *b) { return b->count * ug_dtype_size(b->dtype); }

static void open_case(const ug_case *c, case_buffers *cb)
{
    memset(cb, 0, sizeof *cb);
    const ug_family *f = c->family;
    for (size_t i = 0; i < f->n_buffers; i++) {
        CU_ASSERT_FATAL(ug_family_buffer_count(f, &c->params, i, &cb->buf[i].count).code == UG_OK);
        cb->buf[i].dtype = f->buffers[i].dtype;
        CU_ASSERT_FATAL(ug_guarded_alloc(&cb->mem[i], bytes_of(&cb->buf[i])).code == UG_OK);
        cb->buf[i].data = ug_guarded_data(&cb->mem[i]);
        if (f->buffers[i].is_output) {
            cb->first[i] = malloc(bytes_of(&cb->buf[i]) ? bytes_of(&cb->buf[i]) : 1);
            CU_ASSERT_FATAL(cb->first[i] != NULL);
        }
    }
    CU_ASSERT_FATAL(ug_case_generate(c, cb->buf).code == UG_OK);
}

static void close_case(const ug_case *c, case_buffers *cb)
{
    for (size_t i = 0; i < c->family->n_buffers; i++) {
        CU_ASSERT(ug_guarded_free(&cb->mem[i], c->family->buffers[i].name).code == UG_OK);
        free(cb->first[i]);
    }
}

/* Runs the case at `threads` kernel threads on outputs poisoned with 0xA5,
 * so that an element left unwritten differs from the first run's. */
static void run_at(const ug_case *c, case_buffers *cb, unsigned threads)
{
    const ug_family *f = c->family;
    for (size_t i = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) memset(cb->buf[i].data, 0xA5, bytes_of(&cb->buf[i]));
    CU_ASSERT_FATAL(ug_kernel_threads_set(threads).code == UG_OK);
    ug_status st = f->run(&c->params, cb->buf);
    CU_ASSERT_FATAL(ug_kernel_threads_set(1).code == UG_OK);
    if (st.code != UG_OK) printf("\n    %s/%s at %u threads: %s", f->name, c->label, threads, st.msg);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
}

/* Every accepted case of the sweep at `path`; *mismatches counts the
 * differing outputs, cases_per_family[fi] the cases run. */
static void check_sweep(const char *path, size_t *mismatches, size_t *cases_per_family)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load(path, &sw).code == UG_OK);
    for (size_t k = 0; k < sw.n_cases; k++) {
        const ug_case *c = &sw.cases[k];
        if (c->expect_reject) continue;
        const ug_family *f = c->family;
        for (size_t fi = 0; fi < ug_family_count(); fi++) cases_per_family[fi] += ug_family_at(fi) == f;
        case_buffers cb;
        open_case(c, &cb);
        for (int isa = 0; isa < UG_ISA_COUNT; isa++) {
            if (!ug_isa_supported((ug_isa)isa)) continue;
            CU_ASSERT_FATAL(ug_isa_select((ug_isa)isa).code == UG_OK);
            for (unsigned threads = 1; threads <= MAX_THREADS_TRIED; threads++) {
                run_at(c, &cb, threads);
                for (size_t i = 0; i < f->n_buffers; i++) {
                    if (!f->buffers[i].is_output) continue;
                    if (threads == 1) memcpy(cb.first[i], cb.buf[i].data, bytes_of(&cb.buf[i]));
                    else if (memcmp(cb.first[i], cb.buf[i].data, bytes_of(&cb.buf[i])) != 0)
                        UG_TEST_MISMATCH(*mismatches, "%s/%s [%s] output %s differs at %u kernel threads", f->name,
                                         c->label, ug_isa_name((ug_isa)isa), f->buffers[i].name, threads);
                }
            }
        }
        close_case(c, &cb);
    }
    CU_ASSERT_EQUAL(ug_isa_select(ug_isa_best()).code, UG_OK);
    ug_sweep_free(&sw);
}

/* The smoke sweep covers every family; fixtures/sweeps/threads adds shapes
 * large enough for kernels that split only big calls (attn_reduce_fwht:
 * blocks of 64 rows; gdn_chunk_cumsum: blocks of 256 chunks). */
static void test_outputs_do_not_depend_on_the_kernel_thread_count(void)
{
    size_t mismatches = 0, cases_per_family[64] = {0};
    CU_ASSERT_FATAL(ug_family_count() <= 64);
    check_sweep("fixtures/sweeps/smoke", &mismatches, cases_per_family);
    check_sweep("fixtures/sweeps/threads", &mismatches, cases_per_family);
    CU_ASSERT_EQUAL(mismatches, 0);
    for (size_t fi = 0; fi < ug_family_count(); fi++)
        if (cases_per_family[fi] == 0) {
            printf("\n    family %s has no case", ug_family_at(fi)->name);
            CU_FAIL("a registered family is not covered");
        }
}

UG_TEST_SUITE(threads_suite, "kernel_threads", UG_TEST(test_outputs_do_not_depend_on_the_kernel_thread_count));
