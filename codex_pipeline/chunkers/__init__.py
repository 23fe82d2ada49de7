"""Chunkers: one module per dataset, each turning a SourceDocument into ChunkDrafts."""

from __future__ import annotations

from typing import Protocol

from ..documents import SourceDocument
from ..rows import ChunkDraft


class Chunker(Protocol):
    """Cuts one document along its structure; must be deterministic and pure."""

    def __call__(self, doc: SourceDocument) -> list[ChunkDraft]: ...
