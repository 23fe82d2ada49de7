"""The one interface both proposition extractors implement.

An extractor turns parent chunks into statements, each with the spans of the
document's canonical text it rests on. It never raises for one bad chunk: the
chunk comes back with a ``reject`` reason instead (it goes to
``codex.<dataset>_rejects``), or ``deferred`` when the cost cap stopped the run
before it (it is simply extracted by a later run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from codex_pipeline.propositions.cost import Budget

Span = tuple[int, int]
"""A character range ``[start, end)`` of a document's canonical text."""

JOIN = " "
"""Offline statements are their spans' slices joined by this: ``text == JOIN.join(slices)``."""


@dataclass(frozen=True)
class ChunkInput:
    """A parent chunk as an extractor sees it.

    ``sources`` are the ranges of ``canonical`` the chunk was cut from (its evidence
    anchor: one range for a verbatim chunk, several for a composed one).
    """

    chunk_id: str
    doc_id: str
    text: str
    content_hash: str
    sources: tuple[Span, ...]
    canonical: str


@dataclass(frozen=True)
class Statement:
    """One proposition: its text, and where it rests (None: an LLM statement that could not be aligned)."""

    text: str
    spans: tuple[Span, ...] | None
    score: float | None  # alignment score in [0, 1]; 1.0 for an exact (offline) statement


@dataclass
class Extraction:
    """What became of one chunk: statements, a reject reason, or deferred by the cost cap."""

    chunk_id: str
    statements: list[Statement] = field(default_factory=list)
    reject: str | None = None
    deferred: bool = False


@dataclass
class ExtractStats:
    """What a call to :meth:`Extractor.extract` cost."""

    requests: int = 0  # API requests sent, retried ones included (0 offline)
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    stopped: str | None = None  # why extraction stopped early (the cost cap), else None


@dataclass
class ExtractResult:
    """What :meth:`Extractor.extract` returns: one :class:`Extraction` per input chunk, and what they cost."""

    extractions: list[Extraction]  # one per input chunk, in input order
    stats: ExtractStats


@runtime_checkable
class Extractor(Protocol):
    """What the pipeline needs from a proposition extractor.

    ``name``, ``version`` and ``prompt_version`` are the cache key beside the parent's
    ``content_hash``: bump ``version`` whenever the extractor's output changes.
    """

    name: str
    version: str
    prompt_version: str

    def extract(self, chunks: Sequence[ChunkInput], budget: Budget | None = None) -> ExtractResult:
        """One :class:`Extraction` per chunk, in order; never raises for one bad chunk.

        ``budget``: the cost caps to reserve against before each paid request (ignored
        by extractors that cost nothing).
        """
        ...
