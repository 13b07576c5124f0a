build/harness/gate.o: harness/gate.c harness/gate.h harness/results.h \
 harness/../kernels/isa.h harness/../kernels/../core/bf16.h \
 harness/../kernels/../core/status.h harness/family.h \
 harness/../core/buf.h harness/../core/status.h harness/../ref/ref.h \
 harness/../ref/../core/buf.h harness/stats.h harness/ulp.h \
 harness/sweep.h harness/../core/atomic_file.h harness/../core/status.h
harness/gate.h:
harness/results.h:
harness/../kernels/isa.h:
harness/../kernels/../core/bf16.h:
harness/../kernels/../core/status.h:
harness/family.h:
harness/../core/buf.h:
harness/../core/status.h:
harness/../ref/ref.h:
harness/../ref/../core/buf.h:
harness/stats.h:
harness/ulp.h:
harness/sweep.h:
harness/../core/atomic_file.h:
harness/../core/status.h:
