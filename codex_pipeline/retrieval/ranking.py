"""One ranking for every collection of the index: candidates per dataset, then one fusion.

**Fusion.** Each ranking takes the top ``max(k * 5, 50)`` candidates of every dataset
searched and merges them by score into one list (cosine is comparable across
datasets; BM25 nearly so: same analyzer, per-dataset IDF). Hybrid ranking adds
``1 / (rrf_k + rank)`` per list (reciprocal rank fusion, ``rrf_k = 60`` as in Cormack
et al. and the LanceDB/Haystack defaults), with one refinement: a BM25 candidate
scoring under ``lexical_floor`` of the best BM25 score does not vote. Without it,
a query for a permit number lets every chunk sharing the number's common parts
(``bp2026``) vote, and a chunk that is 3rd in both lists beat the one chunk holding
the exact number. With the floor and whole-identifier terms
(:class:`~codex_pipeline.retrieval.lexical.QueryTerms`), a query for a permit number or
a statute citation puts the chunk holding it first (checked on the sample permits and
OSHA cases; figures in ``docs/history.md``). A query holding an identifier or a number
gets the BM25 list's votes weighted ``lexical_query_weight`` (chosen
leave-one-corpus-out). Every parameter is a field of the
:class:`~codex_pipeline.retrieval.settings.RetrievalSettings` handed in. Chunks and
propositions are ranked by this same code.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from codex_pipeline.retrieval.lexical import IDENTIFIER
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.searcher import SearchIndex
from codex_pipeline.retrieval.settings import DEFAULT, RetrievalSettings
from codex_pipeline.retrieval.types import Filters, SearchMode

Live = frozenset[tuple[str, dt.date]]


@dataclass(frozen=True)
class Source:
    """One dataset's collection to rank, and the documents still live (None: every indexed one)."""

    dataset: str
    index: SearchIndex
    live: Live | None


@dataclass(frozen=True)
class Ranked:
    """A row of one dataset's collection as :func:`rank` returns it; ``score``: the weighted reciprocal-rank
    sum in hybrid mode, else the one ranking's own score."""

    dataset: str
    row: int
    score: float
    ranks: Mapping[str, int]  # 1-based rank per ranking that found it


Scored = tuple[float, str, int]  # (score, dataset, row)


def rank(query: AnalyzedQuery, sources: Sequence[Source], k: int, mode: SearchMode, filters: Filters,
         settings: RetrievalSettings = DEFAULT) -> list[Ranked]:
    """The ``k`` best rows of ``sources`` for ``query``, best first, fused with ``settings``."""
    want = max(k * settings.candidates_per_k, settings.candidates_min) if mode is SearchMode.HYBRID else k
    terms = query.bm25_terms(_Vocabulary([s.index for s in sources]))
    found: dict[str, list[Scored]] = {"bm25": [], "vector": []}
    for src in sources:
        mask = src.index.mask(filters)
        accept = acceptor(src.index, src.live, filters)
        if mode is not SearchMode.VECTOR:
            found["bm25"] += [(c.score, src.dataset, c.row) for c in src.index.bm25_candidates(terms, want, mask, accept)]
        if mode is not SearchMode.BM25 and query.vector is not None:
            found["vector"] += [(c.score, src.dataset, c.row)
                                for c in src.index.vector_candidates(query.vector, want, mask, accept)]
    return fuse(found, mode, want, lexical_weight(query.text, settings), settings)[:k]


def lexical_weight(text: str, settings: RetrievalSettings = DEFAULT) -> float:
    """The BM25 list's weight in hybrid fusion for query ``text``: ``settings.lexical_query_weight`` when the
    query names something only words can match (an identifier, a number), else ``settings.bm25_weight``."""
    lexical = bool(IDENTIFIER.search(text) or _NUMBER.search(text))
    return settings.lexical_query_weight if lexical else settings.bm25_weight


_NUMBER = re.compile(r"\d")


