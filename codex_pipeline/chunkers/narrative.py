"""Fallback for text without structure: 600-token windows, stride 550."""

from __future__ import annotations

from codex_pipeline.core.contract import ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.splitting import WINDOW_OVERLAP, WINDOW_TOKENS, token_windows
from codex_pipeline.core.tokens import TokenizedText


def chunk_narrative(
    doc: SourceDocument, window: int = WINDOW_TOKENS, overlap: int = WINDOW_OVERLAP
) -> list[ChunkDraft]:
    """``narrative_window`` chunks with ``section_id = window.{seq_index}``."""
    tt = TokenizedText(doc.text)
    return [
        ChunkDraft(
            section_id=f"window.{i}",
            chunk_type=ChunkType.NARRATIVE_WINDOW,
            text=doc.text[span.start : span.end],
            spans=((span.start, span.end),),
            token_count=span.tokens,
        )
        for i, span in enumerate(token_windows(tt, window, overlap))
    ]
