build/harness/sweep.o: harness/sweep.c harness/sweep.h harness/family.h \
 harness/../core/buf.h harness/../core/status.h harness/../ref/ref.h \
 harness/../ref/../core/buf.h harness/gen.h harness/../core/bf16.h
harness/sweep.h:
harness/family.h:
harness/../core/buf.h:
harness/../core/status.h:
harness/../ref/ref.h:
harness/../ref/../core/buf.h:
harness/gen.h:
harness/../core/bf16.h:
