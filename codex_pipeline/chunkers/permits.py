"""``permit_signals`` chunk tree: ``permit_summary`` → scope sections and conditions.

- ``summary`` (``permit_summary``): the envelope (number, status, dates, type/class,
  applicant, contractor, cost, address, list of scopes) plus the summary text.
- ``scope.{k}`` (``permit_scope_section``): one per scope section, k = 1-based
  position in the record, child of ``summary``.
- ``condition.{id}`` (``condition``): one per permit condition, keyed by its
  ``condition_id`` (or 1-based position when the permit gives no ids), child of
  ``summary`` and never joined with a scope: conditions are cited on their own.

Every chunk is a verbatim block of the canonical text (the reader's ``envelope``,
``scope`` and ``condition`` blocks), so chunks never overlap. A block over 1,500
tokens is cut by :func:`section_drafts` (``….part.{k}``).
"""

from __future__ import annotations

from dataclasses import dataclass

from codex_pipeline.chunkers.record_view import RecordLimits, blocks_needed, section_drafts
from codex_pipeline.core.contract import ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft

SUMMARY_SECTION = "summary"
_CHILDREN = {"scope": ("scope", ChunkType.PERMIT_SCOPE_SECTION), "condition": ("condition", ChunkType.CONDITION)}


@dataclass(frozen=True)
class PermitLimits(RecordLimits):
    """Only the packing size of a block over the cap (:class:`RecordLimits`)."""


def chunk_permit(doc: SourceDocument, limits: PermitLimits = PermitLimits()) -> list[ChunkDraft]:
    """The ``summary`` chunk, then a ``scope.{k}`` or ``condition.{id}`` child per block, in text order.

    Raises :class:`MissingBlocks` without an ``envelope`` block, ValueError on a block of any other kind.
    """
    env = blocks_needed(doc, "envelope")[0]
    payload = doc.payload or {}
    meta = {"permit_number": payload["permit_number"], "status": payload["status"]}
    drafts = section_drafts(doc.text, env.start, env.end, SUMMARY_SECTION, ChunkType.PERMIT_SUMMARY,
                            root=True, metadata=meta, limits=limits)
    for p in doc.blocks:
        if p.kind == "envelope":
            continue
        if p.kind not in _CHILDREN:
            raise ValueError(f"{doc.doc_id}: unexpected permit block {p.kind!r}")
        prefix, chunk_type = _CHILDREN[p.kind]
        drafts += section_drafts(doc.text, p.start, p.end, f"{prefix}.{p.key}", chunk_type,
                                 parent=SUMMARY_SECTION, metadata=p.meta, limits=limits)
    return drafts
