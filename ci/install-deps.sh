#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages ulpgate builds and tests with, when missing,
# then the Python venv of the interop test (build/pyvenv, pinned packages of
# tests/interop/requirements.txt). Idempotent; needs root (or sudo) only when
# a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Python client of `make interop`: numpy, safetensors and ml_dtypes from
# the Python package registry, in a venv so the system Python stays untouched,
# then the ulpgate package of this tree (python/), reinstalled when it changed.
python_venv() {
  local venv=build/pyvenv req=tests/interop/requirements.txt
  local package_hash
  package_hash=$(cat python/pyproject.toml python/ulpgate/*.py | sha256sum)
  if cmp -s "$req" "$venv/requirements.txt" && "$venv/bin/python" -c "import numpy, safetensors, ml_dtypes" 2>/dev/null; then
    echo "install-deps: Python venv $venv up to date"
  else
    echo "install-deps: creating the Python venv $venv from $req"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$venv/requirements.txt"
  fi
  if [ "$package_hash" = "$(cat "$venv/ulpgate-package.sha256" 2>/dev/null)" ] && "$venv/bin/python" -c "import ulpgate" 2>/dev/null; then
    echo "install-deps: Python package ulpgate in $venv up to date"
    return
  fi
  echo "install-deps: installing the Python package ./python into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall ./python
  echo "$package_hash" >"$venv/ulpgate-package.sha256"
}

packages=(build-essential libmpfr-dev libgmp-dev libgsl-dev libcunit1-dev libjansson-dev valgrind python3-venv clang-format)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Optional, not installed here (large; nothing in verify or test needs them).
command -v chromium >/dev/null 2>&1 ||
  echo "install-deps: optional chromium not installed: only \`make screenshot\` needs it (apt-get install chromium)"
command -v clang >/dev/null 2>&1 ||
  echo "install-deps: optional clang not installed: only \`make fuzz\` needs it (apt-get install clang)"
python_venv
