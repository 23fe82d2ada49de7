"""The ``docs`` landing format: a folder of Markdown files (``.md``/``.mdx``) per day.

One document per file; the record id is the path relative to the day folder, so
``guide/quickstart.md`` and ``api/quickstart.md`` stay distinct. The canonical text is
the file itself (strict UTF-8, newlines normalized), front matter included, so chunk
offsets point into exactly what the user landed. YAML (``---``) or TOML (``+++``)
front matter is parsed into the payload and kept out of every chunk's text.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.files import text_files

DATASET = "docs"
SUFFIXES = {".md", ".mdx", ".markdown"}

_FENCES = {"---": "yaml", "+++": "toml"}
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.M)


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


def doc_title(front: FrontMatter, text: str, path: Path) -> str:
    """Front matter ``title``, else the first ATX H1 of the body, else the file name."""
    title = front.data.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    m = _ATX_H1.search(text, front.end)
    if m:
        return m.group(1).strip()
    return path.stem.replace("-", " ").replace("_", " ")


def load_docs_day(day_dir: Path) -> LoadResult:
    """Read every Markdown file of a landing day (subfolders included); others are rejected."""
    result = LoadResult()
    for path, rel, text in text_files(day_dir, SUFFIXES, "docs takes .md and .mdx files", result.rejects):
        front = split_front_matter(text)
        if front.error:
            result.rejects.append(Reject(rel, front.error, excerpt=text[: min(front.end, 500)]))
            continue
        if not text[front.end :].strip():
            result.rejects.append(Reject(rel, "empty document: no Markdown body after the front matter"))
            continue
        payload: dict[str, Any] = {"path": rel, "body_start": front.end}
        if front.format:
            payload["front_matter"] = front.data
            payload["front_matter_format"] = front.format
        json.dumps(payload)  # the payload must survive the raw table's JSON column
        result.documents.append(
            SourceDocument(
                doc_id=make_doc_id(DATASET, rel),
                record_id=rel,
                text=text,
                source_file=rel,
                title=doc_title(front, text, path),
                payload=payload,
            )
        )
    return result
