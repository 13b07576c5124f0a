#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Proof that the gate can fail, and that it fails for the right reasons:
# builds every deliberately broken kernel
# (`ulpgate mutants` lists them; each is the tool with the family's kernel
# files rebuilt with -DUG_MUTANT=<id>), runs the mutant sweep on every ISA
# path of this CPU, and requires the gate to fail (exit 1) for each, while the
# correct build and every legitimate variant (`ulpgate variants`) pass the
# same sweep (exit 0). A mutant planted in the vector paths only (PATHS
# "vector") is skipped, and said so, on a CPU that runs none of them.
# usage: ci/mutants.sh BUILD_DIR SWEEP BUDGETS
set -uo pipefail
build=$1 sweep=$2 budgets=$3
tool=$build/ulpgate
log=$build/mutants
mkdir -p "$log"
# At most $2 characters, cut at a word boundary (marked " ...").
shorten() { # TEXT MAX
  local text=$1 max=$2
  if [ ${#text} -le "$max" ]; then printf '%s' "$text"; else text=${text:0:max}; printf '%s ...' "${text% *}"; fi
}
run_gate() { # binary logfile [filter]
  "$1" verify --sweep "$sweep" --budgets "$budgets" --quiet ${3:+--filter "$3"} >"$2" 2>&1
}
# The vector paths this CPU runs (`ulpgate list`'s last line).
vector_paths=$("$tool" list | sed -n 's/^isa paths://p' | tr ' ' '\n' | grep -E '^avx[0-9a-z]*$' | paste -sd ' ')
start=$(date +%s)
if run_gate "$tool" "$log/correct.log"; then
  echo "mutants: correct kernel passes the mutant sweep"
else
  echo "mutants: the CORRECT kernel fails the mutant sweep (see $log/correct.log)"
  exit 1
fi
caught=0 total=0 skipped=0 escaped=()
while IFS=$' \t' read -r family id name paths what; do
  if [ "$paths" = vector ] && [ -z "$vector_paths" ]; then
    skipped=$((skipped + 1))
    printf 'mutants: skipped %-18s %-22s planted in the vector paths; this CPU runs none\n' "$family" "$name"
    continue
  fi
  total=$((total + 1))
  bin=$build/mutants/ulpgate-$family-$id
  if ! make -s BUILD="$build" "$bin" >"$log/$family-$id.build.log" 2>&1; then
    echo "mutants: cannot build $family/$name (see $log/$family-$id.build.log)"
    exit 1
  fi
  run_gate "$bin" "$log/$family-$id.log" "$family/"
  rc=$?
  if [ $rc -eq 1 ]; then
    caught=$((caught + 1))
    reason=$(shorten "$(grep -m1 -E '^FAIL' "$log/$family-$id.log")" 150)
    printf 'mutants: caught  %-18s %-22s %s\n' "$family" "$name" "$reason"
  else
    escaped+=("$family/$name (exit $rc)")
    printf 'mutants: ESCAPED %-18s %-22s exit %d: %s\n' "$family" "$name" "$rc" "$what"
  fi
done < <("$tool" mutants)
echo "mutants: caught $caught/$total in $(( $(date +%s) - start )) s (vector paths run: ${vector_paths:-none}; skipped $skipped)"
# Legitimate rewrites (another summation order, one scale instead of two)
# must pass the same gate: the bounds are not tuned to one implementation.
passed=0 variants=0 rejected=()
while IFS=$' \t' read -r family id name paths what; do
  variants=$((variants + 1))
  bin=$build/mutants/ulpgate-$family-$id
  make -s BUILD="$build" "$bin" >"$log/$family-$id.build.log" 2>&1 || { echo "mutants: cannot build variant $family/$name"; exit 1; }
  if run_gate "$bin" "$log/$family-$id.log" "$family/"; then
    passed=$((passed + 1))
    printf 'mutants: variant passes %-18s %-22s %s\n' "$family" "$name" "$what"
  else
    rejected+=("$family/$name")
    printf 'mutants: variant REJECTED %-18s %-22s (see %s)\n' "$family" "$name" "$log/$family-$id.log"
  fi
done < <("$tool" variants)
echo "mutants: legitimate variants passed $passed/$variants"
[ "$total" -gt 0 ] && [ ${#escaped[@]} -eq 0 ] && [ ${#rejected[@]} -eq 0 ]
