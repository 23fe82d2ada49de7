"""Retrieval over the current corpus: a per-dataset index, hybrid ranking, hits that cite.

Imports ``core``, ``warehouse``, ``embeddings`` and ``propositions`` only; nothing here
imports Dagster or prints. ``Retriever(data_dir).search(query, k, mode, filters)`` (chunks)
and ``.search_propositions(...)`` (seed 002) are the API, and a Retriever keeps the
indexes it searches current; the ``[dataset, search_index]`` assets call
:func:`update_dataset_index`; the index format and the reasons for it are in
:mod:`codex_pipeline.retrieval.index_format`, the measurements behind them in ``docs/history.md``.
"""

from __future__ import annotations

from codex_pipeline.retrieval.corpus import (
    CurrentCorpus,
    IndexBusy,
    index_root,
    open_current_corpus,
    update_dataset_index,
)
from codex_pipeline.retrieval.index_build import build_search_index
from codex_pipeline.retrieval.index_format import IndexManifest, read_manifest
from codex_pipeline.retrieval.propositions import PropositionHit
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.retriever import IndexMissing, Retriever, indexed_datasets
from codex_pipeline.retrieval.searcher import IndexOutdated
from codex_pipeline.retrieval.settings import RetrievalSettings
from codex_pipeline.retrieval.types import Context, Filters, Hit, SearchMode, SearchResults, Span

__all__ = [
    "AnalyzedQuery",
    "Context",
    "CurrentCorpus",
    "Filters",
    "Hit",
    "IndexBusy",
    "IndexManifest",
    "IndexMissing",
    "IndexOutdated",
    "PropositionHit",
    "RetrievalSettings",
    "Retriever",
    "SearchMode",
    "SearchResults",
    "Span",
    "build_search_index",
    "index_root",
    "indexed_datasets",
    "open_current_corpus",
    "read_manifest",
    "update_dataset_index",
]
