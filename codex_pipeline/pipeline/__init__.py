"""A dataset's day steps, end to end, as plain functions that return what they did.

``run_raw_day``, ``run_chunks_day``, ``run_embeddings``, ``run_propositions``,
``run_proposition_embeddings`` and ``run_search_index`` do a step's whole sequence
(damaged files, tombstones, writing, the current corpus, views, the chunk and
propositions contracts, publishing or quarantine, redirects, the index build);
``current_ids_unique`` and ``chunk_addresses`` are the warning checks of a published
day. Nothing here imports Dagster: the assets in ``defs/`` call these and translate the
results (``defs/metadata.py``), and so can a script or a test.
"""

from codex_pipeline.pipeline.chunks_day import run_chunks_day
from codex_pipeline.pipeline.day_checks import chunk_addresses, current_ids_unique
from codex_pipeline.pipeline.embeddings_step import run_embeddings
from codex_pipeline.pipeline.proposition_embeddings_step import run_proposition_embeddings
from codex_pipeline.pipeline.propositions_step import run_propositions
from codex_pipeline.pipeline.raw_day import run_raw_day
from codex_pipeline.pipeline.results import (
    AddressResult,
    ChunksDayResult,
    ChunkSummary,
    EmbeddingsResult,
    EmbeddingTotals,
    PropositionEmbeddingsResult,
    PropositionsResult,
    RawDayResult,
    SearchIndexResult,
    StepLog,
    UniqueIdsResult,
)
from codex_pipeline.pipeline.row_accounting import RawDayFailed
from codex_pipeline.pipeline.search_index_step import run_search_index

__all__ = [
    "AddressResult",
    "ChunkSummary",
    "ChunksDayResult",
    "EmbeddingTotals",
    "EmbeddingsResult",
    "PropositionEmbeddingsResult",
    "PropositionsResult",
    "RawDayFailed",
    "RawDayResult",
    "SearchIndexResult",
    "StepLog",
    "UniqueIdsResult",
    "chunk_addresses",
    "current_ids_unique",
    "run_chunks_day",
    "run_embeddings",
    "run_proposition_embeddings",
    "run_propositions",
    "run_raw_day",
    "run_search_index",
]
