#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ulpgate reference` on a user's own inputs, through the public command line
# (docs/interop.md "Your own inputs"): input files are cut from exported
# cases with a standard-library script (tests/cli/st_edit.py), the reference
# is written, a correct candidate (the staged .ref tensors) passes `score`
# and one with an element changed fails it, for two families; then each
# hostile input exits 2 naming the tensor, index or value, writing nothing.
# usage: tests/cli/user_inputs.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
repo=$(pwd)
U=$build/ulpgate
ST="python3 $repo/tests/cli/st_edit.py"
BUDGETS=$repo/fixtures/budgets
W=$build/cli-user-inputs
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1

failed=0
fail() { echo "user-inputs: FAILED: $*"; failed=$((failed + 1)); }

# A family's first smoke case, exported: fx-FAMILY/0000-FAMILY.safetensors.
for f in gdn_chunk_cumsum gdn_chunk_scaled_kkt gdn_recompute_wu gdn_solve_tril attn_reduce_fwht; do
  "$U" export --sweep "$repo/fixtures/sweeps/smoke" --filter "$f/" --out "fx-$f" --quiet >/dev/null || exit 1
done
inputs() { # FAMILY OUT [EDIT...]: the case's inputs, params as metadata, edited
  local f=$1 out=$2
  shift 2
  $ST inputs "fx-$f/0000-$f.safetensors" "fx-$f/manifest.json" "$out" "$@" || exit 1
}

# Round trip: reference, then score a right and a wrong candidate.
for f in gdn_chunk_cumsum gdn_chunk_scaled_kkt; do
  out=$([ $f = gdn_chunk_cumsum ] && echo g || echo L) gate=$([ $f = gdn_chunk_cumsum ] && echo g_raw || echo g)
  inputs $f "in-$f.safetensors"
  "$U" reference --family $f --inputs "in-$f.safetensors" --out "ref-$f" >ref.log 2>&1 || { cat ref.log; fail "$f: reference"; continue; }
  grep -q '"origin": "user"' "ref-$f/manifest.json" || fail "$f: the manifest does not say origin user"
  mkdir -p "good-$f" "bad-$f"
  $ST candidate "ref-$f/0000-$f.safetensors" "good-$f/0000-$f.safetensors" staged || exit 1
  $ST candidate "ref-$f/0000-$f.safetensors" "bad-$f/0000-$f.safetensors" staged "set=$out:3:-1.5" || exit 1
  "$U" score --fixtures "ref-$f" --candidate "good-$f" --budgets "$BUDGETS" --reports "rep-good-$f" --quiet \
    >score.log 2>&1
  rc=$?
  [ $rc -eq 0 ] && grep -q '^ulpgate: PASS' score.log || { cat score.log; fail "$f: the right candidate exits $rc"; }
  "$U" score --fixtures "ref-$f" --candidate "bad-$f" --budgets "$BUDGETS" --reports "rep-bad-$f" --quiet \
    >score.log 2>&1
  rc=$?
  [ $rc -eq 1 ] && grep -q "FAIL: $f/user in-$f.safetensors: \[candidate\] $out\[3\]" score.log ||
    { cat score.log; fail "$f: the wrong candidate exits $rc"; }
  # the fixture's inputs are the user's: changed after the fact, score refuses them
  cp -r "ref-$f" "tampered-$f"
  $ST set "tampered-$f/0000-$f.safetensors" "$gate:0:0.125" || exit 1
  "$U" score --fixtures "tampered-$f" --candidate "good-$f" --budgets "$BUDGETS" --reports "rep-t-$f" --quiet \
    >score.log 2>&1
  rc=$?
  [ $rc -eq 2 ] && grep -q "hashes to" score.log || { cat score.log; fail "$f: a tampered input exits $rc"; }
done

# --param wins over the metadata; metadata keys that are no parameter (PyTorch's "format") are ignored.
inputs gdn_chunk_cumsum in-meta.safetensors meta=T=64 meta=format=pt
"$U" reference --family gdn_chunk_cumsum --inputs in-meta.safetensors --param T=128 --out ref-param >ref.log 2>&1 ||
  { cat ref.log; fail "--param T=128 over metadata T=64"; }

