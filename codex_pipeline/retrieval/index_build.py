"""Building a version of a dataset's search index (:mod:`~codex_pipeline.retrieval.index_format`) from its
current corpus, and making it current.

A build streams its inputs (:mod:`~codex_pipeline.retrieval.index_source`): it holds each
current chunk's ids and links, its term ids and the graph, while chunk texts, canonical texts
and vectors pass through in record batches, so its memory does not hold the corpus.

Graph construction is the expensive part, so a rebuild **reuses the previous graph**: vectors
of chunks whose id, text and vector are unchanged stay, only removed and changed ones are
taken out and new ones added; a fresh graph is built when more than :data:`REBUILD_FRACTION`
of it would change.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from usearch.index import Index

from codex_pipeline.core.contract import COMPOSED_ANCHOR_KEY, SYNTHETIC_CHUNK_TYPES
from codex_pipeline.retrieval import bm25
from codex_pipeline.retrieval.index_files import BatchWriter, UnitFile, disk_error, disk_full, save_graph
from codex_pipeline.retrieval.index_format import (
    BM25_DIR,
    CONNECTIVITY,
    DOCS_FILE,
    EXPANSION_ADD,
    EXPANSION_SEARCH,
    FORMAT_VERSION,
    MANIFEST_FILE,
    PROPOSITION_COLUMNS,
    PROPOSITIONS_DIR,
    ROW_COLUMNS,
    ROWS_FILE,
    SYNTHETIC_COLUMN,
    UNIT_KEYS_FILE,
    UNITS_FILE,
    VECTOR_DTYPE,
    VECTORS_FILE,
    IndexManifest,
    _live_dir,
    analyzer_id,
    collect_versions,
    open_arrow,
    set_current,
)
from codex_pipeline.retrieval.index_source import (
    SKELETON_COLUMNS,
    VECTOR_KEY_COLUMNS,
    DocumentSource,
    RowSource,
    TableDocuments,
    TableRows,
    chunk_keys,
)
from codex_pipeline.retrieval.lexical import analyze
from codex_pipeline.retrieval.units import context_prefix
from codex_pipeline.warehouse.array_files import save_array

ROWS_PER_BATCH = 256
"""Record batch size of rows.arrow: a hit reads its batch (~250 KB) with one pread, nothing is mapped."""
DOCS_PER_BATCH = 32
"""Record batch size of docs.arrow (canonical texts are a few KB each)."""
REBUILD_FRACTION = 0.3
"""Rebuild the graph from scratch when more than this share of its vectors would be removed."""


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
    """:func:`build_index` from Arrow tables in memory.

    ``chunks``: the current chunk rows (contract columns); ``documents``: ``doc_id``
    and ``canonical_text`` of the current documents; ``embeddings``: ``chunk_id``,
    ``partition_date``, ``input_hash``, ``embedding_model``, ``embedding_version``,
    ``vector``; ``units``: the evidence-unit vectors (``codex.<dataset>_evidence_units``: ``chunk_id``,
    ``partition_date``, ``unit_index``, ``input_hash``, model, version, ``vector``).
    ``propositions`` (rows in the chunk columns, see :mod:`~codex_pipeline.retrieval.proposition_rows`) and their
    ``proposition_embeddings`` (keyed like ``embeddings``).
    """
    props = TableRows(propositions, proposition_embeddings) \
        if propositions is not None and propositions.num_rows else None
    return build_index(root, dataset, TableRows(chunks, embeddings, units), TableDocuments(documents),
                       propositions=props, embedding_model=embedding_model, embedding_version=embedding_version,
                       source=source, reuse=reuse, keep_versions=keep_versions)


def build_index(
    root: Path,
    dataset: str,
    rows: RowSource,
    documents: DocumentSource,
    *,
    propositions: RowSource | None = None,
    embedding_model: str | None = None,
    embedding_version: str | None = None,
    source: Mapping[str, str] | None = None,
    reuse: bool = True,
    keep_versions: int = 2,
) -> IndexManifest:
    """Write a new index version of ``dataset`` under ``root`` from streamed inputs and make it current.

    Only vectors of ``embedding_model``/``embedding_version`` (default: the most common
    pair) computed from a chunk's exact current text are indexed. ``propositions`` become
    the ``propositions/`` collection of the same version: same analyzer, same graph
    parameters, swapped with the chunks in one step. With ``reuse``, the live version's
    terms and graphs are updated instead of rebuilt.
    """
    t0 = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    skeleton = _skeleton(rows)
    model, version = _pick_model(rows, embedding_model, embedding_version)
    name = f"v-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}"
    tmp = root / f".tmp-{name}"
    tmp.mkdir()
    try:
        doc_ids = _write_docs(documents, tmp / DOCS_FILE, skeleton)
        previous = _live_dir(root) if reuse else None
        made = _write_collection(tmp, rows, skeleton, doc_ids, previous, model, version, ROW_COLUMNS)
        props = _CollectionStats()
        if propositions is not None:
            prop_skeleton = _skeleton(propositions)
            earlier = previous / PROPOSITIONS_DIR if previous is not None else None
            props = _write_collection(tmp / PROPOSITIONS_DIR, propositions, prop_skeleton, doc_ids,
                                      earlier if earlier is not None and (earlier / MANIFEST_FILE).exists() else None,
                                      model, version, ROW_COLUMNS + PROPOSITION_COLUMNS)
        manifest = IndexManifest(
            dataset=dataset,
            version=name,
            built_at=dt.datetime.now(dt.UTC).isoformat(),
            chunks=made.rows,
            documents=len(doc_ids),
            vectors=made.vectors,
            missing_vectors=made.rows - made.vectors,
            duplicate_chunk_ids=skeleton.duplicates,
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
        if disk_full(exc):  # pyarrow and numpy name the cause but not the file
            raise disk_error(tmp, 0, " ".join(str(exc).split()), full=True) from exc
        raise
    set_current(root, name)
    collect_versions(root, keep_versions)
    return manifest


@dataclass(frozen=True)
class _CollectionStats:
    rows: int = 0
    vectors: int = 0
    dimensions: int = 0
    units: int = 0
    vectors_reused: int = 0
    terms_reused: int = 0
    graph: str = "none"


@dataclass(frozen=True)
class _Skeleton:
    """The ids and links of a collection's rows, one per key, in key order: all a build holds of them at once."""

    table: pa.Table  # key, chunk_id, doc_id, parent_chunk_id, partition_date, content_hash
    start: np.ndarray  # each row's own char_span
    end: np.ndarray
    duplicates: int  # rows dropped because their chunk_id was already taken (an older day)

    @property
    def keys(self) -> np.ndarray:
        return self.table.column("key").to_numpy()

    def __len__(self) -> int:
        return self.table.num_rows


def _first_of_key(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches with each key's first row only (sources deliver a repeated key's latest day first)."""
    last: int | None = None
    for batch in batches:
        keys = batch.column("key").to_numpy()
        if not len(keys):
            continue
        first = np.ones(len(keys), bool)
        first[1:] = keys[1:] != keys[:-1]
        if last is not None:
            first[0] = keys[0] != last
        last = int(keys[-1])
        yield batch if first.all() else batch.filter(pa.array(first))


def _skeleton(source: RowSource) -> _Skeleton:
    """The first pass over the rows: their small columns, each key's latest day kept, spans parsed once."""
    reader = source.rows(SKELETON_COLUMNS)
    total, kept = 0, []
    spans_at: list[tuple[np.ndarray, np.ndarray]] = []

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal total
        for batch in reader:
            total += batch.num_rows
            yield batch

    for batch in _first_of_key(counted()):
        spans = pc.extract_regex(batch.column("evidence_anchor"), r'"char_span":\[(?P<s>\d+),(?P<e>\d+)\]')
        spans_at.append((pc.cast(pc.struct_field(spans, "s"), pa.int64()).to_numpy(zero_copy_only=False),
                         pc.cast(pc.struct_field(spans, "e"), pa.int64()).to_numpy(zero_copy_only=False)))
        kept.append(batch.drop_columns(["evidence_anchor"]))
    schema = reader.schema.remove(reader.schema.get_field_index("evidence_anchor"))
    table = pa.Table.from_batches(kept, schema) if kept else schema.empty_table()
    start = np.concatenate([s for s, _ in spans_at]) if spans_at else np.zeros(0, np.int64)
    end = np.concatenate([e for _, e in spans_at]) if spans_at else np.zeros(0, np.int64)
    return _Skeleton(table.combine_chunks(), start, end, total - table.num_rows)


