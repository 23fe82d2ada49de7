"""Proposition partitions built with something other than today's versions (Parquet footers only).

- ``propositions``: built from chunks of another ``chunking_version`` than the day's
  chunks file now has, or with another extractor / version / prompt version;
- ``proposition_embeddings``: built with another embedding model or version.

Partitions never materialized are left to schedules and backfills, as for chunks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, TABLE
from codex_pipeline.warehouse.storage import Warehouse


@dataclass(frozen=True)
class StaleProposition:
    """A proposition partition to rebuild: the fields of :class:`~codex_pipeline.datasets.staleness.StalePartition`.

    So the version sensor requests both alike.
    """

    dataset: str
    day: dt.date
    target: str  # "propositions" (re-extract, re-embed) or "proposition_embeddings"
    reason: str
    run_key: str


def extractor_stamp(name: str, version: str, prompt_version: str) -> str:
    """The ``extractor`` entry of a propositions file's footer: ``name|version|prompt_version``."""
    return f"{name}|{version}|{prompt_version}"


def stale_proposition_partitions(
    wh: Warehouse, datasets: Iterable[str], extractor: str, embedding_model: str, embedding_version: str
) -> list[StaleProposition]:
    """``extractor`` is :func:`extractor_stamp` of the configured extractor."""
    out = []
    for name in datasets:
        chunks = wh.partitions(name, "chunks")
        vectors = wh.partitions(name, EMBEDDINGS_TABLE)
        for day, path in sorted(wh.partitions(name, TABLE).items()):
            stamp = wh.stamp(path)
            built_from = stamp.get("chunking_version")
            now_from = wh.stamp(chunks[day]).get("chunking_version") if day in chunks else built_from
            if built_from != now_from or stamp.get("extractor") != extractor:
                why = (f"chunking_version {built_from} -> {now_from}" if built_from != now_from
                       else f"extractor {stamp.get('extractor')} -> {extractor}")
                out.append(StaleProposition(name, day, TABLE, why, f"{name}:{day}:propositions={extractor}|{now_from}"))
                continue
            emb = vectors.get(day)
            if emb is None:
                continue
            s = wh.stamp(emb)
            if (s.get("embedding_model"), s.get("embedding_version")) != (embedding_model, embedding_version):
                out.append(StaleProposition(
                    name, day, EMBEDDINGS_TABLE,
                    f"embedding {s.get('embedding_model')} {s.get('embedding_version')} -> {embedding_model} {embedding_version}",
                    f"{name}:{day}:proposition_embeddings={embedding_model}|{embedding_version}",
                ))
    return out
