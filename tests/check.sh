# SPDX-License-Identifier: MIT
# The assertion the command-line scripts share (tests/plugin_baseline.sh,
# tests/e2e_plugin.sh): source it after setting check_prefix.
passed=0 failed=0
check() { # NAME EXPECTED-EXIT ACTUAL-EXIT LOG [TEXT]: the exit status, and TEXT in LOG when given
  if [ "$3" -eq "$2" ] && { [ -z "${5:-}" ] || grep -qF -- "$5" "$4"; }; then
    passed=$((passed + 1)); echo "$check_prefix: ok: $1"
  else
    failed=$((failed + 1)); echo "$check_prefix: FAILED: $1 (exit $3, expected $2${5:+, text '$5'})"; tail -5 "$4"
  fi
}
check_summary() { # the counts; fails when a check did
  echo "$check_prefix: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
