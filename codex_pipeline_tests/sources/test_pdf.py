"""The PDF reader: page offsets, running lines, headings, blocks, and hostile files as named rejects."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.documents import iter_documents_day, pdf_document
from codex_pipeline.sources.pdf_text import PdfLimits
from codex_pipeline_tests.conftest import CORPORA, needs_corpus
from codex_pipeline_tests.sources.pdf_maker import make_pdf, text_page

LIMITS = PdfLimits()
NO_OCR = PdfLimits(ocr=False)
TESSERACT = shutil.which("tesseract") is not None
CORPUS = CORPORA / "pdf"

BODY = [
    "The council met to consider the annual budget for the parks department.",
    "Members discussed the maintenance of trails and the new playground.",
    "A motion to approve the plan carried unanimously after public comment.",
]


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _read(tmp_path: Path, data: bytes, limits: PdfLimits = LIMITS):
    rejects: list[Reject] = []
    doc = pdf_document(_write(tmp_path, "f.pdf", data), "f.pdf", rejects, limits)
    return doc, rejects


def three_pages() -> bytes:
    return make_pdf([text_page([f"Page {WORDS[n]} says: {line}" for line in BODY], header="Acme Parks Report 2024",
                               footer=f"Page {n} of 3") for n in (1, 2, 3)])


WORDS = {1: "one", 2: "two", 3: "three"}


def test_page_offsets_are_exact_and_running_lines_are_found(tmp_path: Path) -> None:
    doc, rejects = _read(tmp_path, three_pages())
    assert rejects == [] and doc is not None
    pages = [b for b in doc.blocks if b.kind == "page"]
    assert [b.key for b in pages] == ["1", "2", "3"]
    for b in pages:
        page_text = doc.text[b.start : b.end]
        assert f"Page {WORDS[int(b.key)]} says" in page_text
        assert all(f"Page {WORDS[n]} says" not in page_text for n in (1, 2, 3) if str(n) != b.key)
    running = [doc.text[b.start : b.end] for b in doc.blocks if b.kind == "running"]
    assert sorted(running) == sorted(["Acme Parks Report 2024"] * 3 + ["Page 1 of 3", "Page 2 of 3", "Page 3 of 3"])
    assert doc.payload["pages"] == 3 and doc.payload["headings"] == "none"


def _body(n: int) -> list[str]:
    return [f"Part {'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[n - 1]} of the handbook says: {line}" for line in BODY]  # no digit: every page differs


def test_a_chapters_header_and_alternating_headers_are_running_lines(tmp_path: Path) -> None:
    """A header on fewer than half the pages is still running when it repeats at the same place on nearby pages:
    a chapter's own header, or a book's even/odd headers (page numbers at either end ignored)."""
    pages = []
    for n in range(1, 14):  # 13 pages: each header below is on fewer than 7
        chapter = "Chapter 1: Trails" if n <= 6 else "Chapter 2: Playgrounds"
        header = f"{n} Parks Handbook" if n % 2 == 0 else f"{chapter} {n}"
        body = _body(n)[:1] if n == 6 else _body(n)  # a chapter's short last page: header, one line, footer
        pages.append(text_page(body, header=header, footer="Acme Parks Department, trails section" if n in (4, 5, 6)
                               else None))
    doc, rejects = _read(tmp_path, make_pdf(pages), NO_OCR)
    assert rejects == [] and doc is not None
    running = sorted(doc.text[b.start : b.end] for b in doc.blocks if b.kind == "running")
    assert running == sorted([f"{n} Parks Handbook" for n in range(2, 14, 2)] + [f"Chapter 1: Trails {n}" for n in (1, 3, 5)]
                             + [f"Chapter 2: Playgrounds {n}" for n in (7, 9, 11, 13)]
                             + ["Acme Parks Department, trails section"] * 3)
    assert all(line in doc.text for n in range(1, 14) for line in _body(n)[: 1 if n == 6 else 3])


def test_a_heading_at_the_top_of_consecutive_pages_is_not_a_running_line(tmp_path: Path) -> None:
    # "ARTICLE 2", "ARTICLE 3" … at the same place on nearby pages: one word once the number is set aside, so text
    articles = [text_page(_body(n), header=f"ARTICLE {n}" if n in (2, 3, 4) else None) for n in range(1, 9)]
    doc, rejects = _read(tmp_path, make_pdf(articles), NO_OCR)
    assert rejects == [] and doc is not None
    assert not any(b.kind == "running" for b in doc.blocks)
    # nor a line drawn at the top of nearby pages but read last (a table's cell), on two pages only, or 8 apart
    cell = [[*[(72, 700 - 14 * i, 11, t) for i, t in enumerate(_body(n))],
             *([(400, 760, 11, "Layoff date unknown")] if n in (2, 3, 4) else [])] for n in range(1, 9)]
    two = [text_page(_body(n), header="Trail closures and detours" if n in (2, 3) else None) for n in range(1, 7)]
    spread = [text_page(_body(n), header="Trail closures and detours" if n in (1, 5, 9) else None) for n in range(1, 12)]
    for name, data in (("cell.pdf", make_pdf(cell)), ("two.pdf", make_pdf(two)), ("spread.pdf", make_pdf(spread))):
        other = pdf_document(_write(tmp_path, name, data), name, [], NO_OCR)
        assert other is not None and not any(b.kind == "running" for b in other.blocks), name


@pytest.mark.parametrize(("extra", "tree", "media"), [
    ("", "", "[0 0 612 792]"), ("/Rotate 90 ", "", "[0 0 612 792]"), ("/Rotate 180 ", "", "[0 0 612 792]"),
    ("/Rotate 270 ", "", "[0 0 612 792]"), ("/CropBox [50 100 600 780] ", "", "[0 0 612 792]"),
    ("/Rotate 90 /CropBox [50 100 600 780] ", "", "[0 0 612 792]"),
    ("/CropBox [-50 -50 700 900] ", "", "[0 0 612 792]"),  # a crop box beyond the media box
    ("/CropBox [600 780 50 100] ", "", "[0 0 612 792]"),  # corners written backwards
    ("", "/MediaBox [0 0 595 842] /Rotate 180", ""),  # inherited from the page tree
    ("", "/MediaBox [0 0 612 792] /CropBox [50 100 600 780]", ""),
])
def test_boxes_are_on_the_page_as_displayed(extra: str, tree: str, media: str) -> None:
    """Each line's box holds the ink pdfium renders for it, whatever the page's /Rotate and /CropBox, its own or
    inherited."""
    import numpy as np
    import pypdfium2 as pdfium

    from codex_pipeline.sources.pdf_text import read_page

    # capitals: a line's box is its first and last characters' boxes, so a descender between them may stick out
    data = make_pdf([[(72, 700, 20, "TRAIL REPORT"), (400, 120, 20, "PAGE FOOTER")]], page_extra=extra,
                    pages_extra=tree, media_box=media)
    page = pdfium.PdfDocument(data)[0]
    width, height = page.get_size()
    ink = page.render(scale=1).to_numpy()[..., :3].mean(axis=2) < 128  # rows from the top, 1 pixel = 1 point
    got = read_page(page, 1, NO_OCR)
    assert [ln.text for ln in got.lines] == ["TRAIL REPORT", "PAGE FOOTER"]
    inside = np.zeros_like(ink)
    for ln in got.lines:
        assert 0 <= ln.x0 < ln.x1 <= width and 0 <= ln.y0 < ln.y1 <= height
        inside[int(height - ln.y1) - 3 : int(height - ln.y0) + 3, int(ln.x0) - 3 : int(ln.x1) + 3] = True
    assert ink.sum() > 500 and (ink & ~inside).sum() == 0  # no ink outside the boxes


def test_font_size_headings_and_items(tmp_path: Path) -> None:
    lines = [(72, 720, 20, "Parks Budget"), *text_page(BODY, top=690),
             (72, 600, 11, "1. CALL TO ORDER"), (72, 585, 11, "2. APPROVAL OF MINUTES"),
             (72, 570, 11, "a. Minutes of March 3, 2024")]
    doc, _ = _read(tmp_path, make_pdf([lines]))
    assert doc is not None
    heads = [b for b in doc.blocks if b.kind == "heading"]
    assert [(b.key, b.meta["title"]) for b in heads] == [("1", "Parks Budget")]
    items = [doc.text[b.start : b.end] for b in doc.blocks if b.kind == "item"]
    assert items == ["1. CALL TO ORDER", "2. APPROVAL OF MINUTES", "a. Minutes of March 3, 2024"]
    assert doc.payload["headings"] == "font" and doc.title == "Parks Budget"


def test_numbered_all_caps_lines_are_headings_when_nothing_else_is(tmp_path: Path) -> None:
    lines = ["1. CALL TO ORDER", "The chair opened the meeting.", "2. PUBLIC COMMENTS", "None were offered.",
             "3. NEW BUSINESS", "a. Budget for the parks department", "4. ADJOURNMENT"]
    doc, _ = _read(tmp_path, make_pdf([text_page(lines, gap_every=1)]))
    assert doc is not None and doc.payload["headings"] == "numbered"
    assert [doc.text[b.start : b.end] for b in doc.blocks if b.kind == "heading"] == [
        "1. CALL TO ORDER", "2. PUBLIC COMMENTS", "3. NEW BUSINESS", "4. ADJOURNMENT"]
    two, _ = _read(tmp_path, make_pdf([text_page(lines[:4], gap_every=1)]))
    assert two is not None and two.payload["headings"] == "none"  # 2 numbered lines are no outline


def test_numeric_rows_are_one_table_block(tmp_path: Path) -> None:
    rows = ["Fund 2023 2024 2025", "Parks 1,200 1,350 1,400", "Trails 300 320 $410", "Total 1,500 1,670 1,810"]
    doc, _ = _read(tmp_path, make_pdf([text_page(["Budget by fund follows.", *rows])]))
    assert doc is not None
    tables = [doc.text[b.start : b.end] for b in doc.blocks if b.kind == "table"]
    assert tables == ["\n".join(rows)]  # the year row is numeric too: the table opens with it


def test_embedded_files_and_javascript_are_ignored_and_the_text_read(tmp_path: Path) -> None:
    attachment = b"<< /Type /EmbeddedFile /Length 5 >>\nstream\nhello\nendstream"
    spec = b"<< /Type /Filespec /F (a.txt) /EF << /F 5 0 R >> >>"
    js = b"<< /S /JavaScript /JS (app.alert\\('x'\\);) >>"
    names = "/Names << /EmbeddedFiles << /Names [(a.txt) 6 0 R] >> /JavaScript << /Names [(x) 7 0 R] >> >>"
    pdf = make_pdf([text_page(BODY)], catalog_extra=names, extra_objects=[attachment, spec, js])
    doc, rejects = _read(tmp_path, pdf)
    assert rejects == [] and doc is not None
    assert BODY[0] in doc.text and "hello" not in doc.text and "alert" not in doc.text
    assert doc.payload["attachments"] == 1 and doc.payload["javascript"] == 1


def _one_reason(tmp_path: Path, data: bytes, limits: PdfLimits = LIMITS) -> str:
    doc, rejects = _read(tmp_path, data, limits)
    assert doc is None and len(rejects) >= 1 and all(r.source_file == "f.pdf" for r in rejects)
    return rejects[-1].reason


def test_encrypted_pdf_is_a_named_reject(tmp_path: Path) -> None:
    enc = b"<< /Filter /Standard /V 1 /R 2 /O <" + b"11" * 32 + b"> /U <" + b"22" * 32 + b"> /P -4 >>"
    pdf = make_pdf([text_page(BODY)], extra_objects=[enc], trailer_extra="/Encrypt 5 0 R /ID [<00112233> <00112233>]")
    assert "encrypted PDF" in _one_reason(tmp_path, pdf)


def test_corrupt_and_zero_page_pdfs_are_named_rejects(tmp_path: Path) -> None:
    assert "corrupt or truncated PDF" in _one_reason(tmp_path, b"%PDF-1.7\n" + bytes(range(256)) * 4)
    zero = _one_reason(tmp_path, make_pdf([]))  # pdfium itself refuses an empty page tree
    assert zero in ("PDF has zero pages", "corrupt or truncated PDF: pdfium cannot open it (Data format error)")


def test_truncated_pdf_never_raises(tmp_path: Path) -> None:
    data = three_pages()
    for cut in (len(data) // 3, len(data) // 2, len(data) - 40):
        doc, rejects = _read(tmp_path, data[:cut])
        assert doc is not None or rejects, f"cut at {cut}: neither a document nor a reject"
        if doc is not None:  # pdfium rebuilt what it could: offsets still exact per page
            for b in doc.blocks:
                assert 0 <= b.start <= b.end <= len(doc.text)


def test_page_count_over_the_cap_is_a_named_reject(tmp_path: Path) -> None:
    pdf = make_pdf([text_page(BODY)] * 2001, shared_content=True)
    assert _one_reason(tmp_path, pdf) == "PDF has 2001 pages, over the 2000-page limit; split it or raise max_pages"
    assert "PDF has 3 pages, over the 2-page limit" in _one_reason(tmp_path, three_pages(), PdfLimits(max_pages=2))


def test_a_page_over_the_character_limit_is_rejected_and_the_others_kept(tmp_path: Path) -> None:
    huge = [(10, 400 + k, 1, "x" * 20_001) for k in range(5)]  # pdfium keeps 32,767 characters of a string
    doc, rejects = _read(tmp_path, make_pdf([text_page(BODY), huge]))
    assert doc is not None and BODY[0] in doc.text and "xxxx" not in doc.text
    assert [r.record_ref for r in rejects] == ["page 2"]
    assert rejects[0].reason.endswith("characters, over the 100000-character page limit")


def test_a_document_of_one_repeated_line_per_page_keeps_it_as_text(tmp_path: Path) -> None:
    # a line at the top of every page is a running header, unless the pages hold nothing else
    doc, rejects = _read(tmp_path, make_pdf([[(72, 740, 12, f"Potato {n}")] for n in range(4)]))
    assert rejects == [] and doc is not None
    assert [b.kind for b in doc.blocks if b.kind != "page"] and not any(b.kind == "running" for b in doc.blocks)
    assert all(f"Potato {n}" in doc.text for n in range(4))
    three = pdf_document(_write(tmp_path, "r.pdf", three_pages()), "r.pdf", [], LIMITS)
    assert three is not None and any(b.kind == "running" for b in three.blocks)  # a report's header still is one


def test_a_page_pdfium_cannot_load_is_a_named_reject_and_the_others_kept(tmp_path: Path) -> None:
    # the page tree counts four pages and holds three: pdfium opens the file and fails on page 4
    damaged = three_pages().replace(b"] /Count 3", b"] /Count 4", 1)
    doc, rejects = _read(tmp_path, damaged)
    assert doc is not None and doc.payload["unread_pages"] == [4] and "Page three says" in doc.text
    assert [r.record_ref for r in rejects] == ["page 4"]
    assert rejects[0].reason.startswith("page 4 is damaged: pdfium cannot load it")


def test_scanned_pages_without_ocr_are_named_rejects_never_empty_documents(tmp_path: Path) -> None:
    doc, rejects = _read(tmp_path, make_pdf([text_page(BODY), "image"]), NO_OCR)
    assert doc is not None and doc.payload["unread_pages"] == [2]
    assert [(r.record_ref, r.reason) for r in rejects] == [
        ("page 2", "page 2 has no text layer (a scanned image); OCR is not available: install tesseract-ocr "
                   "(scripts/install_ocr.sh)")]
    assert "no page of the 2 has a text layer" in _one_reason(tmp_path, make_pdf(["image", "image"]), NO_OCR)


@pytest.mark.skipif(not TESSERACT, reason="tesseract-ocr not installed (scripts/install_ocr.sh)")
def test_a_page_ocr_cannot_read_is_a_named_reject(tmp_path: Path) -> None:
    doc, rejects = _read(tmp_path, make_pdf([text_page(BODY), "image"]))  # a grey square: no words
    assert doc is not None and doc.payload["unread_pages"] == [2] and "ocr" not in doc.payload
    assert [r.record_ref for r in rejects] == ["page 2"]
    assert rejects[0].reason.startswith("page 2 has no text layer and OCR could not read it (mean word confidence")


def _cer(hyp: str, ref: str) -> float:
    prev = list(range(len(ref) + 1))
    for i, a in enumerate(hyp, 1):
        cur = [i]
        for j, b in enumerate(ref, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a != b)))
        prev = cur
    return prev[-1] / len(ref)


def _words(text: str) -> str:
    text = re.sub(r"\{\{filled:([^}]*)\}\}", r"\1", text)
    return " ".join(re.sub(r"\{\{[^}]*\}\}|[#*_>|`]", " ", text).lower().split())


@pytest.mark.skipif(not TESSERACT, reason="tesseract-ocr not installed (scripts/install_ocr.sh)")
@needs_corpus(CORPUS)
def test_ocr_reads_a_typewritten_1974_scan_close_to_its_transcription() -> None:
    rejects: list[Reject] = []
    doc = pdf_document(CORPUS / "rivergrove-or/1974-Ord-16-Parks_SCANNED.pdf", "o.pdf", rejects)
    assert rejects == [] and doc is not None
    assert doc.payload["ocr"]["engine"].startswith("tesseract 5") and doc.payload["ocr"]["page_confidence"]["1"] > 80
    ref = _words((CORPUS / "rivergrove-or/transcriptions/1974-Ord-16-Parks.md").read_text())
    assert _cer(_words(doc.text), ref) < 0.10  # measured 0.062 with tesseract 5.3.0


def test_a_day_with_hostile_files_still_yields_the_good_ones(tmp_path: Path) -> None:
    _write(tmp_path, "good.pdf", three_pages())
    _write(tmp_path, "bad.pdf", b"%PDF-1.4 garbage")
    _write(tmp_path, "scan.pdf", make_pdf(["image"]))
    _write(tmp_path, "lost.pdf", make_pdf([text_page(BODY)]).replace(b"[6 0 R] /Count 1", b"[99 0 R] /Count 1", 1))
    rejects: list[Reject] = []
    docs = list(iter_documents_day(tmp_path, rejects, NO_OCR))
    assert [d.record_id for d in docs] == ["good.pdf"]
    assert {r.source_file for r in rejects} == {"bad.pdf", "scan.pdf", "lost.pdf"}
    assert any("page 1 is damaged" in r.reason for r in rejects if r.source_file == "lost.pdf")
    json.dumps(docs[0].payload)


def test_a_file_the_pdf_library_chokes_on_is_a_reject_not_a_failed_day(tmp_path: Path, monkeypatch) -> None:
    import pypdfium2

    _write(tmp_path, "a.pdf", three_pages())
    _write(tmp_path, "b.pdf", three_pages())
    real = pypdfium2.PdfDocument

    def choke(source, *args, **kwargs):  # fault injection: a library error the reader does not foresee
        if str(source).endswith("a.pdf"):
            raise RuntimeError("pdfium: unexpected internal error")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pypdfium2, "PdfDocument", choke)
    rejects: list[Reject] = []
    docs = list(iter_documents_day(tmp_path, rejects, NO_OCR))
    assert [d.record_id for d in docs] == ["b.pdf"]
    assert [(r.source_file, r.reason.split(" (")[0]) for r in rejects] == [
        ("a.pdf", "reader failed: RuntimeError: pdfium: unexpected internal error")]


@needs_corpus(CORPUS)
def test_real_agenda_outline_and_partly_scanned_ordinance() -> None:
    rejects: list[Reject] = []
    agenda = pdf_document(CORPUS / "huntsville-al/2026-04-09-city-council-meeting_agenda.pdf", "a.pdf", rejects)
    assert agenda is not None and agenda.payload["pages"] == 11
    running = {agenda.text[b.start : b.end] for b in agenda.blocks if b.kind == "running"}
    assert {"Page 1 of 11", "Page 11 of 11", "City Council Regular Meeting Agenda April 9, 2026"} <= running
    heads = [(b.key, agenda.text[b.start : b.end]) for b in agenda.blocks if b.kind == "heading"]
    assert agenda.payload["headings"] == "numbered" and ("1", "9. PUBLIC HEARINGS TO BE HELD") in heads
    assert any(agenda.text[b.start : b.end].startswith("a. Public Hearing") for b in agenda.blocks if b.kind == "item")
    dob = pdf_document(CORPUS / "nyc-council-finance/12_810-DOB.pdf", "d.pdf", rejects)
    assert dob is not None and dob.payload["headings"] == "outline"
    titles = [b.meta["title"] for b in dob.blocks if b.kind == "heading"]
    assert "Department of Buildings (DOB) Overview" in titles
    tree = pdf_document(CORPUS / "rivergrove-or/2018-Ord-89-2018-Tree-Cutting-Amendment.pdf", "t.pdf", rejects, NO_OCR)
    assert tree is not None and tree.payload["unread_pages"] == [1]
    assert [(r.source_file, r.record_ref) for r in rejects] == [("t.pdf", "page 1")]
