"""Where Codex keeps its data: partitioned Parquet files and the DuckDB catalog.

Layout under the data directory (given by the caller; the Dagster resource and the
CLI take ``$CODEX_DATA_DIR``; default ``./data`` in the checkout)::

    landing/<dataset>/<YYYY-MM-DD>/…                 input files users drop in
    warehouse/<dataset>/<table>/<YYYY-MM-DD>[.<part>].parquet
    warehouse/<dataset>/index/documents.parquet      the current version of every document
    codex_catalog.duckdb                             views `codex.<dataset>_<table>`

Each (dataset, table, day) file is written to a temp file and renamed, so parallel
backfills never share a file and a crash never leaves half a partition visible.
The DuckDB file only holds views over the Parquet globs; it is written rarely
(when a view is missing), under a file lock, and opened read-only everywhere else.

Once a dataset has a document index (:mod:`codex_pipeline.warehouse.current`), its
``raw``, ``chunks`` and ``embeddings`` views show the *current corpus* (each
document's latest landing, deleted documents left out) and ``<table>_history`` views
show every partition. The current views semi-join the history with the index file at
a fixed path, which each materialization replaces atomically: the views themselves
never change when data does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.warehouse.tuning import Tuning

log = logging.getLogger(__name__)

CATALOG_FILE = "codex_catalog.duckdb"  # not codex.duckdb: that name collides with schema `codex`
SCHEMA = "codex"
INDEX_DIR = "index"
DOCUMENTS_FILE = "documents.parquet"
CURRENT_TABLES = ("raw", "chunks", "embeddings", "evidence_units", "propositions", "proposition_embeddings")
CHUNK_KEYED_TABLES = ("embeddings", "evidence_units")
"""Tables keyed by ``chunk_id`` with no ``doc_id``: their current view semi-joins the current chunks."""
"""Tables with a current view (and a ``_history`` view) once the dataset has a document index."""
HISTORY_SUFFIX = "_history"


def default_data_dir() -> Path:
    """``data/`` in the checkout (or the working directory): where a data directory given by nobody is."""
    checkout = Path(__file__).resolve().parents[2]
    base = checkout if (checkout / "pyproject.toml").exists() else Path.cwd()
    return base / "data"


class Warehouse:
    """Paths and atomic Parquet I/O under one data directory.

    ``tuning`` is how the steps given this warehouse use the machine (redirect threads,
    checkpoint frequency): the edge builds it from the environment, everyone else
    takes it from here.
    """

    def __init__(self, data_dir: Path | str | None = None, tuning: Tuning | None = None) -> None:
        self.root = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()
        self.tuning = tuning or Tuning()

    @property
    def catalog_path(self) -> Path:
        return self.root / CATALOG_FILE

    def landing_dir(self, dataset: str, day: dt.date) -> Path:
        return self.root / "landing" / dataset / day.isoformat()

    def table_dir(self, dataset: str, table: str) -> Path:
        return self.root / "warehouse" / dataset / table

    def index_dir(self, dataset: str) -> Path:
        """``warehouse/<dataset>/index``: the document index behind the current views."""
        return self.root / "warehouse" / dataset / INDEX_DIR

    def documents_path(self, dataset: str) -> Path:
        """The document index the current views read (one row per document ever landed)."""
        return self.index_dir(dataset) / DOCUMENTS_FILE

    def partition_path(self, dataset: str, table: str, day: dt.date, part: str | None = None) -> Path:
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
        return (self.table_dir(dataset, name) / "*.parquet").as_posix()

    def has_files(self, dataset: str, name: str) -> bool:
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
        self.tmp = _temp_path(path)
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
            self.tmp, schema, compression="zstd", write_page_checksum=True
        )
        self._closed = False

    def write(self, table: pa.Table) -> None:
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
        os.chmod(self.tmp, _FILE_MODE)
        os.replace(self.tmp, target)
        return target

    def discard(self) -> None:
        self.close()
        self._closed = False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


TEMP_SUFFIX = ".tmp"
"""Temp files are ``.<target name>.<pid>.<random>.tmp`` beside their target."""


def _temp_path(path: Path) -> Path:
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def _stamped(schema: pa.Schema, stamp: dict[str, str]) -> pa.Schema:
    """``schema`` with ``codex.<key>`` footer entries (read back by :meth:`Warehouse.stamp`)."""
    meta = dict(schema.metadata or {})
    meta.update({f"codex.{k}".encode(): v.encode() for k, v in stamp.items()})
    return schema.with_metadata(meta)


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _umask_mode()
"""Files are created ``0666 & ~umask`` (0644 usually), like any tool's, not mkstemp's 0600."""

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


def view_sql(warehouse: Warehouse, dataset: str, table: str) -> str:
    """The view over every partition of a table (its ``_history`` view once current views exist).

    ``<dataset>_chunks`` reports, per chunk, the model and version of the vector
    actually stored for its exact text (null when there is none yet).
    """
    return _history_sql(warehouse, dataset, table, f"{SCHEMA}.{dataset}_{table}")


def _history_sql(warehouse: Warehouse, dataset: str, table: str, name: str) -> str:
    path = _quote(warehouse.glob(dataset, table))
    if table == "chunks" and warehouse.has_files(dataset, "embeddings"):
        emb = _quote(warehouse.glob(dataset, "embeddings"))
        return (
            f"CREATE OR REPLACE VIEW {name} AS "
            "SELECT c.* REPLACE (e.embedding_model AS embedding_model, e.embedding_version AS embedding_version) "
            f"FROM read_parquet('{path}', union_by_name = true) c "
            "LEFT JOIN (SELECT chunk_id, partition_date, input_hash, embedding_model, embedding_version "
            f"FROM read_parquet('{emb}', union_by_name = true)) e "
            "ON e.chunk_id = c.chunk_id AND e.partition_date = c.partition_date AND e.input_hash = c.content_hash"
        )
    return f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}', union_by_name = true)"


def _live_sql(dataset: str) -> str:
    """(doc_id, partition_date) of every live document's current version: at most one row per document."""
    return f"(SELECT doc_id, partition_date FROM {SCHEMA}.{dataset}_documents WHERE deleted_on IS NULL)"


def current_view_sql(warehouse: Warehouse, dataset: str, table: str) -> str:
    """``codex.<dataset>_<table>``: the rows of each live document's current version.

    A semi-join of the history with the document index on ``(doc_id, partition_date)``;
    embeddings and evidence units carry no ``doc_id``, so they semi-join the current chunk keys. Filters
    on the view (``WHERE chunk_id = ?``) still reach the Parquet scan.
    """
    name = f"{SCHEMA}.{dataset}_{table}"
    history = f"{SCHEMA}.{dataset}_{table}{HISTORY_SUFFIX}"
    if table in CHUNK_KEYED_TABLES:
        return (
            f"CREATE OR REPLACE VIEW {name} AS SELECT e.* FROM {history} e "
            f"SEMI JOIN ({current_chunk_keys_sql(warehouse, dataset)}) c "
            "ON e.chunk_id = c.chunk_id AND e.partition_date = c.partition_date"
        )
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT t.* FROM {history} t SEMI JOIN {_live_sql(dataset)} d "
        "ON t.doc_id = d.doc_id AND t.partition_date = d.partition_date"
    )


def current_chunk_keys_sql(warehouse: Warehouse, dataset: str) -> str:
    """``(chunk_id, doc_id, partition_date)`` of every row of ``codex.<dataset>_chunks``: its semi-join on the ids alone.

    Needs the ``codex.<dataset>_documents`` view.
    """
    chunks = _quote(warehouse.glob(dataset, "chunks"))
    return (
        f"SELECT k.chunk_id, k.doc_id, k.partition_date FROM read_parquet('{chunks}', union_by_name = true) k "
        f"SEMI JOIN {_live_sql(dataset)} d ON k.doc_id = d.doc_id AND k.partition_date = d.partition_date"
    )


def documents_view_sql(warehouse: Warehouse, dataset: str) -> str:
    path = _quote(warehouse.documents_path(dataset).as_posix())
    return f"CREATE OR REPLACE VIEW {SCHEMA}.{dataset}_documents AS SELECT * FROM read_parquet('{path}')"


def views_for(warehouse: Warehouse, dataset: str, table: str) -> dict[str, str]:
    """``{view name: SQL}`` for one (dataset, table); empty while the table has no files.

    With a document index, ``raw`` / ``chunks`` / ``embeddings`` give two views: the
    current ``<dataset>_<table>`` and ``<dataset>_<table>_history``; ``documents`` is
    the index itself. Otherwise one view over every partition, as for any other table.
    """
    indexed = warehouse.documents_path(dataset).exists()
    if table == "documents":
        return {f"{dataset}_documents": documents_view_sql(warehouse, dataset)} if indexed else {}
    if not warehouse.has_files(dataset, table) or (table in CHUNK_KEYED_TABLES and indexed and not warehouse.has_files(dataset, "chunks")):
        return {}
    if not (indexed and table in CURRENT_TABLES):
        return {f"{dataset}_{table}": view_sql(warehouse, dataset, table)}
    history = f"{dataset}_{table}{HISTORY_SUFFIX}"
    return {
        f"{dataset}_documents": documents_view_sql(warehouse, dataset),
        history: _history_sql(warehouse, dataset, table, f"{SCHEMA}.{history}"),
        f"{dataset}_{table}": current_view_sql(warehouse, dataset, table),
    }


def _quote(s: str) -> str:
    return s.replace("'", "''")


