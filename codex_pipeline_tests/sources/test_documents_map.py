"""``evaluation.document_map``: gold over a PDF counts in the documents reader's canonical text."""

from __future__ import annotations

from pathlib import Path

from codex_pipeline.core.documents import Reject
from codex_pipeline.evaluation.document_map import document_source
from codex_pipeline.evaluation.source_map import build_source_map
from codex_pipeline.sources.documents import pdf_document
from codex_pipeline_tests.sources.pdf_maker import make_pdf, text_page


def test_a_pdfs_gold_text_is_the_readers_canonical_text_and_maps_as_identity(tmp_path: Path) -> None:
    path = tmp_path / "agenda.pdf"
    path.write_bytes(make_pdf([text_page(["Budget hearing on parks.", "Second line of the page."], footer=f"Page {n} of 2")
                               for n in (1, 2)]))
    rejects: list[Reject] = []
    doc = pdf_document(path, "agenda.pdf", rejects)
    assert doc is not None
    text = document_source(path)
    assert text == doc.text and "Budget hearing on parks." in text
    smap = build_source_map(doc, {"pdf/agenda.pdf": text}, "pdf")
    start = text.index("parks")
    assert smap.coverage == 1.0 and smap.map([(start, start + 5)]) == {"pdf/agenda.pdf": [(start, start + 5)]}


def test_other_files_keep_their_own_text(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("plain notice\n")
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 garbage")
    assert document_source(tmp_path / "n.txt") is None
    assert document_source(tmp_path / "bad.pdf") == ""
