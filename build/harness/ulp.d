build/harness/ulp.o: harness/ulp.c harness/ulp.h harness/../core/buf.h \
 harness/../ref/ref.h harness/../ref/../core/buf.h harness/../core/bf16.h
harness/ulp.h:
harness/../core/buf.h:
harness/../ref/ref.h:
harness/../ref/../core/buf.h:
harness/../core/bf16.h:
