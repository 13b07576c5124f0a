build/core/status.o: core/status.c core/status.h
core/status.h:
