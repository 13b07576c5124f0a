build/harness/family.o: harness/family.c harness/family.h \
 harness/../core/buf.h harness/../core/status.h harness/../ref/ref.h \
 harness/../ref/../core/buf.h
harness/family.h:
harness/../core/buf.h:
harness/../core/status.h:
harness/../ref/ref.h:
harness/../ref/../core/buf.h:
