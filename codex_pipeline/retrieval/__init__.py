"""Retrieval over the current corpus: a per-dataset index, hybrid ranking, hits that cite.

Imports ``core``, ``warehouse`` and ``embeddings`` only; nothing here imports
Dagster. ``Retriever(data_dir).search(query, k, mode, filters)`` is the API; the
``[dataset, search_index]`` assets call :func:`update_dataset_index`; the index
format and the measurements behind it are in :mod:`codex_pipeline.retrieval.index`.
"""

from __future__ import annotations

from codex_pipeline.retrieval.corpus import CurrentCorpus, read_current_corpus, update_dataset_index
from codex_pipeline.retrieval.index import IndexManifest, build_search_index, read_manifest
from codex_pipeline.retrieval.retriever import IndexMissing, Retriever, index_root, indexed_datasets
from codex_pipeline.retrieval.types import Context, Filters, Hit, SearchMode, Span

__all__ = [
    "Context",
    "CurrentCorpus",
    "Filters",
    "Hit",
    "IndexManifest",
    "IndexMissing",
    "Retriever",
    "SearchMode",
    "Span",
    "build_search_index",
    "index_root",
    "indexed_datasets",
    "read_current_corpus",
    "read_manifest",
    "update_dataset_index",
]
