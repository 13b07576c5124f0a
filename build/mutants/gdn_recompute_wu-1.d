build/mutants/gdn_recompute_wu-1.o: kernels/gdn_recompute_wu.c \
 kernels/gdn_recompute_wu.h kernels/../core/buf.h \
 kernels/../core/status.h kernels/../core/bf16.h kernels/../core/guard.h \
 kernels/../core/status.h kernels/isa.h
kernels/gdn_recompute_wu.h:
kernels/../core/buf.h:
kernels/../core/status.h:
kernels/../core/bf16.h:
kernels/../core/guard.h:
kernels/../core/status.h:
kernels/isa.h:
