"""A ranked chunk row turned into a :class:`~codex_pipeline.retrieval.types.Hit` that cites.

Spans come from the chunk's anchor; evidence is each hit's best evidence unit
(:func:`~codex_pipeline.retrieval.units.best_units`; in BM25 search chosen by the query's words
alone), or the sentence matching the query (:func:`~codex_pipeline.retrieval.context.evidence`)
when units are turned off;
context is bounded by the hit's family. Every step reads the one
:class:`~codex_pipeline.retrieval.query.AnalyzedQuery`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from codex_pipeline.retrieval.context import anchor_spans, context, evidence
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.ranking import Ranked
from codex_pipeline.retrieval.searcher import SearchIndex
from codex_pipeline.retrieval.settings import DEFAULT, RetrievalSettings
from codex_pipeline.retrieval.types import Context, Hit, Span
from codex_pipeline.retrieval.units import UnitVectors, best_units


def chunk_hit(name: str, index: SearchIndex, ranked: Ranked, query: AnalyzedQuery | None,
              settings: RetrievalSettings = DEFAULT) -> Hit:
    """The hit for one ranked row (``query`` None: a point lookup, the evidence is the chunk's spans), its
    context ``settings.context_tokens_per_side`` tokens on each side."""
    r = index.row(ranked.row)
    text = index.canonical_text(int(r["doc_row"]))
    spans = anchor_spans(str(r["evidence_anchor"]))
    lo, hi = int(r["family_start"]), int(r["family_end"])
    chunk_text = str(r["chunk_text"])
    parent: str | None = r["parent_chunk_id"]
    ctx = Context("", "", parent, (0, 0), 0)
    evidence_spans: tuple[Span, ...] = spans
    evidence_text: tuple[str, ...] = ()
    if text is not None:  # else the document's text is missing from the index: cite the chunk only
        ctx = context(text, spans, (lo, hi) if lo >= 0 else None, parent, settings.context_tokens_per_side)
        evidence_spans = evidence(query, text, spans, chunk_text) if query is not None else spans
        evidence_text = tuple(text[s:e] for s, e in evidence_spans)
    meta: dict[str, Any] = json.loads(str(r["metadata"])) if r["metadata"] else {}
    return Hit(
        dataset=name,
        doc_id=str(r["doc_id"]),
        chunk_id=str(r["chunk_id"]),
        chunk_type=str(r["chunk_type"]),
        score=float(ranked.score),
        spans=spans,
        text=chunk_text,
        locator=str(r["locator"]),
        partition_date=r["partition_date"],
        context=ctx,
        evidence=evidence_spans,
        evidence_text=evidence_text,
        section_id=str(r["section_id"]),
        parent_chunk_id=parent,
        metadata=meta,
        ranks=dict(ranked.ranks),
    )


def cite_units(hits: Sequence[Hit], indexes: Sequence[SearchIndex], rows: Sequence[int], query: AnalyzedQuery,
               vectors: UnitVectors, settings: RetrievalSettings = DEFAULT) -> list[Hit]:
    """``hits`` in their ranked order, each citing its best evidence unit (:mod:`~codex_pipeline.retrieval.units`)
    chosen with ``settings``."""
    texts = [index.canonical_text(int(index.row(row)["doc_row"])) for index, row in zip(indexes, rows)]
    have = [i for i, t in enumerate(texts) if t is not None]
    found = best_units([(texts[i] or "", hits[i].spans, dict(hits[i].metadata)) for i in have], query, vectors,
                       stored=[indexes[i].stored_units(rows[i]) for i in have] if query.vector is not None else None,
                       ranks=have, settings=settings)
    unit = dict(zip(have, found))
    out = []
    for i, hit in enumerate(hits):
        if i in unit and unit[i][0]:
            spans, text = unit[i][0], texts[i] or ""
            hit = dataclasses.replace(hit, evidence=spans, evidence_text=tuple(text[s:e] for s, e in spans))
        out.append(hit)
    return out
