build/tests/test_bf16.o: tests/test_bf16.c tests/../core/bf16.h \
 tests/tests.h
tests/../core/bf16.h:
tests/tests.h:
