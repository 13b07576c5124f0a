#include "tests.h"

#include <valgrind/valgrind.h>

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
