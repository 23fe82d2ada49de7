"""The embeddings step: each day's contract-checked chunks get vectors, reused wherever possible.

The per-day work (reuse, evidence units, pooling, checkpoints) is
:func:`~codex_pipeline.pipeline.embeddings_day.embed_day`; this step runs it over a run's
days and sums what it did, so a run over several days reports one set of counts.
"""

import datetime as dt
from collections.abc import Sequence

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.embeddings import Embedder
from codex_pipeline.pipeline.embeddings_day import UNITS_TABLE, PartitionEmbeddings, embed_day
from codex_pipeline.pipeline.housekeeping import set_aside_damaged
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import EmbeddingsResult, EmbeddingTotals, StepLog
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.storage import Warehouse

DAY_COUNTS = ("inputs", "reused", "embedded", "requests")


def run_embeddings(
    spec: DatasetSpec, wh: Warehouse, days: Sequence[dt.date], embedder: Embedder, log: StepLog | None = None
) -> EmbeddingsResult:
    """Embed every day of ``days`` (raises when a day has no published chunks) and refresh the views."""
    rec = Recorder(log)
    damaged = set_aside_damaged(wh, spec.name, list(days), rec)
    totals: dict[str, int] = {}
    by_partition: dict[str, dict[str, int]] = {}
    for day in days:
        done = embed_day(wh, spec.name, day, embedder)
        by_partition[day.isoformat()] = _day_counts(done)
        _add(totals, done)
        rec.info(f"{spec.name} {day.isoformat()}: {by_partition[day.isoformat()]}")
    created = ensure_views(wh, [(spec.name, "embeddings"), (spec.name, UNITS_TABLE), (spec.name, "chunks")])
    return EmbeddingsResult(
        spec.name, tuple(days), embedder.model, embedder.version, embedder.dimensions, _totals(totals),
        by_partition, views_created=tuple(created), damaged=damaged,
    )


def _day_counts(done: PartitionEmbeddings) -> dict[str, int]:
    counts = done.counts.as_dict()
    return {**{k: counts[k] for k in DAY_COUNTS}, "units": done.units,
            "units_embedded": done.unit_counts.as_dict()["embedded"]}


def _add(totals: dict[str, int], done: PartitionEmbeddings) -> None:
    """Chunk counts under their own names, evidence-unit counts prefixed ``units_``."""
    for k, v in done.counts.as_dict().items():
        totals[k] = totals.get(k, 0) + v
    for k, v in done.unit_counts.as_dict().items():
        totals[f"units_{k}"] = totals.get(f"units_{k}", 0) + v


def _totals(t: dict[str, int]) -> EmbeddingTotals:
    return EmbeddingTotals(
        inputs=t.get("inputs", 0),
        reused=t.get("reused", 0),
        embedded=t.get("embedded", 0),
        requests=t.get("requests", 0) + t.get("units_requests", 0),  # chunk and unit inputs
        recovered_from_checkpoint=t.get("recovered", 0) + t.get("units_recovered", 0),
        long_inputs=t.get("long_inputs", 0),
        evidence_units=t.get("units_inputs", 0),
        evidence_units_reused=t.get("units_reused", 0),
        evidence_units_embedded=t.get("units_embedded", 0),
    )
