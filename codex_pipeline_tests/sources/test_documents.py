"""The documents dataset's reader: every landing file routed by content to its reader."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.documents import iter_documents_day, sniff
from codex_pipeline_tests.sources.pdf_maker import make_pdf, text_page


def _day(tmp_path: Path) -> Path:
    day = tmp_path / "2024-05-01"
    day.mkdir()
    return day


def make_docx(path: Path) -> None:
    d = docx.Document()
    d.core_properties.title = "Parks plan"
    d.add_heading("Parks plan", level=1)
    d.add_paragraph("The city will renovate two parks this year.")
    d.add_heading("Budget", level=2)
    d.add_paragraph("Trails first", style="List Bullet")
    d.add_paragraph("Playground second", style="List Number")
    table = d.add_table(rows=2, cols=2)
    for r, row in enumerate([("Item", "Cost"), ("Trails", "$300")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    d.save(str(path))


def test_files_are_routed_by_content_not_by_name(tmp_path: Path) -> None:
    day = _day(tmp_path)
    (day / "agenda.bin").write_bytes(make_pdf([text_page(["Item one of the agenda."])]))  # a PDF without .pdf
    make_docx(day / "plan.docx")
    (day / "notes.md").write_text("# Notes\n\nSome *markdown* notes.\n")
    (day / "page.txt").write_text("<!DOCTYPE html><html><title>Hi</title><body><p>An HTML page.</p></body></html>")
    (day / "plain").write_text("First paragraph.\n\nSecond paragraph.\n")
    (day / "about-pdf.txt").write_text("A note: every PDF starts with %PDF-1.7 and ends with %%EOF.\n")
    (day / "junk.dat").write_bytes(b"\x00\xff\x01garbage" + make_pdf([text_page(["Text after junk."])]))
    with zipfile.ZipFile(day / "archive.zip", "w") as z:
        z.writestr("a.txt", "x")
    (day / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01")
    rejects: list[Reject] = []
    docs = {d.record_id: d for d in iter_documents_day(day, rejects)}
    assert {k: d.payload["format"] for k, d in docs.items()} == {
        "agenda.bin": "pdf", "plan.docx": "docx", "notes.md": "markdown", "page.txt": "html", "plain": "text",
        "about-pdf.txt": "text", "junk.dat": "pdf"}
    assert all(d.doc_id == f"urn:aprs:documents:{k}" for k, d in docs.items())
    assert sorted(r.source_file for r in rejects) == ["archive.zip", "image.png"]
    assert "not a DOCX" in next(r.reason for r in rejects if r.source_file == "archive.zip")
    plain = docs["plain"]
    assert [plain.text[b.start : b.end] for b in plain.blocks] == ["First paragraph.", "Second paragraph."]
    assert docs["page.txt"].title == "Hi" and docs["page.txt"].xpaths


def test_docx_headings_lists_and_tables(tmp_path: Path) -> None:
    day = _day(tmp_path)
    make_docx(day / "plan.docx")
    (doc,) = iter_documents_day(day, [])
    kinds = [(b.kind, b.key, doc.text[b.start : b.end]) for b in doc.blocks]
    assert kinds == [
        ("heading", "1", "Parks plan"), ("para", "", "The city will renovate two parks this year."),
        ("heading", "2", "Budget"), ("item", "", "Trails first"), ("item", "", "Playground second"),
        ("table", "", "Item | Cost\nTrails | $300"),
    ]
    assert doc.title == "Parks plan"


def test_corrupt_docx_is_a_named_reject(tmp_path: Path) -> None:
    day = _day(tmp_path)
    with zipfile.ZipFile(day / "broken.docx", "w") as z:
        z.writestr("word/document.xml", "<not-xml")
    assert sniff(day / "broken.docx") == "docx"
    rejects: list[Reject] = []
    assert list(iter_documents_day(day, rejects)) == []
    assert [r.source_file for r in rejects] == ["broken.docx"] and rejects[0].reason.startswith("corrupt DOCX")


def test_html_in_a_declared_legacy_charset_is_read_and_undeclared_bytes_stay_a_named_reject(tmp_path: Path) -> None:
    import gzip

    day = _day(tmp_path)
    head = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"></head>'
    (day / "news.html").write_bytes((head + "<body><p>Thanks to J\xe9r\xf4me \u2013 \xa9 2004</p></body></html>")
                                   .encode("cp1252"))
    (day / "bare.html").write_bytes(b"<html><body><p>Caf\xe9</p></body></html>")  # no declaration: not guessed
    (day / "notes.txt").write_bytes("Caf\xe9\n".encode("latin-1"))
    (day / "odd.html").write_bytes(b'<html><head><meta charset="x-no-such-codec"></head><body>\xe9</body></html>')
    (day / "changelog.html.gz").write_bytes(gzip.compress(b"<html><body>old</body></html>"))
    rejects: list[Reject] = []
    docs = {d.record_id: d for d in iter_documents_day(day, rejects)}
    news = docs["news.html"]
    assert "Thanks to J\xe9r\xf4me \u2013 \xa9 2004" in news.text  # 0x96 is an en dash in windows-1252
    assert news.payload["encoding"] == "cp1252" and news.payload["format"] == "html"
    reasons = {r.source_file: r.reason for r in rejects}
    assert set(reasons) == {"bare.html", "notes.txt", "odd.html", "changelog.html.gz"}
    assert reasons["bare.html"].startswith("invalid UTF-8 at byte 18") and reasons["bare.html"].endswith("as UTF-8")
    assert reasons["notes.txt"].startswith("invalid UTF-8 at byte 3")
    assert "x-no-such-codec" in reasons["odd.html"]
    assert reasons["changelog.html.gz"] == "a gzip-compressed file: decompress it (gunzip) into the landing folder"
