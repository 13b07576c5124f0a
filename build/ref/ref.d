build/ref/ref.o: ref/ref.c ref/ref.h ref/../core/buf.h ref/../core/bf16.h \
 ref/round.h
ref/ref.h:
ref/../core/buf.h:
ref/../core/bf16.h:
ref/round.h:
