"""OCR settings (``sources.pdf_ocr``): binarization, the render DPI carried to the boxes, the settings in source_version."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.ocr_layout import tsv_words
from codex_pipeline.sources.pdf_ocr import (
    ENGINE,
    SETTINGS,
    OcrSettings,
    _lines,
    for_page_size,
    ocr_page,
    otsu,
    render_pgm,
)
from codex_pipeline.sources.pdf_text import PdfLimits, _invisible, read_page
from codex_pipeline_tests.conftest import CORPORA, needs_corpus
from codex_pipeline_tests.sources.pdf_maker import IMAGE, content, make_pdf

TESSERACT = shutil.which("tesseract") is not None
RIVERGROVE = CORPORA / "pdf" / "rivergrove-or"
SCAN = RIVERGROVE / "1974-Ord-16-Parks_SCANNED.pdf"
OCR_LAYER = RIVERGROVE / "1998-Ord-62-98-Flood-and-Land-Development-Amendment_OCRLAYER.pdf"


def test_otsu_splits_ink_from_paper() -> None:
    rng = np.random.default_rng(7)
    grey = np.where(np.arange(100)[None, :] < 30, 50, 210).repeat(40, axis=0) + rng.integers(-20, 20, (40, 100))
    out = otsu(grey.astype(np.uint8))
    assert set(np.unique(out).tolist()) == {0, 255}
    assert (out[:, :30] == 0).all() and (out[:, 30:] == 255).all()


def test_the_ocr_settings_are_part_of_the_documents_source_version() -> None:
    assert SETTINGS.tag in ENGINE and ENGINE.startswith("tesseract5")
    assert get_dataset("documents").source_version.endswith(ENGINE)
    assert OcrSettings(300, 3).tag != OcrSettings(300, 3, binarize=True).tag != OcrSettings(400, 3).tag


@needs_corpus(SCAN)
def test_render_dpi_and_binarization_shape_the_image() -> None:
    pdf = pdfium.PdfDocument(SCAN)
    page = pdf[0]
    w, h = page.get_size()
    pgm = render_pgm(page, OcrSettings(dpi=144, binarize=True))
    header, pixels = pgm.split(b"\n", 3)[:3], pgm.split(b"\n", 3)[3]
    assert header[1] == b"%d %d" % (round(w * 2), round(h * 2))
    assert set(pixels) <= {0, 255}
    page.close()
    pdf.close()


@pytest.mark.skipif(not TESSERACT, reason="tesseract-ocr not installed (scripts/install_ocr.sh)")
@needs_corpus(SCAN)
def test_ocr_boxes_are_in_pdf_points_whatever_the_render_dpi() -> None:
    pdf = pdfium.PdfDocument(SCAN)
    page = pdf[0]
    w, h = page.get_size()
    got = ocr_page(page, h, settings=SETTINGS)
    assert got.confidence > 80 and len(got.lines) > 10
    assert all(0 <= ln.x0 < ln.x1 <= w + 1 and 0 <= ln.y0 < ln.y1 <= h + 1 for ln in got.lines)
    assert max(ln.x1 for ln in got.lines) > w / 2  # not squeezed by a wrong pixel-to-point scale
    assert "park advisory council" in " ".join(ln.text for ln in got.lines).lower()
    page.close()
    pdf.close()


def test_a_page_under_the_confidence_floor_is_read_again_with_the_fallback_segmentation() -> None:
    import codex_pipeline.sources.pdf_ocr as ocr

    calls: list[int] = []

    def fake(pgm: bytes, lang: str, psm: int) -> str:
        calls.append(psm)
        return _tsv(("word", 45.0 if psm == 6 else 80.0, 10))

    assert ocr.ocr_pgm(b"", 792, settings=OcrSettings(400, 6, fallback_psm=3), tsv_of=fake).confidence == 80.0
    assert calls == [6, 3]
    calls.clear()
    assert ocr.ocr_pgm(b"", 792, settings=OcrSettings(400, 6), tsv_of=fake).confidence == 45.0 and calls == [6]


def _tsv(*words: tuple[str, float, int]) -> str:
    """A tesseract TSV of words on one line: (text, confidence, left pixel)."""
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [f"5\t1\t1\t1\t1\t{i}\t{left}\t100\t40\t30\t{conf}\t{text}"
            for i, (text, conf, left) in enumerate(words, 1)]
    return "\n".join([head, *rows])


def test_specks_read_as_punctuation_are_dropped_unless_read_confidently() -> None:
    tsv = _tsv(("|", 30.0, 10), ("Parks", 40.0, 60), ("&", 95.0, 120), ("—", 79.0, 150), ("A-1", 20.0, 200))
    got = _lines(tsv_words(tsv), 792, 72, noise_confidence=80)
    assert [ln.text for ln in got.lines] == ["Parks & A-1"]
    assert got.lines[0].x0 == 60  # the box is the kept words'
    assert got.confidence == round((30 + 40 + 95 + 79 + 20) / 5, 1)  # the page's confidence counts every word
    assert _lines(tsv_words(tsv), 792, 72).lines[0].text == "| Parks & — A-1"


def test_a_page_too_large_to_render_at_the_settings_dpi_is_rendered_smaller() -> None:
    assert for_page_size(612, 792) == SETTINGS  # a Letter page: 15 million pixels at 400 dpi
    assert for_page_size(792, 1224) == SETTINGS  # tabloid: 30 million
    for w, h in ((8400, 8400), (1800, 3600), (14400, 100)):  # a drawing, a poster, a strip
        got = for_page_size(w, h)
        assert got.dpi < SETTINGS.dpi and got.psm == SETTINGS.psm
        assert (w * got.dpi / 72) * (h * got.dpi / 72) <= SETTINGS.max_pixels < (w * (got.dpi + 1) / 72) * (h * (got.dpi + 1) / 72)
    poster = make_pdf([IMAGE]).replace(b"/MediaBox [0 0 612 792]", b"/MediaBox [0 0 8400 8400]")
    pdf = pdfium.PdfDocument(poster)
    page = pdf[0]
    pgm = render_pgm(page, for_page_size(*page.get_size()))
    w, h = (int(v) for v in pgm.split(b"\n", 3)[1].split())
    assert w * h <= SETTINGS.max_pixels  # 2.2 billion pixels at 400 dpi
    page.close()
    pdf.close()


@pytest.mark.skipif(not TESSERACT, reason="tesseract-ocr not installed (scripts/install_ocr.sh)")
@needs_corpus(SCAN)
def test_a_page_rendered_smaller_keeps_its_boxes_in_pdf_points() -> None:
    small = dataclasses.replace(SETTINGS, max_pixels=4_000_000)  # the Letter-size scan renders at about 210 dpi
    pdf = pdfium.PdfDocument(SCAN)
    page = pdf[0]
    w, h = page.get_size()
    assert for_page_size(w, h, small).dpi < 250
    got = ocr_page(page, h, settings=small)
    assert all(0 <= ln.x0 < ln.x1 <= w + 1 and 0 <= ln.y0 < ln.y1 <= h + 1 for ln in got.lines)
    assert max(ln.x1 for ln in got.lines) > w / 2
    assert "park advisory council" in " ".join(ln.text for ln in got.lines).lower()
    page.close()
    pdf.close()


@pytest.mark.skipif(not TESSERACT, reason="tesseract-ocr not installed (scripts/install_ocr.sh)")
@needs_corpus(OCR_LAYER)
def test_a_scans_invisible_ocr_layer_is_read_again_by_tesseract() -> None:
    pdf = pdfium.PdfDocument(OCR_LAYER)
    page = pdf[0]
    kept = read_page(page, 1, PdfLimits(reread_ocr_layers=False))
    again = read_page(page, 1, PdfLimits())
    layer = " ".join(ln.text for ln in kept.lines)
    read = " ".join(ln.text for ln in again.lines)
    assert "ORDINAI{CE" in layer and not kept.replaced_layer and kept.ocr_confidence is None
    assert "ORDINANCE AMENDING ORDINANCE" in read and again.replaced_layer and (again.ocr_confidence or 0) > 50
    page.close()
    pdf.close()


@pytest.mark.parametrize("mode", [0, 3])
def test_only_invisible_text_over_an_image_counts_as_an_ocr_layer(tmp_path: Path, mode: int) -> None:
    lines = content([(72, 700, 11, "Section 1. Parks"), (72, 680, 11, "Section 2. Trees")])
    data = make_pdf([IMAGE + b"\n" + lines.replace(b"BT ", b"BT %d Tr " % mode)])
    pdf = pdfium.PdfDocument(data)
    page = pdf[0]
    tp = page.get_textpage()
    assert _invisible(tp, tp.count_chars()) is (mode == 3)
    tp.close()
    got = read_page(page, 1, PdfLimits())  # tesseract (when there) reads nothing on a blank image: the text stays
    assert [ln.text for ln in got.lines] == ["Section 1. Parks", "Section 2. Trees"] and not got.replaced_layer
    page.close()
    pdf.close()
