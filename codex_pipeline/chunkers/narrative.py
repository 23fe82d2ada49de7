"""Fallback for text without structure: 600-token windows, stride 550."""

from __future__ import annotations

from dataclasses import dataclass

from codex_pipeline.core.contract import ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.splitting import WINDOW_OVERLAP, WINDOW_TOKENS, token_windows
from codex_pipeline.core.tokens import TokenizedText


@dataclass(frozen=True)
class WindowLimits:
    """The seed's token-window fallback: 600-token windows overlapping by 50."""

    window_tokens: int = WINDOW_TOKENS
    overlap_tokens: int = WINDOW_OVERLAP


def chunk_narrative(doc: SourceDocument, limits: WindowLimits = WindowLimits()) -> list[ChunkDraft]:
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
        for i, span in enumerate(token_windows(tt, limits.window_tokens, limits.overlap_tokens))
    ]
