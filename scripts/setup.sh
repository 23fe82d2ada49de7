#!/usr/bin/env bash
# Create .venv and install Codex with its test extras. Idempotent: re-running after
# an unchanged pyproject.toml installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
stamp=.venv/.codex-setup-stamp
want="$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: .venv is up to date"
  exit 0
fi
python -m pip install --quiet --upgrade pip
# The CPU build of torch first: an unpinned torch (pulled by sentence-transformers)
# would resolve to a multi-GB CUDA build.
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[dev]"
echo "$want" > "$stamp"
echo "setup: installed $(python -c 'import codex_pipeline; print("codex-pipeline", codex_pipeline.__version__)')"
