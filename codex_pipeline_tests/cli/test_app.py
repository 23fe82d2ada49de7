"""The quick-start path: `codex demo` on a fresh data dir and Dagster home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow  # the quick start end to end: child processes, the real model, every sample dataset
def test_demo_runs_through_dagster_and_queries_duckdb(tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(tmp_path / "data"), "demo", "--days", "2026-11-24"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2026-11-24: ok" in proc.stdout
    assert "codex.narrative_chunks:" in proc.stdout and "narrative_window" in proc.stdout
    assert "example query on" in proc.stdout
    assert (tmp_path / "data" / "codex_catalog.duckdb").exists()
    # the run is recorded in the Dagster instance the UI reads
    assert any((home / "history").rglob("*.db")) or any(home.rglob("runs.db"))
    query = subprocess.run(
        [sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(tmp_path / "data"), "query",
         "SELECT count(DISTINCT doc_id) AS docs FROM codex.narrative_chunks"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert query.returncode == 0 and "docs" in query.stdout and " 3" in query.stdout, query.stdout + query.stderr
    search = subprocess.run(
        [sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(tmp_path / "data"), "search", "narrative",
         "library board budget", "-k", "2"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert search.returncode == 0, search.stderr
    lines = [line for line in search.stdout.splitlines() if line.strip().startswith("score=")]
    assert len(lines) == 2 and "library-board-meeting-summary" in lines[0]
