build/harness/families/gdn_recompute_wu.o: \
 harness/families/gdn_recompute_wu.c \
 harness/families/../../kernels/gdn_recompute_wu.h \
 harness/families/../../kernels/../core/buf.h \
 harness/families/../../kernels/../core/status.h \
 harness/families/../../ref/gdn_recompute_wu.h \
 harness/families/../../ref/../core/bf16.h \
 harness/families/../../ref/../core/status.h \
 harness/families/../../ref/ref.h \
 harness/families/../../ref/../core/buf.h harness/families/../family.h \
 harness/families/../../core/buf.h harness/families/../../core/status.h \
 harness/families/../../ref/ref.h harness/families/../gen.h \
 harness/families/../../core/bf16.h
harness/families/../../kernels/gdn_recompute_wu.h:
harness/families/../../kernels/../core/buf.h:
harness/families/../../kernels/../core/status.h:
harness/families/../../ref/gdn_recompute_wu.h:
harness/families/../../ref/../core/bf16.h:
harness/families/../../ref/../core/status.h:
harness/families/../../ref/ref.h:
harness/families/../../ref/../core/buf.h:
harness/families/../family.h:
harness/families/../../core/buf.h:
harness/families/../../core/status.h:
harness/families/../../ref/ref.h:
harness/families/../gen.h:
harness/families/../../core/bf16.h:
