"""A partition writer that cannot start (a full disk, a schema Parquet cannot hold) leaves no temp file behind.

Found by ``bench/bench_faults.py`` on a full data disk: the temp file was created, the Parquet writer
was not, and since the writer never existed its cleanup never ran (the hourly sweep removed it later).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from codex_pipeline.warehouse.storage import PartitionWriter


def test_a_writer_that_fails_to_start_removes_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "warehouse" / "narrative" / "chunks" / "2026-11-24.parquet"
    unwritable = pa.schema([("gap", pa.month_day_nano_interval())])  # pyarrow creates the file, then refuses
    with pytest.raises(pa.ArrowNotImplementedError):
        PartitionWriter(target, unwritable)
    assert list(target.parent.iterdir()) == []


def test_a_writer_that_starts_still_publishes(tmp_path: Path) -> None:
    target = tmp_path / "t.parquet"
    with PartitionWriter(target, pa.schema([("x", pa.int64())])) as w:
        w.write(pa.table({"x": [1, 2]}))
        w.publish()
    assert target.exists() and [p.name for p in tmp_path.iterdir()] == ["t.parquet"]
