"""A statement under a time limit: stopped and reported when it runs past it, the session still usable (real DuckDB)."""

from __future__ import annotations

import duckdb
import pytest

from codex_pipeline.warehouse.bounded_query import StatementStopped, run_bounded

ENDLESS = "SELECT sum(a.range * b.range) FROM range(10000000) a, range(10000000) b"
"""A cross join of 10^14 rows: it never finishes on its own."""


def test_a_statement_past_its_limit_is_stopped_and_reported_in_one_line() -> None:
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET threads = 1")
        with pytest.raises(StatementStopped) as stopped:
            run_bounded(con, ENDLESS, timeout=0.5)
        assert not stopped.value.by_user
        line = str(stopped.value)
        assert "\n" not in line and "0.5-second limit" in line and "--timeout" in line
        assert run_bounded(con, "SELECT 41 + 1 AS answer", timeout=30).rows == [(42,)]  # the session still works
    finally:
        con.close()


def test_a_statement_within_its_limit_returns_its_columns_and_rows() -> None:
    con = duckdb.connect(":memory:")
    try:
        (statement,) = con.extract_statements("SELECT range AS n FROM range(3)")
        result = run_bounded(con, statement, timeout=None)
        assert result.columns == ["n"] and result.rows == [(0,), (1,), (2,)]
        with pytest.raises(duckdb.CatalogException):  # DuckDB's own errors pass through as they are
            run_bounded(con, "SELECT * FROM no_such_table", timeout=30)
    finally:
        con.close()
