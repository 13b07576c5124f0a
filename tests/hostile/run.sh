#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make test (hostile plugins): every hostile build of fixtures/plugin/cumsum.c
# through the public command line, as CI would run it. A build that ends,
# crashes, overruns or hangs on every third call must give exit 1 (never 0),
# a FAIL line naming the library, the case and what happened, every report
# file, and the cases after it run (so fewer cases fail than ran); a
# constructor that exits must give exit 2 naming the library. The hangs run
# under --case-timeout 1, so the whole check takes a few seconds.
# usage: tests/hostile/run.sh BUILD
set -uo pipefail
build=$1
work=$build/hostile
rm -rf "$work" && mkdir -p "$work"
passed=0 failed=0
check() { # NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "hostile: FAILED: $1 (log: $work/$3.log)"; fi
}
# the 6 cases of cumsum/B (2 accepted, 4 rejected): calls 3 and 6 misbehave
verify() { # BUILD: runs it into $work/BUILD and $work/BUILD.log, prints the exit status
  "$build/ulpgate" verify --kernel-lib "$build/plugin-fixtures/cumsum-$1.so" --sweep fixtures/sweeps/memcheck \
    --filter cumsum/B --budgets fixtures/budgets --reports "$work/$1" --case-timeout 1 --quiet >"$work/$1.log" 2>&1
  echo $?
}
while read -r build_name what; do
  rc=$(verify "$build_name")
  log=$work/$build_name.log
  check "$build_name: exit $rc, expected 1" $([ "$rc" = 1 ]; echo $?) "$build_name"
  grep "^FAIL: gdn_chunk_cumsum/B=0: " "$log" | grep "cumsum-$build_name\.so" | grep -q "$what"
  check "$build_name: no FAIL line naming the library, the case and '$what'" $? "$build_name"
  for f in report.json report.md cases.csv junit.xml report.html; do
    [ -s "$work/$build_name/$f" ]; check "$build_name: $f not written" $? "$build_name"
  done
  grep -q "^2 cases, 4 rejected shapes checked, 2 failed" "$log"
  check "$build_name: the run did not go on past the failing case (expected 2 of 6 cases failed)" $? "$build_name"
done <<'BUILDS'
exit3 running gdn_chunk_cumsum/B=0 exited with status 0
underscore_exit3 running gdn_chunk_cumsum/B=0 exited with status 0
segv killed by signal SIGSEGV
abort killed by signal SIGABRT
sigkill killed by signal SIGKILL
overrun_4k killed by signal SIGSEGV\|guard zone of buffer g overwritten
past_guard killed by signal SIGSEGV\|guard zone of buffer g overwritten
pause gdn_chunk_cumsum/B=0 timed out after 1 s
spin gdn_chunk_cumsum/B=0 timed out after 1 s
BUILDS
rc=$(verify constructor_exit)
check "constructor_exit: exit $rc, expected 2" $([ "$rc" = 2 ]; echo $?) constructor_exit
grep -q "cumsum-constructor_exit.so: the worker process loading it exited with status 0" "$work/constructor_exit.log"
check "constructor_exit: the message does not name the library and the exit" $? constructor_exit
echo "hostile plugins: $passed checks passed, $failed failed"
[ "$failed" -eq 0 ]
