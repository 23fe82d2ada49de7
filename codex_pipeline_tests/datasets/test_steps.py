"""pipeline.chunk: encoding ahead changes nothing in the rows, and batches bound its memory."""

from __future__ import annotations

import dataclasses
import datetime as dt

from codex_pipeline.core import tokens
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.markdown import load_docs_day, markdown_document
from codex_pipeline_tests.conftest import FIXTURES

DAY = dt.date(2026, 11, 24)
AT = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def _doc(i: int, size: int) -> SourceDocument:
    return SourceDocument(doc_id=f"urn:aprs:t:{i}", record_id=str(i), text="x" * size, source_file="f", title=None)


def test_batches_keep_order_and_bound_text_size() -> None:
    docs = [_doc(i, s) for i, s in enumerate([5, 5, 9, 1, 12, 3])]
    batches = list(pipeline._batches(docs, 10))
    assert [d.record_id for b in batches for d in b] == [str(i) for i in range(6)]
    assert [[len(d.text) for d in b] for b in batches] == [[5, 5], [9, 1], [12], [3]]  # one over-size doc alone
    assert list(pipeline._batches(docs, 0)) == [docs]


def test_rows_are_identical_with_and_without_encoding_ahead() -> None:
    spec = get_dataset("docs")
    assert spec.encodes_documents
    docs = load_docs_day(FIXTURES / "docs").documents
    docs.append(markdown_document("u.md", "# Überblick\n\nÄpfel, 日本語 und 🙂 im Text.\n\n## Zwei\n\nMehr – viel mehr.\n"))
    seen: list[bool] = []

    def watching(doc: SourceDocument, limits=spec.limits):
        ahead = tokens._AHEAD.get()
        seen.append(ahead is not None and ahead.get(id(doc.text), ("",))[0] is doc.text)  # encoded, not yet used
        drafts = spec.chunker(doc, limits)
        seen.append(ahead is not None and id(doc.text) not in ahead)  # handed out by the chunker's encode
        return drafts

    ahead = pipeline.chunk(dataclasses.replace(spec, chunker=watching), DAY, docs, chunked_at=AT).table
    assert seen and all(seen)
    plain = pipeline.chunk(dataclasses.replace(spec, encodes_documents=False), DAY, docs, chunked_at=AT).table
    assert ahead.num_rows > len(docs) and ahead.equals(plain)
    assert "urn:aprs:docs:u.md" in ahead.column("doc_id").to_pylist()
