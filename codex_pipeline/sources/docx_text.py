"""A DOCX file as a document, through python-docx: headings from paragraph styles, lists, tables.

The canonical text is the body in order, one line per paragraph and one per table row
(cells joined by `` | ``), so chunk offsets index into it. Blocks, as the PDF reader's:
``heading`` (key = the level of a ``Heading N`` style, ``Title`` = 1), ``item`` (a
paragraph with list numbering or a ``List …`` style), ``table`` (all rows of a table) and
``para``. A DOCX has no pages until a word processor lays it out: ``p=000``.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from codex_pipeline.core.documents import Block, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id

DATASET = "documents"
_HEADING = re.compile(r"^heading (\d)$", re.I)
_SPACE = re.compile(r"\s+")


def _style(p: Any) -> str:
    try:
        return str(p.style.name) if p.style is not None else ""
    except (KeyError, ValueError, AttributeError):  # a style id the styles part does not define
        return ""


def _paragraph_block(p: Any) -> tuple[str, str]:
    """(kind, key) of a paragraph from its style and numbering."""
    style = _style(p)
    m = _HEADING.match(style)
    if m:
        return "heading", m.group(1)
    if style.lower() == "title":
        return "heading", "1"
    ppr = p._p.pPr
    if style.lower().startswith("list") or (ppr is not None and ppr.numPr is not None):
        return "item", ""
    return "para", ""


def docx_document(path: Path, rel: str) -> SourceDocument | Reject:
    """One DOCX as a document, or the reject that says why it cannot be read."""
    import docx  # python-docx, on first use: only a day with a DOCX pays for it
    from docx.table import Table

    try:
        d = docx.Document(str(path))
        content = list(d.iter_inner_content())
        title = (d.core_properties.title or "").strip()
    except Exception as exc:  # noqa: BLE001 - zipfile, lxml and python-docx raise many types on hostile files
        return Reject(rel, f"corrupt DOCX: python-docx cannot read it ({type(exc).__name__}: {str(exc)[:200]})")
    parts: list[str] = []
    blocks: list[Block] = []
    pos = 0
    for item in content:
        if isinstance(item, Table):
            rows = [" | ".join(_SPACE.sub(" ", c.text).strip() for c in row.cells) for row in item.rows]
            rows = [r for r in rows if r.strip(" |")]
            if not rows:
                continue
            text, kind, key, meta = "\n".join(rows), "table", "", {}
        else:
            text = item.text.strip()
            if not text:
                continue
            kind, key = _paragraph_block(item)
            meta = {"title": _SPACE.sub(" ", text)} if kind == "heading" else {}
        blocks.append(Block(kind, pos, pos + len(text), key, meta))
        parts.append(text + "\n")
        pos += len(text) + 1
    if not parts:
        return Reject(rel, "empty document: the DOCX body holds no text")
    first_heading = next((b.meta["title"] for b in blocks if b.kind == "heading"), None)
    return SourceDocument(
        doc_id=make_doc_id(DATASET, rel), record_id=rel, text="".join(parts), source_file=rel,
        title=title or first_heading or PurePosixPath(rel).stem.replace("_", " ").replace("-", " "),
        payload={"format": "docx", "path": rel}, blocks=tuple(blocks),
    )
