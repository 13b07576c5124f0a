build/ref/gdn_recompute_wu.o: ref/gdn_recompute_wu.c \
 ref/gdn_recompute_wu.h ref/../core/bf16.h ref/../core/status.h ref/ref.h \
 ref/../core/buf.h ref/round.h
ref/gdn_recompute_wu.h:
ref/../core/bf16.h:
ref/../core/status.h:
ref/ref.h:
ref/../core/buf.h:
ref/round.h:
