"""PDF pages as lines with boxes and font sizes, through pdfium (``pypdfium2``).

Measured on ``../shared/corpora/pdf`` (9 born-digital files, 93 pages) against poppler's
``pdftotext``: pypdfium2 346 pages/s, word F1 0.998, word-bigram F1 0.920; pypdf 24
pages/s, 0.992 / 0.906; pdfplumber 8 pages/s, 0.917 / 0.830 (``docs/datasets/documents.md``).
pdfium also gives each character's box and font size, which the layout step needs.

Pages are read one at a time and closed, so memory stays flat in the page count. Every
way a PDF can refuse to be read (encrypted, corrupt, no pages, too many pages, a page
over the character limit, a page with no text layer) becomes a :class:`PdfProblem`
naming the file and, for a page, its number; the caller turns it into a reject.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_pipeline.sources.pdf_line import Line

# pdfium joins a word hyphenated across a line end into one line with U+FFFE where the hyphen
# was: that is a line break after a hyphen, as printed (the chunker rejoins the word)
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\ufffe")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\uffff]")  # U+0002: pdfium's other hyphen mark
_CONTROL_IN_LINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\uffff]")  # _CONTROL but CR (a line break, never in a line)
OCR_MISSING = "OCR is not available: install tesseract-ocr (scripts/install_ocr.sh)"
NO_TEXT_LAYER = f"has no text layer (a scanned image); {OCR_MISSING}"
DAMAGED_PAGE = "is damaged: pdfium cannot load it (the other pages are read; a repaired copy, e.g. `qpdf in.pdf out.pdf`, reads it)"


@dataclass(frozen=True)
class PdfLimits:
    """What a PDF may hold before it is rejected, so one hostile file never stops the day."""

    max_pages: int = 2000
    max_page_chars: int = 100_000
    max_bytes: int = 256 * 1024 * 1024
    ocr: bool = True  # OCR pages without a text layer when tesseract is installed (sources.pdf_ocr)
    reread_ocr_layers: bool = True  # read a scan's invisible OCR layer again with tesseract (see read_page)


@dataclass
class PdfPage:
    """One page as read: its lines (PDF points, like ``width`` and ``height``), or the ``problem`` that stopped it."""

    number: int  # 1-based
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)
    problem: str | None = None  # why the page gave no text (a page reject), None when read
    ocr_confidence: float | None = None  # mean word confidence (0-100) when the lines come from OCR
    replaced_layer: bool = False  # the page's own (invisible) OCR layer was replaced by tesseract's reading
    ocr_columns: bool = False  # OCR found the page set in columns and read it column by column


@dataclass(frozen=True)
class OutlineItem:
    """A bookmark of the PDF's outline: its title, depth and target page."""

    title: str
    level: int  # 1 = top
    page: int  # 1-based; 0 when the bookmark points nowhere


class PdfProblem(Exception):
    """A PDF (or one of its pages) that cannot be read; the message is the reject reason."""


@dataclass
class PdfFile:
    """An open PDF: its facts up front, its pages streamed by :meth:`pages`."""

    doc: Any
    page_count: int
    title: str | None
    outline: list[OutlineItem]
    attachments: int
    javascript: int
    limits: PdfLimits

    def pages(self) -> Iterator[PdfPage]:
        """Each page read, or a page whose ``problem`` says pdfium cannot load it: one damaged page never costs the file."""
        import pypdfium2 as pdfium

        for i in range(self.page_count):
            try:
                page = self.doc[i]
            except pdfium.PdfiumError:
                yield PdfPage(i + 1, 0.0, 0.0, problem=f"page {i + 1} {DAMAGED_PAGE}")
                continue
            try:
                got = read_page(page, i + 1, self.limits)
            finally:
                page.close()
            yield got

    def close(self) -> None:
        """Closes the pdfium document: :meth:`pages` can no longer be read."""
        self.doc.close()


def open_pdf(path: Path, limits: PdfLimits = PdfLimits()) -> PdfFile:
    """Open a PDF file, refusing what cannot or must not be read (:class:`PdfProblem`).

    pdfium is imported here, on first use: a process that never reads a PDF never loads it.
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    size = path.stat().st_size
    if size > limits.max_bytes:
        raise PdfProblem(f"PDF is {size} bytes, over the {limits.max_bytes}-byte limit")
    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        msg = str(exc)
        if "password" in msg.lower():
            raise PdfProblem("encrypted PDF: it needs a password; land an unencrypted copy") from None
        detail = re.search(r"PDFium: ([^)]*)", msg)
        raise PdfProblem(f"corrupt or truncated PDF: pdfium cannot open it ({detail.group(1) if detail else msg})") from None
    n = len(doc)
    if n == 0:
        doc.close()
        raise PdfProblem("PDF has zero pages")
    if n > limits.max_pages:
        doc.close()
        raise PdfProblem(f"PDF has {n} pages, over the {limits.max_pages}-page limit; split it or raise max_pages")
    title = doc.get_metadata_value("Title").strip() or None  # "" when absent; the one key read, not all eight
    outline = _outline(doc, n)
    attachments = pdfium_c.FPDFDoc_GetAttachmentCount(doc.raw)
    javascript = pdfium_c.FPDFDoc_GetJavaScriptActionCount(doc.raw)
    return PdfFile(doc, n, title, outline, max(attachments, 0), max(javascript, 0), limits)


def _outline(doc: Any, n: int) -> list[OutlineItem]:
    import pypdfium2 as pdfium

    items = []
    try:
        for item in doc.get_toc(max_depth=8):
            title = _CONTROL.sub(" ", item.get_title() or "").strip()
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            page = index + 1 if index is not None and 0 <= index < n else 0
            if title:
                items.append(OutlineItem(title, item.level + 1, page))
    except (pdfium.PdfiumError, ValueError):  # a cyclic or broken outline: no headings from it
        return []
    return items


def read_page(page: Any, number: int, limits: PdfLimits) -> PdfPage:
    """The page's lines in pdfium's reading order, or the reason it has none."""
    import pypdfium2 as pdfium

    width, height = page.get_size()
    out = PdfPage(number, width, height)
    try:
        tp = page.get_textpage()
    except pdfium.PdfiumError:
        out.problem = f"page {number} {DAMAGED_PAGE}"
        return out
    try:
        n = tp.count_chars()
        if n > limits.max_page_chars:
            out.problem = f"page {number} holds {n} characters, over the {limits.max_page_chars}-character page limit"
            return out
        raw = tp.get_text_range() if n else ""
        if not raw.strip():
            if _has_images(page):
                _ocr(page, out, limits)
            return out
        if limits.ocr and limits.reread_ocr_layers and _invisible(tp, n) and _has_images(page) and _reread(page, out):
            return out
        out.lines = _lines(tp, raw, len(raw) == n, (0.0, 0.0, width, height), _to_displayed(page))
    finally:
        tp.close()
    return out


def _invisible(tp: Any, n: int) -> bool:
    """Whether the page's text is drawn invisibly (render mode 3): the OCR layer a scanner laid over its image."""
    import pypdfium2.raw as pdfium_c

    modes = set()
    for index in {0, n // 2, n - 1}:
        obj = pdfium_c.FPDFText_GetTextObject(tp.raw, index)
        if obj:
            modes.add(pdfium_c.FPDFTextObj_GetTextRenderMode(obj))
    return modes == {pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE}


def _reread(page: Any, out: PdfPage) -> bool:
    """Replace a scan's OCR layer with tesseract's reading when tesseract reads the page.

    The three Rivergrove scans with an OCR layer (52 pages) read at a character error rate of
    0.069 / 0.063 / 0.057 from their layer and 0.022 / 0.031 / 0.041 from tesseract
    (``bench/bench_ocr.py``); no per-page test told the better reading apart (a layer's errors
    are wrong letters inside word-shaped tokens), so tesseract's reading is kept whenever it is
    confident enough to be read at all. The layer stays when tesseract is missing or fails.
    """
    if isinstance(_ocr_reading(page, out), str):
        return False
    out.replaced_layer = True
    return True


def _ocr(page: Any, out: PdfPage, limits: PdfLimits) -> None:
    """Fill ``out`` from OCR, or say why its page stays unread."""
    why = _ocr_reading(page, out) if limits.ocr else NO_TEXT_LAYER
    if isinstance(why, str):
        out.problem = f"page {out.number} {why}"


def _ocr_reading(page: Any, out: PdfPage) -> bool | str:
    """Fill ``out``'s lines from tesseract (True), or the reject reason's tail when it cannot read the page."""
    import pypdfium2 as pdfium

    from codex_pipeline.sources.pdf_ocr import MIN_CONFIDENCE, OcrError, engine_version, ocr_page

    if engine_version() is None:
        return NO_TEXT_LAYER
    try:
        got = ocr_page(page, out.height)
    except (OcrError, pdfium.PdfiumError) as exc:  # pdfium: the page could not be rendered for OCR
        return f"has no text layer and OCR failed: {exc}"
    if not got.lines or got.confidence < MIN_CONFIDENCE:
        return (f"has no text layer and OCR could not read it (mean word confidence "
                f"{got.confidence:.0f}, under {MIN_CONFIDENCE:.0f})")
    out.lines, out.ocr_confidence, out.ocr_columns = got.lines, got.confidence, got.columns
    return True


def _control(c: re.Match[str]) -> str:
    return "-" if c.group() == "\x02" else " "


def _has_images(page: Any) -> bool:
    import pypdfium2.raw as pdfium_c

    return any(True for _ in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=2))


Box = tuple[float, float, float, float]


def _to_displayed(page: Any) -> Callable[[Box], Box] | None:
    """The map from pdfium's character boxes (PDF user space) to the page as displayed, or None when they agree.

    A page's ``/Rotate`` (clockwise degrees) and a ``/CropBox`` not at the origin put user space apart from the
    page a viewer shows (and OCR reads): boxes are given on the displayed page, origin bottom left, so a highlight
    lands on the rendered image and "top" means the top a reader sees.
    """
    left, bottom, right, top = page.get_bbox()  # the crop box within the media box, inherited ones included
    rotation = page.get_rotation() % 360
    if not rotation and abs(left) < 0.05 and abs(bottom) < 0.05:
        return None

    def point(x: float, y: float) -> tuple[float, float]:
        if rotation == 90:
            return y - bottom, right - x
        if rotation == 180:
            return right - x, top - y
        if rotation == 270:
            return top - y, x - left
        return x - left, y - bottom

    def box(b: Box) -> Box:
        (ax, ay), (zx, zy) = point(b[0], b[1]), point(b[2], b[3])
        return min(ax, zx), min(ay, zy), max(ax, zx), max(ay, zy)
    return box


@functools.cache
def _text_calls() -> tuple[Callable[..., int], Callable[..., float]]:
    """pdfium's ``FPDFText_GetCharBox`` and ``FPDFText_GetFontSize`` called without ctypes' argument checks.

    pypdfium2 declares each function's ``argtypes``, and converting a char-box call's six arguments
    through them costs about 0.7 µs of its 1 µs (measured on this machine; a line makes two such calls).
    :func:`_lines` only ever passes a text page handle, a Python int and ``byref(c_double)``, which ctypes
    hands to C unconverted as the C signatures expect; so the same entry points are called through
    prototypes without ``argtypes`` (``docs/history.md``, PDF step speed).
    """
    from ctypes import c_double, c_int, c_void_p, cast

    import pypdfium2.raw as pdfium_c

    def unchecked(func: Any, restype: Any) -> Any:
        bare = type(func)(cast(func, c_void_p).value)  # the same C function, no argtypes
        bare.restype = restype
        return bare

    return unchecked(pdfium_c.FPDFText_GetCharBox, c_int), unchecked(pdfium_c.FPDFText_GetFontSize, c_double)


def _lines(tp: Any, raw: str, aligned: bool, page_box: Box, displayed: Callable[[Box], Box] | None = None) -> list[Line]:
    """Split pdfium's text on its line breaks; boxes (on the displayed page: ``displayed``) and sizes from the first
    and last characters.

    pdfium's C calls are made directly (:func:`_text_calls`) with reused ``c_double`` outputs, inline rather than
    through a helper: the ``get_charbox`` wrapper allocates four per call, and this loop is the reader's hottest
    (``bench/bench_pdf.py``).
    """
    from ctypes import byref, c_double

    charbox, font_size = _text_calls()
    handle = tp.raw
    left, right, bottom, top = c_double(), c_double(), c_double(), c_double()
    refs = (byref(left), byref(right), byref(bottom), byref(top))

    lines = []
    pos = 0
    controls = _CONTROL_IN_LINE.search(raw) is not None  # most pages have none: no substitution per line
    hyphens = "\ufffe" in raw
    for m in [*_LINE_BREAK.finditer(raw), None]:
        end = len(raw) if m is None else m.start()
        seg = raw[pos : end + 1] if hyphens and m is not None and m.group() == "\ufffe" else raw[pos:end]  # keep it
        text = seg.replace("\ufffe", "-") if hyphens else seg
        text = (_CONTROL.sub(_control, text) if controls else text).strip()
        if text:
            lead = pos + len(seg) - len(seg.lstrip())
            last = pos + len(seg.rstrip()) - 1
            if aligned and charbox(handle, lead, *refs):
                ax0, ay0, ax1, ay1 = left.value, bottom.value, right.value, top.value
                found = charbox(handle, last, *refs)
            else:
                found = 0
            if found:
                zx0, zy0, zx1, zy1 = left.value, bottom.value, right.value, top.value
                x0, y0 = zx0 if zx0 < ax0 else ax0, zy0 if zy0 < ay0 else ay0
                x1, y1 = zx1 if zx1 > ax1 else ax1, zy1 if zy1 > ay1 else ay1
                if displayed is not None:
                    x0, y0, x1, y1 = displayed((x0, y0, x1, y1))
                lines.append(Line(text, round(x0, 1), round(y0, 1), round(x1, 1), round(y1, 1),
                                  round(font_size(handle, lead), 1)))
            else:  # characters outside the BMP shift pdfium's indices: no per-line geometry
                x0, y0, x1, y1 = (round(v, 1) for v in page_box)
                lines.append(Line(text, x0, y0, x1, y1, 0.0))
        if m is None:
            break
        pos = m.end()
    return lines
