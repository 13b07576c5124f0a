build/kernels/gemm_avx512.o: kernels/gemm_avx512.c kernels/gemm_paths.h \
 kernels/../core/bf16.h
kernels/gemm_paths.h:
kernels/../core/bf16.h:
