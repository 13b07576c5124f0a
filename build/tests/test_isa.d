build/tests/test_isa.o: tests/test_isa.c tests/../kernels/isa.h \
 tests/../kernels/../core/bf16.h tests/../kernels/../core/status.h \
 tests/tests.h
tests/../kernels/isa.h:
tests/../kernels/../core/bf16.h:
tests/../kernels/../core/status.h:
tests/tests.h:
