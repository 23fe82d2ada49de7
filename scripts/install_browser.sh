#!/usr/bin/env bash
# Install Debian's chromium for the browser test of the Dagster UI
# (codex_pipeline_tests/ui/). Playwright drives this system browser; we never run
# `playwright install` (no download host is reachable from CI or the dev box).
# Idempotent: does nothing when /usr/bin/chromium already exists. `--check`: say whether it is
# there and install nothing (exit 0 present, 1 absent; scripts/ci_tools.sh lists every tool so).
set -euo pipefail
if [ "${1:-}" = --check ]; then
  [ -x /usr/bin/chromium ] && { echo "/usr/bin/chromium ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"; exit 0; }
  exit 1
fi
if [ -x /usr/bin/chromium ]; then
  echo "install_browser: /usr/bin/chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
  exit 0
fi
. "$(dirname "$0")/apt.sh"
apt_ready install_browser chromium
$SUDO "${APT[@]}" install -y -qq --no-install-recommends chromium >/dev/null
echo "install_browser: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
