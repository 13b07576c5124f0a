#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX license lines: every tracked source file (.c .h .py .sh, Makefiles and
# the extensionless scripts under .ci/) names its license on its first line,
# or on its second after a #! line. `ci/spdx.sh` adds the line where it is
# missing (idempotent: rerun it after a merge); `ci/spdx.sh --check` only
# lists the files without one and fails if there are any (make lint).
set -euo pipefail
cd "$(dirname "$0")/.."

license=MIT
check=false
[ "${1:-}" = "--check" ] && check=true

has_spdx() { head -n 2 "$1" | grep -q "SPDX-License-Identifier:"; }

spdx_line() { # the comment syntax of the file's language
  case "$1" in
  *.c | *.h) echo "/* SPDX-License-Identifier: $license */" ;;
  *) echo "# SPDX-License-Identifier: $license" ;;
  esac
}

missing=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  has_spdx "$f" && continue
  missing=$((missing + 1))
  if $check; then
    echo "spdx: $f: no SPDX-License-Identifier line"
    continue
  fi
  line=$(spdx_line "$f")
  tmp=$(mktemp)
  if head -n 1 "$f" | grep -q '^#!'; then
    { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
  else
    { echo "$line"; cat "$f"; } >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
  echo "spdx: added to $f"
done < <(git ls-files -- '*.c' '*.h' '*.py' '*.sh' 'Makefile' '*/Makefile' '.ci/*')

if $check && [ "$missing" -gt 0 ]; then
  echo "spdx: $missing file(s) without a license line (run ci/spdx.sh)"
  exit 1
fi
$check && echo "spdx: every source file names its license"
exit 0
