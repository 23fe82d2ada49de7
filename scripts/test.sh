#!/usr/bin/env bash
# Set up, then run the tests: both lanes (slow and quick), or with --quick the quick lane only.
# Other arguments go to pytest, e.g. `scripts/test.sh --quick -x codex_pipeline_tests/sources`.
# PYTHON / VENV / LOCAL / TORCH are passed to scripts/setup.sh (e.g. VENV=.venv-3.13 PYTHON=python3.13 TORCH=0).
set -euo pipefail
cd "$(dirname "$0")/.."
lane=(-m "slow or not slow")
args=()
for a in "$@"; do
  if [ "$a" = "--quick" ]; then lane=(-m "not slow"); else args+=("$a"); fi
done
# the [torch] runtime too when a CPU build of torch is at hand, so both runtimes are tested
TORCH="${TORCH:-auto}" bash scripts/setup.sh
# shellcheck disable=SC1091
. "${VENV:-.venv}/bin/activate"
exec python -m pytest "${lane[@]}" "${args[@]}"
