"""A small data directory with a real catalog, built once per test module and copied per test.

``narrative`` is materialized through Dagster (current views, history views, the
document index, rejects); ``permit_signals`` only has a rejects table written directly,
as a dataset that does not run again after the catalog is damaged.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa

from codex_pipeline.warehouse.catalog import connect_catalog, ensure_views
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAY = "2026-11-24"
OTHER = "permit_signals"


def build(root: Path) -> Warehouse:
    wh = Warehouse(root)
    land(wh, "narrative", DAY, FIXTURES / "narrative")
    assert materialize_dataset(wh, "narrative", DAY).success
    wh.write(pa.table({"source_file": ["a.json", "b.json"], "reason": ["bad", "worse"]}), OTHER, "rejects",
             dt.date.fromisoformat(DAY))
    ensure_views(wh, [(OTHER, "rejects")])
    return wh


def copy(template: Warehouse, dest: Path) -> Warehouse:
    """A copy of the template's data directory (its catalog rebuilt for the copy on first open)."""
    shutil.copytree(template.root, dest)
    wh = Warehouse(dest)
    connect_catalog(wh).close()
    return wh


def views(wh: Warehouse) -> dict[str, str]:
    """``{view name: SQL}`` of the catalog's ``codex`` schema."""
    con = connect_catalog(wh)
    try:
        rows = con.execute("SELECT view_name, sql FROM duckdb_views() WHERE schema_name = 'codex'").fetchall()
    finally:
        con.close()
    return dict(rows)


def count(wh: Warehouse, view: str) -> int:
    con = connect_catalog(wh)
    try:
        return int(con.execute(f"SELECT count(*) FROM codex.{view}").fetchone()[0])  # type: ignore[index]
    finally:
        con.close()
