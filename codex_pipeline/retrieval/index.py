"""The search index of one dataset: built from its current corpus, opened memory-mapped.

Layout, under ``warehouse/<dataset>/search_index/``::

    CURRENT                 name of the live version folder (replaced atomically)
    v-<utc stamp>-<rand>/
        manifest.json       what was indexed, with which model and analyzer
        rows.arrow          one row per current chunk, sorted by key (Arrow IPC, uncompressed, batches of 256 rows)
        docs.arrow          canonical text of each current document (spans and context come from it; batches of 32)
        bm25/               term ids per chunk and the BM25 score matrix (.npy; columns read per query)
        vectors.usearch     HNSW graph over f16 vectors, keyed like rows.arrow (opened as a view)
        units.npy           f16 vectors of the evidence units of chunks with several (rows' unit_start/unit_count)
        unit_keys.npy       uint64 key of each unit's embedded text (retrieval.units.unit_key), to verify it
        propositions/       the same files (but docs.arrow) for the dataset's current propositions, when it has any

Propositions (seed 002) are a second collection of the same version: their rows in the
chunk columns (the statement as ``chunk_text``, its spans as the anchor, the parent's
type and metadata), their own BM25 statistics and graph, the version's docs.arrow. One
build writes both and one swap publishes both, so a proposition and its parent chunk are
always read from the same snapshot, and chunk scores never depend on propositions.

A build writes a new version folder next to the live one and then swaps
``CURRENT``: a reader holding the previous version keeps reading it (the previous
folder is kept; older ones are removed), a crash leaves the live version untouched.

**Why HNSW, and why f16.** An exact scan (a float32 mat-vec over a memory-mapped
matrix, or usearch's int8 scan) costs a large part of a second per query at the corpus
sizes the index serves and maps the whole matrix. An HNSW graph (usearch,
connectivity 16) answers in milliseconds and touches a few hundred vectors per
query, so a memory-mapped view keeps the search process small. f16 halves the
file at practically no recall cost against f32; int8 loses more (figures in
``docs/history.md``). Graph construction is the expensive part, so a
rebuild **reuses the previous graph**: vectors of chunks whose id, text and vector are
unchanged stay, only removed and changed ones are taken out and new ones added; a
fresh graph is built when more than :data:`REBUILD_FRACTION` of it would change.

**Keys.** A chunk id is ``urn:aprs:chunk:`` + 16 hex digits: that 64-bit number is
the chunk's key in the graph and the sort order of ``rows.arrow`` (another id
format is hashed to 64 bits). A point lookup by ``chunk_id`` is a binary search.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from usearch.index import Index

from codex_pipeline.retrieval import bm25
from codex_pipeline.retrieval.lexical import ANALYZER_VERSION, analyze, stemming
from codex_pipeline.retrieval.units import context_prefix

FORMAT_VERSION = "5"  # 5: stored evidence-unit vectors (4: rows/docs in record batches read per hit; 3: BM25 context prefix)
CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"
ROWS_FILE = "rows.arrow"
DOCS_FILE = "docs.arrow"
BM25_DIR = "bm25"
VECTORS_FILE = "vectors.usearch"
UNITS_FILE = "units.npy"
UNIT_KEYS_FILE = "unit_keys.npy"
VECTOR_DTYPE = "f16"
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 128
ROWS_PER_BATCH = 256
"""Record batch size of rows.arrow: a hit reads its batch (~250 KB) with one pread, nothing is mapped."""
DOCS_PER_BATCH = 32
"""Record batch size of docs.arrow (canonical texts are a few KB each)."""
REBUILD_FRACTION = 0.3
"""Rebuild the graph from scratch when more than this share of its vectors would be removed."""

ROW_COLUMNS = (
    "chunk_id",
    "doc_id",
    "section_id",
    "chunk_type",
    "parent_chunk_id",
    "seq_index",
    "partition_date",
    "locator",
    "evidence_anchor",
    "metadata",
    "content_hash",
    "chunk_text",
)
PROPOSITION_COLUMNS = ("alignment_score", "extractor")
"""Kept beside :data:`ROW_COLUMNS` in the propositions collection (see :mod:`~codex_pipeline.retrieval.proposition_rows`)."""
PROPOSITIONS_DIR = "propositions"
BATCH_ROWS_KEY = b"codex.batch_rows"
NUM_ROWS_KEY = b"codex.num_rows"
_URN_CHUNK = re.compile(r"^urn:aprs:chunk:[0-9a-f]{16}$")


@dataclass(frozen=True)
class IndexManifest:
    """What one index version holds, and how it was made."""

    dataset: str
    version: str
    built_at: str
    chunks: int
    documents: int
    vectors: int
    missing_vectors: int  # current chunks with no vector of this model/version for their exact text
    duplicate_chunk_ids: int  # rows dropped because their chunk_id was already indexed
    embedding_model: str | None
    embedding_version: str | None
    dimensions: int
    vectors_reused: int  # taken over from the previous version's graph
    graph: str  # "built" | "updated" | "none"
    build_seconds: float
    analyzer: str
    terms_reused: int = 0  # chunks whose analyzed terms were taken over (not analyzed again)
    units: int = 0  # stored evidence-unit vectors (of chunks with several units)
    propositions: int = 0  # rows of the propositions/ collection (seed 002)
    proposition_vectors: int = 0
    format_version: str = FORMAT_VERSION
    source: Mapping[str, str] = field(default_factory=dict)  # fingerprint of the inputs

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexManifest:
        """Tolerant of other format versions: unknown keys are dropped (check ``format_version``)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def current_format(self) -> bool:
        return self.format_version == FORMAT_VERSION and self.analyzer == analyzer_id()

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["source"] = dict(self.source)
        return out


