/* SPDX-License-Identifier: MIT */
/* Buffers declared once as dimensions: the layout text, the element count
 * and the export shape all follow from the declaration, and agree. */
#include <string.h>

#include "../harness/chain.h"
#include "../harness/family.h"
#include "../harness/sweep.h"
#include "tests.h"

static void layout_text(const char *family, const char *buffer, char *out, size_t size)
{
    const ug_family *f = ug_family_find(family);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const int b = ug_family_buffer_index(f, buffer);
    CU_ASSERT_FATAL(b >= 0);
    ug_family_buffer_layout(f, (size_t)b, out, size);
}

static void layout_text_names_dims_derived_dims_and_conditions(void)
{
    static const char *const expected[][3] = {
        {"gdn_chunk_o", "k", "[B,T,Hg,K]"},
        {"gdn_chunk_o", "h", "[B,NT,H,V,K]"},
        {"gdn_chunk_state", "h0", "[B,H,K,V] (none without has_h0)"},
        {"head_norm_rope", "norm_weight_bf16", "[head_dim] (variant 0, has_weight)"},
        {"head_norm_rope", "freq_factors", "[half_rope_dim+cache_extra] (variant 1, has_ff)"},
        {"attn_reduce_fwht", "htmp", "[nrows,head_dim/4,nwg,4] partials, then [nrows,nwg,2] (S,M)"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        char text[128];
        layout_text(expected[i][0], expected[i][1], text, sizeof text);
        CU_ASSERT_STRING_EQUAL(text, expected[i][2]);
    }
}

/* Every buffer of every smoke case: the exported shape holds exactly the
 * counted elements, and a flat shape only where the layout is not dims. */
static void count_is_the_product_of_the_shape(void)
{
    ug_sweep s;
    CU_ASSERT_EQUAL_FATAL(ug_sweep_load("fixtures/sweeps/smoke", &s).code, UG_OK);
    size_t bad = 0, shaped = 0;
    for (size_t c = 0; c < s.n_cases; c++) {
        const ug_family *f = s.cases[c].family;
        for (size_t i = 0; i < f->n_buffers; i++) {
            size_t count, rank;
            uint64_t shape[UG_LAYOUT_MAX_DIMS], product = 1;
            CU_ASSERT_EQUAL_FATAL(ug_family_buffer_count(f, &s.cases[c].params, i, &count).code, UG_OK);
            ug_family_buffer_shape(f, &s.cases[c].params, i, count, shape, &rank);
            for (size_t d = 0; d < rank; d++) product *= shape[d];
            shaped += rank > 1;
            if (product != count)
                UG_TEST_MISMATCH(bad, "%s/%s %s: %zu elements, shape of %llu", f->name, s.cases[c].label,
                                 f->buffers[i].name, count, (unsigned long long)product);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(shaped > 0);
    ug_sweep_free(&s);
}

static void derived_dim_and_condition_enter_the_count(void)
{
    const ug_family *f = ug_family_find("gdn_chunk_state");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ug_params p = {{0}};
    static const char *const names[] = {"B", "T", "Hg", "H", "K", "V", "BT", "has_h0"};
    static const double values[] = {2, 128, 1, 3, 16, 8, 64, 0};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) p.v[ug_family_param_index(f, names[i])] = values[i];
    size_t count = 1;
    CU_ASSERT_EQUAL(ug_family_buffer_count(f, &p, (size_t)ug_family_buffer_index(f, "h"), &count).code, UG_OK);
    CU_ASSERT_EQUAL(count, 2 * 2 * 3 * 8 * 16); /* NT = 128 / 64 */
    CU_ASSERT_EQUAL(ug_family_buffer_count(f, &p, (size_t)ug_family_buffer_index(f, "h0"), &count).code, UG_OK);
    CU_ASSERT_EQUAL(count, 0);
    p.v[ug_family_param_index(f, "has_h0")] = 1;
    CU_ASSERT_EQUAL(ug_family_buffer_count(f, &p, (size_t)ug_family_buffer_index(f, "h0"), &count).code, UG_OK);
    CU_ASSERT_EQUAL(count, 2 * 3 * 16 * 8);
}

static void overflow_names_the_buffer_and_its_layout(void)
{
    const ug_family *f = ug_family_find("gdn_chunk_o");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ug_params p = {{0}};
    for (size_t i = 0; i < f->n_params; i++) p.v[i] = 1;
    p.v[ug_family_param_index(f, "B")] = 1ull << 40;
    p.v[ug_family_param_index(f, "K")] = 1ull << 40;
    size_t count;
    const ug_status st = ug_family_buffer_count(f, &p, (size_t)ug_family_buffer_index(f, "q"), &count);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_STRING_EQUAL(st.msg, "gdn_chunk_o: q [B,T,Hg,K] has more than SIZE_MAX elements");
    CU_ASSERT_EQUAL(ug_family_buffer_count(f, &p, (size_t)ug_family_buffer_index(f, "g"), &count).code, UG_OK);
    CU_ASSERT_EQUAL(count, 1ull << 40);
}

/* gdn_e2e with every buffer there but the named ones: the input each intermediate's stage lacked (-1: checked). */
static void unchecked_without(const char *const *absent, size_t n_absent, int missing[UG_MAX_BUFFERS])
{
    const ug_family *f = ug_family_find("gdn_e2e");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    bool present[UG_MAX_BUFFERS];
    for (size_t i = 0; i < f->n_buffers; i++) present[i] = true;
    for (size_t a = 0; a < n_absent; a++) present[ug_family_buffer_index(f, absent[a])] = false;
    CU_ASSERT_EQUAL_FATAL(ug_case_unchecked(f, present, missing).code, UG_OK);
}

static int missing_of(const int missing[UG_MAX_BUFFERS], const char *output)
{
    return missing[ug_family_buffer_index(ug_family_find("gdn_e2e"), output)];
}

static void unchecked_intermediates_name_the_input_their_stage_lacked(void)
{
    const ug_family *f = ug_family_find("gdn_e2e");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const int a = ug_family_buffer_index(f, "A"), g = ug_family_buffer_index(f, "g");
    int missing[UG_MAX_BUFFERS];
    unchecked_without(NULL, 0, missing);
    for (size_t i = 0; i < f->n_buffers; i++) CU_ASSERT_EQUAL(missing[i], -1);
    unchecked_without((const char *const[]){"A"}, 1, missing);
    CU_ASSERT_EQUAL(missing_of(missing, "w"), a);
    CU_ASSERT_EQUAL(missing_of(missing, "u"), a);
    CU_ASSERT_EQUAL(missing_of(missing, "A"), -1); /* not handed over */
    CU_ASSERT_EQUAL(missing_of(missing, "h"), -1); /* chunk_state does not read A */
    CU_ASSERT_EQUAL(missing_of(missing, "o"), -1); /* not an intermediate */
    unchecked_without((const char *const[]){"g"}, 1, missing);
    const char *const need_g[] = {"L", "w", "u", "h", "v_new"};
    for (size_t k = 0; k < 5; k++) CU_ASSERT_EQUAL(missing_of(missing, need_g[k]), g);
    CU_ASSERT_EQUAL(missing_of(missing, "A"), -1); /* solve_tril reads L only */
    const char *stage = NULL;
    CU_ASSERT_EQUAL(ug_chain_stage_name(f, (size_t)ug_family_buffer_index(f, "w"), &stage).code, UG_OK);
    CU_ASSERT_STRING_EQUAL(stage, "gdn_recompute_wu");
    const ug_status st = ug_chain_stage_name(f, (size_t)ug_family_buffer_index(f, "q"), &stage);
    CU_ASSERT_EQUAL(st.code, UG_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "produced by none of its 6 stages"));
}

UG_TEST_SUITE(family_suite, "family",
              UG_TEST(layout_text_names_dims_derived_dims_and_conditions),
              UG_TEST(count_is_the_product_of_the_shape),
              UG_TEST(derived_dim_and_condition_enter_the_count),
              UG_TEST(overflow_names_the_buffer_and_its_layout),
              UG_TEST(unchecked_intermediates_name_the_input_their_stage_lacked));
