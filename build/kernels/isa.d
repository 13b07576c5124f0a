build/kernels/isa.o: kernels/isa.c kernels/isa.h kernels/../core/bf16.h \
 kernels/../core/status.h kernels/gemm_paths.h
kernels/isa.h:
kernels/../core/bf16.h:
kernels/../core/status.h:
kernels/gemm_paths.h:
