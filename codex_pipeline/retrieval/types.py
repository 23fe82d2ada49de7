"""What a search returns and what it can be asked: hits, context, filters, modes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

Span = tuple[int, int]
"""A character range ``[start, end)`` of a document's canonical text."""


class SearchMode(str, Enum):
    """How candidates are ranked."""

    VECTOR = "vector"  # cosine of the query embedding (HNSW)
    BM25 = "bm25"  # lexical: exact words, numbers, permit ids, citations
    HYBRID = "hybrid"  # both, fused as a weighted sum of normalized scores (the default; ranking.fuse)


@dataclass(frozen=True)
class Context:
    """Bounded text around a hit, within its parent (or its document for a top-level chunk).

    ``before`` ends where the hit's first span starts and ``after`` starts where its
    last span ends, both cut from the canonical text inside the parent's span, each
    at most ``context_tokens_per_side``
    (:class:`~codex_pipeline.retrieval.settings.RetrievalSettings`) cl100k tokens (cut at a word boundary). ``bounds`` is the stretch they were cut from.
    """

    before: str
    after: str
    parent_chunk_id: str | None
    bounds: Span
    tokens: int  # cl100k tokens of before + after

    @property
    def text(self) -> str:
        """``before`` and ``after`` with ``[…]`` where the hit goes; empty when there is no context."""
        return f"{self.before}[…]{self.after}" if self.before or self.after else ""


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk, with what a reader needs to cite it.

    ``spans`` are the chunk's own character ranges in its document's canonical text,
    from its evidence anchor (one span for a verbatim chunk, several for a composed
    one); ``evidence`` narrows them to the sentence(s) that match the query where
    that can be done exactly (verbatim chunks), else equals ``spans``. Both satisfy
    ``canonical_text[start:end]`` as stored in ``codex.<dataset>_raw``; ``evidence_text``
    holds those slices.
    """

    dataset: str
    doc_id: str
    chunk_id: str
    chunk_type: str
    score: float
    spans: tuple[Span, ...]
    text: str
    locator: str
    partition_date: dt.date
    context: Context
    evidence: tuple[Span, ...] = ()
    evidence_text: tuple[str, ...] = ()
    section_id: str = ""
    parent_chunk_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)  # 1-based rank per ranking that found it

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (dates as ISO strings, spans as lists)."""
        out = asdict(self)
        out["partition_date"] = self.partition_date.isoformat()
        out["spans"] = [list(s) for s in self.spans]
        out["evidence"] = [list(s) for s in self.evidence]
        out["evidence_text"] = list(self.evidence_text)
        out["context"]["bounds"] = list(self.context.bounds)
        out["metadata"] = dict(self.metadata)
        out["ranks"] = dict(self.ranks)
        return out


T = TypeVar("T")


class SearchResults(list[T], Generic[T]):
    """Hits, best first, and ``warnings``: what the caller should know about how they were found (e.g. a
    dataset's index was out of date and could not be rebuilt, so its last good version answered).

    ``skipped``: datasets that were not searched at all, their index missing or unreadable (each also
    has a warning naming it): a caller that must not miss documents treats them as an error
    (``codex search --strict``).
    """

    def __init__(self, hits: Iterable[T] = (), warnings: Iterable[str] = (), skipped: Iterable[str] = ()) -> None:
        super().__init__(hits)
        self.warnings: tuple[str, ...] = tuple(warnings)
        self.skipped: tuple[str, ...] = tuple(skipped)


@dataclass(frozen=True)
class Filters:
    """Which chunks may be returned. Empty fields filter nothing.

    ``metadata`` is equality on keys of the chunk's ``metadata`` JSON (e.g.
    ``{"speaker": "Mayor Lee"}``); ``date_from`` / ``date_to`` bound the partition
    date of the document's current version, both inclusive. For a proposition,
    ``chunk_types`` and ``metadata`` are its parent chunk's.
    """

    datasets: frozenset[str] = frozenset()
    chunk_types: frozenset[str] = frozenset()
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        datasets: Iterable[str] = (),
        chunk_types: Iterable[str] = (),
        date_from: dt.date | str | None = None,
        date_to: dt.date | str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Filters:
        """Build from plain values (ISO strings accepted for dates)."""
        return cls(
            frozenset(datasets),
            frozenset(chunk_types),
            _date(date_from),
            _date(date_to),
            dict(metadata or {}),
        )

    @property
    def empty(self) -> bool:
        """Whether no field filters anything."""
        return not (self.datasets or self.chunk_types or self.date_from or self.date_to or self.metadata)


def _date(value: dt.date | str | None) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(value)
