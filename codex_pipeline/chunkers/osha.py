"""``osha_safety`` chunk tree: ``osha_case_summary`` → one ``osha_citation`` per citation.

- ``summary`` (``osha_case_summary``): case envelope (inspection, establishment,
  site, NAICS, type, dates, citation list, penalty totals) plus the case summary.
- ``citation.{citation_id}`` (``osha_citation``): one per citation item, child of
  ``summary``; the id is OSHA's own citation/item/group number (``01001``,
  ``01002A``), so it is stable whatever the order of the citations in the record.

Chunks are verbatim, non-overlapping blocks (the reader's ``envelope`` and
``citation`` blocks); a block over 1,500 tokens is cut by :func:`section_drafts`
(``….part.{k}``).
"""

from __future__ import annotations

from dataclasses import dataclass

from codex_pipeline.chunkers.record_view import RecordLimits, blocks_needed, section_drafts
from codex_pipeline.core.contract import ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft

SUMMARY_SECTION = "summary"


@dataclass(frozen=True)
class OshaLimits(RecordLimits):
    """Only the packing size of a block over the cap (:class:`RecordLimits`)."""


def chunk_osha_case(doc: SourceDocument, limits: OshaLimits = OshaLimits()) -> list[ChunkDraft]:
    """The ``summary`` chunk, then one ``citation.{id}`` child per citation block, in text order.

    Raises :class:`MissingBlocks` when the document has no ``envelope`` block.
    """
    env = blocks_needed(doc, "envelope")[0]
    drafts = section_drafts(doc.text, env.start, env.end, SUMMARY_SECTION, ChunkType.OSHA_CASE_SUMMARY,
                            root=True, metadata={"inspection_id": (doc.payload or {})["inspection_id"]}, limits=limits)
    for p in doc.blocks_of("citation"):
        drafts += section_drafts(doc.text, p.start, p.end, f"citation.{p.key}", ChunkType.OSHA_CITATION,
                                 parent=SUMMARY_SECTION, metadata=p.meta, limits=limits)
    return drafts
