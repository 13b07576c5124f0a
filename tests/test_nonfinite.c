/* Non-finite and extreme inputs, for every family (issue 9): NaN, +-inf,
 * values at the edge of bf16/f32 overflow, subnormals and zeros injected into
 * each floating-point input tensor of a small accepted case. Whatever the
 * kernel computes, it must not crash, must stay inside its buffers (guards),
 * must return a status (UG_OK, or UG_EINVAL naming the value for parameters
 * it validates), and when it returns UG_OK it must write every output
 * element. The agreement of the results with the reference's classes is
 * SPEC §3's non-finite rule, applied by the runner on every swept element. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "../harness/sweep.h"
#include "tests.h"

static const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0x1.fep127f, -0x1.fep127f,
                                 0x1p-140f, -0x1p-149f, 0.0f, -0.0f};
static const unsigned char poison = 0xA7;

static void put_special(ug_buf *b, size_t i, float x)
{
    if (b->dtype == UG_BF16) ((ug_bf16 *)b->data)[i] = ug_bf16_from_f32(x);
    else ((float *)b->data)[i] = x;
}

typedef struct {
    const ug_family *f;
    ug_guarded mem[UG_MAX_BUFFERS];
    ug_buf bufs[UG_MAX_BUFFERS];
} case_memory;

static void case_alloc(case_memory *cm, const ug_case *c)
{
    const ug_family *f = cm->f = c->family;
    for (size_t i = 0; i < f->n_buffers; i++) {
        CU_ASSERT_FATAL(f->buffer_count(&c->params, i, &cm->bufs[i].count).code == UG_OK);
        cm->bufs[i].dtype = f->buffers[i].dtype;
        size_t bytes = cm->bufs[i].count * ug_dtype_size(cm->bufs[i].dtype);
        CU_ASSERT_FATAL(ug_guarded_alloc(&cm->mem[i], bytes).code == UG_OK);
        cm->bufs[i].data = ug_guarded_data(&cm->mem[i]);
        memset(cm->bufs[i].data, 0, bytes);
    }
}

static void case_free(case_memory *cm)
{
    for (size_t i = 0; i < cm->f->n_buffers; i++) ug_guarded_free(&cm->mem[i], cm->f->buffers[i].name);
}

/* Runs the kernel on freshly poisoned outputs; checks the contract above. */
static void run_and_check(case_memory *cm, const ug_case *c, const char *what)
{
    const ug_family *f = cm->f;
    for (size_t i = 0; i < f->n_buffers; i++)
        if (f->buffers[i].is_output) memset(cm->bufs[i].data, poison, cm->bufs[i].count * ug_dtype_size(cm->bufs[i].dtype));
    ug_status st = f->run(&c->params, cm->bufs);
    for (size_t i = 0; i < f->n_buffers; i++)
        if (!ug_guarded_intact(&cm->mem[i])) {
            printf("\n    %s %s: guard of %s overwritten", f->name, what, f->buffers[i].name);
            CU_FAIL("guard overwritten");
        }
    if (st.code != UG_OK) {
        if (st.code != UG_EINVAL || !st.msg[0]) {
            printf("\n    %s %s: %s: %s", f->name, what, ug_code_name(st.code), st.msg);
            CU_FAIL("a kernel failed on extreme inputs without a validation message");
        }
        return;
    }
    for (size_t i = 0; i < f->n_buffers; i++) {
        if (!f->buffers[i].is_output) continue;
        size_t size = ug_dtype_size(cm->bufs[i].dtype);
        for (size_t e = 0; e < cm->bufs[i].count; e++) {
            const unsigned char *p = (const unsigned char *)cm->bufs[i].data + e * size;
            bool all_poison = true;
            for (size_t k = 0; k < size; k++) all_poison &= p[k] == poison;
            if (all_poison) {
                printf("\n    %s %s: %s[%zu] left unwritten", f->name, what, f->buffers[i].name, e);
                CU_FAIL("output element left unwritten");
                break;
            }
        }
    }
}

static void test_every_family_survives_extreme_inputs(void)
{
    ug_sweep sw;
    CU_ASSERT_FATAL(ug_sweep_load("fixtures/sweeps/memcheck", &sw).code == UG_OK);
    size_t families = 0;
    for (size_t fi = 0; fi < ug_family_count(); fi++) {
        const ug_family *f = ug_family_at(fi);
        const ug_case *c = NULL;
        for (size_t i = 0; i < sw.n_cases && !c; i++)
            if (sw.cases[i].family == f && !sw.cases[i].expect_reject) c = &sw.cases[i];
        if (!c) continue;
        families++;
        case_memory cm;
        case_alloc(&cm, c);
        for (size_t b = 0; b < f->n_buffers; b++) {
            if (f->buffers[b].is_output || cm.bufs[b].count == 0) continue;
            if (cm.bufs[b].dtype != UG_BF16 && cm.bufs[b].dtype != UG_F32) continue;
            for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++) {
                gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
                gsl_rng_set(rng, c->seed);
                CU_ASSERT_FATAL(f->generate(&c->params, c->regime, rng, cm.bufs).code == UG_OK);
                gsl_rng_free(rng);
                /* one element at the start and one in the middle */
                put_special(&cm.bufs[b], 0, specials[s]);
                put_special(&cm.bufs[b], cm.bufs[b].count / 2, specials[s]);
                char what[96];
                snprintf(what, sizeof what, "%s = %a", f->buffers[b].name, (double)specials[s]);
                run_and_check(&cm, c, what);
            }
        }
        /* all-zero inputs */
        for (size_t b = 0; b < f->n_buffers; b++)
            if (!f->buffers[b].is_output) memset(cm.bufs[b].data, 0, cm.bufs[b].count * ug_dtype_size(cm.bufs[b].dtype));
        run_and_check(&cm, c, "all inputs zero");
        case_free(&cm);
    }
    CU_ASSERT(families >= 8);
    ug_sweep_free(&sw);
}

UG_TEST_SUITE(nonfinite_suite, "nonfinite", UG_TEST(test_every_family_survives_extreme_inputs));
