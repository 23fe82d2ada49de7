"""Damaged Parquet files: found, set aside with a reject row, rebuilt by the day's rerun.

A file truncated by a full disk, a copy cut short or a bad block must not break a
dataset's views (DuckDB refuses a glob with one unreadable file) nor the rerun that
would repair it. Every step of a dataset first sweeps the dataset's files with a
cheap check (the ``PAR1`` magic at both ends and a footer length that fits the file:
two small reads per file); the files a step is about to read or replace are checked
in full (footer parsed, every page decoded). A damaged file is moved to
``quarantine/<dataset>/<table>/`` under the data directory, outside every view's
glob, and a row in ``codex.<dataset>_rejects`` names it and the fix. The next run
of that day writes the file again from its inputs; index files are rebuilt from the
raw partitions.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.core.contract import REJECT_SCHEMA
from codex_pipeline.warehouse.storage import INDEX_DIR, Warehouse, write_parquet_atomic

MAGIC = b"PAR1"
QUARANTINE_DIR = "quarantine"
REJECT_PART = "damaged"
"""Reject rows for damaged files go to ``rejects/<day>.damaged.parquet`` (a part no step rewrites)."""


@dataclass(frozen=True)
class DamagedFile:
    """One file set aside: where it was, where it is now, why, and which day rebuilds it."""

    dataset: str
    table: str
    path: Path
    moved_to: Path
    reason: str
    day: dt.date | None

    def message(self) -> str:
        """One line for the log and the reject row: the file, why, where it went and how it gets rebuilt."""
        fix = (
            f"re-materialize {self.dataset} for {self.day} (`codex materialize {self.day}`) to rebuild it"
            if self.day
            else "the next run of the dataset rebuilds it"
        )
        return f"damaged Parquet file {self.path} ({self.reason}): moved to {self.moved_to}; {fix}"


def damage(path: Path, full: bool = False) -> str | None:
    """Why ``path`` is not a readable Parquet file, or None when it is.

    The quick check reads 4 bytes at the start and 8 at the end; ``full=True`` also
    parses the footer and decodes every page, verifying the CRC checksums Codex
    writes (what a flipped byte inside a page needs).
    """
    try:
        size = path.stat().st_size
        if size < 12:
            return f"{size} bytes: shorter than any Parquet file"
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(size - 8)
            tail = fh.read(8)
    except FileNotFoundError:
        return None  # replaced or removed meanwhile: nothing to set aside
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if head != MAGIC or tail[4:] != MAGIC:
        return f"no Parquet magic bytes at the {'start' if head != MAGIC else 'end'}: truncated or not Parquet"
    (footer_len,) = struct.unpack("<i", tail[:4])
    if not 0 < footer_len <= size - 12:
        return f"footer length {footer_len} does not fit a {size}-byte file"
    if full:
        try:
            pf = pq.ParquetFile(path, page_checksum_verification=True)
            for i in range(pf.num_row_groups):
                pf.read_row_group(i)
        except FileNotFoundError:
            return None
        except (pa.ArrowException, OSError, ValueError) as exc:
            return " ".join(str(exc).split())[:200] or type(exc).__name__
    return None


def _day_of(path: Path) -> dt.date | None:
    try:
        return dt.date.fromisoformat(path.name.split(".", 1)[0])
    except ValueError:
        return None


def _quarantine_path(wh: Warehouse, dataset: str, table: str, path: Path) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return wh.root / QUARANTINE_DIR / dataset / table / f"{path.name}.{stamp}"


def set_aside(wh: Warehouse, dataset: str, table: str, path: Path, reason: str) -> DamagedFile | None:
    """Move one damaged file out of its table and record a reject row; None if it is gone already."""
    target = _quarantine_path(wh, dataset, table, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    found = DamagedFile(dataset, table, path, target, reason, _day_of(path))
    _record(wh, found)
    return found


def _record(wh: Warehouse, found: DamagedFile) -> None:
    day = found.day or dt.datetime.now(dt.UTC).date()
    row = {
        "dataset": found.dataset,
        "partition_date": day,
        "stage": "storage",
        "source_file": str(found.moved_to),
        "record_ref": f"{found.table}/{found.path.name}",
        "reason": found.message(),
        "excerpt": None,
        "rejected_at": dt.datetime.now(dt.UTC),
    }
    path = wh.partition_path(found.dataset, "rejects", day, REJECT_PART)
    old = None
    with contextlib.suppress(FileNotFoundError):
        if damage(path, full=True) is None:
            old = pq.read_table(path).cast(REJECT_SCHEMA)
    new = pa.Table.from_pylist([row], schema=REJECT_SCHEMA)
    write_parquet_atomic(pa.concat_tables([old, new]) if old is not None else new, path)


def dataset_files(wh: Warehouse, dataset: str) -> list[tuple[str, Path]]:
    """``(table, path)`` of every Parquet file a view or a step of the dataset reads."""
    base = wh.root / "warehouse" / dataset
    if not base.is_dir():
        return []
    return [
        (table_dir.name, p)
        for table_dir in sorted(base.iterdir())
        if table_dir.is_dir()
        for p in sorted(table_dir.glob("*.parquet"))
    ]


def sweep_dataset(wh: Warehouse, dataset: str, days: Iterable[dt.date] = ()) -> list[DamagedFile]:
    """Set aside every damaged file of a dataset.

    Every file gets the quick check; the files of ``days`` (the partitions a step is
    about to read and replace) and the document index get the full one.
    """
    full_days = {d.isoformat() for d in days}
    out = []
    for table, path in dataset_files(wh, dataset):
        full = table == INDEX_DIR or path.name.split(".", 1)[0] in full_days
        why = damage(path, full=full)
        if why is not None and (found := set_aside(wh, dataset, table, path, why)) is not None:
            out.append(found)
    return out