def _write_collection(
    folder: Path,
    source: RowSource,
    skeleton: _Skeleton,
    doc_ids: pa.Array,
    previous: Path | None,
    model: str | None,
    version: str | None,
    columns: tuple[str, ...],
) -> _CollectionStats:
    """rows.arrow, bm25/, the HNSW graph and unit vectors of one collection (chunks, or propositions) in ``folder``.

    Passes over the source: vector keys, unit keys, rows (written and analyzed as they
    stream), unit vectors, vectors (twice when the previous graph may be updated).
    """
    folder.mkdir(exist_ok=True)
    n = len(skeleton)
    has_vector = _vector_rows(source, skeleton, model, version)
    plan = _unit_plan(source, skeleton, model, version)
    starts = np.full(n, -1, np.int64)
    counts = np.zeros(n, np.int32)
    if len(plan.rows):
        first = np.flatnonzero(np.r_[True, plan.rows[1:] != plan.rows[:-1]])
        starts[plan.rows[first]] = first
        counts[plan.rows[first]] = np.diff(np.r_[first, len(plan.rows)])
    extra = {**_link(skeleton, doc_ids), "has_vector": pa.array(has_vector),
             "unit_start": pa.array(starts), "unit_count": pa.array(counts)}
    reuse = _reusable_rows(skeleton, previous) if previous is not None and _same_analyzer(previous) else None
    old = bm25.Bm25(previous / BM25_DIR).term_table() if reuse is not None and previous is not None else None
    need = reuse < 0 if reuse is not None else np.ones(n, bool)
    analyzed = _write_rows(folder / ROWS_FILE, source, columns, skeleton, extra, need)
    table = bm25.TermTable.build(analyzed, n, old, reuse)
    del old  # its term ids are a file map: pages read stay in this process's RSS while it lives
    bm25.save(folder / BM25_DIR, table, bm25.score_matrix(table))
    del table
    _write_units(folder, source, skeleton, plan, model, version)
    keys = skeleton.keys
    graph, reused, dims = _write_graph(folder / VECTORS_FILE, source, skeleton, keys[has_vector],
                                       skeleton.table.column("content_hash").filter(pa.array(has_vector)),
                                       previous, model, version)
    return _CollectionStats(n, int(has_vector.sum()), dims, len(plan.rows), reused, int(n - need.sum()), graph)


def _write_docs(source: DocumentSource, path: Path, skeleton: _Skeleton) -> pa.Array:
    """docs.arrow: the canonical text of each document the rows cite, of the day they cite when the source says
    (a row finds it by ``doc_row``, its place in the file); returns the ids written, in file order."""
    cited = skeleton.table.select(["doc_id", "partition_date"]).group_by(["doc_id", "partition_date"]).aggregate([])
    ids = pc.unique(cited.column("doc_id"))
    written: list[pa.Array] = []
    seen: set[str] = set()
    reader = source.documents()
    schema = pa.schema([reader.schema.field("doc_id"), reader.schema.field("canonical_text")])
    with BatchWriter(path, schema, DOCS_PER_BATCH) as writer:  # how many: known at the end only
        for batch in reader:
            table = pa.Table.from_batches([batch])
            if "partition_date" in table.column_names:
                days = cited.column("partition_date").type
                table = table.set_column(table.schema.get_field_index("partition_date"), "partition_date",
                                         pc.cast(table.column("partition_date"), days))
                table = table.join(cited, ["doc_id", "partition_date"], join_type="left semi")
            else:
                table = table.filter(pc.is_in(table.column("doc_id"), value_set=ids))
            keep = []  # a repeated id keeps its first text
            for i in table.column("doc_id").to_pylist():
                keep.append(i not in seen)
                seen.add(i)
            table = table.filter(pa.array(keep, pa.bool_())).select(schema.names).cast(schema)
            if table.num_rows:
                written.append(table.column("doc_id").combine_chunks())
                for part in table.to_batches():
                    writer.write(part)
    return pa.concat_arrays(written) if written else pa.array([], schema.field("doc_id").type)


def _link(skeleton: _Skeleton, docs: pa.Array) -> dict[str, pa.Array]:
    """Row links and context bounds, computed once so a query only reads them.

    ``doc_row``: the document's row in docs.arrow; ``parent_row``: the parent chunk's
    row (-1: none); ``family_start`` / ``family_end``: the stretch of canonical text
    covered by the parent and all its children (-1: a top-level chunk, bounded by its
    document), which is where a hit's context may come from.
    """
    rows = skeleton.table
    doc_row = pc.fill_null(pc.index_in(rows.column("doc_id"), value_set=docs), -1)
    parent = pc.fill_null(pc.index_in(rows.column("parent_chunk_id"), value_set=rows.column("chunk_id")), -1)
    parent_row = parent.to_numpy(zero_copy_only=False).astype(np.int64)
    start, end = skeleton.start, skeleton.end
    lo, hi = start.copy(), end.copy()  # per row: its own span widened by its children's
    child = parent_row >= 0
    np.minimum.at(lo, parent_row[child], start[child])
    np.maximum.at(hi, parent_row[child], end[child])
    family_start = np.where(child, lo[np.maximum(parent_row, 0)], -1)
    family_end = np.where(child, hi[np.maximum(parent_row, 0)], -1)
    return {
        "doc_row": doc_row.cast(pa.int32()),
        "parent_row": pa.array(parent_row.astype(np.int32)),
        "family_start": pa.array(family_start.astype(np.int32)),
        "family_end": pa.array(family_end.astype(np.int32)),
    }


def _pick_model(source: RowSource, model: str | None, version: str | None) -> tuple[str | None, str | None]:
    if model and version:
        return model, version
    counts = source.vector_models()
    if not counts:
        return model, version
    best = max(counts, key=lambda c: c[2])
    return best[0], best[1]


def _match(batch: pa.RecordBatch, skeleton: _Skeleton, model: str | None, version: str | None,
           text_hash: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """For a batch of vector rows: which belong to a row of the skeleton (same chunk, day and, with ``text_hash``,
    text; the wanted model and version), and that row."""
    keys = skeleton.keys
    pos = np.zeros(batch.num_rows, np.int64)
    if not len(keys) or not batch.num_rows:
        return np.zeros(batch.num_rows, bool), pos
    ok = pc.and_(pc.equal(batch.column("embedding_model"), model),
                 pc.equal(batch.column("embedding_version"), version)).to_numpy(zero_copy_only=False)
    ok = np.asarray(pc.fill_null(pa.array(ok), False).to_numpy(zero_copy_only=False), bool)
    wanted = chunk_keys(batch.column("chunk_id"))
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    ok &= keys[pos] == wanted
    take = pa.array(pos)
    days = skeleton.table.column("partition_date").take(take)
    ok &= _true(pc.equal(pc.cast(batch.column("partition_date"), days.type), days))
    if text_hash:
        ok &= _true(pc.equal(batch.column("input_hash"), skeleton.table.column("content_hash").take(take)))
    return ok, pos


def _true(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), bool)


def _vector_rows(source: RowSource, skeleton: _Skeleton, model: str | None, version: str | None) -> np.ndarray:
    """Which rows have a vector of ``model``/``version`` for their exact text (keys only: no vector is read)."""
    has = np.zeros(len(skeleton), bool)
    reader = source.vectors(VECTOR_KEY_COLUMNS) if model is not None else None
    for batch in reader or ():
        ok, pos = _match(batch, skeleton, model, version)
        has[pos[ok]] = True
    return has


