"""Atomic partition files and the DuckDB catalog under concurrent writers."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
from pathlib import Path

import pyarrow as pa
import pytest

from codex_pipeline.warehouse.catalog import connect_catalog, ensure_views
from codex_pipeline.warehouse.storage import Warehouse

DAY = dt.date(2026, 11, 24)


def table(n: int) -> pa.Table:
    return pa.table({"x": list(range(n))})


def test_write_is_atomic_and_replaces(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    path = wh.write(table(3), "narrative", "chunks", DAY)
    assert path == tmp_path / "warehouse/narrative/chunks/2026-11-24.parquet"
    wh.write(table(5), "narrative", "chunks", DAY)
    assert wh.read("narrative", "chunks", DAY).num_rows == 5
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left


def test_failed_write_leaves_old_partition(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    wh.write(table(3), "narrative", "chunks", DAY)
    with pytest.raises(Exception):  # noqa: B017 - the writer dies mid-write, however it dies
        wh.write("not a table", "narrative", "chunks", DAY)  # type: ignore[arg-type]
    assert wh.read("narrative", "chunks", DAY).num_rows == 3
    assert len(list((tmp_path / "warehouse/narrative/chunks").iterdir())) == 1


def test_missing_partition_error_names_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no narrative/raw partition for 2026-11-24"):
        Warehouse(tmp_path).read("narrative", "raw", DAY)


def test_views_glob_all_partitions_and_are_written_once(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    wh.write(table(2), "narrative", "chunks", DAY)
    assert ensure_views(wh, [("narrative", "chunks"), ("narrative", "rejects")]) == ["narrative_chunks"]
    wh.write(table(3), "narrative", "chunks", DAY + dt.timedelta(days=1))
    assert ensure_views(wh, [("narrative", "chunks")]) == []  # already there: no write
    con = connect_catalog(wh)
    try:
        assert con.execute("SELECT count(*) FROM codex.narrative_chunks").fetchall() == [(5,)]
        with pytest.raises(Exception, match="read-only"):
            con.execute("CREATE TABLE codex.t (x INT)")
    finally:
        con.close()


def _writer(root: str, k: int) -> int:
    wh = Warehouse(root)
    day = DAY + dt.timedelta(days=k)
    wh.write(table(k + 1), "narrative", "chunks", day)
    wh.write(table(1), "narrative", "rejects", day)
    return len(ensure_views(wh, [("narrative", "chunks"), ("narrative", "rejects")]))


def test_parallel_writers_never_fail_on_the_lock(tmp_path: Path) -> None:
    with mp.get_context("spawn").Pool(4) as pool:
        created = pool.starmap(_writer, [(str(tmp_path), k) for k in range(8)])
    assert sum(created) == 2  # each view created exactly once, by whichever came first
    con = connect_catalog(Warehouse(tmp_path))
    try:
        assert con.execute("SELECT count(*) FROM codex.narrative_chunks").fetchall() == [(36,)]
    finally:
        con.close()


def test_writers_proceed_while_an_analyst_reads(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    _writer(str(tmp_path), 0)
    analyst = connect_catalog(wh, read_only=True)
    try:
        with mp.get_context("spawn").Pool(2) as pool:
            assert pool.starmap(_writer, [(str(tmp_path), k) for k in range(1, 5)]) == [0, 0, 0, 0]
        assert analyst.execute("SELECT count(*) FROM codex.narrative_chunks").fetchall() == [(15,)]
    finally:
        analyst.close()
