"""Which materialized partitions were built with something other than today's versions.

Reads only Parquet footers: each raw file carries the ``source_version`` its reader
had, each chunks (or quarantine) file the ``chunking_version`` it was built with,
each embeddings file its model and version and the evidence-unit recipe.
Partitions never materialized are not stale: schedules and backfills build them
(a sensor that chased them would race those runs).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.retrieval.units import UNITS_VERSION
from codex_pipeline.warehouse.storage import Warehouse


@dataclass(frozen=True)
class StalePartition:
    """A partition to rebuild: ``target`` is the first step to redo, ``reason`` what changed."""

    dataset: str
    day: dt.date
    target: str  # "raw" (re-ingest, re-chunk, re-embed), "chunks" (re-chunk, re-embed) or "embeddings"
    reason: str
    run_key: str  # unique per (partition, what it must be brought up to)


def stale_partitions(
    wh: Warehouse, specs: Iterable[DatasetSpec], embedding_model: str, embedding_version: str
) -> list[StalePartition]:
    """Every partition whose chunks or embeddings are out of date, oldest day first."""
    out: list[StalePartition] = []
    for spec in specs:
        if not spec.chunked:
            continue
        chunks = wh.partitions(spec.name, "chunks")
        quarantined = {d: p for d, p in wh.partitions(spec.name, "quarantine").items() if d not in chunks}
        embeddings = wh.partitions(spec.name, "embeddings")
        raw = wh.partitions(spec.name, "raw")
        for day, path in sorted({**chunks, **quarantined}.items()):
            read_with = wh.stamp(raw[day]).get("source_version", "unknown") if day in raw else spec.source_version
            if read_with != spec.source_version:
                out.append(
                    StalePartition(
                        spec.name, day, "raw",
                        f"source_version {read_with} -> {spec.source_version}",
                        f"{spec.name}:{day}:source_version={spec.source_version}|chunking_version={spec.chunking_version}",
                    )
                )
                continue
            built = wh.stamp(path).get("chunking_version", "unknown")
            if built != spec.chunking_version:
                out.append(
                    StalePartition(
                        spec.name, day, "chunks",
                        f"chunking_version {built} -> {spec.chunking_version}",
                        f"{spec.name}:{day}:chunking_version={spec.chunking_version}",
                    )
                )
                continue
            if day in quarantined:
                continue  # failed the contract at this version: nothing to embed
            emb = embeddings.get(day)
            if emb is None:
                continue  # never embedded: the schedule or a backfill builds it, not a version change
            stamp = wh.stamp(emb)
            built_with = (stamp.get("embedding_model"), stamp.get("embedding_version"), stamp.get("units_version"))
            if built_with == (embedding_model, embedding_version, UNITS_VERSION):
                continue
            why = (f"embedding {built_with[0]} {built_with[1]} -> {embedding_model} {embedding_version}"
                   if built_with[:2] != (embedding_model, embedding_version)
                   else f"evidence units {built_with[2] or 'none'} -> {UNITS_VERSION}")
            out.append(
                StalePartition(
                    spec.name, day, "embeddings", why,
                    f"{spec.name}:{day}:embedding={embedding_model}|{embedding_version}|{UNITS_VERSION}",
                )
            )
    return out
