#!/usr/bin/env bash
# Install Debian's PostgreSQL server and Redis for the scale-out tests
# (codex_pipeline_tests/deploy/): the tests start their own throw-away servers on
# loopback, in temporary directories, and stop them; nothing here starts a service.
# Idempotent: does nothing when initdb/pg_ctl and redis-server are already there. `--check postgres`
# or `--check redis`: say whether it is there and install nothing (exit 0 present, 1 absent).
set -euo pipefail

have_postgres() {
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null
}
have_redis() {
  command -v redis-server >/dev/null 2>&1
}

if [ "${1:-}" = --check ]; then
  case "${2:-}" in
    postgres) have_postgres && { echo "$(ls -d /usr/lib/postgresql/*/bin | head -n1)"; exit 0; } ;;
    redis) have_redis && { echo "$(command -v redis-server) ($(redis-server --version | cut -d' ' -f3))"; exit 0; } ;;
    *) echo "install_services: --check postgres|redis" >&2; exit 2 ;;
  esac
  exit 1
fi

packages=()
have_postgres || packages+=(postgresql)
have_redis || packages+=(redis-server)
if [ ${#packages[@]} -eq 0 ]; then
  echo "install_services: PostgreSQL ($(ls -d /usr/lib/postgresql/*/bin | head -n1)) and $(redis-server --version | cut -d' ' -f1-3) present"
  exit 0
fi

. "$(dirname "$0")/apt.sh"
apt_ready install_services "${packages[@]}"
# policy-rc.d: do not start the packaged system services; the tests run their own.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod +x "$policy"
  made_policy=1
fi
status=0
$SUDO "${APT[@]}" install -y -qq --no-install-recommends "${packages[@]}" >/dev/null || status=$?
if [ -n "$made_policy" ]; then
  $SUDO rm -f "$policy"
fi
if [ "$status" -ne 0 ]; then
  echo "install_services: apt-get install ${packages[*]} failed ($status)" >&2
  exit "$status"
fi
have_postgres || { echo "install_services: no initdb/pg_ctl under /usr/lib/postgresql/*/bin after install" >&2; exit 1; }
have_redis || { echo "install_services: no redis-server after install" >&2; exit 1; }
echo "install_services: installed ${packages[*]}"
