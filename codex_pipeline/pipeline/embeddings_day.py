"""Embed one chunk partition from the warehouse, reusing every vector it can.

Reuse sources, in order: this partition's existing embeddings, then the same
dataset's other partitions (a re-landed document), then the checkpoint of an
earlier run that failed midway. Only inputs found nowhere cost a model call.
Other partitions are read as files, not through the current views: vectors of
superseded or retracted versions are never served by default, yet re-landing
their text still costs nothing.

**Evidence units.** A chunk with more than one unit (``retrieval.units``: sentences
packed to 128 tokens, embedded with the chunk's context prefix) is embedded as its
units: one vector per unit in ``<dataset>/evidence_units/<day>.parquet``, reused by the
unit's own text like any input, and the chunk's vector is their length-weighted mean
(what the local model already does with the windows of a long input). The search
index keeps the unit vectors, so a query embeds only itself, and the units cost no
model time beyond the chunk's own (embedding each chunk whole *and* its units would
nearly double the step). A chunk of one unit is
embedded the same way when it has a context prefix (a council turn's speaker, a Markdown
header path, an email thread's subject), so its vector carries what its reader would know
(it scored better with ``codex eval``); without one, from its text alone. Figures in
``docs/history.md``. The embeddings file is stamped with the unit recipe
(:data:`~codex_pipeline.retrieval.units.UNITS_VERSION`), so the version sensor re-runs
this step when it changes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.embeddings import (
    EmbedCounts,
    Embedder,
    EmbeddingCheckpoint,
    EmbedOutcome,
    VectorLookup,
    embed_partition,
    input_hashes,
)
from codex_pipeline.retrieval.context import anchor_spans
from codex_pipeline.retrieval.units import UNITS_VERSION, chunk_units
from codex_pipeline.warehouse.storage import Warehouse

EMBEDDINGS_TABLE = "embeddings"
UNITS_TABLE = "evidence_units"


@dataclass
class PartitionEmbeddings:
    """What :func:`embed_day` wrote for one day: the embeddings file and its counts, and the evidence units'."""

    day: dt.date
    rows: int
    counts: EmbedCounts
    path: str
    units: int = 0  # evidence units of chunks with several
    unit_counts: EmbedCounts = field(default_factory=lambda: EmbedCounts(inputs=0))


def checkpoint_for(wh: Warehouse, dataset: str, day: dt.date) -> EmbeddingCheckpoint:
    """The day's checkpoint, shared by chunk and unit inputs (it is keyed by the input's hash)."""
    return EmbeddingCheckpoint(wh.root / "checkpoints" / dataset / EMBEDDINGS_TABLE / day.isoformat(), wh.steps.checkpoint)


def embed_day(wh: Warehouse, dataset: str, day: dt.date, embedder: Embedder) -> PartitionEmbeddings:
    """Write ``<dataset>/embeddings/<day>.parquet`` for the day's contract-checked chunks."""
    try:
        chunks = wh.read(dataset, "chunks", day)
    except FileNotFoundError as exc:
        quarantined = wh.partition_path(dataset, "quarantine", day).exists()
        why = f" (the chunk contract failed: see codex.{dataset}_quarantine)" if quarantined else ""
        raise FileNotFoundError(f"{dataset} {day}: no contract-checked chunks to embed{why}") from exc
    unit_table = units_of(wh, dataset, day, chunks)
    started_us = int(dt.datetime.now(dt.UTC).timestamp() * 1_000_000)
    units = _embed(wh, dataset, day, embedder, unit_table, UNITS_TABLE)
    pooled = pc.is_in(chunks.column("chunk_id"), value_set=unit_table.column("owner"))
    out = _embed(wh, dataset, day, embedder, chunks.filter(pc.invert(pooled)), EMBEDDINGS_TABLE)
    table, counts = _with_pooled(chunks, out, unit_table, units, started_us)
    written = units.table.select(["chunk_id", "input_hash", "embedding_model", "embedding_version", "dimensions",
                                  "vector", "embedded_at"])
    written = written.set_column(0, "chunk_id", unit_table.column("owner")).add_column(
        1, "unit_index", unit_table.column("unit_index")).add_column(2, "pieces", unit_table.column("pieces"))
    _write(wh, dataset, day, UNITS_TABLE, written, embedder)
    path = _write(wh, dataset, day, EMBEDDINGS_TABLE, table, embedder)
    checkpoint_for(wh, dataset, day).clear()  # only once the partitions are safely written
    return PartitionEmbeddings(day, table.num_rows, counts, str(path), unit_table.num_rows, units.counts)


