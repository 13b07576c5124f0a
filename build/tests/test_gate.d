build/tests/test_gate.o: tests/test_gate.c tests/../harness/gate.h \
 tests/../harness/results.h tests/../harness/../kernels/isa.h \
 tests/../harness/../kernels/../core/bf16.h \
 tests/../harness/../kernels/../core/status.h tests/../harness/family.h \
 tests/../harness/../core/buf.h tests/../harness/../core/status.h \
 tests/../harness/../ref/ref.h tests/../harness/../ref/../core/buf.h \
 tests/../harness/stats.h tests/../harness/ulp.h tests/../harness/sweep.h \
 tests/tests.h
tests/../harness/gate.h:
tests/../harness/results.h:
tests/../harness/../kernels/isa.h:
tests/../harness/../kernels/../core/bf16.h:
tests/../harness/../kernels/../core/status.h:
tests/../harness/family.h:
tests/../harness/../core/buf.h:
tests/../harness/../core/status.h:
tests/../harness/../ref/ref.h:
tests/../harness/../ref/../core/buf.h:
tests/../harness/stats.h:
tests/../harness/ulp.h:
tests/../harness/sweep.h:
tests/tests.h:
