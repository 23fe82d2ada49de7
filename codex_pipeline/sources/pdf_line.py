"""One text line of a PDF page, as the text layer (:mod:`~codex_pipeline.sources.pdf_text`) and OCR
(:mod:`~codex_pipeline.sources.pdf_ocr`) both read it and the layout step
(:mod:`~codex_pipeline.sources.pdf_layout`) takes it."""

from __future__ import annotations

from typing import NamedTuple


class Line(NamedTuple):
    """One text line of a page: its text and box (PDF points on the page as displayed, origin bottom left) and font size.

    A named tuple, not a frozen dataclass: a page makes one per line, and building a tuple costs a
    fifth of a frozen dataclass's per-field ``object.__setattr__`` (``bench/bench_pdf.py``).
    """

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