def _with_pooled(
    chunks: pa.Table, out: EmbedOutcome, unit_table: pa.Table, units: EmbedOutcome, started_us: int
) -> tuple[pa.Table, EmbedCounts]:
    """The embeddings table in the chunks' order: chunks of one unit as embedded, the others their units' mean.

    A pooled vector is the length-weighted mean of the chunk's unit vectors, L2-normalized
    (what the local model does with the windows of a long input); its ``input_hash`` is the
    chunk text's, the text it stands for, so the chunks view and the index find it.
    Counts: a pooled chunk is ``embedded`` when any of its units was embedded by this run
    (``embedded_at`` from ``started_us`` on), else ``reused``.
    """
    counts = dataclasses.replace(out.counts)
    n_units = unit_table.num_rows
    if n_units == 0:
        return out.table, counts
    owners = unit_table.column("owner").to_pylist()
    weights = np.asarray([len(t) for t in unit_table.column("chunk_text").to_pylist()], np.float64)
    vecs = units.table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    vecs = vecs.reshape(n_units, -1).astype(np.float64)
    times = units.table.column("embedded_at").combine_chunks().cast(pa.int64()).to_numpy(zero_copy_only=False)
    order = {owner: k for k, owner in enumerate(dict.fromkeys(owners))}  # chunk -> group, first-seen order
    group = np.asarray([order[o] for o in owners])
    sums = np.zeros((len(order), vecs.shape[1]))
    np.add.at(sums, group, vecs * weights[:, None])
    pooled = (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)).astype(np.float32)
    newest = np.zeros(len(order), np.int64)
    np.maximum.at(newest, group, times)
    hashes = dict(zip(chunks.column("chunk_id").to_pylist(), chunks.column("content_hash").to_pylist()))
    ids = list(order)
    schema = out.table.schema
    d = pooled.shape[1]
    first = units.table.slice(0, 1)
    rows = pa.Table.from_arrays(
        [
            pa.array(ids, pa.string()),
            pa.array([hashes[c] for c in ids], pa.string()),  # content_hash is input_hash of the chunk text
            pa.repeat(first.column("embedding_model")[0], len(ids)),
            pa.repeat(first.column("embedding_version")[0], len(ids)),
            pa.array(np.full(len(ids), d, np.int32)),
            pa.FixedSizeListArray.from_arrays(pa.array(pooled.ravel()), d),
            pa.array(newest, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        ],
        schema=schema,
    )
    fresh = int((newest >= started_us).sum())
    counts.inputs += len(ids)
    counts.embedded += fresh
    counts.reused += len(ids) - fresh
    table = pa.concat_tables([out.table, rows])
    position = {c: i for i, c in enumerate(chunks.column("chunk_id").to_pylist())}
    return table.take(pa.array(np.argsort([position[c] for c in table.column("chunk_id").to_pylist()]))), counts


def _embed(wh: Warehouse, dataset: str, day: dt.date, embedder: Embedder, inputs: pa.Table, table: str) -> EmbedOutcome:
    """``embed_partition`` of ``inputs`` (``chunk_id``, ``chunk_text``) with this day's, other days' and the checkpoint's vectors."""
    existing = wh.partitions(dataset, table)
    previous = pq.read_table(existing[day], columns=["input_hash", "embedding_model", "embedding_version", "vector",
                                                     "embedded_at"]) if day in existing else None
    lookup = VectorLookup.from_files(
        [p for d, p in sorted(existing.items()) if d != day],
        model=embedder.model,
        version=embedder.version,
        hashes=input_hashes(inputs),
    )
    return embed_partition(inputs, embedder, previous=previous, lookup=lookup, checkpoint=checkpoint_for(wh, dataset, day))


def _write(wh: Warehouse, dataset: str, day: dt.date, table: str, rows: pa.Table, embedder: Embedder) -> Path:
    rows = rows.append_column(pa.field("partition_date", pa.date32(), nullable=False), pa.array([day] * rows.num_rows, pa.date32()))
    stamp = {"embedding_model": embedder.model, "embedding_version": embedder.version, "units_version": UNITS_VERSION}
    return wh.write(rows, dataset, table, day, stamp=stamp)


def units_of(wh: Warehouse, dataset: str, day: dt.date, chunks: pa.Table) -> pa.Table:
    """The evidence units of the day's chunks with more than one, and the one unit of a chunk with a
    context prefix: ``chunk_id`` (a unit id), ``chunk_text`` (what is embedded), ``owner`` (the chunk),
    ``unit_index``, ``pieces`` (JSON sentence spans)."""
    raw = pq.read_table(wh.partition_path(dataset, "raw", day), columns=["doc_id", "canonical_text"])
    texts = dict(zip(raw.column("doc_id").to_pylist(), raw.column("canonical_text").to_pylist()))
    cols: dict[str, list] = {"chunk_id": [], "chunk_text": [], "owner": [], "unit_index": [], "pieces": []}
    for cid, doc, anchor, meta in zip(*(chunks.column(c).to_pylist() for c in ("chunk_id", "doc_id", "evidence_anchor", "metadata"))):
        text = texts.get(doc)
        if text is None:
            continue
        units = chunk_units(text, anchor_spans(anchor), meta)
        if not units.stored:
            continue  # a chunk of one unit with no context prefix: embedded as itself
        for i, (pieces, unit_text) in enumerate(zip(units.pieces, units.texts)):
            cols["chunk_id"].append(f"{cid}#{i}")
            cols["chunk_text"].append(unit_text)
            cols["owner"].append(cid)
            cols["unit_index"].append(i)
            cols["pieces"].append(json.dumps(pieces, separators=(",", ":")))
    return pa.table({"chunk_id": pa.array(cols["chunk_id"], pa.string()), "chunk_text": pa.array(cols["chunk_text"], pa.string()),
                     "owner": pa.array(cols["owner"], pa.string()), "unit_index": pa.array(cols["unit_index"], pa.int32()),
                     "pieces": pa.array(cols["pieces"], pa.string())})
