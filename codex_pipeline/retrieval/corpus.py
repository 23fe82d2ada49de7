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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from codex_pipeline.propositions.table import EMBEDDINGS_TABLE as PROPOSITION_EMBEDDINGS
from codex_pipeline.propositions.table import TABLE as PROPOSITIONS
from codex_pipeline.retrieval.index import ROW_COLUMNS, IndexManifest, build_search_index, read_manifest
from codex_pipeline.retrieval.proposition_rows import propositions_sql, with_anchors
from codex_pipeline.warehouse.storage import SCHEMA, Warehouse, views_for

SEARCH_INDEX_DIR = "search_index"
SOURCE_TABLES = ("chunks", "raw", "embeddings", "evidence_units", PROPOSITIONS, PROPOSITION_EMBEDDINGS)
LOCK_FILE = ".build.lock"


class IndexBusy(RuntimeError):
    """Another process is building this dataset's index right now."""


def index_root(wh: Warehouse, dataset: str) -> Path:
    """``warehouse/<dataset>/search_index``."""
    return wh.table_dir(dataset, SEARCH_INDEX_DIR)


@dataclass(frozen=True)
class CurrentCorpus:
    chunks: pa.Table
    documents: pa.Table  # doc_id, canonical_text
    embeddings: pa.Table | None
    units: pa.Table | None  # evidence-unit vectors of chunks with several units
    propositions: pa.Table | None = None  # index rows (retrieval.proposition_rows), None: the dataset has none
    proposition_embeddings: pa.Table | None = None
    current: bool = True  # False: the dataset has no document index, every partition was read


def read_current_corpus(
    wh: Warehouse, dataset: str, embedding_model: str | None = None, embedding_version: str | None = None
) -> CurrentCorpus:
    """The current chunks, their documents' canonical text and their vectors."""
    views: dict[str, str] = {}
    for table in SOURCE_TABLES:
        views.update(views_for(wh, dataset, table))
    con = duckdb.connect()
    try:
        con.execute(f"CREATE SCHEMA {SCHEMA}")
        for sql in views.values():
            con.execute(sql)
        have = set(views)
        if f"{dataset}_chunks" not in have:
            empty = pa.schema([(c, pa.string()) for c in ROW_COLUMNS])
            return CurrentCorpus(empty.empty_table(), pa.table({"doc_id": [], "canonical_text": []}), None, None,
                                 current=False)
        cols = ", ".join(ROW_COLUMNS)
        chunks = con.sql(f"SELECT {cols} FROM {SCHEMA}.{dataset}_chunks").to_arrow_table()
        documents = (
            con.sql(
                f"SELECT doc_id, canonical_text FROM {SCHEMA}.{dataset}_raw "
                f"SEMI JOIN (SELECT DISTINCT doc_id, partition_date FROM {SCHEMA}.{dataset}_chunks) USING (doc_id, partition_date)"
            ).to_arrow_table()
            if f"{dataset}_raw" in have
            else pa.table({"doc_id": pa.array([], pa.string()), "canonical_text": pa.array([], pa.large_string())})
        )
        where = " WHERE embedding_model = ? AND embedding_version = ?" if embedding_model and embedding_version else ""
        params = [embedding_model, embedding_version] if where else []

        def vectors(table: str, keys: str, qualify: str = "") -> pa.Table | None:
            """The current rows of ``codex.<dataset>_<table>`` of the wanted model/version, or None without the view."""
            if f"{dataset}_{table}" not in have:
                return None
            sql = f"SELECT {keys}, input_hash, embedding_model, embedding_version, vector FROM {SCHEMA}.{dataset}_{table}"
            return con.sql(sql + where + qualify, params=params).to_arrow_table()

        embeddings = vectors("embeddings", "chunk_id, partition_date")
        if embeddings is not None and f"{dataset}_embeddings_history" in have:
            embeddings = pa.concat_tables([embeddings, _landed_before(con, dataset, where, params, embeddings.schema)])
        # a chunk's one unit (stored for its prefixed vector) is never scored: its evidence is the chunk
        units = vectors("evidence_units", "chunk_id, partition_date, unit_index",
                        " QUALIFY count(*) OVER (PARTITION BY chunk_id, partition_date) > 1")
        props = with_anchors(con.sql(propositions_sql(SCHEMA, dataset)).to_arrow_table()) \
            if f"{dataset}_{PROPOSITIONS}" in have else None
        prop_vectors = vectors(PROPOSITION_EMBEDDINGS, "proposition_id AS chunk_id, partition_date")
    finally:
        con.close()
    return CurrentCorpus(chunks, documents, embeddings, units, props, prop_vectors, f"{dataset}_chunks_history" in have)


def _landed_before(
    con: duckdb.DuckDBPyConnection, dataset: str, where: str, params: list[Any], schema: pa.Schema
) -> pa.Table:
    """Vectors for current chunks that have none yet, made for the same chunk and text on an earlier landing.

    A document landed again has new chunk rows whose vectors come hours later (its
    embeddings step), or never if that run dies. Every chunk whose text did not change
    already has its vector, the one the embeddings step would reuse: its ``input_hash`` is
    the chunk's ``content_hash``. Without it a reader's rebuild in that gap would drop the
    whole document from vector search. Keys are checked first, so the usual build, with
    no chunk missing a vector, never reads the vector column of the history.
    """
    current, history = f"{SCHEMA}.{dataset}_embeddings", f"{SCHEMA}.{dataset}_embeddings_history"
    missing = (f"SELECT c.chunk_id, c.partition_date, c.content_hash FROM {SCHEMA}.{dataset}_chunks c "
               f"ANTI JOIN (SELECT chunk_id, partition_date FROM {current}{where}) e USING (chunk_id, partition_date)")
    if not con.sql(f"SELECT count(*) FROM ({missing})", params=params).fetchall()[0][0]:
        return schema.empty_table()
    sql = (f"SELECT m.chunk_id, m.partition_date, h.input_hash, h.embedding_model, h.embedding_version, h.vector "
           f"FROM ({missing}) m JOIN (SELECT * FROM {history}{where}) h "
           "ON h.chunk_id = m.chunk_id AND h.input_hash = m.content_hash AND h.partition_date < m.partition_date "
           "QUALIFY row_number() OVER (PARTITION BY m.chunk_id, m.partition_date ORDER BY h.partition_date DESC) = 1")
    return con.sql(sql, params=params * 2).to_arrow_table().cast(schema)


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
        corpus = read_current_corpus(wh, dataset, embedding_model, embedding_version)
        manifest = build_search_index(
            root,
            dataset,
            corpus.chunks,
            corpus.documents,
            corpus.embeddings,
            corpus.units,
            propositions=corpus.propositions,
            proposition_embeddings=corpus.proposition_embeddings,
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
