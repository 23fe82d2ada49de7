"""What sources hand to chunkers: documents with a canonical text and its parsed structure."""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple


class Block(NamedTuple):
    """A labelled stretch ``text[start:end]`` of a document's canonical text, found by its reader.

    Readers parse once and persist the structure beside the text (``raw.blocks``), so
    a chunker cuts at these offsets instead of parsing the landing format again:
    record parts (``envelope``, ``scope``, ``citation``), Markdown headings and fences,
    transcript turns and inferred agenda items. ``key`` is stable inside the document
    (a citation id, a heading level); ``meta`` holds whatever else the chunker needs.
    """

    kind: str
    start: int
    end: int
    key: str = ""
    meta: Mapping[str, Any] = MappingProxyType({})  # a NamedTuple: cheap to build, thousands per meeting


def blocks_to_json(blocks: Sequence[Block]) -> str | None:
    """Compact JSON ``[[kind, start, end, key, meta], …]`` for the ``raw.blocks`` column."""
    if not blocks:
        return None
    return json.dumps([[b.kind, b.start, b.end, b.key, dict(b.meta)] for b in blocks],
                      ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def blocks_from_json(value: str | None) -> tuple[Block, ...]:
    """The inverse of :func:`blocks_to_json`; ``()`` for a null or empty column value."""
    if not value:
        return ()
    return tuple(Block(*row) for row in json.loads(value))


@dataclass(frozen=True)
class SourceDocument:
    """One record, normalized: every chunk offset points into ``text``."""

    doc_id: str
    record_id: str
    text: str
    source_file: str
    title: str | None = None
    payload: dict[str, Any] | None = None  # the validated raw record, for structured chunkers
    xpaths: tuple[tuple[int, str], ...] = ()  # (char offset, xpath) of HTML text runs
    blocks: tuple[Block, ...] = ()  # the structure the reader parsed, in text order
    revision_digest: str | None = None  # ids.revision_digest(text), when stored at ingest (raw.revision_digest)

    def blocks_of(self, kind: str) -> list[Block]:
        """The blocks of ``kind``, in text order."""
        return [b for b in self.blocks if b.kind == kind]

    def block(self, kind: str) -> Block | None:
        """The first block of ``kind``, or None if the reader stored none."""
        return next((b for b in self.blocks if b.kind == kind), None)


class PageIndex:
    """Which page an offset of a document's text is on, from its reader's ``page`` blocks (page-exact addresses)."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        pages = sorted((b.start, int(b.key)) for b in blocks if b.kind == "page")
        self.starts = [s for s, _ in pages]
        self.numbers = [n for _, n in pages]

    def at(self, offset: int) -> int | None:
        """The page holding ``offset``; None when the document has no pages (or it is before the first)."""
        k = bisect.bisect_right(self.starts, offset) - 1
        return self.numbers[k] if k >= 0 else None


@dataclass(frozen=True)
class Reject:
    """A record or file Codex could not use, kept so a user can query why."""

    source_file: str
    reason: str
    record_ref: str | None = None
    excerpt: str | None = None
    stage: str = "ingest"
    rows: int = 1  # input rows it stands for: a whole file rejected after reading stands for all its rows


@dataclass
class LoadResult:
    """What a source's loader made of a landing day: documents to chunk, and what it rejected."""

    documents: list[SourceDocument] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
