#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make profiles: the arithmetic profiles' acceptance, through the public command
# line with kernel libraries written from include/ulpgate/kernel_abi.h alone
# (fixtures/plugin/kkt.c, gdn_chunk_scaled_kkt) on tests/profiles/kkt.json, judged
# by the per-element bound alone (tests/profiles/budgets.json):
#  - kkt-exact (exp and stores as a CPU does) passes under cpu: the control;
#  - kkt-triton-exp (every exp off by the triton profile's full allowance, the
#    adverse way) passes under --profile triton and fails under cpu;
#  - kkt-flush (outputs below 2^-126 stored as +-0; the sweep's realistic and
#    strong_decay cases have subnormal L) passes under a flush-outputs profile
#    and fails under cpu.
#  - kkt-exact under a profile that declares exp only on [-1, 0] fails: an
#    element whose exp argument lies outside has no bound, and says so.
# A failure under cpu must be an element beyond its bound (ratio > 1), not a budget.
# usage: tests/profiles/run.sh BUILD
set -uo pipefail
build=$1
ulpgate=$build/ulpgate libs=$build/plugin-fixtures work=$build/profiles
rm -rf "$work" && mkdir -p "$work"
passed=0 failed=0
check() { # NAME STATUS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "profiles: ok: $1"
  else failed=$((failed + 1)); echo "profiles: FAILED: $1"; fi
}
verify() { # LIBRARY PROFILE: exit status of verify; its output in $work/LIBRARY-PROFILE.log
  "$ulpgate" verify --sweep tests/profiles/kkt.json --budgets tests/profiles/budgets.json --quiet \
    --kernel-lib "$libs/$1.so" --profile "$2" >"$work/$1-$(basename "$2" .json).log" 2>&1
}
beyond_bound() { # LOG: an element failed its bound (not the non-finite rule)
  grep 'ratio=' "$1" | grep -vq 'non-finite rule'
}

verify kkt-exact cpu; check "kkt-exact passes under cpu" $?
verify kkt-triton-exp triton; check "kkt-triton-exp passes under triton" $?
verify kkt-triton-exp cpu; rc=$?
[ $rc -eq 1 ] && beyond_bound "$work/kkt-triton-exp-cpu.log"; check "kkt-triton-exp fails its bounds under cpu (exit $rc)" $?
verify kkt-flush tests/profiles/cpu-flush-outputs.json; check "kkt-flush passes under cpu-flush-outputs" $?
verify kkt-flush cpu; rc=$?
[ $rc -eq 1 ] && grep -q 'y=-\?0x0p+0' "$work/kkt-flush-cpu.log"
check "kkt-flush fails under cpu on a flushed element (exit $rc)" $?
verify kkt-exact tests/profiles/cpu-exp-range.json; rc=$?
[ $rc -eq 1 ] && grep -q 'no bound: its a-priori bound is infinite (an operation it depends on has an argument outside' "$work/kkt-exact-cpu-exp-range.log"
check "an exp argument outside the profile's range fails, never passes silently (exit $rc)" $?
echo "profiles: $passed passed, $failed failed (logs in $work)"
[ "$failed" -eq 0 ]
