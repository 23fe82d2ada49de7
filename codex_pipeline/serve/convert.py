"""Library objects (hits, chunks, documents) turned into the API's response models."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from codex_pipeline.explore.navigation import Chunk
from codex_pipeline.retrieval import Hit, PropositionHit
from codex_pipeline.retrieval.context import anchor_spans
from codex_pipeline.serve.lookup import Document, Located, anchor_page
from codex_pipeline.serve.models import (
    ChunkHitOut,
    ChunkOut,
    ContextOut,
    DocumentResponse,
    PageOut,
    PropositionHitOut,
    RedirectOut,
)


def document_url(doc_id: str, dataset: str, chunk: str | None = None, marks: list[tuple[int, int]] | None = None,
                 redirected_from: str | None = None) -> str:
    """The viewer page of a document, a chunk selected and spans highlighted."""
    params: dict[str, str] = {"doc_id": doc_id, "dataset": dataset}
    if chunk:
        params["chunk"] = chunk
    if marks:
        params["mark"] = ",".join(f"{s}-{e}" for s, e in marks)
    if redirected_from:
        params["from"] = redirected_from
    return "/view/document?" + urlencode(params)


def chunk_hit(hit: Hit, page: int | None) -> ChunkHitOut:
    """A chunk hit as the API returns it; ``page``: the PDF page of its anchor (None for other files). Its viewer
    link marks the evidence, or the chunk's spans when it has none."""
    c = hit.context
    return ChunkHitOut(
        dataset=hit.dataset, doc_id=hit.doc_id, chunk_id=hit.chunk_id, chunk_type=hit.chunk_type,
        section_id=hit.section_id, parent_chunk_id=hit.parent_chunk_id, score=hit.score, ranks=dict(hit.ranks),
        locator=hit.locator, page=page, partition_date=hit.partition_date, spans=list(hit.spans),
        evidence=list(hit.evidence), evidence_text=list(hit.evidence_text), text=hit.text,
        context=ContextOut(before=c.before, after=c.after, parent_chunk_id=c.parent_chunk_id, bounds=c.bounds,
                           tokens=c.tokens),
        metadata=dict(hit.metadata),
        viewer_url=document_url(hit.doc_id, hit.dataset, hit.chunk_id, list(hit.evidence or hit.spans)),
    )


def proposition_hit(hit: PropositionHit) -> PropositionHitOut:
    """A proposition hit as the API returns it; its viewer link selects the parent chunk and marks the spans."""
    return PropositionHitOut(
        dataset=hit.dataset, proposition_id=hit.proposition_id, text=hit.text, score=hit.score, ranks=dict(hit.ranks),
        doc_id=hit.doc_id, partition_date=hit.partition_date, spans=list(hit.spans),
        alignment_score=hit.alignment_score, evidence_text=list(hit.evidence_text),
        parent_chunk_id=hit.parent_chunk_id, parent_chunk_type=hit.parent_chunk_type, parent_text=hit.parent_text,
        extractor=hit.extractor, viewer_url=document_url(hit.doc_id, hit.dataset, hit.parent_chunk_id, list(hit.spans)),
    )


def chunk_out(chunk: Chunk, dataset: str) -> ChunkOut:
    """A chunk as the API returns it, found in ``dataset``; metadata that is not a JSON object reads as ``{}``."""
    meta: dict[str, Any]
    try:
        meta = json.loads(chunk.metadata) if chunk.metadata else {}
    except json.JSONDecodeError:
        meta = {}
    spans = list(anchor_spans(chunk.evidence_anchor or ""))
    return ChunkOut(
        dataset=dataset, doc_id=chunk.doc_id, chunk_id=chunk.chunk_id, section_id=chunk.section_id,
        chunk_type=chunk.chunk_type, seq_index=chunk.seq_index, parent_chunk_id=chunk.parent_chunk_id,
        partition_date=chunk.partition_date, locator=chunk.locator, page=anchor_page(chunk), spans=spans,
        text=chunk.chunk_text, token_count=chunk.token_count, metadata=meta if isinstance(meta, dict) else {},
        viewer_url=document_url(chunk.doc_id, dataset, chunk.chunk_id, spans),
    )


def redirects(found: Located) -> list[RedirectOut]:
    """The redirect hops followed to reach ``found``, from the requested id on."""
    return [RedirectOut(old_chunk_id=r.old, new_chunk_id=r.new, match=r.match, partition_date=r.partition_date,
                        chunking_version=r.chunking_version) for r in found.redirects]


def page_url(doc: Document, number: int) -> str:
    """The ``GET /page-images`` URL of page ``number`` (1-based) of a PDF document."""
    return "/page-images?" + urlencode({"doc_id": doc.doc_id, "dataset": doc.dataset, "page": number})


def document(doc: Document) -> DocumentResponse:
    """A document as ``GET /documents`` returns it, its PDF pages in page order (none for other files)."""
    return DocumentResponse(
        dataset=doc.dataset, doc_id=doc.doc_id, title=doc.title, partition_date=doc.partition_date,
        landed_on=list(doc.landed_on), deleted=doc.deleted_on is not None, deleted_on=doc.deleted_on,
        deleted_by=doc.deleted_by, canonical_text=doc.canonical_text,
        chunks=[chunk_out(c, doc.dataset) for c in doc.chunks],
        pages=[PageOut(number=n, width=w, height=h, image_url=page_url(doc, n)) for n, (w, h) in sorted(doc.pages.items())],
        viewer_url=document_url(doc.doc_id, doc.dataset),
    )
