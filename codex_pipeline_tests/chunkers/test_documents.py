"""The documents chunker: page locators, running lines kept out, hyphens rejoined, tables kept, contract."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path

from codex_pipeline.chunkers.documents import DocumentLimits, chunk_documents
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import Reject, SourceDocument
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.documents import iter_documents_day, pdf_document
from codex_pipeline.sources.pdf_text import PdfLimits
from codex_pipeline_tests.conftest import CORPORA, needs_corpus
from codex_pipeline_tests.sources.pdf_maker import make_pdf, text_page

CORPUS = CORPORA / "pdf"
DAY = dt.date(2026, 12, 1)
SENTENCES = [f"Sentence {w} of the parks report explains the budget in plain words." for w in
             ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")]


def _pdf(tmp_path: Path, data: bytes) -> SourceDocument:
    path = tmp_path / "r.pdf"
    path.write_bytes(data)
    doc = pdf_document(path, "r.pdf", [], PdfLimits(ocr=False))
    assert doc is not None
    return doc


def _check(doc: SourceDocument, drafts) -> None:
    for d in drafts:
        parts = [doc.text[s:e] for s, e in d.spans]
        assert all(p in d.text for p in parts)
        if len(d.spans) == 1:
            assert d.text == parts[0]
        assert d.token_count == count_tokens(d.text)
        page = next(int(b.key) for b in doc.blocks if b.kind == "page" and b.start <= d.spans[0][0] < b.end + 1)
        assert d.page == page


def report(tmp_path: Path) -> SourceDocument:
    pages = [text_page([f"Page {w}: {s}" for s in SENTENCES * 2], header="Parks Report", footer=f"Page {n} of 3", gap_every=2)
             for n, w in ((1, "one"), (2, "two"), (3, "three"))]
    return _pdf(tmp_path, make_pdf(pages))


def test_running_lines_never_in_chunks_and_spans_reproduce_the_text(tmp_path: Path) -> None:
    doc = report(tmp_path)
    drafts = chunk_documents(doc, DocumentLimits(max_tokens=200))
    assert len(drafts) >= 2
    _check(doc, drafts)
    assert all("Parks Report" not in d.text and not re.search(r"Page \d of 3", d.text) for d in drafts)
    crossing = [d for d in drafts if len(d.spans) > 1]
    assert crossing, "a chunk running across a page break is composed of the spans around the running lines"
    anchor_pages = [json.loads(json.dumps(d.anchor_extra or {})).get("pages") for d in crossing]
    assert all(p is not None and p[0] < p[1] for p in anchor_pages)
    assert all(d.anchor_extra and d.anchor_extra["boxes"] for d in drafts)


def test_locators_carry_the_page_and_the_contract_holds(tmp_path: Path) -> None:
    doc = report(tmp_path)
    table = pipeline.chunk(get_dataset("documents"), DAY, [doc]).table
    rows = table.to_pylist()
    pages = [json.loads(r["evidence_anchor"])["page"] for r in rows]
    assert pages[0] == 1 and len(set(pages)) >= 2 and pages == sorted(pages)
    for r, page in zip(rows, pages):
        assert f"|s=p{page:03d}|p={page:03d}|b=" in r["locator"]  # no headings: the seed's synthesized page path
    report_ = validate_chunks(table, {doc.doc_id: doc.text})
    assert report_.passed, report_.failures


def test_headings_start_chunks_and_give_the_section_path(tmp_path: Path) -> None:
    page1 = [(72, 740, 20, "Parks"), *text_page(SENTENCES[:3], top=710),
             (72, 600, 15, "Trails"), *text_page(SENTENCES[3:5], top=575)]
    page2 = [(72, 740, 15, "Playgrounds"), *text_page(SENTENCES[5:], top=710)]
    doc = _pdf(tmp_path, make_pdf([page1, page2]))
    drafts = chunk_documents(doc)
    assert [d.text.split("\n", 1)[0] for d in drafts] == ["Parks", "Trails", "Playgrounds"]
    assert [d.metadata["headers"] for d in drafts] == [["Parks"], ["Parks", "Trails"], ["Parks", "Playgrounds"]]
    rows = pipeline.chunk(get_dataset("documents"), DAY, [doc]).table.to_pylist()
    assert [r["locator"].split("|s=")[1] for r in rows] == ["1|p=001|b=000", "1.1|p=001|b=000", "1.2|p=002|b=000"]


def test_hyphenated_words_are_rejoined_in_the_chunk_text_only(tmp_path: Path) -> None:
    doc = _pdf(tmp_path, make_pdf([text_page(["The council approved the develop-", "ment of the riverside trail."])]))
    (d,) = chunk_documents(doc)
    assert "development of the riverside" in d.text and "develop-\nment" in doc.text
    assert [doc.text[s:e] for s, e in d.spans] == ["The council approved the develop", "ment of the riverside trail."]


def test_a_table_over_the_budget_is_split_by_rows_with_its_first_row_repeated(tmp_path: Path) -> None:
    rows = ["Fund 2023 2024 2025"] + [f"Line{i} {i},100 {i},200 {i},300" for i in range(40)]
    doc = _pdf(tmp_path, make_pdf([text_page(rows, top=760, size=8)]))
    assert [b.kind for b in doc.blocks if b.kind != "page"] == ["table"]
    drafts = chunk_documents(doc, DocumentLimits(max_tokens=120))
    assert len(drafts) >= 3
    assert all(d.text.startswith("Fund 2023 2024 2025\n") for d in drafts)
    assert all(d.token_count <= 120 for d in drafts)
    _check(doc, drafts)


def test_text_and_markdown_documents(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("First paragraph.\n\nSecond paragraph.\n")
    (tmp_path / "b.md").write_text("# Title\n\nBody text.\n\n## Part\n\nMore.\n")
    docs = list(iter_documents_day(tmp_path, []))
    table = pipeline.chunk(get_dataset("documents"), DAY, docs).table
    assert validate_chunks(table, {d.doc_id: d.text for d in docs}).passed
    locators = table.column("locator").to_pylist()
    assert any("|s=p000|p=000|" in loc for loc in locators)  # text: no pages, no headings
    assert any("|s=1|p=000|" in loc for loc in locators)  # markdown: the docs chunker's heading path


def test_raw_round_trip_keeps_the_blocks(tmp_path: Path) -> None:
    doc = report(tmp_path)
    spec = get_dataset("documents")
    raw = pipeline.ingest(spec, DAY, [doc], []).table
    (back,) = pipeline.documents_from_raw(raw)
    assert back.blocks == doc.blocks
    assert chunk_documents(back) == chunk_documents(doc)


def _pdftotext_words(pdf: Path, page: int) -> set[str]:
    out = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"], capture_output=True, text=True)
    return set(re.findall(r"\w+", out.stdout.lower()))


@needs_corpus(CORPUS)
def test_every_corpus_pdf_is_chunked_or_rejected_and_the_contract_holds() -> None:
    rejects: list[Reject] = []
    docs = [d for d in iter_documents_day(CORPUS, rejects, PdfLimits(ocr=False)) if d.payload["format"] == "pdf"]
    pdfs = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.pdf")}
    assert pdfs == {d.source_file for d in docs} | {r.source_file for r in rejects if r.record_ref is None}
    assert len(docs) == 34  # the 5 scanned files are rejected: no text layer, OCR off here (slow)
    assert {r.record_ref for r in rejects} == {None, "page 1", "page 2"}
    table = pipeline.chunk(get_dataset("documents"), DAY, docs).table
    report_ = validate_chunks(table, {d.doc_id: d.text for d in docs})
    assert report_.passed, report_.failures
    for d in docs:
        _check(d, chunk_documents(d))
