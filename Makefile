# SPDX-License-Identifier: MIT
# ulpgate — one Makefile; the targets are the interface (see README.md).
CC      ?= gcc
OPT     ?= -O2
# -ffp-contract=off: the kernels' f32 expressions must round where the seeds
# round; fused multiply-adds are written explicitly where they are meant.
CFLAGS  ?= $(OPT) -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Werror=unused-result -Wno-format-truncation \
           -ffp-contract=off -fno-fast-math -MMD -MP
LDLIBS  := -pthread -lmpfr -lgmp -lgsl -lgslcblas -ljansson -lm -ldl
BUILD   ?= build

SIMD_FLAGS_avx2   := -mavx2 -mfma
SIMD_FLAGS_avx512 := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma
SIMD_FLAGS_avx512bf16 := $(SIMD_FLAGS_avx512) -mavx512bf16
SIMD_FLAGS_avx512ifma := $(SIMD_FLAGS_avx512) -mavx512ifma

LIB_SRC   := $(wildcard core/*.c kernels/*.c ref/*.c harness/*.c harness/families/*.c)
LIB_SRC   := $(filter-out harness/main.c,$(LIB_SRC))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
KERNEL_FAMILIES := $(notdir $(basename $(wildcard harness/families/*.c)))

SWEEP    ?= fixtures/sweeps/default
BUDGETS  ?= fixtures/budgets
BASELINE ?= fixtures/baseline.json
REPORTS  ?= reports
JOBS     ?= $(shell nproc)
VALGRIND := valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --show-leak-kinds=definite

.PHONY: all test verify verify-large verify-production baseline memcheck mutants clean deps screenshot sanitize fuzz interop lint
# $(call timed,WHAT,COMMAND): runs COMMAND, prints its wall time, keeps its status.
timed = start=$$(date +%s%N); $(2); rc=$$?; \
	echo "make: $(1): $$(( ($$(date +%s%N) - start) / 1000000 )) ms wall (exit $$rc)"; exit $$rc
all: $(BUILD)/ulpgate $(BUILD)/tests/run_tests

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SIMD_FLAGS_$(lastword $(subst _, ,$*))) -c $< -o $@

$(BUILD)/ulpgate: $(BUILD)/harness/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The built-in kernels as a kernel library (include/ulpgate/kernel_abi.h): the
# library's sources compiled position-independent in their own tree, every
# symbol hidden but the entry point (plugin/exports.map), bound to themselves
# (-Bsymbolic), so that the library and a host holding the same functions
# never interpose on each other.
PLUGIN_LINK := -shared -Wl,-Bsymbolic -Wl,--version-script=plugin/exports.map
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(SIMD_FLAGS_$(lastword $(subst _, ,$*))) -c $< -o $@
$(BUILD)/libulpgate_kernels.so: $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC) $(wildcard plugin/*.c)) plugin/exports.map
	$(CC) $(CFLAGS) $(PLUGIN_LINK) $(filter %.o,$^) -o $@ $(LDLIBS)
# Broken kernel libraries for the tests: fixtures/plugin/cumsum.c built once
# per planted defect (-DPLUGIN_DEFECT_<NAME>; "none" is the working control).
# Hostile builds (every third call ends, crashes, overruns or hangs; or a constructor exits).
PLUGIN_HOSTILE  := exit3 underscore_exit3 constructor_exit segv abort sigkill overrun_4k past_guard pause spin
PLUGIN_DEFECTS  := none wrong_version no_entry unknown_family duplicate_family null_run wrong_values \
                   out_of_bounds bad_status backward $(PLUGIN_HOSTILE)
PLUGIN_FIXTURES := $(PLUGIN_DEFECTS:%=$(BUILD)/plugin-fixtures/cumsum-%.so)
$(BUILD)/plugin-fixtures/cumsum-%.so: fixtures/plugin/cumsum.c include/ulpgate/kernel_abi.h plugin/exports.map
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) -DPLUGIN_DEFECT_$* $< -o $@

# The profiles' acceptance libraries (fixtures/plugin/kkt.c, tests/profiles/run.sh): every
# exp off by the triton profile's full exp allowance, read from its file; outputs flushed.
TRITON_PROFILE := fixtures/profiles/triton.json
TRITON_EXP = $(shell python3 -c 'import json,sys; e = json.load(open(sys.argv[1]))["ops"]["exp"]; \
	print("-DEXP_ULPS=%r -DEXP_ULPS_PER_ABS_X=%r" % (e.get("ulps", 0), e.get("ulps_per_abs_x", 0)))' $(TRITON_PROFILE))
$(BUILD)/plugin-fixtures/kkt-triton-exp.so: fixtures/plugin/kkt.c include/ulpgate/kernel_abi.h $(TRITON_PROFILE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) $(TRITON_EXP) $< -o $@ -lm
$(BUILD)/plugin-fixtures/kkt-flush.so: fixtures/plugin/kkt.c include/ulpgate/kernel_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) -DFLUSH_OUTPUTS $< -o $@ -lm
$(BUILD)/plugin-fixtures/kkt-exact.so: fixtures/plugin/kkt.c include/ulpgate/kernel_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) $< -o $@ -lm
.PHONY: profiles
profiles: $(BUILD)/ulpgate $(patsubst %,$(BUILD)/plugin-fixtures/kkt-%.so,triton-exp flush exact)
	@$(call timed,profiles,tests/profiles/run.sh $(BUILD))

# A legitimate outside kernel: kkt and chunk_o with tensor-core summation
# order (blocks of 8 or 16 products summed as a tree), which the gate must pass.
# Its -DTIES_AWAY and -DTRUNCATE builds round bf16 outputs wrongly; the ties
# regimes must catch them.
TC_ORDER_PLUGINS := $(BUILD)/plugin-fixtures/tensor-core-order-8.so $(BUILD)/plugin-fixtures/tensor-core-order-16.so
ROUNDING_BUG_PLUGINS := $(BUILD)/plugin-fixtures/rounding-TIES_AWAY.so $(BUILD)/plugin-fixtures/rounding-TRUNCATE.so
$(BUILD)/plugin-fixtures/tensor-core-order-%.so: fixtures/plugin/tensor_core_order.c include/ulpgate/kernel_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) -DTC_BLOCK=$* $< -o $@ -lm
$(BUILD)/plugin-fixtures/rounding-%.so: fixtures/plugin/tensor_core_order.c include/ulpgate/kernel_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) -D$* $< -o $@ -lm

# An outside pipeline (fixtures/plugin/gdn_e2e.c, tests/e2e_plugin.sh), one build per set of its
# -DE2E_<FLAG>s joined by "+" ("all": none): correct and handing over every intermediate, none, all
# but A; a bug only the chained check of an intermediate sees, and the same bug fused away.
E2E_PLUGINS := $(patsubst %,$(BUILD)/plugin-fixtures/gdn-e2e-%.so,all fused without_a bug_vnew_f32 \
                 fused+bug_vnew_f32)
$(BUILD)/plugin-fixtures/gdn-e2e-%.so: fixtures/plugin/gdn_e2e.c include/ulpgate/kernel_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(PLUGIN_LINK) \
	    $(addprefix -DE2E_,$(filter-out ALL,$(subst +, ,$(shell echo '$*' | tr a-z A-Z)))) $< -o $@ -lm

# tests/test_plugin.c loads these from the test binary's $(BUILD) (order-only: not linked in).
$(BUILD)/tests/run_tests: $(TEST_OBJ) $(LIB_OBJ) | $(BUILD)/libulpgate_kernels.so $(PLUGIN_FIXTURES)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lcunit

# A mutant FAMILY-ID is the whole tool with the family's kernel files (its
# portable kernels/FAMILY.c and its vector paths kernels/FAMILY_<isa>.c)
# rebuilt as -DUG_MUTANT=ID: a bug planted in a vector path is built too.
mutant_sources = $(wildcard $(addprefix kernels/$(firstword $(subst -, ,$(1))),.c _avx2.c _avx512.c))
mutant_objects = $(patsubst kernels/%.c,$(BUILD)/mutants/$(1)/%.o,$(call mutant_sources,$(1)))
$(BUILD)/mutants/%.o:
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SIMD_FLAGS_$(lastword $(subst _, ,$(notdir $*)))) \
	    -DUG_MUTANT=$(lastword $(subst -, ,$(firstword $(subst /, ,$*)))) -c kernels/$(notdir $*).c -o $@
.SECONDEXPANSION:
$(BUILD)/mutants/ulpgate-%: $$(call mutant_objects,$$*) $(BUILD)/harness/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $(call mutant_objects,$*) $(BUILD)/harness/main.o \
	    $(filter-out $(patsubst %.c,$(BUILD)/%.o,$(call mutant_sources,$*)),$(LIB_OBJ)) -o $@ $(LDLIBS)

# The README's test command: unit tests, then the end-to-end smoke sweep
# through the gate, then the proof that the gate catches every mutant.
test: $(BUILD)/tests/run_tests $(BUILD)/ulpgate $(BUILD)/libulpgate_kernels.so $(PLUGIN_FIXTURES) $(TC_ORDER_PLUGINS) \
      $(ROUNDING_BUG_PLUGINS) $(E2E_PLUGINS)
	@$(call timed,unit tests,$(BUILD)/tests/run_tests)
	@$(call timed,smoke sweep,$(BUILD)/ulpgate verify --sweep fixtures/sweeps/smoke \
	    --budgets $(BUDGETS) --reports $(BUILD)/smoke-reports --quiet)
	@$(call timed,plugin sweep,$(BUILD)/ulpgate verify --kernel-lib $(BUILD)/libulpgate_kernels.so \
	    --sweep fixtures/sweeps/memcheck --budgets $(BUDGETS) --reports $(BUILD)/plugin-reports --quiet)
	@$(call timed,hostile plugins,tests/hostile/run.sh $(BUILD))
	@$(call timed,plugin baseline,tests/plugin_baseline.sh $(BUILD))
	@$(call timed,outside gdn_e2e pipeline,tests/e2e_plugin.sh $(BUILD))
	@$(MAKE) --no-print-directory profiles

	@$(call timed,command line,tests/cli/exit_codes.sh $(BUILD) && tests/cli/report_set.sh $(BUILD) && \
	    tests/cli/user_inputs.sh $(BUILD))
	@for p in $(TC_ORDER_PLUGINS); do ( $(call timed,tensor-core order $$(basename $$p),$(BUILD)/ulpgate verify \
	    --kernel-lib $$p --sweep $(SWEEP) --budgets $(BUDGETS) --reports $(BUILD)/tc-order-reports --quiet) ) || exit 1; done
	@for p in $(ROUNDING_BUG_PLUGINS); do $(BUILD)/ulpgate verify --kernel-lib $$p --sweep $(SWEEP) --filter gdn_chunk_o \
	    --budgets $(BUDGETS) --reports $(BUILD)/rounding-reports --quiet >$(BUILD)/rounding.log 2>&1; rc=$$?; \
	    if [ $$rc -eq 1 ] && grep -q ' ties: \[plugin\]' $(BUILD)/rounding.log; then echo "ties: caught $$(basename $$p)"; \
	    else echo "ties: NOT caught $$(basename $$p) (exit $$rc)"; cat $(BUILD)/rounding.log; exit 1; fi; done
	@$(MAKE) --no-print-directory interop
	@$(MAKE) --no-print-directory mutants

# The safetensors round trip of a kernel outside ulpgate (docs/interop.md):
# export, a numpy candidate written with the real safetensors library (right,
# then wrong on purpose), score, verdicts asserted. The Python venv comes from
# ci/install-deps.sh (make deps).
PYVENV ?= build/pyvenv
interop: $(BUILD)/ulpgate
	@$(call timed,interop,tests/interop/run.sh $(BUILD) $(PYVENV))

verify: $(BUILD)/ulpgate
	@$(call timed,verify,$(BUILD)/ulpgate verify --sweep $(SWEEP) --budgets $(BUDGETS) \
	    --baseline $(BASELINE) --reports $(REPORTS) --jobs $(JOBS))

# The opt-in large shapes (long sequences, bigger heads): not part of verify.
# Their own reports directory: a report set is replaced whole (docs/report-format.md).
verify-large: $(BUILD)/ulpgate
	@$(call timed,verify-large,$(BUILD)/ulpgate verify --sweep fixtures/sweeps/large --budgets $(BUDGETS) \
	    --reports $(REPORTS)-large --jobs $(JOBS))

# The shapes of published model configurations (docs/production.md): opt-in, a nightly CI job.
# The fastest path only: every path's bits are the same (the default sweep checks it at every
# ISA), and the portable path would double the time at these shapes.
# Its own budgets: the default ones with the statistics the built-in kernels
# reach at these shapes (tools/production_budgets.py, docs/budgets.md).
verify-production: $(BUILD)/ulpgate
	@$(call timed,verify-production,$(BUILD)/ulpgate verify --sweep fixtures/sweeps/production \
	    --budgets fixtures/budgets-production \
	    --isa best --reports $(REPORTS)-production --jobs $(JOBS))

# Accepting a new baseline is deliberate: it rewrites fixtures/baseline.json
# from a full verify run; review and commit the diff.
baseline: $(BUILD)/ulpgate
	$(BUILD)/ulpgate verify --sweep $(SWEEP) --budgets $(BUDGETS) --reports $(REPORTS) \
	    --write-baseline $(BASELINE) --jobs $(JOBS)

# Each unit-test suite and the memcheck sweep in its own valgrind process, $(JOBS) at a time.
memcheck: $(BUILD)/ulpgate $(BUILD)/tests/run_tests
	@$(call timed,memcheck,ci/memcheck.sh $(BUILD) $(BUDGETS) $(JOBS) $(VALGRIND))

mutants: $(BUILD)/ulpgate
	@ci/mutants.sh $(BUILD) fixtures/sweeps/mutants $(BUDGETS)

# AddressSanitizer + UndefinedBehaviorSanitizer: the unit tests and the
# memcheck sweep in a separate build tree; any finding aborts with non-zero.
SANITIZE_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
sanitize:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/sanitize CFLAGS="$(SANITIZE_FLAGS)" \
	    $(BUILD)/sanitize/ulpgate $(BUILD)/sanitize/tests/run_tests
	@$(call timed,sanitize,ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(BUILD)/sanitize/tests/run_tests && \
	    ASAN_OPTIONS=detect_leaks=1 $(BUILD)/sanitize/ulpgate verify --sweep fixtures/sweeps/memcheck \
	    --budgets $(BUDGETS) --reports $(BUILD)/sanitize-reports --quiet --jobs $(JOBS))

# libFuzzer (clang) targets in fuzz/, each run for FUZZ_SECONDS from the
# seed corpus in fixtures/fuzz/<target>/; any crash, leak or hang fails.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := $(notdir $(basename $(wildcard fuzz/*.c)))
FUZZ_FLAGS   := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
                -Wno-unknown-warning-option
fuzz:
	@$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)/fuzz CFLAGS="$(FUZZ_FLAGS)" \
	    $(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(BUILD)/fuzz-corpus/$$t fixtures/fuzz/$$t; \
	    ( $(call timed,fuzz $$t,$(BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	        -rss_limit_mb=2048 -print_final_stats=1 $(BUILD)/fuzz-corpus/$$t fixtures/fuzz/$$t \
	        >$(BUILD)/fuzz-$$t.log 2>&1 && grep -E "stat::number_of_executed_units" $(BUILD)/fuzz-$$t.log) ) \
	    || { tail -30 $(BUILD)/fuzz-$$t.log; exit 1; }; \
	done

$(BUILD)/fuzz_%: $(BUILD)/fuzz/fuzz_%.o $(LIB_OBJ)
	$(CC) $(CFLAGS) -fsanitize=fuzzer $^ -o $@ $(LDLIBS)

# Renders reports/report.html in headless Chromium to $(REPORTS).png (beside
# the report set, which is replaced whole by the next run), to look at what a
# reader sees. Chromium is optional: nothing else needs it, and `make deps`
# does not install it.
screenshot:
	@command -v chromium >/dev/null || { echo "make screenshot: needs Chromium, an optional dependency" \
	    "(Debian: apt-get install chromium); report.html itself opens in any browser"; exit 1; }
	@test -f $(REPORTS)/report.html || { echo "make screenshot: no $(REPORTS)/report.html: run make verify first"; exit 1; }
	chromium --headless --no-sandbox --disable-gpu --window-size=1000,1400 \
	    --screenshot=$(abspath $(REPORTS)).png file://$(abspath $(REPORTS))/report.html

# Kernel speed against this machine's peaks measured in the same run, a naive
# baseline, the MPFR reference's speed and verify --jobs 2 vs 1 (docs/performance.md).
BENCH_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard bench/*.c))
.PHONY: bench
bench: $(BUILD)/bench/bench $(BUILD)/ulpgate
	@$(call timed,bench,$(BUILD)/bench/bench --ulpgate $(BUILD)/ulpgate)
$(BUILD)/bench/bench: $(BENCH_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# This machine's libm in f32, over the families' argument ranges: the measured
# maxima behind fixtures/profiles/cpu.json (docs/profiles.md#cpu). STRIDE=1: exhaustive.
.PHONY: libm-ulp
STRIDE ?= 7
libm-ulp: $(BUILD)/bench/libm_ulp
	@$(call timed,libm-ulp,$(BUILD)/bench/libm_ulp $(STRIDE))
$(BUILD)/bench/libm_ulp: bench/libm/libm_ulp.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

deps:
	@ci/install-deps.sh

# The written conventions, checked (CONTRIBUTING.md; ci/lint.sh lists them).
lint:
	@$(call timed,lint,ci/lint.sh)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
