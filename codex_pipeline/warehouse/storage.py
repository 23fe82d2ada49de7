"""Where Codex keeps its data: partitioned Parquet files and the DuckDB catalog.

Layout under the data directory (``$CODEX_DATA_DIR``, default ``./data`` in the
checkout)::

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
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR_ENV = "CODEX_DATA_DIR"
CATALOG_FILE = "codex_catalog.duckdb"  # not codex.duckdb: that name collides with schema `codex`
SCHEMA = "codex"
INDEX_DIR = "index"
DOCUMENTS_FILE = "documents.parquet"
CURRENT_TABLES = ("raw", "chunks", "embeddings")
"""Tables with a current view (and a ``_history`` view) once the dataset has a document index."""
HISTORY_SUFFIX = "_history"


def default_data_dir() -> Path:
    """``$CODEX_DATA_DIR``, else ``data/`` in the checkout (or the working directory)."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    base = checkout if (checkout / "pyproject.toml").exists() else Path.cwd()
    return base / "data"


class Warehouse:
    """Paths and atomic Parquet I/O under one data directory."""

    def __init__(self, data_dir: Path | str | None = None) -> None:
        self.root = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()

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
            meta = dict(table.schema.metadata or {})
            meta.update({f"codex.{k}".encode(): v.encode() for k, v in stamp.items()})
            table = table.replace_schema_metadata(meta)
        write_parquet_atomic(table, path)
        return path

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
        path = self.partition_path(dataset, name, day, part)
        if not path.exists():
            raise FileNotFoundError(
                f"no {dataset}/{name} partition for {day}: {path} is missing (materialize it first)"
            )
        return pq.read_table(path)

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
    dictionary pages first costs more than it saves.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=use_dictionary)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
    embeddings carry no ``doc_id``, so they semi-join the current chunk keys. Filters
    on the view (``WHERE chunk_id = ?``) still reach the Parquet scan.
    """
    name = f"{SCHEMA}.{dataset}_{table}"
    history = f"{SCHEMA}.{dataset}_{table}{HISTORY_SUFFIX}"
    if table == "embeddings":
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
    if not warehouse.has_files(dataset, table) or (table == "embeddings" and indexed and not warehouse.has_files(dataset, "chunks")):
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
    """Open the catalog; read-only unless asked, retrying while another process writes."""
    if read_only and not warehouse.catalog_path.exists():
        with file_lock(warehouse.catalog_path.with_suffix(".lock")):
            if not warehouse.catalog_path.exists():
                _connect(warehouse.catalog_path, False, wait_s).close()
    return _connect(warehouse.catalog_path, read_only, wait_s)


def ensure_views(warehouse: Warehouse, views: list[tuple[str, str]], wait_s: float = 60.0) -> list[str]:
    """Make sure ``codex.<dataset>_<table>`` is current for each (dataset, table) with files.

    Views read Parquet globs (and the document index at a fixed path), so new
    partitions show up without touching the DuckDB file: it is written only when a
    view is missing or its definition changed (each view carries a hash of its SQL as
    its comment), one process at a time. Returns the names of the views (re)created.
    """
    wanted: dict[str, str] = {}
    for d, t in views:
        wanted.update(views_for(warehouse, d, t))
    if not wanted:
        return []
    with file_lock(warehouse.catalog_path.with_suffix(".lock")):
        existing: dict[str, str] = {}
        if warehouse.catalog_path.exists():
            con = _connect(warehouse.catalog_path, True, wait_s)
            try:
                existing = dict(
                    con.execute(
                        "SELECT view_name, coalesce(comment, '') FROM duckdb_views() WHERE schema_name = ?", [SCHEMA]
                    ).fetchall()
                )
            finally:
                con.close()
        stale = {n: s for n, s in wanted.items() if existing.get(n) != _fingerprint(s)}
        if not stale:
            return []
        con = _connect(warehouse.catalog_path, False, wait_s)
        try:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            for name, sql in stale.items():  # dict order: a view's dependencies come first
                con.execute(sql)
                con.execute(f"COMMENT ON VIEW {SCHEMA}.{name} IS '{_fingerprint(sql)}'")
        finally:
            con.close()
        return sorted(stale)


def _fingerprint(sql: str) -> str:
    return "codex:" + hashlib.sha256(sql.encode()).hexdigest()[:16]
