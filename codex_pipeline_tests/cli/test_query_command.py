"""Issue 40 item 7: `codex query` is bounded (time, memory, threads), stops on Ctrl-C, prints every result of chained
statements, and tells a user an empty query is theirs to fix, in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.warehouse.storage import Warehouse

ENDLESS = "SELECT sum(a.range * b.range) FROM range(10000000) a, range(10000000) b"


def _query(wh: Warehouse, sql: str, *flags: str) -> int:
    return main(["--data-dir", str(wh.root), "query", *flags, sql])


def test_a_statement_past_the_timeout_is_stopped_in_one_line(
    warehouse: Warehouse, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _query(warehouse, ENDLESS, "--timeout", "1", "--threads", "1") == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("codex query: the statement ran past its 1-second limit and was stopped")
    assert "--timeout" in line


def test_chained_statements_print_every_result_in_order(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    assert _query(warehouse, "SELECT 'first' AS a; SELECT 'second' AS b") == 0
    out = capsys.readouterr().out
    assert "statement 1 of 2" in out and "statement 2 of 2" in out
    assert out.index("first") < out.index("second")


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment\n/* and another */"])
def test_an_empty_query_is_the_users_to_fix(warehouse: Warehouse, sql: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _query(warehouse, sql) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("codex query: the query is empty") and "bug" not in line


def test_the_session_has_memory_and_thread_limits_by_default_and_by_flag(
    warehouse: Warehouse, capsys: pytest.CaptureFixture[str]
) -> None:
    sql = "SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t"
    assert _query(warehouse, sql) == 0
    default = capsys.readouterr().out.splitlines()[-1].split()
    assert default[:2] == ["1.8", "GiB"]  # 2GB as DuckDB prints it, not 80% of the machine's memory
    assert int(default[2]) == max(1, (os.cpu_count() or 2) // 2)
    assert _query(warehouse, sql, "--memory-limit", "512MiB", "--threads", "1") == 0
    assert capsys.readouterr().out.splitlines()[-1].split() == ["512.0", "MiB", "1"]
    assert _query(warehouse, "SET memory_limit = '64GB'") == 2  # and the sandbox does not let them be raised


def test_a_bad_limit_is_one_line_naming_the_option(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    for flags in (("--memory-limit", "lots"), ("--timeout", "-3"), ("--threads", "0")):
        assert _query(warehouse, "SELECT 1", *flags) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert flags[0] in line


def test_ctrl_c_stops_the_running_statement(warehouse: Warehouse) -> None:
    """SIGINT while DuckDB runs a statement that would never end: the statement stops, one line, exit 130."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(warehouse.root), "query", "--timeout", "0",
         "--threads", "1", f"SELECT 'started' AS s; {ENDLESS}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "started" in line and "statement" not in line:  # the first result printed: the second statement is next
                break
        subprocess.run(["sleep", "0.5"], check=True)  # let it enter DuckDB (a head start, not a measurement)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["codex query: stopped by Ctrl-C: the statement was interrupted"]
    assert Path(warehouse.root).is_dir()
