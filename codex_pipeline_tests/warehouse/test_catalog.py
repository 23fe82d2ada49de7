"""The DuckDB catalog: open readers never block runs, views follow their files, files are readable by others."""

from __future__ import annotations

import datetime as dt
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.warehouse.catalog import connect_catalog, ensure_views
from codex_pipeline.warehouse.storage import Warehouse, sweep_temp_files, write_parquet_atomic
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAY = "2026-11-24"


def _views(wh: Warehouse) -> set[str]:
    con = connect_catalog(wh)
    try:
        return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = 'codex'").fetchall()}
    finally:
        con.close()


def test_an_open_read_only_connection_does_not_block_a_run_that_creates_views(warehouse: Warehouse) -> None:
    """The README's reader (a read-only connection held open) while a run must create every view of a dataset."""
    land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    reader = connect_catalog(warehouse)  # creates the (empty) catalog, then holds it open like a notebook
    try:
        started = time.monotonic()
        result = materialize_dataset(warehouse, "narrative", DAY)
        assert result.success
        assert time.monotonic() - started < 60, "the run waited for the reader (the old CatalogBusy wait was 60 s)"
        assert reader.execute("SELECT 42").fetchone() == (42,)  # the reader is still usable
        # a new reader (another process: DuckDB shares one open database per path within a process) sees the views
        count = subprocess.run(
            [sys.executable, "-c", "import duckdb, sys; print(duckdb.connect(sys.argv[1], read_only=True)"
             ".execute('SELECT count(*) FROM codex.narrative_chunks').fetchone()[0])", str(warehouse.catalog_path)],
            capture_output=True, text=True, check=True,
        ).stdout
        assert int(count) == warehouse.read("narrative", "chunks", dt.date.fromisoformat(DAY)).num_rows > 0
    finally:
        reader.close()
    assert not list(warehouse.root.glob(".*.tmp")) and not list(warehouse.root.glob("*.wal"))


def test_a_view_is_dropped_with_its_last_file_and_the_others_keep_working(warehouse: Warehouse) -> None:
    day = dt.date(2026, 11, 24)
    table = pa.table({"doc_id": ["a"], "n": [1]})
    warehouse.write(table, "demo", "quarantine", day)
    warehouse.write(table, "demo", "rejects", day)
    assert ensure_views(warehouse, [("demo", "quarantine"), ("demo", "rejects")]) == ["demo_quarantine", "demo_rejects"]
    assert ensure_views(warehouse, [("demo", "quarantine"), ("demo", "rejects")]) == []  # nothing changed: no rewrite
    warehouse.remove("demo", "quarantine", day)
    assert ensure_views(warehouse, [("demo", "quarantine")]) == ["demo_quarantine"]
    assert _views(warehouse) == {"demo_rejects"}
    con = connect_catalog(warehouse)
    try:
        assert con.execute("SELECT count(*) FROM codex.demo_rejects").fetchone() == (1,)
    finally:
        con.close()


def test_a_damaged_view_registry_is_rebuilt_from_the_files(warehouse: Warehouse) -> None:
    day = dt.date(2026, 11, 24)
    warehouse.write(pa.table({"x": [1]}), "demo", "rejects", day)
    ensure_views(warehouse, [("demo", "rejects")])
    (warehouse.root / "codex_catalog.views.json").write_text("{not json")
    assert ensure_views(warehouse, [("demo", "rejects")]) == ["demo_rejects"]
    assert _views(warehouse) == {"demo_rejects"}


def test_files_honour_the_umask_not_mkstemps_0600(warehouse: Warehouse) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    path = warehouse.root / "t" / "x.parquet"
    write_parquet_atomic(pa.table({"x": [1]}), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    ensure_views(warehouse, [])
    assert stat.S_IMODE(warehouse.catalog_path.stat().st_mode) == 0o666 & ~mask


def test_the_temp_sweep_removes_only_stale_temp_files(warehouse: Warehouse) -> None:
    folder = warehouse.table_dir("demo", "chunks")
    folder.mkdir(parents=True)
    stale = folder / ".2026-11-24.parquet.123.abcd1234.tmp"
    fresh = folder / ".2026-11-25.parquet.124.abcd1234.tmp"
    kept = folder / "2026-11-24.parquet"
    for p in (stale, fresh, kept):
        p.write_bytes(b"x")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    os.utime(kept, (old, old))
    assert sweep_temp_files(warehouse.root) == [stale]
    assert fresh.exists() and kept.exists() and not stale.exists()


KILLED_WRITER = """
import datetime as dt, os, signal, sys
import pyarrow as pa
from codex_pipeline.core.contract import RAW_SCHEMA
from codex_pipeline.warehouse.storage import Warehouse
out = Warehouse(sys.argv[1]).writer("narrative", "raw", dt.date.fromisoformat(sys.argv[2]), RAW_SCHEMA)
out.write(RAW_SCHEMA.empty_table())
print(out.tmp, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # dies mid-write: no publish, no cleanup
"""


def test_a_writer_killed_mid_write_leaves_nothing_the_next_run_keeps(
    warehouse: Warehouse, capsys: pytest.CaptureFixture[str], fake_code_location: object
) -> None:
    land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(warehouse.root), DAY], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    leftover = Path(killed.stdout.strip())
    assert leftover.exists() and not warehouse.partition_path("narrative", "raw", dt.date.fromisoformat(DAY)).exists()
    old = time.time() - 2 * 3600  # as it would be by the next day's run
    os.utime(leftover, (old, old))

    assert main(["--data-dir", str(warehouse.root), "materialize", DAY]) == 0
    assert not leftover.exists()
    assert "removed 1 temp file(s)" in capsys.readouterr().out
    assert warehouse.read("narrative", "raw", dt.date.fromisoformat(DAY)).num_rows == 2
    assert warehouse.read("narrative", "chunks", dt.date.fromisoformat(DAY)).num_rows > 0
