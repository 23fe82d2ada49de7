#!/usr/bin/env bash
# Install Debian's valgrind: `bench/check.py` counts instructions with callgrind (deterministic under
# load) and exits 2 without it. CI runs this before the benches. Idempotent: does nothing when
# valgrind is already there.
set -euo pipefail

if command -v valgrind >/dev/null 2>&1; then
  echo "install_valgrind: $(valgrind --version) present"
  exit 0
fi

. "$(dirname "$0")/apt.sh"
apt_ready install_valgrind valgrind
$SUDO "${APT[@]}" install -y -qq --no-install-recommends valgrind >/dev/null
echo "install_valgrind: $(valgrind --version) installed"
