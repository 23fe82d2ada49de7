"""``codex sources init``: a first mapping drafted from an export's header and a sample of its rows.

It infers what a person would check by hand: each column's type, the date format that reads
every sampled value, columns that are always empty (dropped), columns that could be the id
(every sampled value present and unique) and x/y coordinates. The draft is a ``record``
mapping that loads as it is; the comments say what to review and how to make it a permit.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.mapping.reader import read_rows

DATE_FORMATS = (
    "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%m/%d/%Y", "%d/%m/%Y",
    "%Y/%m/%d", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %I:%M:%S %p", "%Y/%m/%d %H:%M:%S+00", "%Y-%m-%dT%H:%M:%SZ",
    "%d.%m.%Y", "%b %d, %Y",
)
_INT = re.compile(r"^[+-]?\d+$")
_ID_WORDS = re.compile(r"(?:^|[^a-z])(id|number|num|no|key|code)(?:$|[^a-z])|(?:id|number|num)$", re.I)
_X, _Y = re.compile(r"^(x|lon|long|longitude|easting)$", re.I), re.compile(r"^(y|lat|latitude|northing)$", re.I)


@dataclass(frozen=True)
class ColumnGuess:
    column: str
    filled: int  # non-empty values in the sample
    type: str  # string | text | integer | number | date
    date_format: str | None
    unique: bool


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def _date_format(values: list[str]) -> str | None:
    for fmt in DATE_FORMATS:
        try:
            for v in values:
                dt.datetime.strptime(v, fmt)
        except ValueError:
            continue
        return fmt
    return None


def guess_column(column: str, values: list[str]) -> ColumnGuess:
    present = [v.strip() for v in values if v.strip()]
    if not present:
        return ColumnGuess(column, 0, "string", None, False)
    fmt = _date_format(present)
    if fmt is not None and not all(_INT.match(v) for v in present):
        type_ = "date"
    elif any(len(v) > 1 and v.lstrip("+-").startswith("0") for v in present):
        type_ = "string"  # leading zeros: a code (folio, ZIP), not a quantity
    elif all(_INT.match(v) for v in present):
        type_ = "integer"
    elif all(_is_number(v) for v in present):
        type_ = "number"
    else:
        type_ = "text" if sum(len(v) for v in present) / len(present) > 120 or any("\n" in v for v in present) else "string"
    unique = len(present) == len(values) and len(set(present)) == len(present)
    return ColumnGuess(column, len(present), type_, fmt if type_ == "date" else None, unique)


def snake(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return s if re.match(r"^[a-z]", s) else f"f_{s}" if s else "field"


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a YAML string


def draft_mapping(path: Path, sample: int = 1000, dataset: str | None = None) -> tuple[str, list[Reject]]:
    """The YAML text of a draft mapping for ``path`` (csv, jsonl or json by suffix), and read problems."""
    fmt = {".jsonl": "jsonl", ".json": "json"}.get(path.suffix.lower(), "csv")
    rows, _refs, header, rejects = read_rows(path, path.parent, fmt)
    rows = rows[:sample]
    cells = {c: ["" if r.get(c) is None else str(r.get(c)) for r in rows] for c in header}
    guesses = [guess_column(c, cells[c]) for c in header]
    ids = [g for g in guesses if g.unique]
    ids.sort(key=lambda g: (not _ID_WORDS.search(g.column), header.index(g.column)))
    id_col = ids[0].column if ids else (header[0] if header else "id")
    x = next((g for g in guesses if _X.match(g.column) and g.type in ("number", "integer")), None)
    y = next((g for g in guesses if _Y.match(g.column) and g.type in ("number", "integer")), None)
    name = dataset or snake(path.stem)[:60]
    lines = [
        f"# Draft mapping for {path.name} ({len(rows)} sampled rows), written by `codex sources init`.",
        "# Review every line, then try it: codex sources check FILE --mapping THIS.yaml",
        "# For permits: kind: permit, and rename fields to permit fields (docs/datasets/mappings.md).",
        "codex_mapping: 1",
        f"dataset: {name}",
        "kind: record",
        f"title: {_q(path.stem.replace('_', ' '))}",
        f"format: {fmt}",
        f"id: {_q(id_col)}" + (f"  # candidates (present and unique in the sample): {', '.join(g.column for g in ids[:5])}"
                               if ids else "  # no column is present and unique in the sample: choose one"),
        "fields:",
    ]
    used = {id_col} | ({x.column, y.column} if x and y else set())
    names: set[str] = {"record_id", "latitude", "longitude"}
    for g in guesses:
        if g.column in used or not g.filled:
            continue
        field = snake(g.column)
        while field in names:
            field += "_2"
        names.add(field)
        rule: dict[str, Any] = {"column": g.column}
        if g.type != "string":
            rule["type"] = g.type
        if g.date_format:
            rule["formats"] = [g.date_format]
        lines.append(f"  {field}: {json.dumps(rule, ensure_ascii=False)}  # {g.filled}/{len(rows)} filled")
    if x and y:
        big = any(abs(float(v)) > 180 for v in cells[x.column] if v.strip())
        crs = "EPSG:3857" if big else "EPSG:4326"
        lines.append(f"coordinates: {{x: {_q(x.column)}, y: {_q(y.column)}, crs: {_q(crs)}}}  # check the CRS")
    empty = [g.column for g in guesses if not g.filled and g.column not in used]
    lines.append(f"drop: {json.dumps(empty, ensure_ascii=False)}  # empty in every sampled row")
    lines.append(f"view: {{label: {_q(path.stem.replace('_', ' ').capitalize())}}}")
    return "\n".join(lines) + "\n", rejects
