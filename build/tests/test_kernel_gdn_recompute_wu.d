build/tests/test_kernel_gdn_recompute_wu.o: \
 tests/test_kernel_gdn_recompute_wu.c tests/../core/bf16.h \
 tests/../core/guard.h tests/../core/status.h \
 tests/../kernels/gdn_recompute_wu.h tests/../kernels/../core/buf.h \
 tests/../kernels/../core/status.h tests/../kernels/isa.h \
 tests/../kernels/../core/bf16.h tests/tests.h
tests/../core/bf16.h:
tests/../core/guard.h:
tests/../core/status.h:
tests/../kernels/gdn_recompute_wu.h:
tests/../kernels/../core/buf.h:
tests/../kernels/../core/status.h:
tests/../kernels/isa.h:
tests/../kernels/../core/bf16.h:
tests/tests.h:
