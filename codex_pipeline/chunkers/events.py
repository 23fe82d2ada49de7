"""``events_timeline`` chunks: one ``event`` chunk per event, long descriptions windowed.

The chunk tree of an event document (``urn:aprs:events_timeline:{event_id}``):

- Description within 800 tokens (and the whole event within the 1,500 cap): one
  ``event`` chunk, the whole canonical text, ``section_id = event_id``.
- Description over 800 tokens: the **event header** (title, type, times, place,
  source, entities, …) is the parent chunk, ``section_id = event_id``; the
  description is cut into 800-token windows overlapping by 50 tokens, each an
  ``event`` chunk ``{event_id}.part.{k}`` (k = 1…n) whose parent is the header. A
  hit on any split thus leads to the same parent, which says what the event is.

The header and description are the document's ``header`` / ``description`` blocks,
found by the reader. The description is encoded once (:class:`TokenizedText`) and
windowed with :func:`token_windows`; the header is counted on its own. A header over
the cap (only possible with extreme field values) is bounded-split into
``{event_id}.header.part.{k}`` children of the first piece.
"""

from __future__ import annotations

from dataclasses import dataclass

from codex_pipeline.chunkers.record_view import RecordLimits, blocks_needed, section_drafts
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.splitting import token_windows
from codex_pipeline.core.tokens import TokenizedText, count_tokens

EVENT_WINDOW_TOKENS = 800
EVENT_WINDOW_OVERLAP = 50


@dataclass(frozen=True)
class EventLimits(RecordLimits):
    """Description windows (800 tokens, overlapping by 50) once it is over ``window_tokens``."""

    window_tokens: int = EVENT_WINDOW_TOKENS
    overlap_tokens: int = EVENT_WINDOW_OVERLAP


def chunk_event(doc: SourceDocument, limits: EventLimits = EventLimits()) -> list[ChunkDraft]:
    """One ``event`` chunk, or header parent and description windows (see the module docstring).

    Raises :class:`MissingBlocks` when the document has no ``header`` block.
    """
    header = blocks_needed(doc, "header")[0]
    desc = doc.block("description")
    payload = doc.payload or {}
    event_id = payload["event_id"]
    meta = {"event_type": payload["event_type"], "occurred_at": payload["occurred_at"]}
    text = doc.text

    def header_drafts() -> list[ChunkDraft]:
        return section_drafts(text, header.start, header.end, event_id, ChunkType.EVENT, root=True,
                              overflow_prefix=f"{event_id}.header", metadata=meta, limits=limits)

    if desc is None:
        return header_drafts()
    tt = TokenizedText(text[desc.start:desc.end])
    if len(tt) <= limits.window_tokens:
        # The description starts after a blank line with a non-space character, which is
        # always a cl100k pre-token boundary, so the whole count is the sum of the parts.
        total = count_tokens(text[:desc.start]) + len(tt)
        if total <= MAX_CHUNK_TOKENS:
            return [ChunkDraft(event_id, ChunkType.EVENT, text, ((0, len(text)),), total, metadata=meta)]
    drafts = header_drafts()
    windows = token_windows(tt, limits.window_tokens, limits.overlap_tokens)
    for k, w in enumerate(windows, 1):
        s, e = desc.start + w.start, desc.start + w.end
        drafts.append(ChunkDraft(f"{event_id}.part.{k}", ChunkType.EVENT, text[s:e], ((s, e),), w.tokens, event_id,
                                 metadata=meta | {"part": k, "parts": len(windows)}))
    return drafts
