"""The canonical text gold offsets count for a PDF or DOCX: the ``documents`` reader's, not the file's bytes.

Gold references name a source file and character offsets into its text
(``evaluation.gold.read_source``). A PDF or DOCX has no text of its own to count in; its
canonical text is what ``sources.documents`` builds from it (PDF: every page's lines, pages
separated by an empty line; DOCX: its paragraphs). Returning that text as the file's text makes
the evaluation's source map the identity for these documents (``build_source_map`` maps a
document whose text equals its file's whole), so hits and gold compare in one coordinate space.

OCR is off here: a scanned page's text depends on the OCR engine and its settings (part of
``source_version``), so it is no stable reference to cite; gold is written over text-layer pages.
A document with OCR pages still maps by the line search over the text-layer lines.

``evaluation.gold.read_source`` asks this first.
"""

from __future__ import annotations

import functools
from pathlib import Path

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.pdf_text import PdfLimits


def document_source(path: Path) -> str | None:
    """The reader's canonical text of a PDF or DOCX (``""`` when it is rejected); None for other files."""
    from codex_pipeline.sources.documents import sniff

    try:
        kind = sniff(path)
    except OSError:
        return None
    if kind not in ("pdf", "docx"):
        return None
    stat = path.stat()
    return _canonical(str(path.resolve()), kind, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _canonical(path: str, kind: str, _mtime: int, _size: int) -> str:
    from codex_pipeline.sources.documents import pdf_document

    p = Path(path)
    if kind == "pdf":
        rejects: list[Reject] = []
        doc = pdf_document(p, p.name, rejects, PdfLimits(ocr=False))
        return doc.text if doc is not None else ""
    from codex_pipeline.sources.docx_text import docx_document

    got = docx_document(p, p.name)
    return "" if isinstance(got, Reject) else got.text
