build/tests/test_guard.o: tests/test_guard.c tests/../core/atomic_file.h \
 tests/../core/status.h tests/../core/guard.h tests/tests.h
tests/../core/atomic_file.h:
tests/../core/status.h:
tests/../core/guard.h:
tests/tests.h:
