build/tests/test_ref_gdn_recompute_wu.o: \
 tests/test_ref_gdn_recompute_wu.c tests/../harness/family.h \
 tests/../harness/../core/buf.h tests/../harness/../core/status.h \
 tests/../harness/../ref/ref.h tests/../harness/../ref/../core/buf.h \
 tests/../harness/ulp.h tests/../ref/gdn_recompute_wu.h \
 tests/../ref/../core/bf16.h tests/../ref/../core/status.h \
 tests/../ref/ref.h tests/tests.h
tests/../harness/family.h:
tests/../harness/../core/buf.h:
tests/../harness/../core/status.h:
tests/../harness/../ref/ref.h:
tests/../harness/../ref/../core/buf.h:
tests/../harness/ulp.h:
tests/../ref/gdn_recompute_wu.h:
tests/../ref/../core/bf16.h:
tests/../ref/../core/status.h:
tests/../ref/ref.h:
tests/tests.h:
