build/core/guard.o: core/guard.c core/guard.h core/status.h
core/guard.h:
core/status.h:
