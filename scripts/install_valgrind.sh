#!/usr/bin/env bash
# Install Debian's valgrind: `bench/check.py` counts instructions with callgrind (deterministic under
# load) and exits 2 without it. CI runs this before the benches. Idempotent: does nothing when
# valgrind is already there. `--check`: say whether it is there and install nothing (exit 0
# present, 1 absent).
set -euo pipefail
if [ "${1:-}" = --check ]; then
  command -v valgrind >/dev/null 2>&1 && { echo "$(command -v valgrind) ($(valgrind --version))"; exit 0; }
  exit 1
fi

if command -v valgrind >/dev/null 2>&1; then
  echo "install_valgrind: $(valgrind --version) present"
  exit 0
fi

. "$(dirname "$0")/apt.sh"
apt_ready install_valgrind valgrind
$SUDO "${APT[@]}" install -y -qq --no-install-recommends valgrind >/dev/null
echo "install_valgrind: $(valgrind --version) installed"
