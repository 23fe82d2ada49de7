"""Read a dataset's current corpus from the warehouse and (re)build its search index.

The tables come from the same view definitions users query
(``codex.<dataset>_chunks``, ``_raw``, ``_embeddings``, ``_evidence_units``, ``_propositions``,
``_proposition_embeddings``: each live document's latest landing, retracted documents left
out), run on an in-memory DuckDB so a build never takes the catalog file's lock.
:func:`build_search_index` itself takes plain Arrow tables and is tested without a warehouse.

Builds of one dataset are serialized by a lock file; :func:`update_dataset_index` with
``wait=False`` raises :class:`IndexBusy` instead of waiting, so a reader can keep serving
the live version while another process writes the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.propositions.table import EMBEDDINGS_TABLE as PROPOSITION_EMBEDDINGS
from codex_pipeline.propositions.table import TABLE as PROPOSITIONS
from codex_pipeline.retrieval.index_build import build_index
from codex_pipeline.retrieval.index_format import ROW_COLUMNS, IndexManifest, read_manifest
from codex_pipeline.retrieval.index_source import (
    BATCH_ROWS,
    ROW_ORDER,
    DocumentSource,
    RowSource,
    TableDocuments,
    TableRows,
)
from codex_pipeline.retrieval.proposition_rows import propositions_sql, with_anchors
from codex_pipeline.warehouse.catalog_views import SCHEMA, chunk_rows_sql, views_for
from codex_pipeline.warehouse.step_settings import size_bytes
from codex_pipeline.warehouse.storage import Warehouse

SEARCH_INDEX_DIR = "search_index"
SOURCE_TABLES = ("chunks", "raw", "embeddings", "evidence_units", PROPOSITIONS, PROPOSITION_EMBEDDINGS)
LOCK_FILE = ".build.lock"


class IndexBusy(RuntimeError):
    """Another process is building this dataset's index right now."""


def index_root(wh: Warehouse, dataset: str) -> Path:
    """``warehouse/<dataset>/search_index``."""
    return wh.table_dir(dataset, SEARCH_INDEX_DIR)


KEY_SQL = ("CASE WHEN regexp_full_match(chunk_id, 'urn:aprs:chunk:[0-9a-f]{16}') "
           "THEN ('0x' || right(chunk_id, 16))::UBIGINT ELSE ('0x' || left(sha256(chunk_id), 16))::UBIGINT END")
""":func:`~codex_pipeline.retrieval.index_source.chunk_keys` in SQL, so DuckDB sorts by it."""
SORT_SHARE = 4
"""One sort of chunk rows holds at most a quarter of the build's memory. DuckDB's sort of wide rows
(the text) fails rather than spills once they outgrow the limit, so a large corpus is sorted in
ranges of the key (a hash, so ranges of equal width hold about equal rows), one after another."""


