build/core/atomic_file.o: core/atomic_file.c core/atomic_file.h \
 core/status.h
core/atomic_file.h:
core/status.h:
