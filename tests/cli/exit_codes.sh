#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Walks the README's table of exit paths through the public command line: each
# row is a shell command, the exit code it must end with and a substring its
# output (stdout and stderr) must hold. A row that exits 2 or 3 must not print
# a verdict ("ulpgate: PASS" / "ulpgate: FAIL") before it fails.
# usage: tests/cli/exit_codes.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
repo=$(pwd)
export U=$build/ulpgate
export W=$build/cli-exit-codes
export SMOKE=$repo/fixtures/sweeps/smoke BUDGETS=$repo/fixtures/budgets
export CUMSUM="--sweep $SMOKE --filter gdn_chunk_cumsum/ --quiet"
export LIB=$build/plugin-fixtures/cumsum-none.so
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1

# Inputs: a malformed file, tight budgets (the gate fails), a run's report and fixtures.
printf '{' >bad.json
mkdir empty-dir tight
cp "$BUDGETS"/*.json tight/
sed -i 's/"max_ulp_dist": 8/"max_ulp_dist": 1/' tight/gdn_chunk_cumsum.json
"$U" verify $CUMSUM --budgets "$BUDGETS" --reports run >/dev/null || exit 1
sed 's/"max_ratio": 0\.4/"max_ratio": 0.9/' run/report.json >worse.json
"$U" export --sweep "$SMOKE" --filter gdn_chunk_cumsum/ --out fx --quiet >/dev/null || exit 1
mkdir -p notes && echo mine >notes/notes.txt
touch plain

passed=0 failed=0
row() { # CODE SUBSTRING COMMAND
  local want=$1 text=$2 cmd=$3 got out
  out=$(bash -c "$cmd" 2>&1)
  got=$?
  local verdict_early=0
  if [ "$want" -ge 2 ] && grep -qE '^ulpgate: (PASS|FAIL)' <<<"$out"; then verdict_early=1; fi
  if [ "$got" -eq "$want" ] && [[ "$out" == *"$text"* ]] && [ $verdict_early -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "exit-codes: FAILED: $cmd"
    echo "  expected exit $want and '$text'; got exit $got${verdict_early:+ }$( [ $verdict_early -eq 1 ] && echo '(a verdict was printed)')"
    sed 's/^/  | /' <<<"$out" | tail -5
  fi
}

# 0: help and version, everywhere
row 0 "usage: ulpgate VERB" '$U --help'
row 0 "usage: ulpgate VERB" '$U -h'
row 0 "ulpgate (unreleased" '$U --version'
for verb in verify compare merge report export score list mutants variants; do
  row 0 "usage: ulpgate $verb" "\$U $verb --help"
  row 0 "usage: ulpgate $verb" "\$U $verb -h"
  row 0 "kernel ABI" "\$U $verb --version"
done
# 0: a pass; the listings
row 0 "ulpgate: PASS" '$U verify $CUMSUM --budgets $BUDGETS'
row 0 "gdn_chunk_cumsum" '$U list'
row 0 "ulpgate compare: no regression" '$U compare run/report.json run/report.json'
row 0 "ulpgate: PASS" '$U report --budgets $BUDGETS run/report.json'
row 0 "ulpgate: PASS" '$U verify $CUMSUM --budgets $BUDGETS --write-baseline base.json'
# 1: the gate fails
row 1 "ulpgate: FAIL" '$U verify $CUMSUM --budgets tight'
row 1 "baseline nb.json not written" '$U verify $CUMSUM --budgets tight --write-baseline nb.json'
row 1 "REGRESSION" '$U compare run/report.json worse.json'
row 1 "was killed by signal SIGSEGV" '$U verify $CUMSUM --budgets $BUDGETS --kernel-lib ${LIB%none.so}segv.so'
row 1 "ulpgate: FAIL" '$U report --budgets tight run/report.json'
# 2: usage
row 2 "usage: ulpgate VERB" '$U'
row 2 "unknown verb 'frobnicate'" '$U frobnicate'
row 2 "--sweep and --budgets are required" '$U verify'
row 2 "unrecognized option" '$U verify --bogus'
row 2 "unexpected argument 'extra'" '$U verify $CUMSUM --budgets $BUDGETS extra'
row 2 "--isa: unknown path 'mmx'" '$U verify $CUMSUM --budgets $BUDGETS --isa mmx'
row 2 "--jobs: '0'" '$U verify $CUMSUM --budgets $BUDGETS --jobs 0'
row 2 "--kernel-threads: '0'" '$U verify $CUMSUM --budgets $BUDGETS --kernel-threads 0'
row 2 "--shard: '2/2'" '$U verify $CUMSUM --budgets $BUDGETS --shard 2/2'
row 2 "--max-case-mib: '0'" '$U verify $CUMSUM --budgets $BUDGETS --max-case-mib 0'
row 2 "--case-timeout: '0'" '$U verify $CUMSUM --budgets $BUDGETS --case-timeout 0'
row 2 "--sample-slices: '0'" '$U verify $CUMSUM --budgets $BUDGETS --sample-slices 0'
row 2 "--sample-slices: '1.5'" '$U verify $CUMSUM --budgets $BUDGETS --sample-slices 1.5'
row 2 "--sample-seed without --sample-slices" '$U verify $CUMSUM --budgets $BUDGETS --sample-seed 3'
row 2 "--sample-seed: '-1'" '$U verify $CUMSUM --budgets $BUDGETS --sample-slices 0.5 --sample-seed -1'
row 2 "cannot be compared with a baseline, written as one or sharded (--baseline)" '$U verify $CUMSUM --budgets $BUDGETS --sample-slices 0.5 --baseline base.json'
row 2 "(--shard)" '$U verify $CUMSUM --budgets $BUDGETS --sample-slices 0.5 --shard 0/2'
row 0 "ulpgate: PASS" '$U verify $CUMSUM --budgets $BUDGETS --isa best'
row 0 "sampled checking" '$U verify $CUMSUM --budgets $BUDGETS --sample-slices 0.5 --reports sampled && cat sampled/report.md'
row 2 "run.sample: a sampled run" '$U report --budgets $BUDGETS sampled/report.json'
row 2 "expected two result files" '$U compare run/report.json'
row 2 "ulpgate report: --budgets and exactly one report.json" '$U report'
row 2 "ulpgate report: --budgets and exactly one report.json" '$U report --budgets $BUDGETS a.json b.json'
row 2 "ulpgate merge: --budgets and at least one shard report" '$U merge --budgets $BUDGETS'
row 2 "--sweep and --out are required" '$U export --sweep $SMOKE'
row 2 "--fixtures, --candidate and --budgets are required" '$U score --fixtures fx'
row 2 "unexpected argument 'x'" '$U list x'
# 2: missing, unreadable or malformed input, before anything runs
row 2 "--sweep nope: No such file" '$U verify --sweep nope --budgets $BUDGETS'
row 2 "--budgets nope: No such file" '$U verify $CUMSUM --budgets nope'
row 2 "--baseline nope: No such file" '$U verify $CUMSUM --budgets $BUDGETS --baseline nope'
row 2 "--kernel-lib nope.so: No such file" '$U verify $CUMSUM --budgets $BUDGETS --kernel-lib nope.so'
row 2 "OLD nope: No such file" '$U compare nope run/report.json'
row 2 "NEW nope: No such file" '$U compare run/report.json nope'
row 2 "report file nope.json: No such file" '$U merge --budgets $BUDGETS nope.json'
row 2 "report file nope.json: No such file" '$U report --budgets $BUDGETS nope.json'
row 2 "--sweep nope: No such file" '$U export --sweep nope --out out'
row 2 "--fixtures nope: No such file" '$U score --fixtures nope --candidate fx --budgets $BUDGETS'
row 2 "--candidate nope: No such file" '$U score --fixtures fx --candidate nope --budgets $BUDGETS'
row 2 "--filter 'nosuch' matches no case of fx/manifest.json" '$U score --fixtures fx --candidate fx --budgets $BUDGETS --filter nosuch'
row 2 "bad.json" '$U verify --sweep bad.json --budgets $BUDGETS'
row 2 "bad.json" '$U verify $CUMSUM --budgets bad.json'
row 2 "bad.json" '$U verify $CUMSUM --budgets $BUDGETS --baseline bad.json'
row 2 "bad.json" '$U compare bad.json run/report.json'
row 2 "bad.json" '$U report --budgets $BUDGETS bad.json'
row 2 "empty-dir" '$U verify --sweep empty-dir --budgets $BUDGETS'
row 2 "cannot load" '$U verify $CUMSUM --budgets $BUDGETS --kernel-lib plain'
row 2 "loading it exited with status 0" \
  '$U verify $CUMSUM --budgets $BUDGETS --kernel-lib ${LIB%none.so}constructor_exit.so'
row 2 "matches no case" '$U verify --sweep $SMOKE --budgets $BUDGETS --filter no-such-family'
row 2 "the library $LIB has no kernel of family gdn_chunk_o" \
  '$U verify --sweep $SMOKE --budgets $BUDGETS --kernel-lib $LIB --filter gdn_chunk_o/'
row 2 "over the 1048576-byte cap (--max-case-mib 1); no case was run" \
  '$U verify --sweep $SMOKE --budgets $BUDGETS --filter gdn_chunk_o/ --max-case-mib 1'
row 2 "matches no case" '$U export --sweep $SMOKE --filter no-such-family --out out'
# 2: outputs that cannot be written, found before the run
row 2 "--reports plain/r: " '$U verify $CUMSUM --budgets $BUDGETS --reports plain/r'
row 2 "--reports plain: exists and is not a directory" '$U verify $CUMSUM --budgets $BUDGETS --reports plain'
row 2 "holds 'notes.txt', which is not a report file" '$U verify $CUMSUM --budgets $BUDGETS --reports notes'
row 2 "--reports .: is the current directory" 'cd empty-dir && $U verify $CUMSUM --budgets $BUDGETS --reports .'
row 2 "another ulpgate run (pid" \
  'mkdir -p locked && flock .locked.ulpgate-lock -c "echo 4242 >.locked.ulpgate-lock; \$U verify \$CUMSUM --budgets \$BUDGETS --reports locked"'
row 2 "--write-baseline no-dir/b.json: the directory no-dir does not exist" \
  '$U verify $CUMSUM --budgets $BUDGETS --write-baseline no-dir/b.json'
row 0 "wrote baseline b.json" '$U verify $CUMSUM --budgets $BUDGETS --kernel-lib $LIB --write-baseline b.json'
row 2 "--out plain/x" '$U export --sweep $SMOKE --filter gdn_chunk_cumsum/ --out plain/x'
# 3: I/O after the start (a file-size limit while the reports are written)
row 3 "report.json: write failed after" 'ulimit -f 40; $U verify $CUMSUM --budgets $BUDGETS --reports run'
row 3 "File too large; the previous set is unchanged" 'ulimit -f 40; $U verify $CUMSUM --budgets $BUDGETS --reports run'

echo "exit-codes: $passed rows passed, $failed failed"
[ "$failed" -eq 0 ]