def fuse(found: Mapping[str, list[Scored]], mode: SearchMode, want: int, bm25_weight: float | None = None,
         settings: RetrievalSettings = DEFAULT) -> list[Ranked]:
    """Merge the per-ranking candidate lists: fused in hybrid mode (``settings.fusion``), else the one list's scores.

    ``bm25_weight``: the BM25 list's weight for this query (default ``settings.bm25_weight``; see
    :func:`lexical_weight`).
    """
    weights = {"bm25": settings.bm25_weight if bm25_weight is None else bm25_weight, "vector": settings.vector_weight}
    hybrid = mode is SearchMode.HYBRID
    lists = {kind: _ordered(kind, cands, hybrid, settings) for kind, cands in found.items()}
    scored: dict[tuple[str, int], float] = {}
    ranks: dict[tuple[str, int], dict[str, int]] = {}
    for kind, cands in lists.items():
        for at, (score, name, row) in enumerate(cands[:want], 1):
            key = (name, row)
            ranks.setdefault(key, {})[kind] = at
            if not hybrid:
                scored[key] = score
            elif settings.fusion == "convex":
                scored[key] = scored.get(key, 0.0) + weights[kind] * score
            else:
                scored[key] = scored.get(key, 0.0) + weights[kind] / (settings.rrf_k + at)
    if hybrid and settings.fusion == "convex":  # a row one list did not reach scores that list's last there
        for kind, cands in lists.items():
            if cands[:want]:
                last = cands[:want][-1][0]
                for key, held in ranks.items():
                    if kind not in held:
                        scored[key] += weights[kind] * last
    ordered = sorted(scored, key=lambda key: (-scored[key], key[0], key[1]))
    return [Ranked(name, row, scored[(name, row)], ranks[(name, row)]) for name, row in ordered]


def _ordered(kind: str, cands: list[Scored], hybrid: bool, settings: RetrievalSettings) -> list[Scored]:
    """One list best first; in hybrid mode BM25 candidates under ``lexical_floor`` of their best are dropped, and
    scores are normalized where the fusion or ``bm25_per_dataset`` asks (see :class:`RetrievalSettings`)."""
    convex = hybrid and settings.fusion == "convex"
    if kind == "bm25" and (convex or settings.bm25_per_dataset):
        best: dict[str, float] = {}
        for score, name, _ in cands:
            best[name] = max(best.get(name, 0.0), score)
        cands = [(score / best[name] if best[name] > 0 else 0.0, name, row) for score, name, row in cands]
    cands = sorted(cands, key=lambda c: (-c[0], c[1], c[2]))
    if kind == "bm25" and hybrid and cands:
        floor = settings.lexical_floor * cands[0][0]
        cands = [c for c in cands if c[0] >= floor]
    if kind == "vector" and convex and cands and settings.vector_norm == "minmax":
        hi, lo = cands[0][0], cands[-1][0]
        cands = [((c[0] - lo) / (hi - lo) if hi > lo else 1.0, c[1], c[2]) for c in cands]
    return cands


def acceptor(index: SearchIndex, live: Live | None, filters: Filters) -> Callable[[int], bool]:
    """Whether a row may be returned: its document is live and its metadata has every wanted value."""
    rows = index.rows
    doc_col, day_col, meta_col = rows.column("doc_id"), rows.column("partition_date"), rows.column("metadata")
    wanted_meta = dict(filters.metadata)

    def accept(row: int) -> bool:
        if live is not None and (doc_col[row].as_py(), day_col[row].as_py()) not in live:
            return False
        if wanted_meta:
            raw = meta_col[row].as_py()
            meta = json.loads(raw) if raw else {}
            return all(meta.get(key) == value for key, value in wanted_meta.items())
        return True

    return accept


class _Vocabulary:
    """A term is known when any of the searched indexes holds it (one decision for all datasets)."""

    def __init__(self, indexes: Sequence[SearchIndex]) -> None:
        self.indexes = indexes

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and any(i.knows(term) for i in self.indexes)
