"""OCR of a PDF page with no text layer: Debian's ``tesseract`` (5.x), offline, by its command line.

Chosen by measurement on the four typewritten Rivergrove scans (15 pages) against their hand
transcriptions (``docs/datasets/documents.md``): tesseract 5.3 had the lower character error
rate on 3 of 4 files and overall, at the same speed as ``rapidocr-onnxruntime``, and needs no
Python package (rapidocr brings OpenCV and onnxruntime). ``scripts/install_ocr.sh`` installs it.

The page is rendered by pdfium at :data:`SETTINGS` (400 dpi, grey), handed to tesseract (``--psm 6``:
the page as one block of text) as a PGM on stdin, and
its TSV output (words with boxes and confidences) becomes the page's lines, in PDF points, so
the layout step treats an OCR page as any other. The page's confidence is the mean of its
words' (0–100); a page under :data:`MIN_CONFIDENCE`, or with no words, is not read.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codex_pipeline.sources.ocr_layout import COLUMN_SHARE, Word, gutter, side_by_side, tsv_words
from codex_pipeline.sources.pdf_line import Line

MIN_CONFIDENCE = 50.0
TIMEOUT_S = 180
_ALNUM = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class OcrSettings:
    """How a page is rendered, cleaned and segmented before tesseract reads it (``bench/bench_ocr.py``)."""

    dpi: int = 300
    psm: int = 3  # tesseract page segmentation: 3 automatic, 4 one column, 6 one block
    binarize: bool = False  # Otsu threshold on the grey render before tesseract
    fallback_psm: int | None = None  # re-read with this --psm when the page's confidence is under MIN_CONFIDENCE
    noise_confidence: float = 0.0  # drop words with no letter or digit read under this confidence
    columns_psm: int | None = None  # re-read with this --psm a page the first reading finds set in columns
    max_pixels: int | None = None  # a page larger at ``dpi`` renders at the DPI that makes it this many pixels

    @property
    def tag(self) -> str:
        """The settings as a short name (``400dpi-psm6-fb3-noise80-cols3-max40mp``), part of :data:`ENGINE`."""
        fallback = f"-fb{self.fallback_psm}" if self.fallback_psm is not None else ""
        noise = f"-noise{self.noise_confidence:g}" if self.noise_confidence else ""
        columns = f"-cols{self.columns_psm}" if self.columns_psm is not None else ""
        cap = f"-max{self.max_pixels / 1e6:g}mp" if self.max_pixels else ""
        return f"{self.dpi}dpi-psm{self.psm}{'-otsu' if self.binarize else ''}{fallback}{noise}{columns}{cap}"


SETTINGS = OcrSettings(dpi=400, psm=6, fallback_psm=3, noise_confidence=80, columns_psm=3, max_pixels=40_000_000)
"""Chosen by leave-one-document-out over the four Rivergrove scans (``bench/bench_ocr.py``): picked on
three documents by the error on the transcribed text, 400 dpi / ``--psm 6`` won every fold. A page
that is not one block of text reads badly as one (page 2 of Resolution 22: confidence 45, so a
reject), so a page under :data:`MIN_CONFIDENCE` is read again with automatic segmentation
(``--psm 3``) and the more confident reading kept. Specks, binder holes and page edges read as
``|``, ``:``, ``_`` or ``—``: a word with no letter or digit read under confidence 80 is dropped
(chosen by leave-one-document-out over the seven transcribed Rivergrove scans by character error
rate: 80 or "all" in every fold; ``docs/datasets/documents.md``). A page set in columns reads across them as one
block, so a page whose one-block reading runs across a gutter, and which ``--psm 3`` also finds in columns, keeps
the ``--psm 3`` reading (:mod:`~codex_pipeline.sources.ocr_layout`; a rule, not tuned: the dev scans hold no page
in columns). A page that would render to over 40 million pixels at 400 dpi (a poster, a drawing: an 8,400-point
square page is 2.2 billion) renders at the DPI that makes it that size, so memory and tesseract's time stay bounded;
type on a page that large is large (an engineering bound: a tabloid page at 400 dpi is 30 million pixels)."""
ENGINE = f"tesseract5-{SETTINGS.tag}"
"""The OCR engine and its settings: part of the documents ``source_version``, so a change re-ingests."""


@dataclass(frozen=True)
class OcrPage:
    """A page as tesseract read it: lines in PDF points, mean word confidence (0-100), set in columns or not."""

    lines: list[Line]
    confidence: float  # mean word confidence, 0-100
    columns: bool = False  # read by --psm 3 because the page is set in columns


class OcrError(Exception):
    """The page could not be read by OCR; the message is the reject reason's tail."""


@functools.cache
def engine_version() -> str | None:
    """``tesseract 5.3.0`` when tesseract is installed, else None (scanned pages are then rejected)."""
    exe = shutil.which("tesseract")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0].strip() if first and first[0].startswith("tesseract") else None


def render_pgm(page: Any, settings: OcrSettings = SETTINGS) -> bytes:
    """The page rendered in grey (binarized when the settings say so), as a binary PGM for tesseract."""
    bitmap = page.render(scale=settings.dpi / 72, grayscale=True)
    pixels = bitmap.to_numpy()
    h, w = pixels.shape[0], pixels.shape[1]
    grey = pixels.reshape(h, -1)[:, :w]
    if settings.binarize:
        grey = otsu(grey)
    return b"P5\n%d %d\n255\n" % (w, h) + grey.tobytes()