class CatalogBusy(RuntimeError):
    """The DuckDB file stayed locked by another process for the whole wait."""


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``lock_path`` (created, with its folder), held across processes."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _connect(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                if "lock" in str(exc).lower():
                    raise CatalogBusy(f"{path} is locked by another process: {exc}") from exc
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def connect_catalog(warehouse: Warehouse, read_only: bool = True, wait_s: float = 30.0) -> duckdb.DuckDBPyConnection:
    """Open the catalog, read-only unless asked.

    A missing catalog is built first (from the view registry, possibly empty), so a
    reader never has to create it and never holds the only copy of a view.
    """
    if not warehouse.catalog_path.exists():
        with file_lock(_lock_path(warehouse)):
            if not warehouse.catalog_path.exists():
                _rebuild_catalog(warehouse, _load_registry(warehouse))
    return _connect(warehouse.catalog_path, read_only, wait_s)


def ensure_views(warehouse: Warehouse, views: list[tuple[str, str]]) -> list[str]:
    """Make sure ``codex.<dataset>_<table>`` is current for each (dataset, table).

    Views read Parquet globs (and the document index at a fixed path), so new
    partitions show up without touching the catalog. When a view must be created,
    changed or dropped (its table has no file left), the registry of view SQL
    (``codex_catalog.views.json``) is updated and the DuckDB file is **rebuilt beside
    the old one and renamed over it**: a writer never opens the file readers hold, so
    an open read-only connection (an analyst's notebook, ``codex query``) can neither
    block a run nor be blocked by one; it keeps seeing the views it opened with until
    it reconnects. Returns the names of the views (re)created or dropped.
    """
    with file_lock(_lock_path(warehouse)):
        registry = _load_registry(warehouse)
        changed: set[str] = set()
        # every registered view is re-derived too: a rebuild writes them all, and one
        # whose files went since (a view over an empty glob) must not sink the others
        keys = dict.fromkeys([*registry, *(f"{d}/{t}" for d, t in views)])
        for key in keys:
            dataset, table = key.split("/", 1)
            wanted, had = views_for(warehouse, dataset, table), registry.get(key, {})
            if wanted == had:
                continue
            changed |= {n for n in wanted.keys() | had.keys() if wanted.get(n) != had.get(n)}
            if wanted:
                registry[key] = wanted
            else:
                registry.pop(key, None)
        if not changed and warehouse.catalog_path.exists():
            return []
        failed = _rebuild_catalog(warehouse, registry)
        _write_registry(warehouse, registry)
        mine = {n for d, t in views for n in registry.get(f"{d}/{t}", {})}
        for name in failed.keys() - mine:  # another dataset's problem: its own next run reports it
            log.warning("codex.%s left out of the catalog: %s", name, failed[name])
        if failed.keys() & mine:
            failed = {n: failed[n] for n in failed.keys() & mine}
            raise CatalogError(
                f"views left out of {warehouse.catalog_path} because their files cannot be read: "
                + "; ".join(f"codex.{n}: {why}" for n, why in sorted(failed.items()))
                + " (a damaged file is set aside by the next run of its dataset)"
            )
        return sorted(changed)


class CatalogError(RuntimeError):
    """A view could not be created (a file in its glob is unreadable); the other views were."""


VIEWS_FILE = "codex_catalog.views.json"
"""The catalog's source of truth: ``{"<dataset>/<table>": {view name: SQL}}``; the DuckDB file is built from it."""


def _lock_path(warehouse: Warehouse) -> Path:
    return warehouse.catalog_path.with_suffix(".lock")


def _load_registry(warehouse: Warehouse) -> dict[str, dict[str, str]]:
    path = warehouse.root / VIEWS_FILE
    try:
        loaded = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError:  # a damaged registry: views are derived data, rebuild them as runs come
        return {}
    return {k: dict(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def _write_registry(warehouse: Warehouse, registry: dict[str, dict[str, str]]) -> None:
    path = warehouse.root / VIEWS_FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(registry, indent=1, sort_keys=True))


def _view_rank(name: str) -> int:
    """Creation order: the document index, then history views, then the views built on them."""
    if name.endswith("_documents"):
        return 0
    return 1 if name.endswith(HISTORY_SUFFIX) else 2


def _rebuild_catalog(warehouse: Warehouse, registry: dict[str, dict[str, str]]) -> dict[str, str]:
    """Write every registered view into a fresh DuckDB file, then rename it over the catalog.

    A view that cannot be created (or whose base view could not) is left out and
    returned with the reason; the rest of the catalog is still published.
    """
    sql_by_name: dict[str, str] = {}
    for views in registry.values():
        sql_by_name.update(views)
    failed: dict[str, str] = {}
    warehouse.root.mkdir(parents=True, exist_ok=True)
    with atomic_path(warehouse.catalog_path) as tmp:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            for name in sorted(sql_by_name, key=lambda n: (_view_rank(n), n)):
                try:
                    con.execute(sql_by_name[name])
                except duckdb.Error as exc:
                    failed[name] = " ".join(str(exc).split())[:300]
        finally:
            con.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{tmp}.wal")
    return failed


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside ``path`` to write, renamed over ``path`` on success (mode per umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path)
    try:
        yield tmp
        if tmp.exists():
            os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
