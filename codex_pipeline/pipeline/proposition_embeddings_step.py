"""The proposition-embeddings step: each day's contract-checked propositions get vectors.

:func:`~codex_pipeline.embeddings.embed_partition` does a day's work: a vector is reused
whenever the exact text, the model and its version are unchanged (this partition's
previous table, then the dataset's other partitions, then a checkpoint of a failed
run), so a rerun or a re-extraction that yields the same statements costs nothing.
"""

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.embeddings import (
    EmbedCounts,
    Embedder,
    EmbeddingCheckpoint,
    VectorLookup,
    embed_partition,
    input_hashes,
)
from codex_pipeline.pipeline.results import PropositionEmbeddingsResult
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, TABLE
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.storage import Warehouse


def run_proposition_embeddings(
    spec: DatasetSpec, wh: Warehouse, days: Sequence[dt.date], embedder: Embedder
) -> PropositionEmbeddingsResult:
    """Embed each day's contract-checked propositions (vectors reused by exact text, model and version)."""
    totals: dict[str, int] = {}
    for day in days:
        for k, v in embed_propositions_day(wh, spec.name, day, embedder).counts.as_dict().items():
            totals[k] = totals.get(k, 0) + v
    created = ensure_views(wh, [(spec.name, EMBEDDINGS_TABLE)])
    return PropositionEmbeddingsResult(spec.name, tuple(days), embedder.model, embedder.version, totals,
                                       views_created=tuple(created))


@dataclass
class PartitionVectors:
    """What :func:`embed_propositions_day` wrote: its rows, counts and file."""

    rows: int
    counts: EmbedCounts
    path: str


def embed_propositions_day(wh: Warehouse, dataset: str, day: dt.date, embedder: Embedder) -> PartitionVectors:
    """Write ``<dataset>/proposition_embeddings/<day>.parquet`` for the day's contract-checked propositions."""
    try:
        props = wh.read(dataset, TABLE, day)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"{dataset} {day}: no contract-checked propositions to embed (materialize [{dataset}, propositions]; "
            f"a partition that failed its contract is in warehouse/{dataset}/propositions_quarantine/)"
        ) from exc
    keyed = pa.table({"chunk_id": props.column("proposition_id"), "text": props.column("text")})
    existing = wh.partitions(dataset, EMBEDDINGS_TABLE)
    previous = wh.read(dataset, EMBEDDINGS_TABLE, day) if day in existing else None
    lookup = VectorLookup.from_files(
        [p for d, p in sorted(existing.items()) if d != day],
        model=embedder.model, version=embedder.version, hashes=input_hashes(keyed, "text"),
    )
    checkpoint = EmbeddingCheckpoint(wh.root / "checkpoints" / dataset / EMBEDDINGS_TABLE / day.isoformat(), wh.steps.checkpoint)
    out = embed_partition(keyed, embedder, previous=previous, lookup=lookup, checkpoint=checkpoint, text_column="text")
    t = out.table.rename_columns(["proposition_id", *out.table.column_names[1:]])
    t = t.append_column(pa.field("doc_id", pa.string(), nullable=False), props.column("doc_id"))
    t = t.append_column(pa.field("parent_chunk_id", pa.string(), nullable=False), props.column("parent_chunk_id"))
    t = t.append_column(pa.field("partition_date", pa.date32(), nullable=False), pa.array([day] * t.num_rows, pa.date32()))
    path = wh.write(t, dataset, EMBEDDINGS_TABLE, day, stamp={"embedding_model": embedder.model, "embedding_version": embedder.version})
    checkpoint.clear()
    return PartitionVectors(t.num_rows, out.counts, str(path))
