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
    """What the sample says of one column; ``unique``: every sampled row has a value, all different."""

    column: str
    filled: int  # non-empty values in the sample
    type: str  # string | text | integer | number | date
    date_format: str | None
    unique: bool
    distinct: int = 0  # distinct non-empty values in the sample
    longest: int = 0  # characters of the longest sampled value


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
    """The type every non-empty sampled value reads as (``string`` when there is none), and counts.

    ``date`` when one of :data:`DATE_FORMATS` reads them all (unless all are integers);
    ``string`` when a value has a leading zero (a code); then ``integer``, ``number``;
    else ``text`` when values are long (over 120 characters on average) or multi-line,
    ``string`` otherwise.
    """
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
    return ColumnGuess(column, len(present), type_, fmt if type_ == "date" else None, unique, len(set(present)),
                       max(map(len, present)))


def snake(name: str) -> str:
    """``name`` as a field name: lowercase, non-alphanumeric runs as ``_``, ``f_`` before a non-letter start.

    ``field`` when nothing is left.
    """
    s = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return s if re.match(r"^[a-z]", s) else f"f_{s}" if s else "field"


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a YAML string


# permit field -> (column-name pattern, guessed types it accepts), tried in this order
PERMIT_GUESSES: tuple[tuple[str, str, frozenset[str]], ...] = tuple(
    (f, rx, frozenset(types.split())) for f, rx, types in (
        ("status", r"status|state", "string"),
        ("permit_type", r"type|category|kind", "string"),
        ("permit_class", r"class", "string"),
        ("work_class", r"work|code", "string"),
        ("applied_date", r"appl|creat|submit|filed|open|receiv|start", "date"),
        ("issued_date", r"issu", "date"),
        ("completed_date", r"complet|final|close|finish", "date"),
        ("expires_date", r"expir", "date"),
        ("applicant", r"applicant|owner", "string"),
        ("contractor", r"contractor|builder", "string"),
        ("estimated_cost", r"cost|valu|amount", "number integer"),
        ("floor_area_sqft", r"sq\.?\s*f|square", "number integer"),
        ("housing_units", r"units|housing|dwelling", "integer"),
        ("address", r"address|addr|location|site", "string"),
        ("community", r"community|neighbo|district|ward", "string"),
        ("summary", r"desc|scope|narrative|comment|work", "text string"),
    )
)


def _rule(g: ColumnGuess, with_type: bool) -> dict[str, Any]:
    rule: dict[str, Any] = {"column": g.column}
    if with_type and g.type != "string":
        rule["type"] = g.type
    if g.date_format:
        rule["formats"] = [g.date_format]
    return rule


def _record_fields(guesses: list[ColumnGuess], used: set[str], n: int) -> list[str]:
    lines, names = [], {"record_id", "latitude", "longitude"}
    for g in guesses:
        if g.column in used or not g.filled:
            continue
        field = snake(g.column)
        while field in names:
            field += "_2"
        names.add(field)
        lines.append(f"  {field}: {json.dumps(_rule(g, True), ensure_ascii=False)}  # {g.filled}/{n} filled")
    return lines


def _address_parts(free: list[ColumnGuess]) -> list[ColumnGuess]:
    """House number and street columns, when the export splits the address."""
    house = next((g for g in free if re.search(r"house|civic|street.?n(o|um)|number", g.column, re.I)
                  and not _ID_WORDS.search(g.column.replace("number", ""))), None)
    street = next((g for g in free if re.search(r"street|road|st.?name", g.column, re.I) and g is not house), None)
    return [house, street] if house and street else []


def _permit_fields(guesses: list[ColumnGuess], used: set[str], n: int, jurisdiction: str) -> tuple[list[str], list[str]]:
    """Field lines guessed from column names, and the long-text columns left over (to drop)."""
    lines = [f"  jurisdiction: {{value: {_q(jurisdiction)}}}  # the issuing jurisdiction: check it"]
    free = [g for g in guesses if g.column not in used and g.filled]
    for field, rx, types in PERMIT_GUESSES:
        fits = [g for g in sorted(free, key=lambda g: g.type != "text") if g.type in types]
        pick = next((g for alt in rx.split("|") for g in fits if re.search(alt, g.column, re.I)), None)
        if pick is None:
            if field in ("status", "permit_type"):
                lines.append(f"  {field}: {{value: \"unknown\"}}  # no column found: map one, or state it")
            elif field == "address" and (parts := _address_parts(free)):
                lines.append(f"  address: {json.dumps({'columns': [g.column for g in parts]})}  # joined with a space")
                free = [g for g in free if g not in parts]
            elif field in ("applied_date", "address"):
                lines.append(f"  {field}: {_q('CHOOSE the ' + field + ' column')}  # required: no column found")
            continue
        free.remove(pick)
        lines.append(f"  {field}: {json.dumps(_rule(pick, False), ensure_ascii=False)}  # {pick.filled}/{n} filled")
    details = [g for g in free if g.type != "text" and g.longest <= 200]  # a details line holds 500 characters
    if details:
        lines.append("details:  # more facts, one 'Label: value' line each in the summary chunk")
        lines += [f"  {_q(g.column)}: {_q(g.column)}" for g in details]
    return lines, [g.column for g in free if g not in details]


def draft_mapping(path: Path, sample: int = 1000, dataset: str | None = None,
                  kind: str = "record") -> tuple[str, list[Reject]]:
    """The YAML text of a draft mapping for ``path`` (csv, jsonl or json by suffix), and read problems."""
    fmt = {".jsonl": "jsonl", ".json": "json"}.get(path.suffix.lower(), "csv")
    rows, _refs, header, rejects = read_rows(path, path.parent, fmt)
    rows = rows[:sample]
    cells = {c: ["" if r.get(c) is None else str(r.get(c)) for r in rows] for c in header}
    guesses = [guess_column(c, cells[c]) for c in header]
    # id: present in every sampled row; unique first, then id-like names, then the most distinct values
    full = [g for g in guesses if g.filled == len(rows) and g.type not in ("date", "text")]
    full.sort(key=lambda g: (not g.unique, not _ID_WORDS.search(g.column), -g.distinct, header.index(g.column)))
    ids = [g for g in full if g.unique]
    id_col = full[0].column if full else (header[0] if header else "id")
    x = next((g for g in guesses if _X.match(g.column) and g.type in ("number", "integer")), None)
    y = next((g for g in guesses if _Y.match(g.column) and g.type in ("number", "integer")), None)
    name = dataset or snake(path.stem)[:60]
    label = path.stem.replace("_", " ")
    lines = [
        f"# Draft mapping for {path.name} ({len(rows)} sampled rows), written by `codex sources init`.",
        "# Review every line, then try it: codex sources check FILE --mapping THIS.yaml (docs/datasets/mappings.md)",
        "codex_mapping: 1",
        f"dataset: {name}",
        f"kind: {kind}",
        f"title: {_q(label)}",
        f"format: {fmt}",
        f"id: {_q(id_col)}" + (f"  # candidates (present and unique in the sample): {', '.join(g.column for g in ids[:5])}"
                               if ids else "  # no column is present and unique in the sample: check this one"),
        "fields:",
    ]
    used = {id_col} | ({x.column, y.column} if x and y else set())
    leftover: list[str] = []
    if kind == "permit":
        fields, leftover = _permit_fields(guesses, used, len(rows), label.title())
        lines += fields
    else:
        lines += _record_fields(guesses, used, len(rows))
    if x and y:
        big = any(abs(float(v)) > 180 for v in cells[x.column] if v.strip())
        crs = "EPSG:3857" if big else "EPSG:4326"
        lines.append(f"coordinates: {{x: {_q(x.column)}, y: {_q(y.column)}, crs: {_q(crs)}}}  # check the CRS")
    dropped = [g.column for g in guesses if not g.filled and g.column not in used] + leftover
    lines.append(f"drop: {json.dumps(dropped, ensure_ascii=False)}  # empty in every sampled row, or long text not mapped")
    if kind == "record":
        lines.append(f"view: {{label: {_q(label.capitalize())}}}")
    return "\n".join(lines) + "\n", rejects
