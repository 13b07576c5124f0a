build/core/bf16.o: core/bf16.c core/bf16.h
core/bf16.h:
