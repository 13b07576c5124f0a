#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make lint: the written conventions (CONTRIBUTING.md), checked. Each check
# prints one line when it passes and every offending place when it fails;
# the script fails if any check failed.
#   spdx        every source file names its license (ci/spdx.sh --check)
#   self-contained  no path outside the repository (the sibling folder the
#               project was started from is not in a clone: docs/spec.md is)
#   ref-independent no file under ref/ includes a file under kernels/
#   subjects    commit subjects since LINT_BASE are at most 72 characters
#   format      the files of ci/formatted.txt are clang-format clean
set -uo pipefail
cd "$(dirname "$0")/.."

# The commit the subject rule starts from (main when the rule was written;
# older subjects are left as they are).
base=${LINT_BASE:-61d2888641f8c7644385588148cd8dcb0d74bd3c}
failed=()

spdx=$(ci/spdx.sh --check 2>&1) || failed+=(spdx)
grep ': no SPDX' <<<"$spdx" | head -20
grep -v ': no SPDX' <<<"$spdx"

outside='\.\./'"shared"
if git grep -n -e "$outside" -- . ':!ci/lint.sh'; then
  echo "self-contained: the lines above refer to a folder outside the repository (cite docs/spec.md)"
  failed+=(self-contained)
else
  echo "self-contained: no reference outside the repository"
fi

if git grep -n -E '#[[:space:]]*include[[:space:]]*[<"]([.][.]/)*kernels/' -- 'ref/'; then
  echo "ref-independent: the reference includes kernel files above (keep its own copy; docs/spec.md §2)"
  failed+=(ref-independent)
else
  echo "ref-independent: no file under ref/ includes one under kernels/"
fi

if git cat-file -e "$base^{commit}" 2>/dev/null; then
  long=$(git log --no-merges --format='%h %s' "$base..HEAD" | awk '{ s = substr($0, index($0, " ") + 1) } length(s) > 72 { print "  " $1 " (" length(s) " chars): " substr(s, 1, 60) "..." }')
  if [ -n "$long" ]; then
    echo "subjects: commit subjects over 72 characters since ${base:0:7} (put the details in the body):"
    echo "$long"
    failed+=(subjects)
  else
    echo "subjects: every commit subject since ${base:0:7} is at most 72 characters"
  fi
else
  echo "subjects: base commit ${base:0:7} not in this clone (shallow?): not checked"
fi

if command -v clang-format >/dev/null; then
  unformatted=()
  while IFS= read -r f; do
    case "$f" in '' | '#'*) continue ;; esac
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
  done <ci/formatted.txt
  if [ ${#unformatted[@]} -gt 0 ]; then
    echo "format: not clang-format clean (clang-format -i FILE): ${unformatted[*]}"
    failed+=(format)
  else
    echo "format: the $(grep -cv '^#\|^$' ci/formatted.txt) files of ci/formatted.txt are clang-format clean"
  fi
else
  echo "format: clang-format is not installed (make deps installs it)"
  failed+=(format)
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: FAIL (${failed[*]})"
  exit 1
fi
echo "lint: PASS"
