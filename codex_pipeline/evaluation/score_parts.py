"""What each list thought of a hit: its raw BM25 score and cosine, beside the fused score and ranks.

A :class:`~codex_pipeline.retrieval.Hit` carries the fused score and its 1-based rank in
each candidate list (``ranks``), not the raw scores that placed it there. ``codex eval
--explain`` shows them by re-scoring the hit's row in its index, read-only and with the
same query analysis the ranking uses: the BM25 terms resolved against every searched
collection's vocabulary, the cosine of the query embedding with the row's stored vector.
Ranking is not touched; a hit missing from a list (no rank there) still gets its raw
score, which says how far it was from that list's window. The scores are raw: in hybrid mode the
fused score is ``w x bm25 / (its dataset's best BM25 for the query) + vector_weight x cosine``, ``w`` the
query's lexical weight times ``1 + coverage_boost x c`` (:func:`~codex_pipeline.retrieval.ranking.rank`), and a
row one list missed scores that list's floor there (:func:`~codex_pipeline.retrieval.ranking.fuse`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codex_pipeline.evaluation.runner import ScoredHit
from codex_pipeline.retrieval import AnalyzedQuery, Retriever
from codex_pipeline.retrieval.ranking import Vocabulary
from codex_pipeline.retrieval.searcher import SearchIndex


@dataclass(frozen=True)
class ScoreParts:
    """One hit's fused score, rank per list (None: not in that list's window) and raw scores (None: not known)."""

    fused: float
    bm25: float | None
    bm25_rank: int | None
    cosine: float | None
    vector_rank: int | None

    def as_dict(self) -> dict[str, float | int | None]:
        """JSON-ready, raw scores rounded to 4 decimals."""
        return {"fused": self.fused, "bm25": _round(self.bm25), "bm25_rank": self.bm25_rank,
                "cosine": _round(self.cosine), "vector_rank": self.vector_rank}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _collection(retriever: Retriever, dataset: str, units: str) -> SearchIndex | None:
    index = retriever.index(dataset)
    return index if units == "chunks" else index.propositions


def score_parts(retriever: Retriever, question: str, hits: Sequence[ScoredHit], units: str = "chunks",
                with_vector: bool = True) -> list[ScoreParts]:
    """The parts of each of ``hits`` for ``question``; ``with_vector`` False (a BM25 eval, no query embedder)
    leaves the cosine out."""
    searched = [c for ds in retriever.datasets if (c := _collection(retriever, ds, units)) is not None]
    terms = AnalyzedQuery.of(question).bm25_terms(Vocabulary(searched))
    query = np.asarray(retriever.embedder.embed([question]).vectors[0], np.float32) if with_vector and hits else None
    bm25_by_dataset: dict[str, np.ndarray | None] = {}
    out = []
    for scored in hits:
        hit = scored.hit
        index = _collection(retriever, hit.dataset, units)
        row = index.row_of(hit.chunk_id) if index is not None else None
        bm25 = cosine = None
        if index is not None and row is not None:
            if index.bm25 is not None:
                if hit.dataset not in bm25_by_dataset:
                    bm25_by_dataset[hit.dataset] = index.bm25.scores(terms) if terms else None
                scores = bm25_by_dataset[hit.dataset]
                bm25 = float(scores[row]) if scores is not None else 0.0  # no query term in any vocabulary
            cosine = _cosine(index, row, query) if query is not None else None
        out.append(ScoreParts(hit.score, bm25, hit.ranks.get("bm25"), cosine, hit.ranks.get("vector")))
    return out


def _cosine(index: SearchIndex, row: int, query: np.ndarray) -> float | None:
    """Cosine of ``query`` with the row's stored vector; None when the row has none."""
    if index.graph is None or not bool(index.rows.has_vector[row]):
        return None
    vec = np.asarray(index.graph.get(index.keys[row]), np.float32).reshape(-1)
    norms = float(np.linalg.norm(vec) * np.linalg.norm(query))
    return float(vec @ query / norms) if norms else None
