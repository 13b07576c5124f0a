/* SPDX-License-Identifier: MIT */
/* 256-bit unsigned integers as four little-endian 64-bit limbs: the product
 * by one limb, shared by the references that keep 256-bit values as
 * integers (ref/gdn_e2e.c's state, ref/gdn_solve_tril.c's inverse). On
 * x86-64 the carry chain is inline asm (GCC 12 breaks the C version's into
 * setb / add $0xff pairs); other targets get the C definition, which the
 * tests of both references exercise. */
#ifndef UG_REF_LIMBS256_H
#define UG_REF_LIMBS256_H

#include <stdint.h>

enum { UG_LIMBS256 = 4 };

/* p[0 .. 4] = k · d[0 .. 3], exactly. */
__attribute__((always_inline)) static inline void ug_limbs256_mul_1(uint64_t k, const uint64_t d[UG_LIMBS256],
                                                                    uint64_t p[UG_LIMBS256 + 1])
{
#if defined(__x86_64__) && defined(__GNUC__)
    __asm__("movq %[d0], %%rax\n\tmulq %[k]\n\tmovq %%rax, %[p0]\n\tmovq %%rdx, %[p1]\n\t"
            "movq %[d1], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p1]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p2]\n\t"
            "movq %[d2], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p2]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p3]\n\t"
            "movq %[d3], %%rax\n\tmulq %[k]\n\taddq %%rax, %[p3]\n\tadcq $0, %%rdx\n\tmovq %%rdx, %[p4]"
            : [p0] "=&r"(p[0]), [p1] "=&r"(p[1]), [p2] "=&r"(p[2]), [p3] "=&r"(p[3]), [p4] "=&r"(p[4])
            : [k] "r"(k), [d0] "m"(d[0]), [d1] "m"(d[1]), [d2] "m"(d[2]), [d3] "m"(d[3])
            : "rax", "rdx", "cc");
#else
    unsigned __int128 t = 0;
    for (int i = 0; i < UG_LIMBS256; i++) {
        t = (unsigned __int128)k * d[i] + (uint64_t)(t >> 64);
        p[i] = (uint64_t)t;
    }
    p[UG_LIMBS256] = (uint64_t)(t >> 64);
#endif
}

#endif
