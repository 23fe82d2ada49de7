"""The ``documents`` landing format: files as users have them, one folder, mixed types.

Each file is routed by its content, not only its name: ``%PDF-`` at its start (or after
binary junk in its first kilobyte, which readers tolerate) is a PDF (``sources.pdf_text`` + ``sources.pdf_layout``), a zip holding ``word/document.xml``
is a DOCX (``sources.docx_text``), and anything else that decodes as UTF-8 is Markdown
(``.md``/``.mdx``/``.markdown``, or text that opens with a Markdown heading), HTML (a
``.htm(l)`` name or markup that opens with ``<!doctype html``/``<html``) or plain text.
Markdown goes through the ``docs`` reader unchanged (its blocks, its chunker); HTML and text
get ``para`` blocks, one per paragraph. The document's ``payload["format"]`` says which.

A PDF that cannot be read is one named reject; a page that cannot be read (a scan with no
text layer, a page over the character limit) is a reject naming its page, and the rest of
the document is kept.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from codex_pipeline.core.documents import Block, LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.files import HTML_START, landing_files, read_text_encoded
from codex_pipeline.sources.html_text import html_to_text
from codex_pipeline.sources.markdown import markdown_document
from codex_pipeline.sources.pdf_layout import layout
from codex_pipeline.sources.pdf_text import OCR_MISSING, PdfLimits, PdfProblem, open_pdf

DATASET = "documents"
_log = logging.getLogger(__name__)
MARKDOWN_SUFFIXES = {".md", ".mdx", ".markdown"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
_MD_START = re.compile(r"^(?:---\n|\+\+\+\n|#{1,6} )")
DEFAULT_PDF_LIMITS = PdfLimits()
_PARAGRAPH = re.compile(r"\S(?:.*\S)?(?:\n[ \t]*\S.*)*", re.M)  # lines up to a blank line


def sniff(path: Path) -> str:
    """``pdf`` | ``docx`` | ``zip`` | ``gzip`` | ``text`` from the file's first bytes."""
    with path.open("rb") as f:
        head = f.read(1024)
    at = head.find(b"%PDF-")
    if at == 0 or at > 0 and (b"\x00" in head[:at] or not _utf8(head[:at])):  # junk before the header: binary only
        return "pdf"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as z:
                return "docx" if "word/document.xml" in z.namelist() else "zip"
        except zipfile.BadZipFile:
            return "zip"
    return "text"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def pdf_document(path: Path, rel: str, rejects: list[Reject], limits: PdfLimits = DEFAULT_PDF_LIMITS) -> SourceDocument | None:
    """One PDF as a document with page, running, heading, item, table and para blocks; None if rejected."""
    try:
        pdf = open_pdf(path, limits)
    except PdfProblem as exc:
        rejects.append(Reject(rel, str(exc)))
        return None
    try:
        pages = list(pdf.pages())
    finally:
        pdf.close()
    problems = [p for p in pages if p.problem]
    if not any(p.lines for p in pages):
        if problems and all(p.problem and OCR_MISSING in p.problem for p in problems):
            rejects.append(Reject(rel, f"no page of the {len(pages)} has a text layer (a scanned PDF); {OCR_MISSING}"))
        else:
            rejects.extend(Reject(rel, p.problem or "", record_ref=f"page {p.number}") for p in problems)
            rejects.append(Reject(rel, f"empty document: none of its {len(pages)} pages holds text"))
        return None
    lay = layout(pages, pdf.outline)
    rejects.extend(Reject(rel, p.problem or "", record_ref=f"page {p.number}") for p in problems)
    ocr = {p.number: p.ocr_confidence for p in pages if p.ocr_confidence is not None}
    payload: dict[str, Any] = {
        "format": "pdf", "path": rel, "pages": len(pages), "headings": lay.headings,
        "running_lines": lay.running[:20], "unread_pages": [p.number for p in problems],
        "attachments": pdf.attachments, "javascript": pdf.javascript,
    }
    if ocr:
        from codex_pipeline.sources.pdf_ocr import engine_version

        payload["ocr"] = {"engine": engine_version(), "page_confidence": {str(k): v for k, v in ocr.items()},
                          "replaced_layer_pages": [p.number for p in pages if p.replaced_layer],
                          "column_pages": [p.number for p in pages if p.ocr_columns]}
    first_heading = next((b.meta["title"] for b in lay.blocks if b.kind == "heading"), None)
    return SourceDocument(
        doc_id=make_doc_id(DATASET, rel), record_id=rel, text=lay.text, source_file=rel,
        title=pdf.title or first_heading or _stem(rel), payload=payload, blocks=tuple(lay.blocks),
    )


def text_document(rel: str, text: str, fmt: str) -> SourceDocument | Reject:
    """Markdown through the ``docs`` reader; HTML and plain text as ``para`` blocks."""
    if fmt == "markdown":
        doc = markdown_document(rel, text)
        if isinstance(doc, Reject):
            return doc
        return dataclasses.replace(doc, doc_id=make_doc_id(DATASET, rel), payload={**(doc.payload or {}), "format": fmt})
    title = None
    xpaths: tuple[tuple[int, str], ...] = ()
    if fmt == "html":
        text, xpaths = html_to_text(text)
        if xpaths and xpaths[0][1].endswith("/title[1]"):
            title = text.split("\n", 1)[0]
    if not text.strip():
        return Reject(rel, "empty document: no text after extraction")
    blocks = tuple(Block("para", m.start(), m.end()) for m in _PARAGRAPH.finditer(text))
    return SourceDocument(
        doc_id=make_doc_id(DATASET, rel), record_id=rel, text=text, source_file=rel,
        title=title or _stem(rel), payload={"format": fmt, "path": rel}, xpaths=xpaths, blocks=blocks,
    )


def text_format(path: Path, text: str) -> str:
    """``markdown``, ``html`` or ``text``: by suffix, else by how the text opens.

    An opening ``<!doctype html>`` or ``<html>`` makes any file but a Markdown one ``html``;
    front matter or an ATX heading makes one with no suffix (or ``.txt``) ``markdown``.
    """
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in HTML_SUFFIXES or HTML_START.match(text[:4096]):
        return "html"
    if suffix in {"", ".txt", ".text"} and _MD_START.match(text):
        return "markdown"
    return "text"


def _stem(rel: str) -> str:
    return PurePosixPath(rel).stem.replace("-", " ").replace("_", " ")


def iter_documents_day(day_dir: Path, rejects: list[Reject], limits: PdfLimits = DEFAULT_PDF_LIMITS) -> Iterator[SourceDocument]:
    """Yield each landing file of the day as a document, routed by content; others are rejected."""
    for path in landing_files(day_dir):
        doc = read_file(path, day_dir, rejects, limits)
        if doc is not None:
            yield doc


def read_file(path: Path, day_dir: Path, rejects: list[Reject], limits: PdfLimits = DEFAULT_PDF_LIMITS
              ) -> SourceDocument | None:
    """One landing file as a document, or None with its rejects added; never raises for what the file holds.

    An exception a library raises on a file (not one of the problems the readers name) becomes a
    ``reader failed`` reject of that file, logged with its traceback: one file must not sink the
    day. A reader bug that failed every file still blocks the partition (no document passed).
    """
    rel = path.relative_to(day_dir).as_posix()
    try:
        return _read(path, day_dir, rel, rejects, limits)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        _log.warning("reader failed on %s", rel, exc_info=True)
        rejects.append(Reject(rel, f"reader failed: {type(exc).__name__}: {exc} (the other files are read; "
                                   "report this file: the reader should name what is wrong with it)"))
        return None


def _read(path: Path, day_dir: Path, rel: str, rejects: list[Reject], limits: PdfLimits) -> SourceDocument | None:
    try:
        kind = sniff(path) if path.is_file() else "text"  # read_text names what is wrong with a non-file
    except OSError as exc:
        rejects.append(Reject(rel, f"unreadable file: {exc.strerror or exc}"))
        return None
    if kind == "pdf":
        return pdf_document(path, rel, rejects, limits)
    if kind == "docx":
        from codex_pipeline.sources.docx_text import docx_document  # python-docx only when a DOCX lands

        got = docx_document(path, rel)
    elif kind == "zip":
        got = Reject(rel, "a zip archive that is not a DOCX (no word/document.xml): unzip it into the landing folder")
    elif kind == "gzip":
        got = Reject(rel, "a gzip-compressed file: decompress it (gunzip) into the landing folder")
    else:
        read = read_text_encoded(path, day_dir, html=True if path.suffix.lower() in HTML_SUFFIXES else None)
        got = read if isinstance(read, Reject) else text_document(rel, read[0], text_format(path, read[0]))
        if isinstance(got, SourceDocument) and not isinstance(read, Reject) and read[1] != "utf-8":
            got = dataclasses.replace(got, payload={**(got.payload or {}), "encoding": read[1]})
    if isinstance(got, Reject):
        rejects.append(got)
        return None
    return got


def load_documents_day(day_dir: Path) -> LoadResult:
    """The whole day at once (tests, tools); the raw step streams :func:`iter_documents_day`."""
    result = LoadResult()
    result.documents.extend(iter_documents_day(day_dir, result.rejects))
    return result
