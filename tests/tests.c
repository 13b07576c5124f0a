/* SPDX-License-Identifier: MIT */
#include "tests.h"

#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <valgrind/valgrind.h>

#include "../harness/profile.h"

unsigned long ug_test_random_samples(void) { return RUNNING_ON_VALGRIND ? 100000ul : 1000000ul; }

uint32_t ug_test_next_u32(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (uint32_t)(*state >> 32);
}

float ug_test_uniform(uint64_t *state, float lo, float hi)
{
    return lo + (hi - lo) * (float)(ug_test_next_u32(state) >> 8) * 0x1p-24f;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

void ug_test_remove_tree(const char *dir) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

static ug_f32_model cpu_model;
static pthread_once_t cpu_model_once = PTHREAD_ONCE_INIT;

static void load_cpu_model(void)
{
    ug_status st = ug_profile_load("fixtures/profiles/cpu.json", &cpu_model);
    if (!ug_is_ok(&st)) {
        fprintf(stderr, "tests: %s (run the tests from the repository root)\n", st.msg);
        abort();
    }
}

const struct ug_f32_model *ug_test_cpu_model(void)
{
    pthread_once(&cpu_model_once, load_cpu_model);
    return &cpu_model;
}
