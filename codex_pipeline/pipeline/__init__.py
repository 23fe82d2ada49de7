"""A dataset's day steps, end to end, as plain functions that return what they did.

``run_raw_day``, ``run_chunks_day`` and ``run_embeddings`` do a step's whole sequence
(damaged files, tombstones, writing, the current corpus, views, the chunk contract,
publishing or quarantine, redirects); ``current_ids_unique`` and ``chunk_addresses``
are the warning checks of a published day. Nothing here imports Dagster: the assets
in ``defs/`` call these and translate the results, and so can a script or a test.
"""

from codex_pipeline.pipeline.chunks_day import run_chunks_day
from codex_pipeline.pipeline.day_checks import chunk_addresses, current_ids_unique
from codex_pipeline.pipeline.embeddings_step import run_embeddings
from codex_pipeline.pipeline.raw_day import run_raw_day
from codex_pipeline.pipeline.results import (
    AddressResult,
    ChunksDayResult,
    ChunkSummary,
    EmbeddingsResult,
    EmbeddingTotals,
    RawDayResult,
    StepLog,
    UniqueIdsResult,
)

__all__ = [
    "AddressResult",
    "ChunkSummary",
    "ChunksDayResult",
    "EmbeddingTotals",
    "EmbeddingsResult",
    "RawDayResult",
    "StepLog",
    "UniqueIdsResult",
    "chunk_addresses",
    "current_ids_unique",
    "run_chunks_day",
    "run_embeddings",
    "run_raw_day",
]
