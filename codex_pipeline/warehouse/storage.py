"""Where Codex keeps its data: partitioned Parquet files and the DuckDB catalog.

Layout under the data directory (given by the caller; the Dagster resource and the
CLI take ``$CODEX_DATA_DIR``; default ``./data`` in the checkout)::

    landing/<dataset>/<YYYY-MM-DD>/…                 input files users drop in
    warehouse/<dataset>/<table>/<YYYY-MM-DD>[.<part>].parquet
    warehouse/<dataset>/index/documents.parquet      the current version of every document
    codex_catalog.duckdb                             views `codex.<dataset>_<table>`

Each (dataset, table, day) file is written to a temp file and renamed, so parallel
backfills never share a file and a crash never leaves half a partition visible.
The DuckDB catalog of views over those files lives in
:mod:`~codex_pipeline.warehouse.catalog` (its SQL in
:mod:`~codex_pipeline.warehouse.catalog_views`), which builds on this module.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.warehouse.atomic_files import FILE_MODE, TEMP_SUFFIX, atomic_path, temp_path
from codex_pipeline.warehouse.step_settings import StepSettings

CATALOG_FILE = "codex_catalog.duckdb"  # not codex.duckdb: that name collides with schema `codex`
INDEX_DIR = "index"
DOCUMENTS_FILE = "documents.parquet"


def default_data_dir() -> Path:
    """``data/`` in the checkout (or the working directory): where a data directory given by nobody is."""
    checkout = Path(__file__).resolve().parents[2]
    base = checkout if (checkout / "pyproject.toml").exists() else Path.cwd()
    return base / "data"


class Warehouse:
    """Paths and atomic Parquet I/O under one data directory.

    ``steps`` is how the steps given this warehouse use the machine (redirect threads,
    checkpoint frequency): the edge builds it from the environment, everyone else
    takes it from here.
    """

    def __init__(self, data_dir: Path | str | None = None, steps: StepSettings | None = None) -> None:
        self.root = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()
        self.steps = steps or StepSettings()

    @property
    def catalog_path(self) -> Path:
        """The DuckDB catalog file (``codex_catalog.duckdb``) holding the ``codex`` views."""
        return self.root / CATALOG_FILE

    def landing_dir(self, dataset: str, day: dt.date) -> Path:
        """``landing/<dataset>/<YYYY-MM-DD>``: where a day's source files arrive."""
        return self.root / "landing" / dataset / day.isoformat()

    def table_dir(self, dataset: str, table: str) -> Path:
        """``warehouse/<dataset>/<table>``: the table's partition files."""
        return self.root / "warehouse" / dataset / table

    def index_dir(self, dataset: str) -> Path:
        """``warehouse/<dataset>/index``: the document index behind the current views."""
        return self.root / "warehouse" / dataset / INDEX_DIR

    def documents_path(self, dataset: str) -> Path:
        """The document index the current views read (one row per document ever landed)."""
        return self.index_dir(dataset) / DOCUMENTS_FILE

    def partition_path(self, dataset: str, table: str, day: dt.date, part: str | None = None) -> Path:
        """``<table_dir>/<YYYY-MM-DD>[.<part>].parquet`` (a ``part`` file is one :meth:`partitions` skips)."""
        name = day.isoformat() + (f".{part}" if part else "") + ".parquet"
        return self.table_dir(dataset, table) / name

    def write(
        self,
        table: pa.Table,
        dataset: str,
        name: str,
        day: dt.date,
        part: str | None = None,
        stamp: dict[str, str] | None = None,
    ) -> Path:
        """Write one partition atomically (temp file in the same folder, then rename).

        ``stamp`` goes into the Parquet footer (e.g. the chunking version a partition
        was built with), where sensors read it without scanning the rows.
        """
        path = self.partition_path(dataset, name, day, part)
        if stamp:
            table = table.replace_schema_metadata(_stamped(table.schema, stamp).metadata)
        write_parquet_atomic(table, path)
        return path

    def writer(
        self, dataset: str, name: str, day: dt.date, schema: pa.Schema, stamp: dict[str, str] | None = None
    ) -> PartitionWriter:
        """A partition written in row groups (bounded memory), published atomically at the end."""
        return PartitionWriter(self.partition_path(dataset, name, day), _stamped(schema, stamp) if stamp else schema)

    def remove(self, dataset: str, name: str, day: dt.date, part: str | None = None) -> None:
        """Delete a day's file of table ``name`` (or its ``part``); nothing happens if it is absent."""
        with contextlib.suppress(FileNotFoundError):
            self.partition_path(dataset, name, day, part).unlink()

    def move(self, dataset: str, name: str, to: str, day: dt.date) -> bool:
        """Rename a day's file of table ``name`` to table ``to`` (atomic: same folder tree); False if absent."""
        src, dst = self.partition_path(dataset, name, day), self.partition_path(dataset, to, day)
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(src, dst)
        except FileNotFoundError:
            return False
        return True

    def read(self, dataset: str, name: str, day: dt.date, part: str | None = None) -> pa.Table:
        """A day's partition, whole; FileNotFoundError saying to materialize it when it is missing."""
        return pq.read_table(self._existing(dataset, name, day, part))

    def read_groups(self, dataset: str, name: str, day: dt.date) -> Iterator[pa.Table]:
        """A partition one row group at a time: what a step streams instead of reading the day whole."""
        with pq.ParquetFile(self._existing(dataset, name, day)) as pf:
            for i in range(pf.num_row_groups):
                yield pf.read_row_group(i)

    def _existing(self, dataset: str, name: str, day: dt.date, part: str | None = None) -> Path:
        path = self.partition_path(dataset, name, day, part)
        if not path.exists():
            raise FileNotFoundError(
                f"no {dataset}/{name} partition for {day}: {path} is missing (materialize it first)"
            )
        return path

    def partitions(self, dataset: str, name: str) -> dict[dt.date, Path]:
        """Existing whole-day partition files of a table, by day."""
        d = self.table_dir(dataset, name)
        out = {}
        for p in sorted(d.glob("*.parquet")) if d.is_dir() else []:
            try:
                out[dt.date.fromisoformat(p.name.removesuffix(".parquet"))] = p
            except ValueError:
                continue  # a `.part` file such as rejects/<day>.ingest.parquet
        return out

    def stamp(self, path: Path) -> dict[str, str]:
        """The ``codex.*`` footer entries written with :meth:`write`."""
        meta = pq.read_schema(path).metadata or {}
        return {k.decode()[6:]: v.decode() for k, v in meta.items() if k.startswith(b"codex.")}

    def glob(self, dataset: str, name: str) -> str:
        """Every Parquet file of the table (``part`` files too), as a glob for DuckDB's ``read_parquet``."""
        return (self.table_dir(dataset, name) / "*.parquet").as_posix()

    def has_files(self, dataset: str, name: str) -> bool:
        """The table's folder holds at least one Parquet file (``part`` files count)."""
        d = self.table_dir(dataset, name)
        return d.is_dir() and any(d.glob("*.parquet"))