def otsu(grey: Any) -> Any:
    """Black and white at the threshold that best separates ink from paper (Otsu's method)."""
    import numpy as np

    hist = np.bincount(grey.ravel(), minlength=256).astype(np.float64)
    weight = np.cumsum(hist)
    mass = np.cumsum(hist * np.arange(256))
    total, total_mass = weight[-1], mass[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (total_mass * weight - mass * total) ** 2 / (weight * (total - weight))
    threshold = int(np.nanargmax(between))
    return np.where(grey > threshold, 255, 0).astype(np.uint8)


def ocr_page(page: Any, height_pt: float, lang: str = "eng", settings: OcrSettings = SETTINGS) -> OcrPage:
    """The page's lines as tesseract reads them (:class:`OcrError` when it cannot)."""
    settings = for_page_size(page.get_size()[0], height_pt, settings)
    return ocr_pgm(render_pgm(page, settings), height_pt, lang, settings)


def for_page_size(width_pt: float, height_pt: float, settings: OcrSettings = SETTINGS) -> OcrSettings:
    """``settings`` at a DPI low enough that the page renders to at most ``settings.max_pixels``."""
    pixels = (width_pt * settings.dpi / 72) * (height_pt * settings.dpi / 72)
    if not settings.max_pixels or pixels <= settings.max_pixels:
        return settings
    return dataclasses.replace(settings, dpi=max(1, int(settings.dpi * math.sqrt(settings.max_pixels / pixels))))


def ocr_pgm(pgm: bytes, height_pt: float, lang: str = "eng", settings: OcrSettings = SETTINGS,
            tsv_of: Callable[[bytes, str, int], str] | None = None) -> OcrPage:
    """Tesseract's reading of a rendered page (``render_pgm``), its boxes in PDF points.

    ``tsv_of(pgm, lang, psm)`` runs tesseract (:func:`tesseract_tsv`); the OCR benchmark hands in
    one that caches, so a grid of settings reads each page once per segmentation.
    """
    run = tsv_of or tesseract_tsv
    read: dict[int, list[Word]] = {settings.psm: tsv_words(run(pgm, lang, settings.psm))}

    def reading(psm: int) -> list[Word]:  # each segmentation runs once per page
        if psm not in read:
            read[psm] = tsv_words(run(pgm, lang, psm))
        return read[psm]

    if settings.columns_psm is not None and gutter(read[settings.psm]):
        automatic = reading(settings.columns_psm)
        if side_by_side(automatic) >= COLUMN_SHARE:
            columns = _lines(automatic, height_pt, settings.dpi, settings.noise_confidence, columns=True)
            if columns.confidence >= MIN_CONFIDENCE:
                return columns
    got = _lines(read[settings.psm], height_pt, settings.dpi, settings.noise_confidence)
    if got.confidence < MIN_CONFIDENCE and settings.fallback_psm is not None:
        again = _lines(reading(settings.fallback_psm), height_pt, settings.dpi, settings.noise_confidence)
        if again.confidence > got.confidence:
            return again
    return got


def tesseract_tsv(pgm: bytes, lang: str, psm: int) -> str:
    """Tesseract's TSV (words, boxes in pixels, confidences) for a PGM page (:class:`OcrError` when it fails).

    One OpenMP thread per tesseract (set by ``env``: only the edge reads this process's environment): its
    threads contending for the cores cost far more than they give (a 3-column page at 400 dpi on the idle 2-core dev machine:
    53 s, 30 of them in the kernel, against 6 s with one thread).
    """
    exe = shutil.which("tesseract")
    if exe is None:
        raise OcrError("tesseract could not run (not found on PATH; scripts/install_ocr.sh installs it)")
    try:
        done = subprocess.run(["env", "OMP_THREAD_LIMIT=1", exe, "stdin", "stdout", "-l", lang, "--psm", str(psm),
                               "tsv"], input=pgm, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise OcrError(f"OCR took over {TIMEOUT_S} s") from None
    except OSError as exc:
        raise OcrError(f"tesseract could not run ({exc.strerror or exc})") from None
    if done.returncode != 0:
        raise OcrError(f"tesseract failed ({done.stderr.decode(errors='replace').strip()[:200]})")
    return done.stdout.decode("utf-8", "replace")


def _lines(words: list[Word], height_pt: float, dpi: int, noise_confidence: float = 0.0,
           columns: bool = False) -> OcrPage:
    """Words grouped by (block, paragraph, line) in tesseract's order; boxes from pixels to points.

    The page's confidence is the mean over every word read, noise included, so the floor and the
    fallback judge the reading as tesseract made it.
    """
    scale = 72 / dpi
    groups: dict[tuple[str, str, str], list[Word]] = {}
    confs: list[float] = []
    for w in words:
        if w.conf >= 0:
            confs.append(w.conf)
        if w.conf < noise_confidence and not _ALNUM.search(w.text):
            continue
        groups.setdefault((w.block, w.par, w.line), []).append(w)
    lines = []
    for group in groups.values():
        left = min(w.left for w in group)
        top = min(w.top for w in group)
        right = max(w.left + w.width for w in group)
        bottom = max(w.top + w.height for w in group)
        text = " ".join(w.text for w in group)
        size = round((bottom - top) * scale, 1)
        lines.append(Line(text, round(left * scale, 1), round(height_pt - bottom * scale, 1),
                          round(right * scale, 1), round(height_pt - top * scale, 1), size))
    return OcrPage(lines, round(sum(confs) / len(confs), 1) if confs else 0.0, columns)
