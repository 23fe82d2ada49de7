"""Embed one chunk partition from the warehouse, reusing every vector it can.

Reuse sources, in order: this partition's existing embeddings, then the same
dataset's other partitions (a re-landed document), then the checkpoint of an
earlier run that failed midway. Only inputs found nowhere cost a model call.
Other partitions are read as files, not through the current views: vectors of
superseded or retracted versions are never served by default, yet re-landing
their text still costs nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pyarrow as pa

from codex_pipeline.embeddings import (
    EmbedCounts,
    Embedder,
    EmbeddingCheckpoint,
    VectorLookup,
    embed_partition,
    input_hashes,
)
from codex_pipeline.warehouse.storage import Warehouse

EMBEDDINGS_TABLE = "embeddings"


@dataclass
class PartitionEmbeddings:
    day: dt.date
    rows: int
    counts: EmbedCounts
    path: str


def checkpoint_for(wh: Warehouse, dataset: str, day: dt.date) -> EmbeddingCheckpoint:
    return EmbeddingCheckpoint(wh.root / "checkpoints" / dataset / EMBEDDINGS_TABLE / day.isoformat())


def embed_day(wh: Warehouse, dataset: str, day: dt.date, embedder: Embedder) -> PartitionEmbeddings:
    """Write ``<dataset>/embeddings/<day>.parquet`` for the day's contract-checked chunks."""
    try:
        chunks = wh.read(dataset, "chunks", day)
    except FileNotFoundError as exc:
        quarantined = wh.partition_path(dataset, "quarantine", day).exists()
        why = f" (the chunk contract failed: see codex.{dataset}_quarantine)" if quarantined else ""
        raise FileNotFoundError(f"{dataset} {day}: no contract-checked chunks to embed{why}") from exc
    existing = wh.partitions(dataset, EMBEDDINGS_TABLE)
    previous = wh.read(dataset, EMBEDDINGS_TABLE, day) if day in existing else None
    hashes = input_hashes(chunks)
    lookup = VectorLookup.from_files(
        [p for d, p in sorted(existing.items()) if d != day],
        model=embedder.model,
        version=embedder.version,
        hashes=hashes,
    )
    checkpoint = checkpoint_for(wh, dataset, day)
    out = embed_partition(chunks, embedder, previous=previous, lookup=lookup, checkpoint=checkpoint)
    table = out.table.append_column(
        pa.field("partition_date", pa.date32(), nullable=False), pa.array([day] * out.table.num_rows, pa.date32())
    )
    path = wh.write(
        table,
        dataset,
        EMBEDDINGS_TABLE,
        day,
        stamp={"embedding_model": embedder.model, "embedding_version": embedder.version},
    )
    checkpoint.clear()  # only once the partition is safely written
    return PartitionEmbeddings(day, table.num_rows, out.counts, str(path))
