"""Narrative landing files: good text and HTML, and every kind of bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from codex_pipeline.sources.narrative import load_narrative_day

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "narrative"


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
    assert html.xpaths
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
