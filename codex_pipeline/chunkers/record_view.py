"""``record_view`` chunks for the structured-only datasets, and the capped-section helper.

The canonical text of a structured record *is* its Markdown key-value view (see
:mod:`codex_pipeline.sources.structured`), so the ``record_view`` chunk is a verbatim
slice: the whole text, section id ``record``. A view over the 1,500-token cap is cut
with :func:`bounded_split` (between field lines first); the first piece keeps the id
``record`` and stays the root, the following pieces ``record.part.2`` … are its
children, so a hit on any piece leads back to the head of the record (its id and
identifying fields come first in every view).

:func:`section_drafts` is that cap rule for any block of a record, and
:func:`rendering_of` recovers a record's block spans; the event, permit and OSHA
chunkers use both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.sources.structured import Rendering
from codex_pipeline.core.splitting import Span, bounded_split
from codex_pipeline.core.tokens import TokenizedText, count_tokens

RECORD_SECTION = "record"
_FIELD_LINE = re.compile(r"^- \*\*([^*\n]+)\*\*:", re.M)


def bounded_pieces(text: str, start: int, end: int) -> list[Span]:
    """``text[start:end]`` as pieces within the cap; the block is encoded once (twice if over)."""
    n = count_tokens(text[start:end])
    if n <= MAX_CHUNK_TOKENS:
        return [Span(start, end, n)]
    tt = TokenizedText(text[start:end])
    return [Span(start + s.start, start + s.end, s.tokens) for s in bounded_split(tt)]


def section_drafts(
    text: str,
    start: int,
    end: int,
    section_id: str,
    chunk_type: ChunkType,
    *,
    parent: str | None = None,
    root: bool = False,
    overflow_prefix: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[ChunkDraft]:
    """One verbatim chunk for a block, or its bounded pieces when it is over the cap.

    Leaf block (``root=False``): pieces ``{section_id}.part.{k}`` (k = 1…n), all
    children of ``parent``, i.e. siblings where the whole block would have been.
    Root block (``root=True``): the first piece keeps ``section_id`` (the parent
    children point at); pieces 2…n are ``{overflow_prefix or section_id}.part.{k}``
    and children of the first piece.
    """
    pieces = bounded_pieces(text, start, end)
    meta = dict(metadata) if metadata else None
    if len(pieces) == 1:
        p = pieces[0]
        return [ChunkDraft(section_id, chunk_type, text[p.start:p.end], ((p.start, p.end),), p.tokens, parent, metadata=meta)]
    n = len(pieces)
    out = []
    for k, p in enumerate(pieces, 1):
        if root and k == 1:
            sid, par = section_id, parent
        elif root:
            sid, par = f"{overflow_prefix or section_id}.part.{k}", section_id
        else:
            sid, par = f"{section_id}.part.{k}", parent
        out.append(ChunkDraft(sid, chunk_type, text[p.start:p.end], ((p.start, p.end),), p.tokens, par,
                              metadata=(meta or {}) | {"part": k, "parts": n}))
    return out


def rendering_of(doc: SourceDocument, render: Callable[[Mapping[str, Any]], Rendering]) -> Rendering:
    """Re-render the validated payload; it must reproduce the document's canonical text.

    The block spans come from the renderer, so a mismatch (a raw partition written by
    another renderer version) is an error rather than chunks cut at wrong offsets.
    """
    if doc.payload is None:
        raise ValueError("document has no payload to render")
    r = render(doc.payload)
    if r.text != doc.text:
        raise ValueError("canonical text differs from the rendering of its payload; re-materialize the raw partition")
    return r


def chunk_record_view(doc: SourceDocument) -> list[ChunkDraft]:
    """One ``record_view`` chunk per record (``record``), or a root piece plus children."""
    drafts = section_drafts(doc.text, 0, len(doc.text), RECORD_SECTION, ChunkType.RECORD_VIEW, root=True)
    if len(drafts) == 1:
        return drafts
    # name the fields each piece holds (a piece may start inside a long value)
    marks = [(m.start(), m.group(1)) for m in _FIELD_LINE.finditer(doc.text)]
    bounds = [s for s, _ in marks] + [len(doc.text)]
    out = []
    for d in drafts:
        (s, e), = d.spans
        names = [name for i, (fs, name) in enumerate(marks) if fs < e and bounds[i + 1] > s]
        out.append(ChunkDraft(d.section_id, d.chunk_type, d.text, d.spans, d.token_count, d.parent_section_id,
                              metadata=(d.metadata or {}) | {"fields": names}))
    return out
