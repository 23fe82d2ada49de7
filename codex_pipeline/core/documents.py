"""What sources hand to chunkers: documents with a canonical text, and rejects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class Reject:
    """A record or file Codex could not use, kept so a user can query why."""

    source_file: str
    reason: str
    record_ref: str | None = None
    excerpt: str | None = None
    stage: str = "ingest"


@dataclass
class LoadResult:
    documents: list[SourceDocument] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
