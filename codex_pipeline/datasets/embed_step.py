"""Embed one chunk partition from the warehouse, reusing every vector it can.

Reuse sources, in order: this partition's existing embeddings, then the same
dataset's other partitions (a re-landed document), then the checkpoint of an
earlier run that failed midway. Only inputs found nowhere cost a model call.
Other partitions are read as files, not through the current views: vectors of
superseded or retracted versions are never served by default, yet re-landing
their text still costs nothing.

The same step embeds the **evidence units** of every chunk with more than one
(``retrieval.units``: sentences packed to 128 tokens with the chunk's context prefix)
into ``<dataset>/evidence_units/<day>.parquet``, one row per unit, with the same
reuse rules keyed by the unit's own text. The search index keeps them so a query
embeds only itself. This costs model time: the units of a long chunk hold about its
tokens again (measured in the closing note of issue 11); a chunk of one unit costs
nothing extra. The embeddings file is stamped with the unit recipe
(:data:`~codex_pipeline.retrieval.units.UNITS_VERSION`), so the version sensor
re-runs this step when it changes.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
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
    day: dt.date
    rows: int
    counts: EmbedCounts
    path: str
    units: int = 0  # evidence units of chunks with several
    unit_counts: EmbedCounts = field(default_factory=lambda: EmbedCounts(inputs=0))


def checkpoint_for(wh: Warehouse, dataset: str, day: dt.date, table: str = EMBEDDINGS_TABLE) -> EmbeddingCheckpoint:
    return EmbeddingCheckpoint(wh.root / "checkpoints" / dataset / table / day.isoformat())


def embed_day(wh: Warehouse, dataset: str, day: dt.date, embedder: Embedder) -> PartitionEmbeddings:
    """Write ``<dataset>/embeddings/<day>.parquet`` for the day's contract-checked chunks."""
    try:
        chunks = wh.read(dataset, "chunks", day)
    except FileNotFoundError as exc:
        quarantined = wh.partition_path(dataset, "quarantine", day).exists()
        why = f" (the chunk contract failed: see codex.{dataset}_quarantine)" if quarantined else ""
        raise FileNotFoundError(f"{dataset} {day}: no contract-checked chunks to embed{why}") from exc
    out = _embed(wh, dataset, day, embedder, chunks, EMBEDDINGS_TABLE)
    unit_table = units_of(wh, dataset, day, chunks)
    units = _embed(wh, dataset, day, embedder, unit_table, UNITS_TABLE)
    written = units.table.select(["chunk_id", "input_hash", "embedding_model", "embedding_version", "dimensions",
                                  "vector", "embedded_at"])
    written = written.set_column(0, "chunk_id", unit_table.column("owner")).add_column(
        1, "unit_index", unit_table.column("unit_index")).add_column(2, "pieces", unit_table.column("pieces"))
    _write(wh, dataset, day, UNITS_TABLE, written, embedder)
    path = _write(wh, dataset, day, EMBEDDINGS_TABLE, out.table, embedder)
    checkpoint_for(wh, dataset, day).clear()  # only once the partitions are safely written
    checkpoint_for(wh, dataset, day, UNITS_TABLE).clear()
    return PartitionEmbeddings(day, out.table.num_rows, out.counts, str(path), unit_table.num_rows, units.counts)


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
    return embed_partition(inputs, embedder, previous=previous, lookup=lookup, checkpoint=checkpoint_for(wh, dataset, day, table))


def _write(wh: Warehouse, dataset: str, day: dt.date, table: str, rows: pa.Table, embedder: Embedder) -> Path:
    rows = rows.append_column(pa.field("partition_date", pa.date32(), nullable=False), pa.array([day] * rows.num_rows, pa.date32()))
    stamp = {"embedding_model": embedder.model, "embedding_version": embedder.version, "units_version": UNITS_VERSION}
    return wh.write(rows, dataset, table, day, stamp=stamp)


def units_of(wh: Warehouse, dataset: str, day: dt.date, chunks: pa.Table) -> pa.Table:
    """The evidence units of the day's chunks with more than one: ``chunk_id`` (a unit id), ``chunk_text``
    (what is embedded), ``owner`` (the chunk), ``unit_index``, ``pieces`` (JSON sentence spans)."""
    raw = pq.read_table(wh.partition_path(dataset, "raw", day), columns=["doc_id", "canonical_text"])
    texts = dict(zip(raw.column("doc_id").to_pylist(), raw.column("canonical_text").to_pylist()))
    cols: dict[str, list] = {"chunk_id": [], "chunk_text": [], "owner": [], "unit_index": [], "pieces": []}
    for cid, doc, anchor, meta in zip(*(chunks.column(c).to_pylist() for c in ("chunk_id", "doc_id", "evidence_anchor", "metadata"))):
        text = texts.get(doc)
        if text is None:
            continue
        units = chunk_units(text, anchor_spans(anchor), meta)
        if not units.embedded:
            continue
        for i, (pieces, unit_text) in enumerate(zip(units.pieces, units.texts)):
            cols["chunk_id"].append(f"{cid}#{i}")
            cols["chunk_text"].append(unit_text)
            cols["owner"].append(cid)
            cols["unit_index"].append(i)
            cols["pieces"].append(json.dumps(pieces, separators=(",", ":")))
    return pa.table({"chunk_id": pa.array(cols["chunk_id"], pa.string()), "chunk_text": pa.array(cols["chunk_text"], pa.string()),
                     "owner": pa.array(cols["owner"], pa.string()), "unit_index": pa.array(cols["unit_index"], pa.int32()),
                     "pieces": pa.array(cols["pieces"], pa.string())})
