#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make test: the README's "Gating your own kernel's pull requests" workflow on
# a plugin, through the public command line. A kernel author records a
# baseline of their library once (--write-baseline), then gates each change
# against it (--baseline): the same build passes; a build that sums in
# another order (fixtures/plugin/cumsum.c -DPLUGIN_DEFECT_backward: every
# element within its bound, other bits, max_ulp_dist 5 -> 6) fails; a
# baseline of the built-in kernels and another library's are refused.
# usage: tests/plugin_baseline.sh BUILD
set -uo pipefail
build=$1
ulpgate=$build/ulpgate work=$build/plugin-baseline
rm -rf "$work" && mkdir -p "$work/main" "$work/pr" "$work/other"
cp "$build/plugin-fixtures/cumsum-none.so" "$work/main/libmine.so"
cp "$build/plugin-fixtures/cumsum-backward.so" "$work/pr/libmine.so"
cp "$build/plugin-fixtures/cumsum-none.so" "$work/other/libother.so"
check_prefix=plugin-baseline
. "$(dirname "$0")/check.sh"
verify() { # LIB LOG ARGS...
  local lib=$1 log=$2; shift 2
  "$ulpgate" verify --kernel-lib "$lib" --sweep fixtures/sweeps/default --budgets fixtures/budgets --quiet "$@" \
    >"$log" 2>&1
}
verify "$work/main/libmine.so" "$work/write.log" --write-baseline "$work/baseline.json" --reports "$work/r-main"
check "--write-baseline of a plugin" 0 $? "$work/write.log" "wrote baseline"
grep -q '"kind": "plugin"' "$work/baseline.json" && grep -q '"name": "libmine.so"' "$work/baseline.json"
check "the baseline records the plugin" 0 $? "$work/baseline.json"
verify "$work/main/libmine.so" "$work/same.log" --baseline "$work/baseline.json"
check "the same build passes its baseline" 0 $? "$work/same.log" "ulpgate: PASS"
verify "$work/pr/libmine.so" "$work/pr.log" --baseline "$work/baseline.json" --reports "$work/r-pr"
check "a worse build fails its baseline" 1 $? "$work/pr.log" "max_ulp_dist worsened 5 -> 6"
grep -qF "bits of the plugin changed" "$work/pr.log" && grep -qF "content changed since the baseline" "$work/pr.log"
check "changed bits and library content are reported" 0 $? "$work/pr.log"
"$ulpgate" verify --sweep fixtures/sweeps/default --filter gdn_chunk_cumsum/ --budgets fixtures/budgets --quiet \
  --write-baseline "$work/builtin.json" >"$work/builtin-write.log" 2>&1
check "a baseline of the built-in kernels' gdn_chunk_cumsum" 0 $? "$work/builtin-write.log" "wrote baseline"
verify "$work/main/libmine.so" "$work/builtin.log" --baseline "$work/builtin.json"
check "the built-in baseline is refused for a plugin" 1 $? "$work/builtin.log" "a baseline gates one kernel source"
verify "$work/other/libother.so" "$work/other.log" --baseline "$work/baseline.json"
check "another library's baseline is refused" 1 $? "$work/other.log" "plugin libmine.so, this result those of plugin libother.so"
"$ulpgate" compare "$work/r-main/report.json" "$work/r-pr/report.json" >"$work/compare.log" 2>&1
check "compare of the two reports finds the regression" 1 $? "$work/compare.log" "max_ulp_dist worsened 5 -> 6"
"$ulpgate" compare "$work/baseline.json" "$work/r-pr/report.json" >"$work/compare2.log" 2>&1
check "compare of baseline and report finds it too" 1 $? "$work/compare2.log" "max_ulp_dist worsened 5 -> 6"
"$ulpgate" compare "$work/builtin.json" "$work/baseline.json" >"$work/compare3.log" 2>&1
check "compare refuses results of two sources" 1 $? "$work/compare3.log" "a baseline gates one kernel source"
"$ulpgate" report --budgets fixtures/budgets --baseline "$work/baseline.json" "$work/r-pr/report.json" \
  >"$work/report.log" 2>&1
check "report re-gates the library's run against its baseline" 1 $? "$work/report.log" "max_ulp_dist worsened 5 -> 6"
check_summary
