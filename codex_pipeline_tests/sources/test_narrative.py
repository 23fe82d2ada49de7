"""Narrative landing files: good text and HTML, and every kind of bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codex_pipeline.chunkers.narrative import WindowLimits, chunk_narrative
from codex_pipeline.sources.narrative import load_narrative_day
from codex_pipeline_tests.sources.test_html_text import browser_dom, first_text, own_texts, xpath_at

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "narrative"
SAMPLE = Path(__file__).resolve().parents[2] / "codex_pipeline" / "sample_landing" / "narrative"


def test_reads_text_and_html(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    result = load_narrative_day(tmp_path)
    assert not result.rejects
    docs = {d.record_id: d for d in result.documents}
    html = docs["storm-drain-notice.html"]
    assert html.doc_id == "urn:aprs:narrative:storm-drain-notice.html"
    assert html.title == "Storm Drain Cleaning & Street Sweeping — Ward 4"
    assert "dataLayer" not in html.text and "tracking pixel" not in html.text
    assert "Birch & Cedar" in html.text and "café" in html.text and "<and>" in html.text
    assert html.xpaths[0] == (0, "/html[1]/head[1]/title[1]")
    assert docs["council-recess-statement.txt"].text.startswith("Statement from the Council President")


def test_bad_inputs_become_named_rejects(tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text("A real document about the budget.")
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9 au lait".encode("latin-1"))
    (tmp_path / "blank.txt").write_text("  \n\n\t ")
    (tmp_path / "only-script.html").write_text("<html><script>var x = 1;</script></html>")
    (tmp_path / "scan.pdf").write_bytes(b"%PDF-1.4")
    os.symlink(tmp_path / "does-not-exist.txt", tmp_path / "dangling.txt")
    result = load_narrative_day(tmp_path)
    assert [d.record_id for d in result.documents] == ["good.txt"]
    reasons = {r.source_file: r.reason for r in result.rejects}
    assert reasons["latin1.txt"].startswith("invalid UTF-8 at byte 3")
    assert reasons["blank.txt"] == "empty document: no text after extraction"
    assert reasons["only-script.html"] == "empty document: no text after extraction"
    assert "unsupported file type '.pdf'" in reasons["scan.pdf"]
    assert reasons["dangling.txt"].startswith("unreadable file")
    assert len(result.rejects) == 5


def test_large_document_is_read(tmp_path: Path) -> None:
    paragraph = "The water board reviewed the capital plan for the eastern reservoir. " * 50 + "\n\n"
    (tmp_path / "big.txt").write_text(paragraph * (20_000_000 // len(paragraph)))
    result = load_narrative_day(tmp_path)
    assert not result.rejects and len(result.documents[0].text) > 19_000_000


def test_crlf_is_normalized(tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"line one\r\nline two\r\n")
    assert load_narrative_day(tmp_path).documents[0].text == "line one\nline two\n"


@pytest.mark.parametrize("day", [FIXTURES, *sorted(SAMPLE.iterdir())], ids=lambda p: p.name)
def test_chunk_xpaths_resolve_to_the_chunks_first_text(day: Path) -> None:
    """The anchor of every window (big and small ones) names the element its first words are in."""
    html_docs = [d for d in load_narrative_day(day).documents if d.xpaths]
    assert html_docs
    for doc in html_docs:
        dom = browser_dom((day / doc.source_file).read_text(encoding="utf-8"))
        offsets = [o for o, _ in doc.xpaths]
        assert doc.title == doc.text.split("\n", 1)[0]  # every page here has a <title>
        for limits in (WindowLimits(), WindowLimits(window_tokens=40, overlap_tokens=7)):
            for chunk in chunk_narrative(doc, limits):
                start = chunk.spans[0][0]
                (el,) = dom.xpath(xpath_at(doc.xpaths, start))
                following = [o for o in offsets if o > start]
                words = first_text(doc.text[start : following[0] if following else len(doc.text)])
                assert any(w and w in t for w in words for t in own_texts(el)), (chunk.section_id, words)


def test_a_scraped_page_in_its_declared_legacy_charset_is_read(tmp_path: Path) -> None:
    page = ('<html><head><meta charset="iso-8859-1"><title>Caf\xe9 hours</title></head>'
            "<body><p>The caf\xe9 opens at 7 \x96 closes at 3.</p></body></html>")
    (tmp_path / "cafe.html").write_bytes(page.replace("\x96", "\u2013").encode("cp1252"))
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9 au lait".encode("latin-1"))  # text declares nothing: still a reject
    result = load_narrative_day(tmp_path)
    (doc,) = result.documents
    assert doc.title == "Caf\xe9 hours" and "The caf\xe9 opens at 7 \u2013 closes at 3." in doc.text
    assert [r.source_file for r in result.rejects] == ["latin1.txt"]
