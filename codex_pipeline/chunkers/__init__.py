"""Chunkers: one module per dataset, each turning a SourceDocument into ChunkDrafts.

A chunker reads the canonical text and the structure its reader persisted on the
document (``SourceDocument.blocks``); it never parses a landing format again. Imports
only ``core``.
"""

from __future__ import annotations

from typing import Any, Protocol

from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft


class Chunker(Protocol):
    """Cuts one document along its structure; must be deterministic and pure."""

    def __call__(self, doc: SourceDocument, limits: Any = ...) -> list[ChunkDraft]:
        """The document's drafts in reading order; ``limits`` is the chunker's own limits dataclass."""
