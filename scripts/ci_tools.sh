#!/usr/bin/env bash
# What .ci/run needs, listed before it installs anything: each tool, whether it is present, and what
# installs it when absent (each install_*.sh's own `--check`, so this list and the installs agree).
# The interpreters are the one thing no script here installs: exit 1 when one is missing, before
# half an hour of work, naming it. Try it without a tool by hiding it from PATH, e.g. valgrind:
#   d=$(mktemp -d); for f in /usr/bin/*; do [ "${f##*/}" = valgrind ] || ln -s "$f" "$d/"; done
#   PATH="$d:/usr/local/bin" bash scripts/ci_tools.sh    # valgrind: absent -> install_valgrind.sh
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
row() { printf '  %-14s %-8s %s\n' "$1" "$2" "$3"; }
probe() {  # probe NAME 'what installs it, what needs it' COMMAND...
  local name=$1 what=$2 out
  shift 2
  if out="$("$@" 2>/dev/null)"; then row "$name" present "$out"; else row "$name" absent "-> $what"; fi
}
echo "ci: tools .ci/run needs (checked before installing anything):"
probe valgrind "scripts/install_valgrind.sh installs it (bench/check.py counts instructions with callgrind)" \
  bash scripts/install_valgrind.sh --check
probe chromium "scripts/install_browser.sh installs it (the Dagster UI browser test)" \
  bash scripts/install_browser.sh --check
probe postgresql "scripts/install_services.sh installs it (the deploy tests' throw-away server)" \
  bash scripts/install_services.sh --check postgres
probe redis-server "scripts/install_services.sh installs it (the deploy tests' Celery broker)" \
  bash scripts/install_services.sh --check redis
probe tesseract "scripts/install_ocr.sh installs it (OCR of scanned PDF pages)" \
  bash scripts/install_ocr.sh --check
probe apt-get "the installs above need it, as root or with sudo" command -v apt-get
for v in 3.11 3.12 3.13; do
  if p="$(bash scripts/find_python.sh "$v")"; then
    row "python$v" present "$p ($("$p" --version 2>&1))"
  else
    row "python$v" absent "nothing here installs it: install CPython $v (e.g. pyenv install $v)"
    status=1
  fi
done
[ "$status" = 0 ] || echo "ci: a Python interpreter is missing (above); .ci/run needs 3.11, 3.12 and 3.13" >&2
exit "$status"