def _vector_batches(source: RowSource, skeleton: _Skeleton, model: str | None, version: str | None
                    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(keys, float32 vectors)`` of the rows :func:`_vector_rows` found, one vector per row, batch by batch."""
    reader = source.vectors((*VECTOR_KEY_COLUMNS, "vector")) if model is not None else None
    taken = np.zeros(len(skeleton), bool)
    keys = skeleton.keys
    for batch in reader or ():
        ok, pos = _match(batch, skeleton, model, version)
        idx = np.flatnonzero(ok)
        idx = idx[np.unique(pos[idx], return_index=True)[1]]  # one per row within the batch
        idx = idx[~taken[pos[idx]]]  # and across batches
        if not len(idx):
            continue
        taken[pos[idx]] = True
        yield keys[pos[idx]], _gather(batch.column("vector"), idx)


def _gather(column: pa.Array, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of one batch's vector column as float32 [len(idx), d], straight from its buffers."""
    dims = column.type.list_size if pa.types.is_fixed_size_list(column.type) else len(column[0])
    fixed = pa.types.is_fixed_size_list(column.type) and column.null_count == 0
    flat = column.flatten() if fixed else pc.list_flatten(column)  # fixed: a zero-copy view
    return np.asarray(flat.to_numpy(zero_copy_only=False).reshape(-1, dims)[idx], np.float32)


@dataclass(frozen=True)
class _UnitPlan:
    """Where each stored unit vector goes in units.npy: ordered by (row, unit_index), one per pair."""

    rows: np.ndarray  # int64: the chunk's row
    codes: np.ndarray  # int64: row << 24 | unit_index, sorted (units.npy's order)
    hashes: np.ndarray  # uint64: the unit's text key (unit_keys.npy)


_UNIT_BITS = 24


def _unit_plan(source: RowSource, skeleton: _Skeleton, model: str | None, version: str | None) -> _UnitPlan:
    empty = np.zeros(0, np.int64)
    reader = source.units((*VECTOR_KEY_COLUMNS, "unit_index")) if model is not None else None
    codes, hashes = [], []
    for batch in reader or ():
        ok, pos = _match(batch, skeleton, model, version, text_hash=False)
        idx = np.flatnonzero(ok)
        unit = batch.column("unit_index").to_numpy(zero_copy_only=False)[idx].astype(np.int64)
        codes.append((pos[idx] << _UNIT_BITS) | unit)
        hashes.append(np.array([int(h[:16], 16) for h in batch.column("input_hash").take(pa.array(idx)).to_pylist()],
                               np.uint64))
    if not codes:
        return _UnitPlan(empty, empty, np.zeros(0, np.uint64))
    code, first = np.unique(np.concatenate(codes), return_index=True)  # sorted; one per (row, unit)
    return _UnitPlan(code >> _UNIT_BITS, code, np.concatenate(hashes)[first])


def _write_units(folder: Path, source: RowSource, skeleton: _Skeleton, plan: _UnitPlan,
                 model: str | None, version: str | None) -> None:
    """units.npy (f16) and unit_keys.npy, the vectors written into place as they stream by.

    Through a file map whose written pages are handed back after each batch: a mapped
    page counts in the process's RSS until then, and units.npy is the biggest file of
    the index (two thirds of a GB at a year of daily partitions).
    """
    if not len(plan.codes):
        return
    save_array(folder / UNIT_KEYS_FILE, plan.hashes)
    reader = source.units((*VECTOR_KEY_COLUMNS, "unit_index", "vector"))
    out: UnitFile | None = None
    try:
        for batch in reader or ():
            ok, pos = _match(batch, skeleton, model, version, text_hash=False)
            idx = np.flatnonzero(ok)
            if not len(idx):
                continue
            vectors = _gather(batch.column("vector"), idx)
            out = out or UnitFile(folder / UNITS_FILE, len(plan.codes), vectors.shape[1])
            unit = batch.column("unit_index").to_numpy(zero_copy_only=False)[idx].astype(np.int64)
            out.write(np.searchsorted(plan.codes, (pos[idx] << _UNIT_BITS) | unit), vectors)
    finally:
        if out is not None:
            out.close()


def synthetic_rows(batch: pa.RecordBatch) -> pa.Array:
    """Which rows are chunks a chunker wrote (a synthetic type, or an anchor marked composed): never a hit unless a
    type filter names them (:data:`~codex_pipeline.core.contract.COMPOSED_ANCHOR_KEY`)."""
    typed = pc.is_in(batch.column("chunk_type"), value_set=pa.array(sorted(SYNTHETIC_CHUNK_TYPES), pa.string()))
    composed = pc.match_substring(batch.column("evidence_anchor"), f'"{COMPOSED_ANCHOR_KEY}":')
    return pc.fill_null(pc.or_(typed, composed), False)


def _write_rows(path: Path, source: RowSource, columns: tuple[str, ...], skeleton: _Skeleton,
                extra: Mapping[str, pa.Array], need: np.ndarray) -> Iterator[tuple[int, list[str]]]:
    """Write rows.arrow as the rows stream by, yielding ``(row, terms)`` for the rows in ``need``.

    The terms are the chunk text with its context prefix (the speaker of a turn, the header path of a section;
    :func:`~codex_pipeline.retrieval.units.context_prefix`), so "what did Commissioner Lee say" matches Lee's
    turns although ``chunk_text`` holds only the spoken words. Raises when the rows do not arrive in the
    skeleton's order (the corpus changed between passes: the build lock should prevent it).
    """
    keys = skeleton.keys
    at = 0
    reader = source.rows(columns)
    schema = reader.schema
    for name, array in extra.items():
        schema = schema.append(pa.field(name, array.type))
    schema = schema.append(pa.field(SYNTHETIC_COLUMN, pa.bool_()))
    analyzed: list[tuple[int, list[str]]] = []

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal at
        for batch in _first_of_key(reader):
            m = batch.num_rows
            if at + m > len(keys) or not np.array_equal(batch.column("key").to_numpy(), keys[at:at + m]):
                raise RuntimeError(f"{path.parent}: the corpus changed while the index was built; build again")
            for name, array in extra.items():
                batch = batch.append_column(name, array.slice(at, m))
            batch = batch.append_column(SYNTHETIC_COLUMN, synthetic_rows(batch))
            rows = np.flatnonzero(need[at:at + m])
            if len(rows):
                take = pa.array(rows)
                texts = batch.column("chunk_text").take(take).to_pylist()
                metas = batch.column("metadata").take(take).to_pylist()
                analyzed.extend((at + int(i), analyze(context_prefix(meta) + text))
                                for i, text, meta in zip(rows, texts, metas))
            at += m
            yield batch

    with BatchWriter(path, schema, ROWS_PER_BATCH, len(keys)) as writer:
        for batch in batches():
            writer.write(batch)
            yield from analyzed
            analyzed.clear()
    if at != len(keys):
        raise RuntimeError(f"{path.parent}: the corpus changed while the index was built; build again")


def _reusable_rows(skeleton: _Skeleton, previous: Path) -> np.ndarray:
    """For each row, the previous version's row with the same key and text (-1: none)."""
    old = open_arrow(previous / ROWS_FILE).select(["key", "content_hash"])
    old_keys = old.column("key").to_numpy()
    keys = skeleton.keys
    out = np.full(len(keys), -1, np.int64)
    if not len(old_keys):
        return out
    pos_ok = np.minimum(np.searchsorted(old_keys, keys), len(old_keys) - 1)
    same_key = old_keys[pos_ok] == keys
    same_text = _true(pc.equal(skeleton.table.column("content_hash"), old.column("content_hash").take(pa.array(pos_ok))))
    hit = same_key & same_text
    out[hit] = pos_ok[hit]
    return out


def _same_analyzer(previous: Path) -> bool:
    manifest = json.loads((previous / MANIFEST_FILE).read_text())
    return bool(manifest.get("analyzer") == analyzer_id() and manifest.get("format_version") == FORMAT_VERSION)


def _write_graph(
    path: Path,
    source: RowSource,
    skeleton: _Skeleton,
    keys: np.ndarray,
    hashes: pa.ChunkedArray,
    previous: Path | None,
    model: str | None,
    version: str | None,
) -> tuple[str, int, int]:
    """Write the HNSW file from the streamed vectors; returns (``built`` | ``updated`` | ``none``, vectors reused,
    dimensions). ``keys`` (sorted) / ``hashes``: the rows that have a vector."""
    batches = _vector_batches(source, skeleton, model, version)
    first = next(batches, None)
    if first is None or not len(keys):
        return "none", 0, 0
    dims = first[1].shape[1]
    old = _previous_graph(previous, model, version, dims)
    if old is not None:
        index, old_keys, old_hashes = old
        pos = np.minimum(np.searchsorted(keys, old_keys), len(keys) - 1)
        same = (keys[pos] == old_keys) & _true(pc.equal(hashes.take(pa.array(pos)), old_hashes))  # per old key
        changed = np.concatenate([np.zeros(0, np.uint64), *(
            _changed_vectors(index, k, v, old_keys, same) for k, v in itertools.chain([first], batches))])
        stale = np.union1d(old_keys[~same], changed)
        if len(stale) <= REBUILD_FRACTION * max(len(old_keys), 1):
            if len(stale):
                index.remove(stale)
            for batch_keys, vectors in _vector_batches(source, skeleton, model, version):
                add = ~_kept(batch_keys, old_keys, same) | np.isin(batch_keys, changed)
                if add.any():
                    index.add(batch_keys[add], vectors[add], threads=_threads())
            save_graph(index, path)
            return "updated", int(same.sum() - len(changed)), dims
        del index
        batches = _vector_batches(source, skeleton, model, version)
        first = next(batches)
    index = Index(
        ndim=dims, metric="cos", dtype=VECTOR_DTYPE, connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
    )
    for batch_keys, vectors in itertools.chain([first], batches):
        index.add(batch_keys, vectors, threads=_threads())
    save_graph(index, path)
    return "built", 0, dims


def _kept(batch_keys: np.ndarray, old_keys: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Which of ``batch_keys`` the previous graph holds for the same text (``same``: per sorted ``old_keys``)."""
    if not len(old_keys):
        return np.zeros(len(batch_keys), bool)
    pos = np.minimum(np.searchsorted(old_keys, batch_keys), len(old_keys) - 1)
    return (old_keys[pos] == batch_keys) & same[pos]


def _changed_vectors(index: Index, keys: np.ndarray, vectors: np.ndarray, old_keys: np.ndarray,
                     same: np.ndarray) -> np.ndarray:
    """Keys whose graph vector is not the new one although their text is the same (e.g. a new pooling recipe).

    Compared by cosine: f16 storage moves a vector by ~1e-7 of cosine, a recipe change by ~1e-3.
    """
    both = np.flatnonzero(_kept(keys, old_keys, same))
    if not len(both):
        return np.zeros(0, np.uint64)
    old = np.asarray(index.get(keys[both]), np.float32)
    new = vectors[both]
    cos = (old * new).sum(axis=1) / np.maximum(np.linalg.norm(old, axis=1) * np.linalg.norm(new, axis=1), 1e-12)
    return np.asarray(keys[both][cos < 1.0 - 1e-4], np.uint64)


def _previous_graph(
    previous: Path | None, model: str | None, version: str | None, dims: int
) -> tuple[Index, np.ndarray, pa.ChunkedArray] | None:
    """The previous version's graph (in memory, to be updated), and its keys (sorted) with their text hashes."""
    if previous is None or not (previous / VECTORS_FILE).exists():
        return None
    manifest = json.loads((previous / MANIFEST_FILE).read_text())
    if (manifest.get("format_version"), manifest.get("embedding_model"), manifest.get("embedding_version"),
            manifest.get("dimensions")) != (FORMAT_VERSION, model, version, dims):
        return None
    old_rows = open_arrow(previous / ROWS_FILE).select(["key", "content_hash", "has_vector"])
    old_rows = old_rows.filter(old_rows.column("has_vector"))
    index = Index.restore(str(previous / VECTORS_FILE), view=False)
    if index is None:
        return None
    index.expansion_add = EXPANSION_ADD  # type: ignore[misc]  # not saved with the file; the stubs miss the setter
    return index, old_rows.column("key").to_numpy(), old_rows.column("content_hash")


def _threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
