build/tests/run_tests.o: tests/run_tests.c tests/tests.h
tests/tests.h:
