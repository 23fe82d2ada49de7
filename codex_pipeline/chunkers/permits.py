"""``permit_signals`` chunk tree: ``permit_summary`` → scope sections and conditions.

- ``summary`` (``permit_summary``): the envelope (number, status, dates, type/class,
  applicant, contractor, cost, address, list of scopes) plus the summary text.
- ``scope.{k}`` (``permit_scope_section``): one per scope section, k = 1-based
  position in the record, child of ``summary``.
- ``condition.{id}`` (``condition``): one per permit condition, keyed by its
  ``condition_id`` (or 1-based position when the permit gives no ids), child of
  ``summary`` and never joined with a scope: conditions are cited on their own.

Every chunk is a verbatim block of the canonical text, so chunks never overlap. A
block over 1,500 tokens is cut by :func:`section_drafts` (``….part.{k}``).
"""

from __future__ import annotations

from codex_pipeline.core.contract import ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.sources.permits import render_permit
from codex_pipeline.chunkers.record_view import rendering_of, section_drafts

SUMMARY_SECTION = "summary"


def chunk_permit(doc: SourceDocument) -> list[ChunkDraft]:
    r = rendering_of(doc, render_permit)
    env = r.parts[0]
    meta = {"permit_number": doc.payload["permit_number"], "status": doc.payload["status"]}
    drafts = section_drafts(doc.text, env.start, env.end, SUMMARY_SECTION, ChunkType.PERMIT_SUMMARY,
                            root=True, metadata=meta)
    for p in r.parts[1:]:
        if p.kind == "scope":
            drafts += section_drafts(doc.text, p.start, p.end, f"scope.{p.key}", ChunkType.PERMIT_SCOPE_SECTION,
                                     parent=SUMMARY_SECTION, metadata=p.meta)
        elif p.kind == "condition":
            drafts += section_drafts(doc.text, p.start, p.end, f"condition.{p.key}", ChunkType.CONDITION,
                                     parent=SUMMARY_SECTION, metadata=p.meta)
        else:  # pragma: no cover - render_permit emits only these kinds
            raise ValueError(f"unexpected permit block {p.kind!r}")
    return drafts
