build/kernels/gemm_avx2.o: kernels/gemm_avx2.c kernels/gemm_paths.h \
 kernels/../core/bf16.h
kernels/gemm_paths.h:
kernels/../core/bf16.h:
