build/tests/test_round.o: tests/test_round.c tests/../core/bf16.h \
 tests/../ref/round.h tests/tests.h
tests/../core/bf16.h:
tests/../ref/round.h:
tests/tests.h:
