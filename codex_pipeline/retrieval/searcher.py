"""One dataset's index version opened for queries: candidates by BM25 or by vector.

Rows and documents are memory-mapped Arrow IPC, the HNSW graph a usearch *view*,
and BM25 columns are read per query: opening costs little and a search process
holds only what queries touch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from usearch.index import Index

from codex_pipeline.retrieval.bm25 import Bm25
from codex_pipeline.retrieval.index import (
    BM25_DIR,
    DOCS_FILE,
    EXPANSION_SEARCH,
    FORMAT_VERSION,
    MANIFEST_FILE,
    ROWS_FILE,
    VECTORS_FILE,
    IndexManifest,
    _live_dir,
    _open_arrow,
    analyzer_id,
    chunk_keys,
)
from codex_pipeline.retrieval.types import Filters

EXACT_VECTOR_LIMIT = 20_000
"""A filter leaving at most this many chunks is searched exactly (every vector scored), not through the graph."""

RowCheck = Callable[[int], bool]


class IndexOutdated(RuntimeError):
    """The live index was written by another index format or analyzer."""


@dataclass(frozen=True)
class Candidate:
    row: int
    score: float


class SearchIndex:
    """A live index version of one dataset, opened read-only."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.manifest = IndexManifest.from_dict(json.loads((folder / MANIFEST_FILE).read_text()))
        if not self.manifest.current_format:
            raise IndexOutdated(
                f"{folder}: index format {self.manifest.format_version}, analyzer {self.manifest.analyzer}; this "
                f"Codex reads format {FORMAT_VERSION} and analyzes queries with {analyzer_id()} (is PyStemmer installed "
                f"on one side only?): rematerialize [{self.manifest.dataset}, search_index] (`codex search` rebuilds it)"
            )
        self.rows = _open_arrow(folder / ROWS_FILE)
        self.docs = _open_arrow(folder / DOCS_FILE)
        self.keys = self.rows.column("key").to_numpy()  # sorted; zero-copy when one record batch
        self.bm25 = Bm25(folder / BM25_DIR) if (folder / BM25_DIR).exists() else None
        vec = folder / VECTORS_FILE
        self.graph = Index.restore(str(vec), view=True) if vec.exists() else None
        if self.graph is not None:
            self.graph.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]  # not saved with the file
        self._has_vector = self.rows.column("has_vector").to_numpy(zero_copy_only=False)

    @classmethod
    def open_live(cls, root: Path) -> SearchIndex | None:
        live = _live_dir(root)
        return cls(live) if live else None

    @property
    def dataset(self) -> str:
        return self.manifest.dataset

    def __len__(self) -> int:
        return self.rows.num_rows

    # -- lookups ----------------------------------------------------------------------

    def row_of(self, chunk_id: str) -> int | None:
        """Row of ``chunk_id`` (binary search on its key), or None."""
        key = chunk_keys(pa.array([chunk_id]))[0]
        i = int(np.searchsorted(self.keys, key))
        if i < len(self.keys) and self.keys[i] == key and self.rows.column("chunk_id")[i].as_py() == chunk_id:
            return i
        return None

    def knows(self, term: str) -> bool:
        """Whether ``term`` occurs in the indexed text."""
        return self.bm25 is not None and term in self.bm25.vocab

    def row(self, i: int) -> dict[str, Any]:
        return {name: self.rows.column(name)[i].as_py() for name in self.rows.column_names}

    def canonical_text(self, doc_row: int) -> str | None:
        return self.docs.column("canonical_text")[doc_row].as_py() if doc_row >= 0 else None

    # -- filters ----------------------------------------------------------------------

    def mask(self, filters: Filters) -> np.ndarray | None:
        """Rows allowed by the vectorizable filters (types, dates); None when all are."""
        conds = []
        if filters.chunk_types:
            conds.append(pc.is_in(self.rows.column("chunk_type"), value_set=pa.array(sorted(filters.chunk_types))))
        if filters.date_from:
            conds.append(pc.greater_equal(self.rows.column("partition_date"), pa.scalar(filters.date_from, pa.date32())))
        if filters.date_to:
            conds.append(pc.less_equal(self.rows.column("partition_date"), pa.scalar(filters.date_to, pa.date32())))
        if not conds:
            return None
        out = conds[0]
        for c in conds[1:]:
            out = pc.and_(out, c)
        return np.asarray(out.to_numpy(zero_copy_only=False), bool)

    # -- candidates -------------------------------------------------------------------

    def bm25_candidates(
        self, terms: list[str], limit: int, mask: np.ndarray | None, accept: RowCheck
    ) -> list[Candidate]:
        """Up to ``limit`` rows by BM25 score (> 0), best first, passing ``mask`` and ``accept``."""
        if self.bm25 is None or not terms:
            return []
        scores = self.bm25.scores(terms)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        positive = int((scores > 0).sum())
        return _take_best(scores, min(limit, positive), positive, accept)

    def vector_candidates(
        self, query: np.ndarray, limit: int, mask: np.ndarray | None, accept: RowCheck
    ) -> list[Candidate]:
        """Up to ``limit`` rows by cosine similarity, best first, passing ``mask`` and ``accept``."""
        if self.graph is None or len(self.graph) == 0:
            return []
        allowed = self._has_vector if mask is None else (mask & self._has_vector)
        n_allowed = int(allowed.sum()) if mask is not None else len(self.graph)
        if n_allowed == 0:
            return []
        if mask is not None and n_allowed <= EXACT_VECTOR_LIMIT:
            rows = np.flatnonzero(allowed)
            vecs = np.asarray(self.graph.get(self.keys[rows]), np.float32)
            sims = vecs @ (query / (np.linalg.norm(query) or 1.0))
            sims /= np.maximum(np.linalg.norm(vecs, axis=1), 1e-12)
            scores = np.full(len(self.keys), -np.inf, np.float32)
            scores[rows] = sims
            return _take_best(scores, min(limit, n_allowed), n_allowed, accept)
        want = limit
        while True:
            count = min(max(want, 1), len(self.graph))
            matches = self.graph.search(query, count)
            rows = np.searchsorted(self.keys, matches.keys.astype(np.uint64))
            out = []
            for r, dist in zip(rows.tolist(), matches.distances.tolist()):
                if (mask is None or mask[r]) and accept(r):
                    out.append(Candidate(r, 1.0 - float(dist)))
                    if len(out) == limit:
                        return out
            if count >= len(self.graph):
                return out
            want = count * 8  # the filter rejected too many: ask the graph for more


def _take_best(scores: np.ndarray, limit: int, available: int, accept: RowCheck) -> list[Candidate]:
    """Best-first rows by ``scores``, growing the window while ``accept`` rejects rows."""
    out: list[Candidate] = []
    if limit <= 0:
        return out
    seen = 0
    want = limit
    while True:
        want = min(want, available)
        top = np.argpartition(-scores, want - 1)[:want] if want < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]  # score desc, then row: deterministic
        for r in top[seen:].tolist():
            if accept(r):
                out.append(Candidate(r, float(scores[r])))
                if len(out) == limit:
                    return out
        seen = want
        if want >= available:
            return out
        want *= 8

