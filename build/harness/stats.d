build/harness/stats.o: harness/stats.c harness/stats.h \
 harness/../core/status.h harness/ulp.h harness/../core/buf.h \
 harness/../ref/ref.h harness/../ref/../core/buf.h
harness/stats.h:
harness/../core/status.h:
harness/ulp.h:
harness/../core/buf.h:
harness/../ref/ref.h:
harness/../ref/../core/buf.h:
