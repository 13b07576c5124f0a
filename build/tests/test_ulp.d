build/tests/test_ulp.o: tests/test_ulp.c tests/../core/bf16.h \
 tests/../harness/ulp.h tests/../harness/../core/buf.h \
 tests/../harness/../ref/ref.h tests/../harness/../ref/../core/buf.h \
 tests/../ref/round.h tests/tests.h
tests/../core/bf16.h:
tests/../harness/ulp.h:
tests/../harness/../core/buf.h:
tests/../harness/../ref/ref.h:
tests/../harness/../ref/../core/buf.h:
tests/../ref/round.h:
tests/tests.h:
