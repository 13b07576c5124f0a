#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The report set under faults, through the command line (docs/report-format.md,
# "The report set"): a file-size limit and a full disk fail with exit 3 naming
# the file and the reason, and leave the previous set byte for byte; SIGKILL at
# random points leaves the directory absent or one whole set, and the next run
# removes what the killed one left; two runs into one directory: the second
# fails at once (exit 2). The full disk is a small tmpfs, mounted only when
# this runs as root (otherwise that part is skipped, and says so).
# usage: tests/cli/report_set.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
repo=$(pwd)
U=$build/ulpgate
W=$build/cli-report-set
SWEEP=(--sweep "$repo/fixtures/sweeps/smoke" --budgets "$repo/fixtures/budgets" --quiet)
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
passed=0 failed=0
check() { # WHAT STATUS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "report-set: FAILED: $1"; fi
}
set_sum() { (cd "$1" && cat report.md report.json junit.xml report.html cases.csv | md5sum); }
# Whole set: the five files, report.json parses, and every file is of the same run (filter).
whole_set() { # DIR
  local d=$1 f filter
  for f in report.md report.json junit.xml report.html cases.csv; do [ -s "$d/$f" ] || return 1; done
  [ "$(ls -A "$d" | wc -l)" -eq 5 ] || return 1
  filter=$(grep -o '"filter": "[^"]*"' "$d/report.json" | cut -d'"' -f4) || return 1
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$d/report.json" || return 1
  grep -q "^${filter%/}," "$d/cases.csv" && grep -q "<testsuite name=\"${filter%/}\"" "$d/junit.xml"
}
beside_clean() { [ -z "$(ls -A "$W" | grep -E '^\.reports\.ulpgate-')" ]; }

# A file-size limit (ulimit -f, SIGXFSZ): exit 3, the file and the reason named, the old set whole.
"$U" verify "${SWEEP[@]}" --filter gdn_chunk_cumsum/ --reports reports >/dev/null
before=$(set_sum reports)
out=$(ulimit -f 40; "$U" verify "${SWEEP[@]}" --filter gdn_solve_tril/ --reports reports 2>&1)
rc=$?
check "ulimit -f: exit 3 (got $rc)" $([ $rc -eq 3 ]; echo $?)
check "ulimit -f: message names the file and the reason: $out" \
  $([[ $out == *"reports/report.json: write failed after"*"File too large"* ]]; echo $?)
check "ulimit -f: no verdict printed" $(! grep -qE '^ulpgate: (PASS|FAIL)' <<<"$out"; echo $?)
check "ulimit -f: the previous set unchanged" $([ "$(set_sum reports)" = "$before" ]; echo $?)
check "ulimit -f: nothing left beside" $(beside_clean; echo $?)

# A full disk (ENOSPC) on a small tmpfs.
if [ "$(id -u)" -eq 0 ] && mkdir -p disk && mount -t tmpfs -o size=256k tmpfs disk 2>/dev/null; then
  "$U" verify "${SWEEP[@]}" --filter gdn_chunk_cumsum/ --reports disk/reports >/dev/null
  before=$(set_sum disk/reports)
  head -c $((100 * 1024)) /dev/zero >disk/filler # leaves about 50 KiB: less than the new set
  out=$("$U" verify "${SWEEP[@]}" --filter gdn_solve_tril/ --reports disk/reports 2>&1)
  rc=$?
  check "ENOSPC: exit 3 (got $rc)" $([ $rc -eq 3 ]; echo $?)
  check "ENOSPC: message names the file and the reason: $out" \
    $([[ $out == *"disk/reports/"*"No space left on device"* ]]; echo $?)
  check "ENOSPC: the previous set unchanged" $([ "$(set_sum disk/reports)" = "$before" ]; echo $?)
  check "ENOSPC: nothing left beside" $([ "$(ls -A disk)" = "$(printf 'filler\nreports')" ]; echo $?)
  umount disk
else
  echo "report-set: skipped the full-disk check (needs root to mount a tmpfs)"
fi

# SIGKILL at random points of runs that alternate between two families.
rm -rf reports
kills=0
for attempt in $(seq 1 16); do
  family=$([ $((attempt % 2)) -eq 0 ] && echo head_norm_rope/ || echo gdn_solve_tril/)
  "$U" verify "${SWEEP[@]}" --filter "$family" --reports reports >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%02d' $((RANDOM % 30 + 2)))"
  kill -KILL $pid 2>/dev/null && kills=$((kills + 1))
  wait $pid 2>/dev/null
  if [ -e reports ]; then check "SIGKILL (attempt $attempt): reports/ is one whole set" $(whole_set reports; echo $?); fi
done
"$U" verify "${SWEEP[@]}" --filter gdn_chunk_cumsum/ --reports reports >/dev/null
check "after $kills kills: the next run writes a whole set" $(whole_set reports; echo $?)
check "after $kills kills: the next run removed what they left beside" $(beside_clean; echo $?)

# Two runs into one directory at once: one writes, the other fails at once.
"$U" verify "${SWEEP[@]}" --filter gdn_chunk_o/ --reports reports >first.log 2>&1 &
pid=$!
sleep 0.3
"$U" verify "${SWEEP[@]}" --filter gdn_chunk_cumsum/ --reports reports >second.log 2>&1
rc2=$?
wait $pid
rc1=$?
check "two runs: the first passes (got $rc1)" $([ $rc1 -eq 0 ]; echo $?)
check "two runs: the second exits 2 at once (got $rc2)" $([ $rc2 -eq 2 ]; echo $?)
check "two runs: the second names the first: $(cat second.log)" $(grep -q "another ulpgate run (pid $pid)" second.log; echo $?)
check "two runs: the set is the first's" $(whole_set reports && grep -q '"filter": "gdn_chunk_o/"' reports/report.json; echo $?)

echo "report-set: $passed checks passed, $failed failed"
[ "$failed" -eq 0 ]
