build/core/buf.o: core/buf.c core/buf.h
core/buf.h:
