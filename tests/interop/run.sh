#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make interop: the round trip a kernel author makes, with the real Python
# safetensors library. Exports the interop sweep, lets tests/interop/candidate.py
# compute the outputs in numpy (once right, once with a planted bug), scores
# both, and asserts the verdicts: exit 0 for the right one; exit 1 for the
# wrong one, with the failing case and element named. Then RoPE as kernel
# authors write it (tests/interop/rope_candidate.py) on the f32 head_norm_rope
# cases of the default sweep: the PyTorch recipe and a float64 angle pass,
# the next position's angle fails. Both scripts read and write through the
# ulpgate Python package (python/), whose own tests run last.
# usage: tests/interop/run.sh BUILD PYVENV
set -uo pipefail
build=$1 venv=$2
ulpgate=$build/ulpgate work=$build/interop
python=$venv/bin/python
if [ ! -x "$python" ] || ! "$python" -c "import numpy, safetensors, ml_dtypes, ulpgate, pytest" 2>/dev/null; then
  echo "interop: no Python venv with numpy, safetensors, ml_dtypes, pytest and ulpgate (python/) at $venv:"
  echo "interop: run ci/install-deps.sh (or make deps)"
  exit 1
fi
# The package the candidates import must be this tree's python/ulpgate, not an older install.
installed=$("$python" -c "import os, ulpgate; print(os.path.dirname(ulpgate.__file__))")
if ! diff -rq -x __pycache__ python/ulpgate "$installed" >/dev/null; then
  echo "interop: the ulpgate package in $venv ($installed) differs from python/ulpgate: run ci/install-deps.sh (or make deps)"
  exit 1
fi
rm -rf "$work" && mkdir -p "$work"
passed=0 failed=0
check() { # NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "interop: ok: $1"
  else failed=$((failed + 1)); echo "interop: FAILED: $1"; fi
}
"$ulpgate" export --sweep fixtures/sweeps/interop --out "$work/fixtures" || exit 1
"$python" tests/interop/candidate.py "$work/fixtures" "$work/right" || exit 1
"$python" tests/interop/candidate.py "$work/fixtures" "$work/wrong" --wrong || exit 1

score() { # CANDIDATE: scores $work/CANDIDATE into $work/reports-CANDIDATE and $work/CANDIDATE.log
  "$ulpgate" score --fixtures "$work/fixtures" --candidate "$work/$1" --budgets fixtures/budgets \
    --reports "$work/reports-$1" --quiet >"$work/$1.log" 2>&1
}
score right
rc=$?
check "the numpy candidate passes the gate (exit $rc, expected 0)" $((rc != 0))
grep -q '"candidate"' "$work/reports-right/report.json"
check "report.json labels the bits with the candidate path" $?

score wrong
rc=$?
check "the wrong candidate fails the gate (exit $rc, expected 1)" $((rc != 1))
grep -q '^FAIL: gdn_chunk_cumsum/B=1 T=128 H=3 BT=64 realistic: \[candidate\] g\[192\] exact: ' "$work/wrong.log"
check "its failure names the first wrong element, g[192] (row 64: the chunk boundary)" $?

# A candidate that ran only some cases (cumsum ported, RoPE not yet): --filter
# scores those, naming the filter in the report; without it the first missing
# file stops score. The wrong candidate's bug is in cumsum: the RoPE cases
# alone pass, the cumsum cases alone fail, so the filter chose what ran.
mkdir -p "$work/cumsum-only"
cp "$work"/right/*-gdn_chunk_cumsum.safetensors "$work/cumsum-only/"
score_filtered() { # CANDIDATE FILTER: as score, into $work/reports-CANDIDATE-filtered
  "$ulpgate" score --fixtures "$work/fixtures" --candidate "$work/$1" --budgets fixtures/budgets --filter "$2" \
    --reports "$work/reports-$1-filtered" --quiet >"$work/$1-filtered.log" 2>&1
}
score_filtered cumsum-only gdn_chunk_cumsum/
rc=$?
grep -q '"filter": "gdn_chunk_cumsum/"' "$work/reports-cumsum-only-filtered/report.json"
named=$?
check "a candidate of the cumsum cases only passes with --filter gdn_chunk_cumsum/ (exit $rc), the report names it" \
  $((rc != 0 || named != 0))
score cumsum-only
rc=$?
grep -q "cumsum-only/[0-9]*-head_norm_rope.safetensors' does not exist" "$work/cumsum-only.log" && [ "$rc" -eq 2 ] \
  && [ ! -e "$work/reports-cumsum-only" ]
check "the same candidate without --filter stops (exit $rc, expected 2) at its first missing file, no reports" $?
score_filtered wrong head_norm_rope/
rc=$?
check "the wrong candidate's RoPE cases alone pass (exit $rc, expected 0)" $((rc != 0))
rm -rf "$work/reports-wrong-filtered"
score_filtered wrong gdn_chunk_cumsum/
rc=$?
check "its cumsum cases alone fail (exit $rc, expected 1)" $((rc != 1))

# A candidate file cut short must stop score with the file named, before any report is written.
cut=$(ls "$work/right" | head -1)
cp -r "$work/right" "$work/truncated"
head -c 100 "$work/right/$cut" >"$work/truncated/$cut"
score truncated
rc=$?
grep -q "truncated/$cut" "$work/truncated.log" && [ "$rc" -eq 2 ] && [ ! -e "$work/reports-truncated" ]
check "a truncated candidate file stops score (exit $rc, expected 2) with its name, no reports" $?

# RoPE: a correct kernel passes whatever angle formula it uses (every element
# within its bound, no budget finding); a wrong angle fails on an element.
"$ulpgate" export --sweep fixtures/sweeps/default --filter head_norm_rope/variant=1 --out "$work/rope-fixtures" \
  >"$work/rope-export.log" 2>&1 || { cat "$work/rope-export.log"; exit 1; }
for kind in pytorch f64 wrong; do
  "$python" tests/interop/rope_candidate.py "$work/rope-fixtures" "$work/rope-$kind" "$kind" || exit 1
  "$ulpgate" score --fixtures "$work/rope-fixtures" --candidate "$work/rope-$kind" --budgets fixtures/budgets \
    --reports "$work/reports-rope-$kind" --quiet >"$work/rope-$kind.log" 2>&1
  rc=$?
  if [ "$kind" = wrong ]; then
    grep -q '^FAIL: head_norm_rope/variant=1 .*: \[candidate\] output_f32\[[0-9]*\] exact: ' "$work/rope-$kind.log"
    named=$?
    check "RoPE with the next position's angle fails on an element (exit $rc, expected 1)" $((rc != 1 || named != 0))
  else
    check "RoPE candidate $kind passes the gate with no finding (exit $rc, expected 0)" $((rc != 0))
  fi
done

# The package the candidates above use, tested on its own (python/tests): the
# cases it reads, the errors of a wrong write, a passing and a failing score.
ULPGATE=$ulpgate "$python" -m pytest -q -p no:cacheprovider --basetemp "$work/pytest" python/tests \
  >"$work/pytest.log" 2>&1
rc=$?
check "the ulpgate Python package's tests pass (python/tests: $(tail -1 "$work/pytest.log"))" $rc

[ "$failed" -eq 0 ] || { echo "--- pytest.log"; tail -40 "$work/pytest.log"; echo "--- right.log"; tail -5 "$work/right.log"; echo "--- wrong.log"; tail -15 "$work/wrong.log";
                         echo "--- truncated.log"; cat "$work/truncated.log";
                         for kind in pytorch f64 wrong; do
                           echo "--- rope-$kind.log"; tail -8 "$work/rope-$kind.log"; done; }
echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