@dataclass(frozen=True)
class Views:
    """In-memory DuckDB databases holding a dataset's views, one per query or stream, closed when it ends.

    A database keeps the memory its queries freed (400 MB after the sort of a year of
    chunk rows) until it is closed; the build's graph and term table need that room.
    """

    sql: tuple[str, ...]
    config: Mapping[str, str]

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A new in-memory database holding the views; the caller closes it."""
        con = duckdb.connect(config=dict(self.config))
        con.execute(f"CREATE SCHEMA {SCHEMA}")
        for statement in self.sql:
            con.execute(statement)
        return con

    def fetchall(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Every row of ``sql`` (``params`` bound), on a database closed afterwards."""
        with self.connect() as con:
            return con.sql(sql, params=params or None).fetchall()

    def table(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """The result of ``sql`` (``params`` bound) as one Arrow table, on a database closed afterwards."""
        with self.connect() as con:
            table: pa.Table = con.sql(sql, params=params or None).to_arrow_table()
            return table

    def stream(self, sql: str, params: list[Any] | None = None) -> pa.RecordBatchReader:
        """The result of ``sql`` in batches of :data:`BATCH_ROWS`, on its own database, closed when the
        reader is exhausted or the query fails."""
        con = self.connect()
        try:
            reader = con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
        except BaseException:
            con.close()
            raise

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from reader
            finally:
                con.close()

        return pa.RecordBatchReader.from_batches(reader.schema, batches())


@dataclass
class WarehouseRows:
    """The current chunks of a dataset and their vectors, read through its views as sorted streams."""

    views: Views
    dataset: str
    have: set[str]
    where: str
    params: list[Any]
    chunk_rows: str  # :func:`~codex_pipeline.warehouse.catalog_views.chunk_rows_sql`
    sort_ranges: int = 1  # :func:`sort_ranges`

    def rows(self, columns: Sequence[str]) -> pa.RecordBatchReader:
        """:meth:`RowSource.rows` of the current chunks, sorted (and ``key`` computed) by DuckDB, one key
        range at a time (:data:`SORT_SHARE`)."""
        order = ", ".join(f"{c}{' DESC' if d == 'descending' else ''}" for c, d in ROW_ORDER)
        keyed = f"SELECT {', '.join(columns)}, {KEY_SQL} AS key FROM ({self.chunk_rows})"
        bounds = [i * (2**64 // self.sort_ranges) for i in range(self.sort_ranges)]
        queries = [f"SELECT * FROM ({keyed}) WHERE key >= {lo}::UBIGINT"
                   + (f" AND key < {bounds[i + 1]}::UBIGINT" if i + 1 < len(bounds) else "")
                   + f" ORDER BY {order}" for i, lo in enumerate(bounds)]
        first = self.views.stream(queries[0])

        def batches() -> Iterator[pa.RecordBatch]:
            yield from first
            for sql in queries[1:]:
                yield from self.views.stream(sql)

        return pa.RecordBatchReader.from_batches(first.schema, batches())

    def vector_models(self) -> list[tuple[str, str, int]]:
        """:meth:`RowSource.vector_models` of the embeddings view, of the wanted model only when one was given."""
        if f"{self.dataset}_embeddings" not in self.have:
            return []
        sql = (f"SELECT embedding_model, embedding_version, count(*) FROM {SCHEMA}.{self.dataset}_embeddings"
               f"{self.where} GROUP BY ALL")
        return [(m, v, n) for m, v, n in self.views.fetchall(sql, self.params)]

    def vectors(self, columns: Sequence[str]) -> pa.RecordBatchReader | None:
        """:meth:`RowSource.vectors` of the embeddings view; a current chunk without a vector of the wanted
        model takes the one made for the same text on an earlier landing (:func:`_landed_before_sql`)."""
        if f"{self.dataset}_embeddings" not in self.have:
            return None
        cols = ", ".join(columns)
        sql = f"SELECT {cols} FROM {SCHEMA}.{self.dataset}_embeddings{self.where}"
        params = list(self.params)
        if f"{self.dataset}_embeddings_history" in self.have and self._missing_vectors():
            sql += f" UNION ALL SELECT {cols} FROM ({_landed_before_sql(self.dataset, self.where)})"
            params += self.params * 2
        return self.views.stream(sql, params)

    def _missing_vectors(self) -> bool:
        return bool(self.views.fetchall(f"SELECT count(*) FROM ({_missing_sql(self.dataset, self.where)})",
                                        self.params)[0][0])

    def units(self, columns: Sequence[str]) -> pa.RecordBatchReader | None:
        """A chunk's one unit (stored for its prefixed vector) is never scored: its evidence is the chunk."""
        table = f"{SCHEMA}.{self.dataset}_evidence_units"
        if f"{self.dataset}_evidence_units" not in self.have:
            return None
        several = f"SELECT chunk_id, partition_date FROM {table}{self.where} GROUP BY ALL HAVING count(*) > 1"
        return self.views.stream(f"SELECT {', '.join(columns)} FROM {table} SEMI JOIN ({several}) USING "
                                 f"(chunk_id, partition_date){self.where}", self.params * 2)


@dataclass
class WarehouseDocuments:
    """A :class:`DocumentSource` over a dataset's raw view."""

    views: Views
    dataset: str

    def documents(self) -> pa.RecordBatchReader:
        """``doc_id``, ``partition_date`` and ``canonical_text`` of every row of the raw view; the build keeps
        those its rows cite."""
        # no join with the chunks here: the build keeps the (doc_id, partition_date) its rows cite, and the chunks
        # view's joins cost DuckDB more than its memory limit at a year of partitions
        return self.views.stream(f"SELECT doc_id, partition_date, canonical_text FROM {SCHEMA}.{self.dataset}_raw")


def _no_documents() -> TableDocuments:
    """A dataset without raw records (or chunks) yet (made on use: a module-level Arrow array imports pandas)."""
    return TableDocuments(pa.table({"doc_id": pa.array([], pa.string()),
                                    "canonical_text": pa.array([], pa.large_string())}))


@dataclass(frozen=True)
class CurrentCorpus:
    """A dataset's current corpus as an index build reads it (:func:`open_current_corpus`)."""

    rows: RowSource
    documents: DocumentSource
    propositions: RowSource | None = None  # index rows (retrieval.proposition_rows), None: the dataset has none
    current: bool = True  # False: the dataset has no document index, every partition was read


@contextlib.contextmanager
def open_current_corpus(
    wh: Warehouse, dataset: str, embedding_model: str | None = None, embedding_version: str | None = None,
    spill: Path | None = None,
) -> Iterator[CurrentCorpus]:
    """The current chunks, their documents' canonical text and their vectors, as streams over the views.

    Chunk rows are sorted by DuckDB within the warehouse's build memory
    (:meth:`~codex_pipeline.warehouse.step_settings.StepSettings.build_memory`), spilling to a
    scratch folder in ``spill`` (the system's temporary folder when None), removed afterwards.
    Propositions are read into memory (with their anchors resolved in Python).
    """
    views: dict[str, str] = {}
    for table in SOURCE_TABLES:
        views.update(views_for(wh, dataset, table))
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-spill-", dir=spill))
    memory = wh.steps.build_memory()
    config = {"memory_limit": memory, "temp_directory": str(scratch)}
    db = Views(tuple(views.values()), config)
    have = set(views)
    try:
        if f"{dataset}_chunks" not in have:
            empty = pa.schema([(c, pa.string()) for c in ROW_COLUMNS])
            yield CurrentCorpus(TableRows(empty.empty_table()), _no_documents(), current=False)
            return
        where = " WHERE embedding_model = ? AND embedding_version = ?" if embedding_model and embedding_version else ""
        params = [embedding_model, embedding_version] if where else []
        props = None
        if f"{dataset}_{PROPOSITIONS}" in have:
            prop_vectors = None
            if f"{dataset}_{PROPOSITION_EMBEDDINGS}" in have:
                prop_vectors = db.table(
                    "SELECT proposition_id AS chunk_id, partition_date, input_hash, embedding_model, "
                    f"embedding_version, vector FROM {SCHEMA}.{dataset}_{PROPOSITION_EMBEDDINGS}{where}", params)
            prop_rows = with_anchors(db.table(propositions_sql(SCHEMA, dataset)))
            props = TableRows(prop_rows, prop_vectors) if prop_rows.num_rows else None
        yield CurrentCorpus(WarehouseRows(db, dataset, have, where, params, chunk_rows_sql(wh, dataset),
                                          sort_ranges(wh, dataset, memory)),
                            WarehouseDocuments(db, dataset) if f"{dataset}_raw" in have else _no_documents(),
                            props, f"{dataset}_chunks_history" in have)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sort_ranges(wh: Warehouse, dataset: str, memory: str) -> int:
    """How many key ranges the chunk rows are sorted in: their stored size (the Parquet row groups'
    uncompressed bytes, every partition: an upper bound of the current rows) over a
    :data:`SORT_SHARE` of ``memory``."""
    stored = sum(_uncompressed_bytes(f) for f in wh.table_dir(dataset, "chunks").glob("*.parquet"))
    return max(1, -(-stored * SORT_SHARE // size_bytes(memory)))


def _uncompressed_bytes(path: Path) -> int:
    try:
        meta = pq.read_metadata(path)
    except (OSError, pa.ArrowException):  # a damaged file: the sort's scan names it (and the day to rerun)
        return path.stat().st_size if path.exists() else 0
    return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))


def _missing_sql(dataset: str, where: str) -> str:
    """Current chunks with no vector of the wanted model yet (``where``'s parameters once)."""
    return (f"SELECT c.chunk_id, c.partition_date, c.content_hash FROM {SCHEMA}.{dataset}_chunks c "
            f"ANTI JOIN (SELECT chunk_id, partition_date FROM {SCHEMA}.{dataset}_embeddings{where}) e "
            "USING (chunk_id, partition_date)")


def _landed_before_sql(dataset: str, where: str) -> str:
    """Vectors for current chunks that have none yet, made for the same chunk and text on an earlier landing
    (``where``'s parameters twice).

    A document landed again has new chunk rows whose vectors come hours later (its
    embeddings step), or never if that run dies. Every chunk whose text did not change
    already has its vector, the one the embeddings step would reuse: its ``input_hash`` is
    the chunk's ``content_hash``. Without it a reader's rebuild in that gap would drop the
    whole document from vector search. Keys are checked first
    (:meth:`WarehouseRows._missing_vectors`), so the usual build, with no chunk missing a
    vector, never reads the vector column of the history.
    """
    history = f"{SCHEMA}.{dataset}_embeddings_history"
    return ("SELECT m.chunk_id, m.partition_date, h.input_hash, h.embedding_model, h.embedding_version, h.vector "
            f"FROM ({_missing_sql(dataset, where)}) m JOIN (SELECT * FROM {history}{where}) h "
            "ON h.chunk_id = m.chunk_id AND h.input_hash = m.content_hash AND h.partition_date < m.partition_date "
            "QUALIFY row_number() OVER (PARTITION BY m.chunk_id, m.partition_date ORDER BY h.partition_date DESC) = 1")


def source_fingerprint(wh: Warehouse, dataset: str) -> dict[str, str]:
    """What the index is built from: the document index and every file of :data:`SOURCE_TABLES` (name, size, mtime).

    Equal fingerprints mean equal inputs, so a materialization can skip the rebuild.
    """
    files: list[Path] = [wh.documents_path(dataset)]
    for table in SOURCE_TABLES:
        files += sorted(wh.partitions(dataset, table).values())
    digest = hashlib.sha256()
    for f in files:
        try:
            st = f.stat()
        except FileNotFoundError:
            continue
        digest.update(f"{f.parent.name}/{f.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return {"inputs": digest.hexdigest()[:16], "files": str(len(files))}


def update_dataset_index(
    wh: Warehouse,
    dataset: str,
    embedding_model: str | None = None,
    embedding_version: str | None = None,
    force: bool = False,
    wait: bool = True,
) -> tuple[IndexManifest, bool]:
    """Rebuild ``dataset``'s index from its current corpus unless its inputs are unchanged.

    Returns (the live manifest, whether a new version was built). Builds of one
    dataset are serialized by a file lock, and the fingerprint is taken under it;
    ``wait=False`` raises :class:`IndexBusy` when another build holds it.
    """
    root = index_root(wh, dataset)
    with build_lock(root, wait):  # concurrent runs of one dataset: each build reads what the previous one left
        source = {**source_fingerprint(wh, dataset), "embedding": f"{embedding_model} {embedding_version}"}
        live = read_manifest(root)
        if live is not None and not force and is_current(live, source):
            return live, False
        with open_current_corpus(wh, dataset, embedding_model, embedding_version, spill=root) as corpus:
            manifest = build_index(
                root,
                dataset,
                corpus.rows,
                corpus.documents,
                propositions=corpus.propositions,
                embedding_model=embedding_model,
                embedding_version=embedding_version,
                source={**source, "current_corpus": "yes" if corpus.current else "no document index: every partition"},
            )
    return manifest, True


def is_current(live: IndexManifest, source: dict[str, str]) -> bool:
    """Whether ``live`` was built, in this format, from exactly the inputs ``source`` fingerprints."""
    return live.current_format and all(live.source.get(k) == v for k, v in source.items())


def index_is_current(wh: Warehouse, dataset: str, embedding: tuple[str | None, str | None] | None) -> bool:
    """Whether the live index holds the current inputs (and, unless ``embedding`` is None, that model's vectors)."""
    live = read_manifest(index_root(wh, dataset))
    if live is None:
        return False
    source = source_fingerprint(wh, dataset)
    if embedding is not None:
        source["embedding"] = f"{embedding[0]} {embedding[1]}"
    return is_current(live, source)


@contextlib.contextmanager
def build_lock(root: Path, wait: bool = True) -> Iterator[None]:
    """One build per dataset at a time, so an older snapshot of the corpus never goes live after a newer one."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise IndexBusy(f"{root}: another process is building this index") from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
