#!/usr/bin/env bash
# The path a new user takes, checked in CI: build the wheel, install it into a new venv
# (torch pinned to the CPU wheel, as the Makefile does), then, from a folder outside the
# repository, run `clover-code doctor` and a headless sandbox task on the shipped demo model.
# Exit 0 only when the install works, doctor is happy and the task's check passes.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-python3.11}"
work="$(mktemp -d "${TMPDIR:-/tmp}/clover-wheel-XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" -m venv "$work/venv"
bin="$work/venv/bin"
"$bin/pip" install -q --upgrade pip
"$bin/pip" install -q torch==2.13.0  # the CPU wheel on local disk; a bare torch pulls CUDA
"$bin/pip" wheel -q --no-deps -w "$work/dist" "$repo"
"$bin/pip" install -q "$work"/dist/clover_code-*.whl
"$bin/pip" install -q pytest  # the task repository's own test runner, not a clover-code dependency

cd "$work"  # nothing of the checkout on sys.path from here on
installed="$("$bin/python" -c 'import clover_code; print(clover_code.__file__)')"
case "$installed" in
  "$work/venv/"*) echo "ci-wheel: clover_code from $installed" ;;
  *) echo "ci-wheel: clover_code imported from $installed, not the wheel" >&2; exit 1 ;;
esac
"$bin/clover-code" doctor
"$bin/python" "$repo/tools/demo.py" --task fix-median  # by path, not -m: nothing of the checkout on sys.path
