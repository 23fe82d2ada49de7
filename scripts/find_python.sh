#!/usr/bin/env bash
# Print the path of a CPython of the given minor version (`find_python.sh 3.13`): `python3.13` on
# PATH when it runs, else pyenv's newest 3.13.x under $PYENV_ROOT (default ~/.pyenv). Exit 1, printing
# nothing, when there is none. .ci/run and scripts/ci_tools.sh find their interpreters so.
set -euo pipefail
v="${1:?usage: find_python.sh 3.13}"
p="$(command -v "python$v" 2>/dev/null || true)"
if [ -z "$p" ] || ! "$p" -c 'import sys' >/dev/null 2>&1; then
  p="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v" 2>/dev/null | sort -V | tail -n1 || true)"
fi
[ -n "$p" ] && "$p" -c 'import sys' >/dev/null 2>&1 || exit 1
echo "$p"
