"""`codex query` mistakes are one line that names the problem and the fix."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.storage import Warehouse


def _query(wh: Warehouse, sql: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["--data-dir", str(wh.root), "query", sql])
    return code, capsys.readouterr().err.strip()


def test_a_missing_view_names_the_views_there_are(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse.write(pa.table({"x": [1]}), "demo", "rejects", dt.date(2026, 11, 24))
    ensure_views(warehouse, [("demo", "rejects")])
    code, err = _query(warehouse, "SELECT * FROM codex.demo_chunks", capsys)
    assert code == 2 and err.count("\n") == 0
    assert "no view codex.demo_chunks" in err and "codex.demo_rejects" in err and "codex materialize" in err


def test_a_sql_mistake_is_duckdbs_first_line(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _query(warehouse, "SELEC 1", capsys)
    assert code == 2 and err.count("\n") == 0 and "syntax error" in err


def test_a_good_query_prints_rows(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(warehouse.root), "query", "SELECT 41 + 1 AS answer"]) == 0
    assert "42" in capsys.readouterr().out
