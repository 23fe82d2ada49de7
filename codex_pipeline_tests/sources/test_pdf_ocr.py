"""OCR settings (``sources.pdf_ocr``): binarization, the render DPI carried to the boxes, the settings in source_version."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.pdf_ocr import ENGINE, SETTINGS, OcrSettings, ocr_page, otsu, render_pgm

TESSERACT = shutil.which("tesseract") is not None
SCAN = Path(__file__).resolve().parents[2].parent / "shared/corpora/pdf/rivergrove-or/1974-Ord-16-Parks_SCANNED.pdf"


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


@pytest.mark.skipif(not SCAN.is_file(), reason="shared corpora not present")
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


@pytest.mark.skipif(not TESSERACT or not SCAN.is_file(), reason="shared corpora not present, or no tesseract-ocr")
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


def test_a_page_under_the_confidence_floor_is_read_again_with_the_fallback_segmentation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import codex_pipeline.sources.pdf_ocr as ocr

    calls: list[int] = []

    def fake(pgm: bytes, height: float, lang: str, psm: int, dpi: int) -> ocr.OcrPage:
        calls.append(psm)
        return ocr.OcrPage([], 45.0 if psm == 6 else 80.0)

    monkeypatch.setattr(ocr, "_tesseract", fake)
    assert ocr.ocr_pgm(b"", 792, settings=OcrSettings(400, 6, fallback_psm=3)).confidence == 80.0
    assert calls == [6, 3]
    calls.clear()
    assert ocr.ocr_pgm(b"", 792, settings=OcrSettings(400, 6)).confidence == 45.0 and calls == [6]
