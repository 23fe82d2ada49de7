"""One ranking for every collection of the index: candidates per dataset, then one fusion.

**Fusion.** Each ranking takes the top ``max(k * 5, 50)`` candidates of every dataset searched.
Hybrid ranking adds, per row, ``bm25_weight`` times its BM25 score over the best BM25 score of its
dataset for the query, and ``vector_weight`` times its cosine with the query (a convex
combination of normalized scores; Bruch, Gai & Ingber 2023 found it beats reciprocal rank fusion
when its weight is tuned). Chosen leave-one-corpus-out over 11 folds, 3 of them with gold written by
readers who never saw Codex's output (issue 39, ``eval/loco.py`` grids ``fusion-final`` and
``coverage``; figures in ``eval/README.md``): reciprocal ranks (``1 / (60 + rank)``, the
literature default used until then), min-max scaled cosines and a BM25 floor lost on every fold.
The BM25 weight is query-adaptive: it grows by ``1 + coverage_boost x c``, ``c`` the IDF-weighted
share of the query's words the best BM25 candidate holds (a question in the text's own words leans
on BM25, a paraphrase on the vector; with it hybrid recall is at least BM25's alone on every fold).
A BM25 score is divided by its own dataset's best because datasets have their own IDF and
lengths; the cosine is kept as it is (one model, comparable across datasets; its spread among the
candidates, a few hundredths to a few tenths, is the vector side's confidence). A query holding an
identifier or a number gets the BM25 weight ``lexical_query_weight``. Every parameter is a field of
the :class:`~codex_pipeline.retrieval.settings.RetrievalSettings` handed in. Chunks and
propositions are ranked by this same code.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from codex_pipeline.retrieval.lexical import IDENTIFIER, phrase_terms
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
    """A row of one dataset's collection as :func:`rank` returns it; ``score``: the weighted sum of its normalized
    BM25 score and cosine in hybrid mode (:func:`fuse`), else the one ranking's own score."""

    dataset: str
    row: int
    score: float
    ranks: Mapping[str, int]  # 1-based rank per ranking that found it


Scored = tuple[float, str, int]  # (score, dataset, row)


def rank(query: AnalyzedQuery, sources: Sequence[Source], k: int, mode: SearchMode, filters: Filters,
         settings: RetrievalSettings = DEFAULT) -> list[Ranked]:
    """The ``k`` best rows of ``sources`` for ``query``, best first, fused with ``settings``."""
    want = max(k * settings.candidates_per_k, settings.candidates_min) if mode is SearchMode.HYBRID else k
    terms = query.bm25_terms(Vocabulary([s.index for s in sources]))
    phrase = phrase_terms(query.text, settings.phrase_min_terms) if mode is not SearchMode.VECTOR else ()
    found: dict[str, list[Scored]] = {"bm25": [], "vector": []}
    quoted: list[Scored] = []  # rows holding the phrase, by BM25 score
    for src in sources:
        mask = src.index.mask(filters)
        accept = acceptor(src.index, src.live, filters)
        if phrase:
            rows = src.index.phrase_rows(phrase, mask, accept)
            quoted += [(score, src.dataset, row) for score, row in zip(src.index.bm25_scores(terms, rows), rows)]
        if mode is not SearchMode.VECTOR:
            found["bm25"] += [(c.score, src.dataset, c.row) for c in src.index.bm25_candidates(terms, want, mask, accept)]
        if mode is not SearchMode.BM25 and query.vector is not None:
            found["vector"] += [(c.score, src.dataset, c.row)
                                for c in src.index.vector_candidates(query.vector, want, mask, accept)]
    weight = lexical_weight(query.text, settings)
    if mode is SearchMode.HYBRID and settings.coverage_boost and found["bm25"]:
        weight *= 1.0 + settings.coverage_boost * _top_coverage(found["bm25"], sources, terms)
    return phrase_first(fuse(found, mode, want, weight, settings), quoted)[:k]


def phrase_first(fused: list[Ranked], quoted: list[Scored]) -> list[Ranked]:
    """The rows holding the query's phrase first (in fused order; those neither list reached after them, by BM25
    score), each with its place among them as rank ``phrase``; then the rest as fused."""
    if not quoted:
        return fused
    held = {(name, row) for _, name, row in quoted}
    first = [r for r in fused if (r.dataset, r.row) in held]
    seen = {(r.dataset, r.row) for r in first}
    first += [Ranked(name, row, 0.0, {}) for _, name, row in sorted(quoted, key=lambda c: (-c[0], c[1], c[2]))
              if (name, row) not in seen]
    first = [Ranked(r.dataset, r.row, r.score, {**r.ranks, "phrase": at}) for at, r in enumerate(first, 1)]
    return first + [r for r in fused if (r.dataset, r.row) not in held]


