#!/usr/bin/env bash
# make memcheck: every unit test and the memcheck sweep under valgrind, spread
# over the cores: the unit tests as SHARDS processes (run_tests --shard I/N:
# each test runs in exactly one), the sweep as one more. Each job's log is
# printed when all have ended; a valgrind error, a definite leak, a failed
# test or a failed gate in any job fails the run (valgrind exits 99 on an
# error, the tools 1 or 2 on a failure).
# usage: ci/memcheck.sh BUILD_DIR BUDGETS SHARDS VALGRIND_COMMAND...
set -uo pipefail
build=$1 budgets=$2 shards=$3
shift 3
logs=$build/memcheck-logs
rm -rf "$logs" "$build/memcheck-reports"
mkdir -p "$logs"
names=() pids=()
start() { # name command...
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  names+=("$name")
  pids+=($!)
}
for ((i = 0; i < shards; i++)); do
  start "unit-tests-$i-of-$shards" "$@" "$build/tests/run_tests" --shard "$i/$shards"
done
start sweep "$@" "$build/ulpgate" verify --sweep fixtures/sweeps/memcheck --budgets "$budgets" \
  --reports "$build/memcheck-reports" --quiet
failed=()
for k in "${!pids[@]}"; do
  wait "${pids[$k]}"
  rc=$?
  echo "== memcheck ${names[$k]}: exit $rc"
  cat "$logs/${names[$k]}.log"
  [ $rc -eq 0 ] || failed+=("${names[$k]} (exit $rc)")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "memcheck: FAILED: ${failed[*]} (logs in $logs)"
  exit 1
fi
echo "memcheck: every job clean (unit tests in $shards shards, the memcheck sweep)"
