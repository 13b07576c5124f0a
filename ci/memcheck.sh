#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make memcheck: every unit-test suite and the memcheck sweep under valgrind,
# each in its own process, at most JOBS at a time (a new one starts whenever
# one ends, so the cores stay busy however unequal the suites are). The
# longest jobs start first, so that none is left running alone at the end:
# the suites in LONGEST (measured under valgrind on the 2-core machine:
# ref_fast_path_regimes and ref_fast_path about 120 s each, nonfinite 100 s,
# ref_fast_kkt_regimes 62 s, kernel_gdn_recompute_wu 47 s, the sweep 40-60 s), then the sweep, then the
# rest in the runner's order. A name not (or no longer) a suite is skipped.
# A job's log is printed when it fails; a
# valgrind error (exit 99), a definite leak, a failed test or a failed gate
# (exit 1 or 2) in any job fails the run.
# usage: ci/memcheck.sh BUILD_DIR BUDGETS JOBS VALGRIND_COMMAND...
set -uo pipefail
build=$1 budgets=$2 jobs=$3
shift 3
valgrind=("$@")
logs=$build/memcheck-logs
rm -rf "$logs" "$build/memcheck-reports"
mkdir -p "$logs"
suites=$("$build/tests/run_tests" --list) || { echo "memcheck: cannot list the unit-test suites"; exit 1; }
[ -n "$suites" ] || { echo "memcheck: no unit-test suite"; exit 1; }

run() { # name command...: runs it under valgrind, its exit status in the name's .rc file
  local name=$1
  shift
  "${valgrind[@]}" "$@" >"$logs/$name.log" 2>&1
  echo $? >"$logs/$name.rc"
}

LONGEST="ref_fast_path_regimes ref_fast_path nonfinite ref_fast_kkt_regimes kernel_gdn_recompute_wu"
sweep_job="verify memcheck sweep" # a name no suite can have (it has spaces)
queue=()
for name in $LONGEST; do grep -qx "$name" <<<"$suites" && queue+=("$name"); done
queue+=("$sweep_job")
for name in $suites; do [[ " $LONGEST " == *" $name "* ]] || queue+=("$name"); done

names=()
for name in "${queue[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  names+=("$name")
  if [ "$name" = "$sweep_job" ]; then
    run "$sweep_job" "$build/ulpgate" verify --sweep fixtures/sweeps/memcheck --budgets "$budgets" \
      --reports "$build/memcheck-reports" --quiet &
  else
    run "$name" "$build/tests/run_tests" --suite "$name" &
  fi
done
wait

failed=()
for name in "${names[@]}"; do
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo missing)
  if [ "$rc" != 0 ]; then
    failed+=("$name (exit $rc)")
    echo "== memcheck $name: exit $rc"
    cat "$logs/$name.log"
  fi
done
grep -h -E "elements checked|^ulpgate:" "$logs/$sweep_job.log"
tests=$(grep -h -E "^[0-9]+ passed, [0-9]+ failed$" "$logs"/*.log | awk '{p += $1; f += $3} END {print p " passed, " f " failed"}')
if [ ${#failed[@]} -gt 0 ]; then
  echo "memcheck: FAILED: ${failed[*]} (logs in $logs)"
  exit 1
fi
echo "memcheck: every job clean: ${#names[@]} valgrind processes (the sweep and $((${#names[@]} - 1)) suites: $tests), $jobs at a time"