def _top_coverage(cands: list[Scored], sources: Sequence[Source], terms: list[str]) -> float:
    """How fully the best BM25 candidate of any dataset holds the query's words (the best coverage among each
    dataset's first candidate)."""
    index = {s.dataset: s.index for s in sources}
    tops: dict[str, tuple[float, int]] = {}
    for score, name, row in cands:
        if name not in tops or score > tops[name][0]:
            tops[name] = (score, row)
    return max(index[name].bm25_coverage(terms, row) for name, (_, row) in tops.items())


def lexical_weight(text: str, settings: RetrievalSettings = DEFAULT) -> float:
    """The BM25 list's weight in hybrid fusion for query ``text``: ``settings.lexical_query_weight`` when the
    query names something only words can match (an identifier, a number), else ``settings.bm25_weight``."""
    lexical = bool(IDENTIFIER.search(text) or _NUMBER.search(text))
    return settings.lexical_query_weight if lexical else settings.bm25_weight


_NUMBER = re.compile(r"\d")


def fuse(found: Mapping[str, list[Scored]], mode: SearchMode, want: int, bm25_weight: float | None = None,
         settings: RetrievalSettings = DEFAULT) -> list[Ranked]:
    """Merge the per-ranking candidate lists: in hybrid mode a weighted sum of each row's scores (BM25 over its
    dataset's best for the query, the cosine itself), else the one list's scores.

    ``bm25_weight``: the BM25 list's weight for this query (default ``settings.bm25_weight``; see
    :func:`lexical_weight`). A row a list found below the merged cut (several datasets) keeps its own score there;
    a row one list did not reach scores there what that list's last candidate of its dataset scored when the dataset filled its ``want`` candidates (it scored no better, and 0 would be a penalty
    no measurement chose), else 0: a BM25 list that ran short holds every row sharing a word with the query.
    """
    weights = {"bm25": settings.bm25_weight if bm25_weight is None else bm25_weight, "vector": settings.vector_weight}
    hybrid = mode is SearchMode.HYBRID
    ordered_lists = {kind: _ordered(kind, cands, hybrid) for kind, cands in found.items()}
    lists = {kind: cands[:want] for kind, cands in ordered_lists.items()}
    scored: dict[tuple[str, int], float] = {}
    ranks: dict[tuple[str, int], dict[str, int]] = {}
    for kind, cands in lists.items():
        for at, (score, name, row) in enumerate(cands, 1):
            key = (name, row)
            ranks.setdefault(key, {})[kind] = at
            scored[key] = scored.get(key, 0.0) + weights[kind] * score if hybrid else score
    if hybrid:
        for kind, cands in ordered_lists.items():
            floor = _floors(cands, want)
            own = {(name, row): score for score, name, row in cands[want:]}  # found, but below the merged cut
            for key, held in ranks.items():
                if kind not in held:
                    scored[key] += weights[kind] * own.get(key, floor.get(key[0], 0.0))
    lexical = {(name, row): score for score, name, row in ordered_lists.get("bm25", ())}
    ordered = sorted(scored, key=lambda key: _tie_order(key, scored[key], ranks[key], lexical, want, len(lists)))
    return [Ranked(name, row, scored[(name, row)], ranks[(name, row)]) for name, row in ordered]


def _tie_order(key: tuple[str, int], score: float, ranks: Mapping[str, int], lexical: Mapping[tuple[str, int], float],
               want: int, lists: int) -> tuple[float, int, float, str, int]:
    """Best first; rows of equal fused score by their ranks in both lists (a list that missed a row counts
    ``want + 1``), then the lexical score (the question's own words), and only then by name and row, so
    that which of two equal rows wins never depends on where a build happened to put them."""
    rank_sum = sum(ranks.values()) + (want + 1) * (lists - len(ranks))
    return (-score, rank_sum, -lexical.get(key, 0.0), key[0], key[1])


def _floors(cands: list[Scored], want: int) -> dict[str, float]:
    """Per dataset that filled its ``want`` candidates in this list: its last (lowest) candidate's score."""
    count: dict[str, int] = {}
    lowest: dict[str, float] = {}
    for score, name, _ in cands:
        count[name] = count.get(name, 0) + 1
        lowest[name] = min(lowest.get(name, score), score)
    return {name: lowest[name] for name in count if count[name] >= want}


def _ordered(kind: str, cands: list[Scored], hybrid: bool) -> list[Scored]:
    """One list best first; in hybrid mode BM25 scores are divided by their dataset's best for the query (each
    dataset has its own IDF and lengths: a raw 3.23 in one permit dataset outranked every 0.91 in another)."""
    if kind == "bm25" and hybrid:
        best: dict[str, float] = {}
        for score, name, _ in cands:
            best[name] = max(best.get(name, 0.0), score)
        cands = [(score / best[name] if best[name] > 0 else 0.0, name, row) for score, name, row in cands]
    return sorted(cands, key=lambda c: (-c[0], c[1], c[2]))


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


class Vocabulary:
    """A term is known when any of the searched indexes holds it (one decision for all datasets)."""

    def __init__(self, indexes: Sequence[SearchIndex]) -> None:
        self.indexes = indexes

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and any(i.knows(term) for i in self.indexes)