def analyzer_id() -> str:
    return f"{ANALYZER_VERSION}/{stemming()}"


def chunk_keys(chunk_ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The 64-bit key of each chunk id (its 16 hex digits; any other format is hashed)."""
    out = np.empty(len(chunk_ids), np.uint64)
    for i, cid in enumerate(chunk_ids.to_pylist()):
        out[i] = int(cid[-16:], 16) if _URN_CHUNK.match(cid) else int.from_bytes(
            hashlib.sha256(cid.encode()).digest()[:8], "big"
        )
    return out


def build_search_index(
    root: Path,
    dataset: str,
    chunks: pa.Table,
    documents: pa.Table,
    embeddings: pa.Table | None = None,
    units: pa.Table | None = None,
    *,
    propositions: pa.Table | None = None,
    proposition_embeddings: pa.Table | None = None,
    embedding_model: str | None = None,
    embedding_version: str | None = None,
    source: Mapping[str, str] | None = None,
    reuse: bool = True,
    keep_versions: int = 2,
) -> IndexManifest:
    """Write a new index version of ``dataset`` under ``root`` and make it current.

    ``chunks``: the current chunk rows (contract columns); ``documents``: ``doc_id``
    and ``canonical_text`` of the current documents; ``embeddings``: ``chunk_id``,
    ``partition_date``, ``input_hash``, ``embedding_model``, ``embedding_version``,
    ``vector`` — only vectors of ``embedding_model``/``embedding_version`` (default:
    the most common pair) computed from a chunk's exact current text are indexed;
    ``units``: the evidence-unit vectors (``codex.<dataset>_evidence_units``: ``chunk_id``,
    ``partition_date``, ``unit_index``, ``input_hash``, model, version, ``vector``) of that pair.
    ``propositions`` (rows in the chunk columns, see :mod:`~codex_pipeline.retrieval.proposition_rows`) and their
    ``proposition_embeddings`` (keyed like ``embeddings``) become the ``propositions/`` collection of the same
    version: same analyzer, same graph parameters, swapped with the chunks in one step.
    With ``reuse``, the live version's terms and graphs are updated instead of rebuilt.
    """
    t0 = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    rows, duplicates = _rows(chunks, ROW_COLUMNS)
    docs = _docs(documents, rows)
    model, version = _pick_model(embeddings, embedding_model, embedding_version)
    name = f"v-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}"
    tmp = root / f".tmp-{name}"
    tmp.mkdir()
    try:
        _write_arrow(docs, tmp / DOCS_FILE, DOCS_PER_BATCH)
        previous = _live_dir(root) if reuse else None
        made = _write_collection(tmp, rows, docs, embeddings, units, previous, model, version)
        props = _CollectionStats()
        if propositions is not None and propositions.num_rows:
            prop_rows, _ = _rows(propositions, ROW_COLUMNS + PROPOSITION_COLUMNS)
            earlier = previous / PROPOSITIONS_DIR if previous is not None else None
            props = _write_collection(tmp / PROPOSITIONS_DIR, prop_rows, docs, proposition_embeddings, None,
                                      earlier if earlier is not None and (earlier / MANIFEST_FILE).exists() else None,
                                      model, version)
        manifest = IndexManifest(
            dataset=dataset,
            version=name,
            built_at=dt.datetime.now(dt.UTC).isoformat(),
            chunks=made.rows,
            documents=docs.num_rows,
            vectors=made.vectors,
            missing_vectors=made.rows - made.vectors,
            duplicate_chunk_ids=duplicates,
            embedding_model=model,
            embedding_version=version,
            dimensions=made.dimensions or props.dimensions,
            units=made.units,
            vectors_reused=made.vectors_reused,
            terms_reused=made.terms_reused,
            graph=made.graph,
            build_seconds=round(time.perf_counter() - t0, 3),
            analyzer=analyzer_id(),
            propositions=props.rows,
            proposition_vectors=props.vectors,
            source=dict(source or {}),
        )
        (tmp / MANIFEST_FILE).write_text(json.dumps(manifest.as_dict(), indent=1))
        if props.rows:
            collection = {**manifest.as_dict(), "dimensions": props.dimensions, "chunks": props.rows}
            (tmp / PROPOSITIONS_DIR / MANIFEST_FILE).write_text(json.dumps(collection, indent=1))
        os.replace(tmp, root / name)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if _disk_full(exc):  # pyarrow and numpy name the cause but not the file
            raise disk_error(tmp, 0, " ".join(str(exc).split()), full=True) from exc
        raise
    _set_current(root, name)
    _collect(root, keep_versions)
    return manifest


def _disk_full(exc: BaseException) -> bool:
    """A write that failed for want of space, whoever raised it (errno 28, or pyarrow's message of it)."""
    return isinstance(exc, OSError) and not isinstance(exc, IndexWriteError) \
        and (exc.errno == errno.ENOSPC or "No space left on device" in str(exc))


@dataclass(frozen=True)
class _CollectionStats:
    rows: int = 0
    vectors: int = 0
    dimensions: int = 0
    units: int = 0
    vectors_reused: int = 0
    terms_reused: int = 0
    graph: str = "none"


def _write_collection(
    folder: Path,
    rows: pa.Table,
    docs: pa.Table,
    embeddings: pa.Table | None,
    units: pa.Table | None,
    previous: Path | None,
    model: str | None,
    version: str | None,
) -> _CollectionStats:
    """rows.arrow, bm25/, the HNSW graph and unit vectors of one collection (chunks, or propositions) in ``folder``."""
    folder.mkdir(exist_ok=True)
    rows = _link(rows, docs)
    vectors, has_vector = _vectors(rows, embeddings, model, version)
    rows = rows.append_column("has_vector", pa.array(has_vector))
    unit_rows, unit_emb = _unit_rows(rows, units, model, version)
    starts = np.full(rows.num_rows, -1, np.int64)
    counts = np.zeros(rows.num_rows, np.int32)
    if len(unit_rows):
        first = np.flatnonzero(np.r_[True, unit_rows[1:] != unit_rows[:-1]])
        starts[unit_rows[first]] = first
        counts[unit_rows[first]] = np.diff(np.r_[first, len(unit_rows)])
    rows = rows.append_column("unit_start", pa.array(starts)).append_column("unit_count", pa.array(counts))
    _write_arrow(rows, folder / ROWS_FILE, ROWS_PER_BATCH)
    keys = rows.column("key").to_numpy()
    hashes = rows.column("content_hash")
    terms_reused = _write_bm25(folder / BM25_DIR, rows, previous)
    _write_units(folder, units, unit_emb)
    graph, reused = _write_graph(folder / VECTORS_FILE, keys[has_vector], hashes.filter(pa.array(has_vector)), vectors,
                                 previous, model, version)
    return _CollectionStats(rows.num_rows, int(has_vector.sum()), int(vectors.shape[1]) if vectors.size else 0,
                            len(unit_emb), reused, terms_reused, graph)


def read_manifest(root: Path) -> IndexManifest | None:
    """The live version's manifest, or None when the dataset has no index."""
    live = _live_dir(root)
    if live is None:
        return None
    return IndexManifest.from_dict(json.loads((live / MANIFEST_FILE).read_text()))


# -- building ------------------------------------------------------------------------


def _rows(chunks: pa.Table, columns: tuple[str, ...]) -> tuple[pa.Table, int]:
    """Index columns, a key per chunk, sorted by key; a repeated chunk id keeps its latest day."""
    table = chunks.select(list(columns))
    table = table.append_column("key", pa.array(chunk_keys(table.column("chunk_id")), pa.uint64()))
    table = table.sort_by([("key", "ascending"), ("partition_date", "descending")])
    keys = table.column("key").to_numpy()
    first = np.ones(len(keys), bool)
    if len(keys):
        first[1:] = keys[1:] != keys[:-1]
    return table.filter(pa.array(first)), int((~first).sum())


def _docs(documents: pa.Table, rows: pa.Table) -> pa.Table:
    docs = documents.select(["doc_id", "canonical_text"])
    wanted = pc.is_in(docs.column("doc_id"), value_set=pc.unique(rows.column("doc_id")))
    docs = docs.filter(wanted).sort_by("doc_id")
    ids = docs.column("doc_id").to_numpy(zero_copy_only=False)
    keep = np.ones(len(ids), bool)
    if len(ids):
        keep[1:] = ids[1:] != ids[:-1]
    return docs.filter(pa.array(keep))


def _link(rows: pa.Table, docs: pa.Table) -> pa.Table:
    """Row links and context bounds, computed once so a query only reads them.

    ``doc_row``: the document's row in docs.arrow; ``parent_row``: the parent chunk's
    row (-1: none); ``family_start`` / ``family_end``: the stretch of canonical text
    covered by the parent and all its children (-1: a top-level chunk, bounded by its
    document), which is where a hit's context may come from.
    """
    doc_row = pc.fill_null(pc.index_in(rows.column("doc_id"), value_set=docs.column("doc_id")), -1)
    parent = pc.fill_null(pc.index_in(rows.column("parent_chunk_id"), value_set=rows.column("chunk_id")), -1)
    parent_row = parent.to_numpy(zero_copy_only=False).astype(np.int64)
    spans = pc.extract_regex(rows.column("evidence_anchor"), r'"char_span":\[(?P<s>\d+),(?P<e>\d+)\]')
    start = pc.cast(pc.struct_field(spans, "s"), pa.int64()).to_numpy(zero_copy_only=False)
    end = pc.cast(pc.struct_field(spans, "e"), pa.int64()).to_numpy(zero_copy_only=False)
    lo, hi = start.copy(), end.copy()  # per row: its own span widened by its children's
    child = parent_row >= 0
    np.minimum.at(lo, parent_row[child], start[child])
    np.maximum.at(hi, parent_row[child], end[child])
    family_start = np.where(child, lo[np.maximum(parent_row, 0)], -1)
    family_end = np.where(child, hi[np.maximum(parent_row, 0)], -1)
    return (
        rows.append_column("doc_row", doc_row.cast(pa.int32()))
        .append_column("parent_row", pa.array(parent_row.astype(np.int32)))
        .append_column("family_start", pa.array(family_start.astype(np.int32)))
        .append_column("family_end", pa.array(family_end.astype(np.int32)))
    )


def _pick_model(
    embeddings: pa.Table | None, model: str | None, version: str | None
) -> tuple[str | None, str | None]:
    if embeddings is None or embeddings.num_rows == 0:
        return model, version
    if model and version:
        return model, version
    counts = embeddings.group_by(["embedding_model", "embedding_version"]).aggregate([("chunk_id", "count")])
    best = counts.sort_by([("chunk_id_count", "descending")]).slice(0, 1).to_pylist()[0]
    return best["embedding_model"], best["embedding_version"]


def _vectors(
    rows: pa.Table, embeddings: pa.Table | None, model: str | None, version: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """float32 [m, d] vectors for the rows that have one (``has_vector``), in row order.

    Gathered straight from ``embeddings``' own buffers into the one output array: no
    filtered or taken copy of the vector column (at 730,000 x 384 each was 1.1 GB).
    """
    has = np.zeros(rows.num_rows, bool)
    if embeddings is None or embeddings.num_rows == 0 or model is None:
        return np.zeros((0, 0), np.float32), has
    wanted = pc.and_(pc.equal(embeddings.column("embedding_model"), model),
                     pc.equal(embeddings.column("embedding_version"), version))
    emb_keys = embeddings.select(["chunk_id", "partition_date", "input_hash"]).append_column(
        "emb_row", pa.array(np.arange(embeddings.num_rows, dtype=np.int64))
    ).filter(wanted)
    row_keys = rows.select(["chunk_id", "partition_date", "content_hash"]).rename_columns(
        ["chunk_id", "partition_date", "input_hash"]
    ).append_column("row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    joined = row_keys.join(emb_keys, keys=["chunk_id", "partition_date", "input_hash"], join_type="inner")
    joined = joined.select(["row", "emb_row"]).sort_by("row")
    row_idx = joined.column("row").to_numpy()
    row_idx, first = np.unique(row_idx, return_index=True)  # one vector per row
    emb_idx = joined.column("emb_row").to_numpy()[first]
    del joined
    has[row_idx] = True
    if not len(emb_idx):
        return np.zeros((0, 0), np.float32), has
    return _gather(embeddings.column("vector"), emb_idx), has


def _gather(column: pa.ChunkedArray, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of a vector column as float32 [len(idx), d], straight from its buffers."""
    dims = column.type.list_size if pa.types.is_fixed_size_list(column.type) else len(column[0])
    out = np.empty((len(idx), dims), np.float32)
    order = np.argsort(idx, kind="stable")  # walk the vector column once, chunk by chunk
    wanted_rows = idx[order]
    at = 0
    for chunk in column.chunks:
        lo, hi = np.searchsorted(wanted_rows, [at, at + len(chunk)])
        if hi > lo:
            fixed = pa.types.is_fixed_size_list(chunk.type) and chunk.null_count == 0
            flat = chunk.flatten() if fixed else pc.list_flatten(chunk)  # fixed: a zero-copy view of this chunk
            out[order[lo:hi]] = flat.to_numpy(zero_copy_only=False).reshape(-1, dims)[wanted_rows[lo:hi] - at]
        at += len(chunk)
    return out


def _unit_rows(
    rows: pa.Table, units: pa.Table | None, model: str | None, version: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """For each stored unit of an indexed chunk, in (row, unit_index) order: its row and its row in ``units``."""
    empty = np.zeros(0, np.int64)
    if units is None or units.num_rows == 0 or model is None:
        return empty, empty
    wanted = pc.and_(pc.equal(units.column("embedding_model"), model), pc.equal(units.column("embedding_version"), version))
    keys = units.select(["chunk_id", "partition_date", "unit_index"]).append_column(
        "emb_row", pa.array(np.arange(units.num_rows, dtype=np.int64))
    ).filter(wanted)
    row_keys = rows.select(["chunk_id", "partition_date"]).append_column(
        "row", pa.array(np.arange(rows.num_rows, dtype=np.int64))
    )
    joined = row_keys.join(keys, keys=["chunk_id", "partition_date"], join_type="inner")
    joined = joined.select(["row", "unit_index", "emb_row"]).sort_by([("row", "ascending"), ("unit_index", "ascending")])
    row = joined.column("row").to_numpy()
    index = joined.column("unit_index").to_numpy()
    keep = np.ones(len(row), bool)
    keep[1:] = (row[1:] != row[:-1]) | (index[1:] != index[:-1])  # one vector per (row, unit)
    return row[keep], joined.column("emb_row").to_numpy()[keep]


def _write_units(folder: Path, units: pa.Table | None, emb_rows: np.ndarray) -> None:
    """units.npy (f16, written through a file map: never all in memory) and unit_keys.npy."""
    if units is None or not len(emb_rows):
        return
    hashes = units.column("input_hash").take(pa.array(emb_rows)).to_pylist()
    np.save(folder / UNIT_KEYS_FILE, np.array([int(h[:16], 16) for h in hashes], np.uint64))
    column = units.column("vector")
    dims = column.type.list_size if pa.types.is_fixed_size_list(column.type) else len(column[0])
    out = np.lib.format.open_memmap(folder / UNITS_FILE, mode="w+", dtype=np.float16, shape=(len(emb_rows), dims))
    step = 65_536
    for lo in range(0, len(emb_rows), step):
        out[lo : lo + step] = _gather(column, emb_rows[lo : lo + step])
    out.flush()
    del out


def _write_arrow(table: pa.Table, path: Path, batch_rows: int) -> None:
    """Record batches of exactly ``batch_rows`` rows (the last one shorter): row ``i`` is in batch ``i // batch_rows``."""
    schema = table.schema.with_metadata({**(table.schema.metadata or {}), BATCH_ROWS_KEY: str(batch_rows),
                                         NUM_ROWS_KEY: str(table.num_rows)})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for start in range(0, table.num_rows, batch_rows):
            for batch in table.slice(start, batch_rows).combine_chunks().to_batches():  # one batch
                writer.write_batch(batch.replace_schema_metadata(schema.metadata))


def _write_bm25(folder: Path, rows: pa.Table, previous: Path | None) -> int:
    """Analyze the chunks the previous version does not hold (same key, same text); returns how many were reused."""
    reuse = _reusable_rows(rows, previous) if previous is not None and _same_analyzer(previous) else None
    old = bm25.Bm25(previous / BM25_DIR).term_table() if reuse is not None and previous is not None else None
    need = np.flatnonzero(reuse < 0) if reuse is not None else np.arange(rows.num_rows)
    table = bm25.TermTable.build(_analyzed(rows.column("chunk_text"), need, rows.column("metadata")), rows.num_rows,
                                 old, reuse)
    bm25.save(folder, table, bm25.score_matrix(table))
    return rows.num_rows - len(need)


def _analyzed(texts: pa.ChunkedArray, rows: np.ndarray, metadata: pa.ChunkedArray | None = None,
              batch: int = 8192) -> Iterator[tuple[int, list[str]]]:
    """``(row, terms)`` for ``rows``: the chunk text with its context prefix (the speaker of a turn, the header path
    of a section; :func:`~codex_pipeline.retrieval.units.context_prefix`), so "what did Commissioner Lee say" matches
    Lee's turns although ``chunk_text`` holds only the spoken words."""
    for at in range(0, len(rows), batch):
        part = rows[at:at + batch]
        take = pa.array(part, pa.int64())
        metas = metadata.take(take).to_pylist() if metadata is not None else [None] * len(part)
        for i, text, meta in zip(part.tolist(), texts.take(take).to_pylist(), metas):
            yield i, analyze(context_prefix(meta) + text)


def _reusable_rows(rows: pa.Table, previous: Path) -> np.ndarray:
    """For each row, the previous version's row with the same key and text (-1: none)."""
    old = _open_arrow(previous / ROWS_FILE).select(["key", "content_hash"])
    old_keys = old.column("key").to_numpy()
    keys = rows.column("key").to_numpy()
    pos = np.searchsorted(old_keys, keys)
    pos_ok = np.minimum(pos, max(len(old_keys) - 1, 0))
    out = np.full(len(keys), -1, np.int64)
    if not len(old_keys):
        return out
    same_key = old_keys[pos_ok] == keys
    same_text = pc.equal(rows.column("content_hash"), old.column("content_hash").take(pa.array(pos_ok))).to_numpy(
        zero_copy_only=False
    )
    hit = same_key & np.asarray(same_text, bool)
    out[hit] = pos_ok[hit]
    return out


def _same_analyzer(previous: Path) -> bool:
    manifest = json.loads((previous / MANIFEST_FILE).read_text())
    return bool(manifest.get("analyzer") == analyzer_id() and manifest.get("format_version") == FORMAT_VERSION)


def _write_graph(
    path: Path,
    keys: np.ndarray,
    hashes: pa.ChunkedArray,
    vectors: np.ndarray,
    previous: Path | None,
    model: str | None,
    version: str | None,
) -> tuple[str, int]:
    """Write the HNSW file; returns (``built`` | ``updated`` | ``none``, vectors reused)."""
    if not len(keys):
        return "none", 0
    dims = vectors.shape[1]
    old = _previous_graph(previous, model, version, dims)
    if old is not None:
        index, old_keys, old_hashes = old
        new_hash = dict(zip(keys.tolist(), hashes.to_pylist()))
        stale = [k for k, h in zip(old_keys.tolist(), old_hashes) if new_hash.get(k) != h]
        stale += _changed_vectors(index, keys, vectors, set(stale) | (set(old_keys.tolist()) ^ set(keys.tolist())))
        if len(stale) <= REBUILD_FRACTION * max(len(old_keys), 1):
            if stale:
                index.remove(np.array(stale, np.uint64))
            kept = set(old_keys.tolist()) - set(stale)
            add = np.array([k not in kept for k in keys.tolist()], bool)
            if add.any():
                index.add(keys[add], vectors[add], threads=_threads())
            save_graph(index, path)
            return "updated", len(kept)
    index = Index(
        ndim=dims, metric="cos", dtype=VECTOR_DTYPE, connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
    )
    index.add(keys, vectors, threads=_threads())
    save_graph(index, path)
    return "built", 0


def save_graph(index: Index, path: Path) -> None:
    """``index.save`` with an error that says what went wrong: usearch reports a full disk as
    ``Failed to serialize into stream``, naming neither the file nor the cause."""
    try:
        index.save(str(path))
    except RuntimeError as exc:
        need = int(getattr(index, "serialized_length", 0) or 0)
        raise disk_error(path, need, f"usearch: {exc}") from exc


class IndexWriteError(OSError):
    """A write of the search index failed; the message names the file, the cause and the fix."""


def disk_error(path: Path, need: int, detail: str, full: bool | None = None) -> IndexWriteError:
    """An ``OSError`` naming ``path`` and the fix: "no space left on device" when the disk is (nearly) full.

    ``full`` None: full means less room than the file needs (or under 1 MiB), or a probe
    write of the same file failing with ``ENOSPC`` (usearch keeps the errno to itself).
    """
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = -1
    if full is None:
        full = 0 <= free <= max(need, 1 << 20) or _probe_errno(path) == errno.ENOSPC
    if full:
        return IndexWriteError(errno.ENOSPC, f"no space left on device writing {path} ({free:,} bytes free"
                       f"{f', about {need:,} needed' if need else ''}; {detail}): free space on that disk, or "
                       "move the data directory (CODEX_DATA_DIR) to a bigger one, then rematerialize the "
                       "dataset's search_index asset")
    return IndexWriteError(errno.EIO, f"could not write {path} ({detail}): check that the disk is writable and not "
                   "failing, then rematerialize the dataset's search_index asset")


def _probe_errno(path: Path) -> int | None:
    """The errno of writing 64 KiB to ``path`` (which a failed write left unusable anyway), None if it worked."""
    try:
        with open(path, "wb") as fh:
            fh.write(bytes(1 << 16))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return exc.errno
    return None


def _changed_vectors(index: Index, keys: np.ndarray, vectors: np.ndarray, skip: set[int]) -> list[int]:
    """Keys whose graph vector is not the new one (same text, other vector: e.g. a new pooling recipe).

    Compared by cosine in batches: f16 storage moves a vector by ~1e-7 of cosine, a
    recipe change by ~1e-3.
    """
    out: list[int] = []
    both = np.flatnonzero([k not in skip for k in keys.tolist()])
    for lo in range(0, len(both), 65_536):
        at = both[lo : lo + 65_536]
        old = np.asarray(index.get(keys[at]), np.float32)
        new = vectors[at]
        cos = (old * new).sum(axis=1) / np.maximum(np.linalg.norm(old, axis=1) * np.linalg.norm(new, axis=1), 1e-12)
        out += keys[at][cos < 1.0 - 1e-4].tolist()
    return out


def _previous_graph(
    previous: Path | None, model: str | None, version: str | None, dims: int
) -> tuple[Index, np.ndarray, list[str]] | None:
    if previous is None or not (previous / VECTORS_FILE).exists():
        return None
    manifest = json.loads((previous / MANIFEST_FILE).read_text())
    if (manifest.get("format_version"), manifest.get("embedding_model"), manifest.get("embedding_version"),
            manifest.get("dimensions")) != (FORMAT_VERSION, model, version, dims):
        return None
    old_rows = _open_arrow(previous / ROWS_FILE).select(["key", "content_hash", "has_vector"])
    old_rows = old_rows.filter(old_rows.column("has_vector"))
    index = Index.restore(str(previous / VECTORS_FILE), view=False)
    if index is None:
        return None
    index.expansion_add = EXPANSION_ADD  # type: ignore[misc]  # not saved with the file; the stubs miss the setter
    return index, old_rows.column("key").to_numpy(), old_rows.column("content_hash").to_pylist()


def _threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


# -- versions ------------------------------------------------------------------------


def _live_dir(root: Path) -> Path | None:
    try:
        name = (root / CURRENT_FILE).read_text().strip()
    except FileNotFoundError:
        return None
    path = root / name
    return path if name and (path / MANIFEST_FILE).exists() else None


def _set_current(root: Path, name: str) -> None:
    tmp = root / f".{CURRENT_FILE}.{secrets.token_hex(4)}.tmp"
    tmp.write_text(name + "\n")
    os.replace(tmp, root / CURRENT_FILE)


def _collect(root: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` versions (the live one always stays)."""
    live = _live_dir(root)
    versions = sorted((p for p in root.glob("v-*") if p.is_dir()), key=lambda p: p.name, reverse=True)
    for old in versions[max(keep, 1):]:
        if old != live:
            shutil.rmtree(old, ignore_errors=True)
    for tmp in root.glob(".tmp-*"):  # a build that crashed long ago
        with contextlib.suppress(OSError):
            if time.time() - tmp.stat().st_mtime > 24 * 3600:
                shutil.rmtree(tmp, ignore_errors=True)


def _open_arrow(path: Path) -> pa.Table:
    """An Arrow IPC file memory-mapped: columns are read from the page cache on demand."""
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