def write_parquet_atomic(table: pa.Table, path: Path, use_dictionary: bool = True) -> None:
    """Write to a temp file in the same folder, then rename: readers see all or nothing.

    ``use_dictionary=False`` for tables of mostly unique strings (ids), where trying
    dictionary pages first costs more than it saves. Pages carry CRC checksums, so a
    flipped byte is found (:mod:`~codex_pipeline.warehouse.integrity`), not read as data.
    """
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=use_dictionary, write_page_checksum=True)


class PartitionWriter:
    """Streams row groups into a temp file beside the target; :meth:`publish` renames it.

    Used as a context manager: leaving the block without publishing (an error, or a
    caller that decided not to publish) removes the temp file. ``publish(to=...)``
    may name another target in the same data directory (a quarantined table).
    """

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path = path
        self.schema = schema
        self.rows = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = temp_path(path)
        try:
            self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
                self.tmp, schema, compression="zstd", write_page_checksum=True
            )
        except BaseException:  # a full disk: the file was created, the writer not (no __exit__ will run)
            self.tmp.unlink(missing_ok=True)
            raise
        self._closed = False

    def write(self, table: pa.Table) -> None:
        """Append ``table`` cast to the writer's schema (empty: nothing); ValueError once published or discarded."""
        if self._writer is None:
            raise ValueError(f"{self.path}: already published or discarded")
        if table.num_rows:
            self._writer.write_table(table.replace_schema_metadata(self.schema.metadata).cast(self.schema))
            self.rows += table.num_rows

    def close(self) -> None:
        """Finish the file (footer written) so it can be read back before it is published."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._closed = True

    def publish(self, to: Path | None = None) -> Path:
        """Close the file and rename it over ``to`` (default: the target); returns the path written."""
        if self._writer is None and not self._closed:
            raise ValueError(f"{self.path}: already published or discarded")
        self.close()
        self._closed = False
        target = to or self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.tmp, FILE_MODE)
        os.replace(self.tmp, target)
        return target

    def discard(self) -> None:
        """Delete the temp file unpublished (a no-op after :meth:`publish`); the writer takes no more rows."""
        self.close()
        self._closed = False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def _stamped(schema: pa.Schema, stamp: dict[str, str]) -> pa.Schema:
    """``schema`` with ``codex.<key>`` footer entries (read back by :meth:`Warehouse.stamp`)."""
    meta = dict(schema.metadata or {})
    meta.update({f"codex.{k}".encode(): v.encode() for k, v in stamp.items()})
    return schema.with_metadata(meta)


STALE_TEMP_AGE_S = 3600.0
"""A temp file untouched this long belongs to a dead writer: a write keeps its file's mtime fresh."""


def sweep_temp_files(root: Path, older_than_s: float = STALE_TEMP_AGE_S) -> list[Path]:
    """Remove temp files a killed writer left under ``root``; returns what was removed.

    Writers stream into their temp file, so one not modified for ``older_than_s``
    (default an hour) has no live writer; younger ones are left alone.
    """
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    cutoff = time.time() - older_than_s
    for tmp in root.rglob(f".*{TEMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            if tmp.is_file() and tmp.stat().st_mtime < cutoff:
                tmp.unlink()
                removed.append(tmp)
    return removed