# Hostile inputs: exit 2, the message, nothing written.
reject() { # TEXT FAMILY INPUT [ARGS...]
  local text=$1 f=$2 in=$3
  shift 3
  mkdir -p "$W/nothing" && rm -rf "$W/nothing"/out*
  out=$("$U" reference --family "$f" --inputs "$in" --out "$W/nothing/out" "$@" 2>&1)
  rc=$?
  if [ $rc -ne 2 ] || [[ "$out" != *"$text"* ]] || [ -n "$(ls -A "$W/nothing")" ]; then
    fail "$f $in $*: exit $rc, wanted 2 and '$text' with nothing written; got: $out; $(ls "$W/nothing")"
  else
    echo "user-inputs: refused as expected: $(grep -v '^ulpgate: profile' <<<"$out")"
  fi
}
inputs gdn_chunk_scaled_kkt no-beta.safetensors drop=beta
reject "no tensor 'beta' (input F32 [1,128,4]" gdn_chunk_scaled_kkt no-beta.safetensors
inputs gdn_chunk_scaled_kkt reshaped.safetensors shape=k:1,64,4,64
reject "tensor 'k' has shape [1,64,4,64], the input's is [1,128,2,64]" gdn_chunk_scaled_kkt reshaped.safetensors
inputs gdn_chunk_scaled_kkt no-T.safetensors meta=T=
reject "parameter T of gdn_chunk_scaled_kkt is missing" gdn_chunk_scaled_kkt no-T.safetensors
reject "--param X=1: not NAME=VALUE with a parameter of gdn_chunk_scaled_kkt" gdn_chunk_scaled_kkt \
  in-gdn_chunk_scaled_kkt.safetensors --param X=1
reject "parameter BT = \"64x\" is not an integer" gdn_chunk_scaled_kkt in-gdn_chunk_scaled_kkt.safetensors --param BT=64x
reject "--param T=128: T is given twice" gdn_chunk_scaled_kkt in-gdn_chunk_scaled_kkt.safetensors --param T=128 \
  --param T=128
inputs gdn_chunk_scaled_kkt nan-gate.safetensors set=g:7:nan
reject "g[7] = nan (element [0,1,3]) is outside the data contract (finite)" gdn_chunk_scaled_kkt nan-gate.safetensors
inputs gdn_chunk_cumsum inf-gate.safetensors set=g_raw:2:-inf
reject "g_raw[2] = -inf (element [0,0,2]) is outside the data contract (finite)" gdn_chunk_cumsum inf-gate.safetensors
inputs gdn_recompute_wu upper-A.safetensors set=A:1:0.5
reject "A[1] = 0.5 (element [0,0,0,1]) is outside the data contract (lower-triangular" gdn_recompute_wu upper-A.safetensors
inputs gdn_solve_tril diag-L.safetensors set=L:0:0.25
reject "L[0] = 0.25 (element [0,0,0,0]) is outside the data contract (strictly lower-triangular" gdn_solve_tril diag-L.safetensors
inputs attn_reduce_fwht negative-S.safetensors set=htmp:512:-1  # nrows 2 x head_dim 256 x nwg 1 partials first
reject "htmp[512] = -1 is outside the data contract (row 0, workgroup 0: S finite and >= 0" attn_reduce_fwht negative-S.safetensors
$ST zeros k256.safetensors '{"B":"1","T":"64","Hg":"1","H":"1","K":"256","V":"64","BT":"64"}' k:BF16:1,64,1,256 \
  v:BF16:1,64,1,64 beta:F32:1,64,1 g:F32:1,64,1 A:F32:1,64,1,64 || exit 1
reject "the kernel's validation rejects this shape: gated_delta_net_recompute_wu: K (256)" gdn_recompute_wu k256.safetensors
reject "tensor 'L' is no input of gdn_chunk_scaled_kkt" gdn_chunk_scaled_kkt good-gdn_chunk_scaled_kkt/0000-gdn_chunk_scaled_kkt.safetensors
# an --out that holds something stays as it was
mkdir -p full && echo mine >full/notes.txt
out=$("$U" reference --family gdn_chunk_cumsum --inputs in-gdn_chunk_cumsum.safetensors --out full 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"must be absent or an empty directory"* ]] && [ "$(ls -A full)" = notes.txt ] &&
  [ -z "$(ls -d full.tmp-* 2>/dev/null)" ] || fail "--out full: exit $rc, $out; $(ls -A full)"

if [ $failed -ne 0 ]; then
  echo "user-inputs: $failed FAILED"
  exit 1
fi
echo "user-inputs: round trips on gdn_chunk_cumsum and gdn_chunk_scaled_kkt, every hostile input refused"
