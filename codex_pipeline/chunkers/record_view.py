"""``record_view`` chunks for the structured-only datasets, and the capped-section helper.

The canonical text of a structured record *is* its Markdown key-value view (written by
the structured reader), so the ``record_view`` chunk is a verbatim slice: the whole
text, section id ``record``. A view over the 1,500-token cap is cut with
:func:`bounded_split` (between field lines first); the first piece keeps the id
``record`` and stays the root, the following pieces ``record.part.2`` … are its
children, so a hit on any piece leads back to the head of the record (its id and
identifying fields come first in every view).

:func:`section_drafts` is that cap rule for any block of a record, and
:func:`blocks_needed` fetches the blocks a reader put on a document (failing clearly
on a raw partition written before readers stored them); the event, permit, OSHA and
civic chunkers use both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, TARGET_MAX_TOKENS, ChunkType
from codex_pipeline.core.documents import Block, SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.splitting import Span, bounded_split
from codex_pipeline.core.tokens import TokenizedText, count_tokens


@dataclass(frozen=True)
class RecordLimits:
    """How a record block over the cap (``core.contract.MAX_CHUNK_TOKENS``) is cut.

    ``piece_target_tokens``: :func:`bounded_split` packs paragraphs, lines, sentences …
    into pieces up to this size. The cap itself is the contract's, not a setting.
    """

    piece_target_tokens: int = TARGET_MAX_TOKENS


class MissingBlocks(ValueError):
    """The document lacks the structure its reader stores: raw predates ``raw.blocks``."""


def blocks_needed(doc: SourceDocument, kind: str) -> list[Block]:
    """The document's ``kind`` blocks; none at all means an old raw partition, a clear error."""
    found = doc.blocks_of(kind)
    if not found:
        raise MissingBlocks(
            f"{doc.doc_id} has no {kind!r} blocks (its raw partition was written by an older reader): "
            "re-materialize the raw partition, then chunk again"
        )
    if found[-1].end > len(doc.text):
        raise MissingBlocks(f"{doc.doc_id}: a {kind!r} block ends past the canonical text: re-materialize the raw partition")
    return found


RECORD_SECTION = "record"
_FIELD_LINE = re.compile(r"^- \*\*([^*\n]+)\*\*:", re.M)


def bounded_pieces(text: str, start: int, end: int, target: int = TARGET_MAX_TOKENS) -> list[Span]:
    """``text[start:end]`` as pieces within the cap; the block is encoded once (twice if over)."""
    n = count_tokens(text[start:end])
    if n <= MAX_CHUNK_TOKENS:
        return [Span(start, end, n)]
    tt = TokenizedText(text[start:end])
    return [Span(start + s.start, start + s.end, s.tokens) for s in bounded_split(tt, target_max=target)]


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
    limits: RecordLimits = RecordLimits(),
) -> list[ChunkDraft]:
    """One verbatim chunk for a block, or its bounded pieces when it is over the cap.

    Leaf block (``root=False``): pieces ``{section_id}.part.{k}`` (k = 1…n), all
    children of ``parent``, i.e. siblings where the whole block would have been.
    Root block (``root=True``): the first piece keeps ``section_id`` (the parent
    children point at); pieces 2…n are ``{overflow_prefix or section_id}.part.{k}``
    and children of the first piece.
    """
    pieces = bounded_pieces(text, start, end, limits.piece_target_tokens)
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


def chunk_record_view(doc: SourceDocument, limits: RecordLimits = RecordLimits()) -> list[ChunkDraft]:
    """One ``record_view`` chunk per record (``record``), or a root piece plus children.

    Needs no blocks: the whole text is the chunk, and the pieces of an over-cap view
    name their fields from its ``- **field**:`` lines (the view's own layout).
    """
    drafts = section_drafts(doc.text, 0, len(doc.text), RECORD_SECTION, ChunkType.RECORD_VIEW, root=True,
                            limits=limits)
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
