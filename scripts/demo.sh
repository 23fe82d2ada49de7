#!/usr/bin/env bash
# Quick start: set up, then materialize every asset for the bundled sample days
# through Dagster (local SQLite instance in this checkout), print chunk counts and
# an example query on the DuckDB file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. "${VENV:-.venv}/bin/activate"
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD}"
exec codex demo "$@"
