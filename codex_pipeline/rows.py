"""Turn a chunker's drafts into contract rows (ids, counts, anchors, locators)."""

from __future__ import annotations

import bisect
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import pyarrow as pa

from .contract import CHUNK_SCHEMA, ChunkType
from .documents import SourceDocument
from .ids import content_hash, make_chunk_id, make_locator, revision8


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk as a chunker sees it, before ids and bookkeeping.

    ``spans`` are char ranges of the document's canonical text. A single span means
    the chunk is a verbatim slice (``text[start:end] == chunk text``); several spans
    mean the chunk was composed from them (a merged turn, a record view).
    """

    section_id: str
    chunk_type: ChunkType | str
    text: str
    spans: tuple[tuple[int, int], ...]
    token_count: int
    parent_section_id: str | None = None
    page: int | None = None
    block: int = 0
    anchor_extra: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class ChunkRun:
    """What one chunking run stamps on every row."""

    dataset: str
    partition_date: dt.date
    chunking_version: str
    chunked_at: dt.datetime


def evidence_anchor(draft: ChunkDraft, xpath: str | None) -> str:
    starts = [s for s, _ in draft.spans]
    ends = [e for _, e in draft.spans]
    anchor: dict[str, Any] = {"page": draft.page, "char_span": [min(starts), max(ends)]}
    if len(draft.spans) > 1:
        anchor["spans"] = [list(s) for s in draft.spans]
    if xpath:
        anchor["xpath"] = xpath
    anchor.update(draft.anchor_extra)
    return json.dumps(anchor, separators=(",", ":"), ensure_ascii=False)


def _xpath_at(doc: SourceDocument, offset: int) -> str | None:
    if not doc.xpaths:
        return None
    k = bisect.bisect_right([o for o, _ in doc.xpaths], offset) - 1
    return doc.xpaths[max(k, 0)][1]


class RowBuffer:
    """Accumulates chunk rows column-wise and emits an Arrow table in contract order."""

    def __init__(self, run: ChunkRun) -> None:
        self.run = run
        self.cols: dict[str, list[Any]] = {f.name: [] for f in CHUNK_SCHEMA}

    def add_document(self, doc: SourceDocument, drafts: Iterable[ChunkDraft]) -> int:
        """Append one document's drafts in reading order; returns the number added."""
        rev = revision8(doc.text)
        c = self.cols
        n = 0
        for seq, d in enumerate(drafts):
            chunk_type = d.chunk_type.value if isinstance(d.chunk_type, ChunkType) else d.chunk_type
            c["chunk_id"].append(make_chunk_id(doc.doc_id, d.section_id))
            c["doc_id"].append(doc.doc_id)
            c["section_id"].append(d.section_id)
            c["chunk_text"].append(d.text)
            c["chunk_type"].append(chunk_type)
            c["token_count"].append(d.token_count)
            c["char_count"].append(len(d.text))
            c["seq_index"].append(seq)
            c["parent_chunk_id"].append(
                make_chunk_id(doc.doc_id, d.parent_section_id) if d.parent_section_id else None
            )
            c["evidence_anchor"].append(evidence_anchor(d, _xpath_at(doc, d.spans[0][0])))
            c["embedding_model"].append(None)
            c["embedding_version"].append(None)
            c["chunked_at"].append(self.run.chunked_at)
            c["chunking_version"].append(self.run.chunking_version)
            c["dataset"].append(self.run.dataset)
            c["partition_date"].append(self.run.partition_date)
            c["locator"].append(make_locator(doc.record_id, rev, d.section_id, d.page, d.block))
            c["content_hash"].append(content_hash(d.text))
            c["metadata"].append(
                json.dumps(d.metadata, ensure_ascii=False, sort_keys=True) if d.metadata else None
            )
            n += 1
        return n

    def to_table(self) -> pa.Table:
        return pa.Table.from_pydict(self.cols, schema=CHUNK_SCHEMA)
