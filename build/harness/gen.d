build/harness/gen.o: harness/gen.c harness/gen.h harness/../core/bf16.h
harness/gen.h:
harness/../core/bf16.h:
