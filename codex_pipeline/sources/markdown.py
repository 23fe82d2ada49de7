"""The ``docs`` landing format: a folder of Markdown files (``.md``/``.mdx``) per day.

One document per file; the record id is the path relative to the day folder, so
``guide/quickstart.md`` and ``api/quickstart.md`` stay distinct. The canonical text is
the file itself (strict UTF-8, newlines normalized), front matter included, so chunk
offsets point into exactly what the user landed. YAML (``---``) or TOML (``+++``)
front matter is parsed into the payload and kept out of every chunk's text.

The body is parsed once, here (CommonMark plus GFM tables: markdown-it.rs where it installs,
markdown-it-py elsewhere, with identical results; see ``sources.markdown_structure``), and its
structure persisted as ``Block``s (``raw.blocks``): headings, code blocks, tables and thematic
breaks with whole-line offsets, so the chunker never parses Markdown. ``parser=`` on the
readers below picks one parser by name.
"""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from codex_pipeline.core.documents import Block, LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.files import text_files
from codex_pipeline.sources.markdown_structure import parse_blocks

__all__ = [
    "FrontMatter",
    "doc_title",
    "iter_docs_day",
    "load_docs_day",
    "markdown_document",
    "parse_blocks",
    "split_front_matter",
]

DATASET = "docs"
SUFFIXES = {".md", ".mdx", ".markdown"}

_FENCES = {"---": "yaml", "+++": "toml"}


@dataclass(frozen=True)
class FrontMatter:
    """Where the front matter is (``text[0:end]``) and what it says."""

    end: int  # offset just past the closing delimiter line: the body starts here
    format: str | None  # "yaml" | "toml" | None when there is none
    data: dict[str, Any]
    error: str | None = None


def split_front_matter(text: str) -> FrontMatter:
    """Find leading YAML/TOML front matter; a missing closing delimiter means there is none.

    A document starting with ``---`` but never closing it is a thematic break, not
    front matter (CommonMark), so it is left as body text.
    """
    first_nl = text.find("\n")
    opener = (text if first_nl < 0 else text[:first_nl]).rstrip()
    fmt = _FENCES.get(opener)
    if fmt is None or first_nl < 0:
        return FrontMatter(0, None, {})
    closers = ("---", "...") if fmt == "yaml" else ("+++",)
    pos = first_nl + 1
    while pos <= len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        if text[pos:line_end].rstrip() in closers:
            end = line_end if nl < 0 else nl + 1
            raw = text[first_nl + 1 : pos]
            data, error = _parse(raw, fmt)
            return FrontMatter(end, fmt, data, error)
        if nl < 0:
            break
        pos = nl + 1
    return FrontMatter(0, None, {})


def _parse(raw: str, fmt: str) -> tuple[dict[str, Any], str | None]:
    try:
        if fmt == "toml":
            data: Any = tomllib.loads(raw)
        else:
            import yaml  # PyYAML (installed with Dagster); only needed when YAML front matter appears

            data = yaml.safe_load(raw) if raw.strip() else {}
    except Exception as exc:  # noqa: BLE001 - any parser error is a reject reason
        msg = str(exc).replace("\n", " ")
        return {}, f"invalid {fmt.upper()} front matter: {msg[:300]}"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return {}, f"{fmt.upper()} front matter must be a mapping, got {type(data).__name__}"
    return _jsonable(data), None


def _jsonable(v: Any) -> Any:
    """Front matter values as JSON types (dates become ISO strings) for the metadata column."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def doc_title(front: FrontMatter, blocks: Sequence[Block], rel: str) -> str:
    """Front matter ``title``, else the first top-level H1 (ATX or setext), else the file name."""
    title = front.data.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    h1 = next((b.meta["title"] for b in blocks if b.kind == "heading" and b.key == "1" and b.meta["title"]), None)
    if h1:
        return str(h1)
    return PurePosixPath(rel).stem.replace("-", " ").replace("_", " ")


def markdown_document(rel: str, text: str, parser: str | None = None) -> SourceDocument | Reject:
    """One landed Markdown file (``rel`` its path in the day folder) as a document with its blocks.

    The blocks are ``front_matter`` (when there is one, ``key`` its format), ``body`` (always:
    its presence says the structure was parsed) and those of :func:`parse_blocks` (``parser``:
    which Markdown parser, by name; ``None`` for the default).
    """
    front = split_front_matter(text)
    if front.error:
        return Reject(rel, front.error, excerpt=text[: min(front.end, 500)])
    if not text[front.end :].strip():
        return Reject(rel, "empty document: no Markdown body after the front matter")
    payload: dict[str, Any] = {"path": rel, "body_start": front.end}
    blocks = [Block("body", front.end, len(text))]
    if front.format:
        payload["front_matter"] = front.data
        payload["front_matter_format"] = front.format
        blocks.insert(0, Block("front_matter", 0, front.end, front.format))
    structure = parse_blocks(text, front.end, parser)
    blocks.extend(structure)
    json.dumps(payload)  # the payload must survive the raw table's JSON column
    return SourceDocument(
        doc_id=make_doc_id(DATASET, rel),
        record_id=rel,
        text=text,
        source_file=rel,
        title=doc_title(front, structure, rel),
        payload=payload,
        blocks=tuple(blocks),
    )


def iter_docs_day(day_dir: Path, rejects: list[Reject], parser: str | None = None) -> Iterator[SourceDocument]:
    """Yield every Markdown file of a landing day (subfolders included) as a document; others are rejected."""
    for _, rel, text in text_files(day_dir, SUFFIXES, "docs takes .md and .mdx files", rejects):
        doc = markdown_document(rel, text, parser)
        if isinstance(doc, Reject):
            rejects.append(doc)
        else:
            yield doc


def load_docs_day(day_dir: Path, parser: str | None = None) -> LoadResult:
    """The whole day at once (tests, tools); the raw step streams :func:`iter_docs_day`."""
    result = LoadResult()
    result.documents.extend(iter_docs_day(day_dir, result.rejects, parser))
    return result
