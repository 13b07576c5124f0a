#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make test: an outside gdn_e2e pipeline (fixtures/plugin/gdn_e2e.c, written
# from include/ulpgate/kernel_abi.h alone) through the public command line,
# on the default sweep's gdn_e2e cases:
#  - all: correct, every intermediate handed over: PASS, and report.md's
#    "Chained stages" table shows every output checked in every case;
#  - fused: o and final_state only: PASS, no stage checked, no INFO;
#  - bug_vnew_f32: the state update reads bf16 v_new where the spec keeps f32
#    v: FAIL on the intermediate h, while o and final_state's end-to-end rows
#    pass; fused+bug_vnew_f32, the same bug handing over nothing, PASSES: only
#    the chained check can see it;
#  - without_a: every intermediate but A: PASS with one INFO line each for w
#    and u (handed over, not checked: their stage reads A), in the summary,
#    report.md and report.json, again after `merge` of two shards, and from
#    `score` when the library's outputs come back as safetensors
#    (tests/e2e_plugin_candidate.py, Python's standard library only).
# usage: tests/e2e_plugin.sh BUILD
set -uo pipefail
build=$1
ulpgate=$build/ulpgate work=$build/e2e-plugin
rm -rf "$work" && mkdir -p "$work"
check_prefix=e2e-plugin
. "$(dirname "$0")/check.sh"
verify() { # BUILD [ARGS...]: runs it into $work/BUILD and $work/BUILD.log
  local name=$1; shift
  "$ulpgate" verify --kernel-lib "$build/plugin-fixtures/gdn-e2e-$name.so" --sweep fixtures/sweeps/default \
    --filter gdn_e2e/ --budgets fixtures/budgets --reports "$work/$name" --quiet "$@" >"$work/$name.log" 2>&1
}
row() { # RUN OUTPUT: the output's row of $work/RUN/report.md's "Chained stages of gdn_e2e" table
  sed -n '/^## Chained stages of gdn_e2e/,/^## /p' "$work/$1/report.md" | grep -F "| $2 |"
}
info() { echo "INFO: gdn_e2e: $1 was handed over in 14 cases but not checked: its stage gdn_recompute_wu reads A, which was not handed over"; }
intermediates="g L A w u h v_new"

verify all
check "the correct pipeline passes" 0 $? "$work/all.log" "ulpgate: PASS"
for out in o final_state $intermediates; do
  [ "$(row all "$out")" = "| $out | 14 | 14 | 14 | 0 |" ]
  check "all: $out checked in both modes in all 14 cases" 0 $? "$work/all/report.md"
done
! grep -q "but not checked" "$work/all.log"
check "all: no intermediate left unchecked" 0 $? "$work/all.log"

verify fused
check "the pipeline handing over o and final_state only passes" 0 $? "$work/fused.log" "ulpgate: PASS"
for out in $intermediates; do
  [ "$(row fused "$out")" = "| $out | 0 | 0 | 14 | 0 |" ]
  check "fused: $out not checked, not handed over" 0 $? "$work/fused/report.md"
done
[ "$(row fused o)" = "| o | 14 | 0 | 14 | 0 |" ]
check "fused: o only end to end" 0 $? "$work/fused/report.md"
! grep -q "but not checked" "$work/fused.log"
check "fused: no INFO about intermediates it did not hand over" 0 $? "$work/fused.log"

verify bug_vnew_f32
check "the planted bug fails on h" 1 $? "$work/bug_vnew_f32.log" "FAIL: gdn_e2e h staged: max_ratio"
grep -Eq '^gdn_e2e +o +exact .* pass$' "$work/bug_vnew_f32.log" &&
  grep -Eq '^gdn_e2e +final_state +exact .* pass$' "$work/bug_vnew_f32.log"
check "the planted bug: o and final_state pass end to end" 0 $? "$work/bug_vnew_f32.log"
verify fused+bug_vnew_f32
check "the planted bug passes when nothing is handed over" 0 $? "$work/fused+bug_vnew_f32.log" "ulpgate: PASS"

verify without_a
check "the pipeline without A passes" 0 $? "$work/without_a.log" "ulpgate: PASS"
for out in w u; do
  line=$(info "$out")
  check "without_a: INFO for $out on the terminal" 0 0 "$work/without_a.log" "$line"
  check "without_a: INFO for $out in report.md" 0 0 "$work/without_a/report.md" "- **INFO** ${line#INFO: }"
  [ "$(row without_a "$out")" = "| $out | 0 | 0 | 14 | 14 |" ]
  check "without_a: $out handed over, not checked, in the table" 0 $? "$work/without_a/report.md"
done
python3 - "$work/without_a/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
texts = [f["text"] for f in r["verdict"]["findings"] if f["kind"] == "INFO"]
want = "gdn_e2e: w was handed over in 14 cases but not checked: its stage gdn_recompute_wu reads A, which was not handed over"
accepted = [c for c in r["cases"] if c["kind"] == "accepted"]
assert want in texts, texts
assert len(accepted) == 14 and all(c["unchecked"] == {"w": "A", "u": "A"} for c in accepted), accepted[0]["unchecked"]
EOF
check "without_a: report.json's findings and cases[].unchecked" 0 $? "$work/without_a/report.json"
for shard in 0 1; do
  "$ulpgate" verify --kernel-lib "$build/plugin-fixtures/gdn-e2e-without_a.so" --sweep fixtures/sweeps/default \
    --filter gdn_e2e/ --budgets fixtures/budgets --reports "$work/shard$shard" --shard "$shard/2" --quiet \
    >"$work/shard$shard.log" 2>&1
done
"$ulpgate" merge --budgets fixtures/budgets "$work/shard0/report.json" "$work/shard1/report.json" >"$work/merge.log" 2>&1
check "without_a: merge of two shards keeps the INFO" 0 $? "$work/merge.log" "$(info w)"

# score: the same library as a candidate that ran outside ulpgate (safetensors written by a stdlib-only script)
"$ulpgate" export --sweep fixtures/sweeps/default --filter gdn_e2e/ --out "$work/fixtures" --quiet >"$work/export.log" 2>&1 &&
  python3 tests/e2e_plugin_candidate.py "$work/fixtures" "$work/candidate" \
    "$build/plugin-fixtures/gdn-e2e-without_a.so" >"$work/candidate.log" 2>&1
check "without_a: exported and run as a score candidate" 0 $? "$work/candidate.log"
"$ulpgate" score --fixtures "$work/fixtures" --candidate "$work/candidate" --budgets fixtures/budgets \
  --reports "$work/score" --quiet >"$work/score.log" 2>&1
check "without_a: score passes with the INFO" 0 $? "$work/score.log" "$(info w)"
[ "$(row score u)" = "| u | 0 | 0 | 14 | 14 |" ]
check "without_a: score's table counts u handed over, not checked" 0 $? "$work/score/report.md"

check_summary
