"""Damaged Parquet files are found, set aside with a reject row, and rebuilt by the day's rerun."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.warehouse.integrity import QUARANTINE_DIR, damage, sweep_dataset
from codex_pipeline.warehouse.storage import Warehouse, write_parquet_atomic
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset, query_catalog

DAY = "2026-11-24"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.parquet"
    n = 5000
    write_parquet_atomic(pa.table({"id": list(range(n)), "text": [f"row {i} " * 8 for i in range(n)]}), path)  # with page CRCs
    return path


def test_every_truncation_is_caught_by_the_quick_check(good: Path, tmp_path: Path) -> None:
    assert damage(good) is None and damage(good, full=True) is None
    data = good.read_bytes()
    cut = tmp_path / "cut.parquet"
    for size in sorted({0, 3, 4, 11, 12, len(data) // 3, len(data) // 2, len(data) - 9, len(data) - 4, len(data) - 1}):
        cut.write_bytes(data[:size])
        assert damage(cut) is not None, size


def test_a_damaged_page_is_caught_by_the_full_check(good: Path, tmp_path: Path) -> None:
    meta = pq.read_metadata(good)
    col = meta.row_group(0).column(1)
    first = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    middle = first + col.total_compressed_size // 2
    data = bytearray(good.read_bytes())
    for i in range(middle, middle + 64):
        data[i] ^= 0xFF
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    assert damage(bad) is None  # the ends are intact: only decoding finds it
    assert damage(bad, full=True) is not None


def test_sweep_sets_aside_only_damaged_files(warehouse: Warehouse, good: Path) -> None:
    day = dt.date.fromisoformat(DAY)
    ok = warehouse.partition_path("demo", "chunks", day)
    ok.parent.mkdir(parents=True)
    shutil.copy(good, ok)
    bad = warehouse.partition_path("demo", "chunks", day + dt.timedelta(days=1))
    bad.write_bytes(good.read_bytes()[:1000])
    found = sweep_dataset(warehouse, "demo")
    assert [f.path for f in found] == [bad] and ok.exists() and not bad.exists()
    assert found[0].moved_to.is_file() and QUARANTINE_DIR in found[0].moved_to.parts
    assert "codex materialize 2026-11-25" in found[0].message()
    rejects = pq.read_table(warehouse.partition_path("demo", "rejects", day + dt.timedelta(days=1), "damaged")).to_pylist()
    assert rejects[0]["stage"] == "storage" and str(bad) in rejects[0]["reason"]
    assert sweep_dataset(warehouse, "demo") == []


@pytest.mark.parametrize("how", ["truncate", "corrupt"])
def test_a_damaged_chunks_file_is_repaired_by_the_days_rerun(
    warehouse: Warehouse, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`truncate -s` (or bytes flipped in a page) of a published chunks file; the next run of the day repairs it."""
    land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    assert materialize_dataset(warehouse, "narrative", DAY).success
    day = dt.date.fromisoformat(DAY)
    path = warehouse.partition_path("narrative", "chunks", day)
    before = warehouse.read("narrative", "chunks", day).select(["chunk_id", "chunk_text"]).to_pylist()
    if how == "truncate":
        os.truncate(path, path.stat().st_size // 2)
    else:
        data = bytearray(path.read_bytes())
        col = pq.read_metadata(path).row_group(0).column(3)  # chunk_text
        start = (col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset) + 16
        for i in range(start, start + 48):
            data[i] ^= 0xFF
        path.write_bytes(bytes(data))
    if how == "truncate":  # the CLI names the file and the day to rerun, in one line
        capsys.readouterr()
        for argv in (["query", "SELECT count(*) FROM codex.narrative_chunks_history"], ["inspect", "summary", "--dataset", "narrative"]):
            assert main(["--data-dir", str(warehouse.root), *argv]) == 2
            err = capsys.readouterr().err.strip()
            assert "\n" not in err and str(path) in err and f"codex materialize {DAY}" in err, err

    result = materialize_dataset(warehouse, "narrative", DAY)
    assert result.success
    assert warehouse.read("narrative", "chunks", day).select(["chunk_id", "chunk_text"]).to_pylist() == before
    assert query_catalog(warehouse, "SELECT count(*) FROM codex.narrative_chunks") == [(len(before),)]
    set_aside = list((warehouse.root / QUARANTINE_DIR / "narrative" / "chunks").iterdir())
    assert [p.name.split(".parquet")[0] for p in set_aside] == [DAY]
    rows = query_catalog(warehouse, "SELECT stage, reason FROM codex.narrative_rejects WHERE stage = 'storage'")
    assert len(rows) == 1 and str(path) in rows[0][1] and f"codex materialize {DAY}" in rows[0][1]
    meta = result.asset_materializations_for_node("narrative__raw")[0].metadata
    assert len(meta["damaged_files_set_aside"].value) == 1
