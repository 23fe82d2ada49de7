"""The ``narrative`` landing format: plain text and HTML pages, one document per file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from codex_pipeline.core.documents import LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.files import text_files
from codex_pipeline.sources.html_text import html_to_text

DATASET = "narrative"
TEXT_SUFFIXES = {".txt", ".text"}
HTML_SUFFIXES = {".html", ".htm"}


def iter_narrative_day(day_dir: Path, rejects: list[Reject]) -> Iterator[SourceDocument]:
    """Yield each ``.txt``/``.html`` file of one landing day as a document; other files are rejected."""
    for path, rel, raw in text_files(day_dir, TEXT_SUFFIXES | HTML_SUFFIXES, "narrative takes .txt and .html", rejects,
                                     html_suffixes=HTML_SUFFIXES):
        suffix = path.suffix.lower()
        title, text = None, raw
        xpaths: tuple[tuple[int, str], ...] = ()
        if suffix in HTML_SUFFIXES:
            text, xpaths = html_to_text(raw)
            if xpaths and xpaths[0][1].endswith("/title[1]"):
                title = text.split("\n", 1)[0]
        if not text.strip():
            rejects.append(Reject(rel, "empty document: no text after extraction"))
            continue
        yield SourceDocument(
            doc_id=make_doc_id(DATASET, rel),
            record_id=rel,
            text=text,
            source_file=rel,
            title=title or path.stem.replace("-", " "),
            xpaths=xpaths,
        )


def load_narrative_day(day_dir: Path) -> LoadResult:
    """The whole day at once (tests, tools); the raw step streams :func:`iter_narrative_day`."""
    result = LoadResult()
    result.documents.extend(iter_narrative_day(day_dir, result.rejects))
    return result
