#!/usr/bin/env bash
# Install Debian's chromium for the browser test of the Dagster UI
# (codex_pipeline_tests/ui/). Playwright drives this system browser; we never run
# `playwright install` (no download host is reachable from CI or the dev box).
# Idempotent: does nothing when /usr/bin/chromium already exists.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "install_browser: /usr/bin/chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install_browser: not root and no sudo; install chromium yourself (apt-get install chromium)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
echo "install_browser: installing chromium with apt-get"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "install_browser: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
