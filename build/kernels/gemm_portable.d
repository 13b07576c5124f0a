build/kernels/gemm_portable.o: kernels/gemm_portable.c \
 kernels/gemm_paths.h kernels/../core/bf16.h
kernels/gemm_paths.h:
kernels/../core/bf16.h:
