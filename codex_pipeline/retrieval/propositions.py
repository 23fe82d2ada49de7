"""What a proposition search (seed 002) returns: the statement, its spans, and its parent chunk as context.

Propositions live in the dataset's search index as a second collection
(:mod:`~codex_pipeline.retrieval.proposition_rows`) and are ranked by the chunk ranking
(:mod:`~codex_pipeline.retrieval.ranking`): BM25 with whole identifiers, cosine, the same
weighted-sum fusion, the same filters. A proposition without a vector
(not embedded yet, or by another model) is found by BM25 only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from codex_pipeline.retrieval.context import anchor_spans
from codex_pipeline.retrieval.searcher import SearchIndex
from codex_pipeline.retrieval.types import Span


@dataclass(frozen=True)
class PropositionHit:
    """One retrieved proposition. ``spans`` / ``evidence_text`` are the canonical-text ranges it rests on
    (empty when an LLM statement could not be aligned); the parent chunk is its context."""

    dataset: str
    proposition_id: str
    text: str
    score: float
    doc_id: str
    partition_date: dt.date
    spans: tuple[Span, ...]
    alignment_score: float | None
    evidence_text: tuple[str, ...]
    parent_chunk_id: str
    parent_chunk_type: str
    parent_text: str
    extractor: str
    ranks: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (dates as ISO strings, spans as lists)."""
        out = asdict(self)
        out["partition_date"] = self.partition_date.isoformat()
        out["spans"] = [list(s) for s in self.spans]
        out["evidence_text"] = list(self.evidence_text)
        out["ranks"] = dict(self.ranks)
        return out


def proposition_hit(name: str, chunks: SearchIndex, props: SearchIndex, row: int, score: float,
                    ranks: Mapping[str, int]) -> PropositionHit:
    """The hit for row ``row`` of ``props``; its parent is looked up among ``chunks`` (same index version)."""
    r = props.row(row)
    spans = anchor_spans(str(r["evidence_anchor"]))
    canonical = props.canonical_text(int(r["doc_row"])) or ""
    parent_row = chunks.row_of(str(r["parent_chunk_id"]))
    parent_text = str(chunks.rows.value("chunk_text", parent_row)) if parent_row is not None else ""
    return PropositionHit(
        dataset=name, proposition_id=str(r["chunk_id"]), text=str(r["chunk_text"]), score=float(score),
        doc_id=str(r["doc_id"]), partition_date=r["partition_date"], spans=spans,
        alignment_score=r["alignment_score"], evidence_text=tuple(canonical[s:e] for s, e in spans) if canonical else (),
        parent_chunk_id=str(r["parent_chunk_id"]), parent_chunk_type=str(r["chunk_type"]), parent_text=parent_text,
        extractor=str(r["extractor"]), ranks=dict(ranks),
    )
