"""``codex sources init``: a first mapping drafted from an export's header and a sample of its rows.

It infers what a person would check by hand, and says when it is unsure instead of guessing:
how the file is written (:mod:`.sniff`: encoding, delimiter; a file it cannot read is
:class:`~.sniff.Unreadable`), each column's type from its values (:mod:`.guess`: dates with
their formats, money with ``strip``, booleans, codes), columns that are always empty (dropped),
the id (every sampled value present and unique), the coordinates' system by where the points
fall (:mod:`.crs_guess`), and for a permit, status, address and dates by what the columns hold
(:mod:`.permit_fields`). The draft loads as it is; its comments and the ``warnings`` say what to review.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.sources.mapping.crs_guess import CrsGuess, Region, guess_crs, region_of
from codex_pipeline.sources.mapping.guess import DATE_FORMATS, NULL_TOKENS, ColumnGuess, guess_column
from codex_pipeline.sources.mapping.permit_fields import DATE_WORDS, in_block, pick_address, pick_dates, pick_status
from codex_pipeline.sources.mapping.plausible import mojibake_warnings
from codex_pipeline.sources.mapping.points import parse_point
from codex_pipeline.sources.mapping.reader import read_rows
from codex_pipeline.sources.mapping.sniff import Unreadable, read_sample

__all__ = ["DATE_FORMATS", "ColumnGuess", "Draft", "Unreadable", "draft_mapping", "guess_column", "snake"]
_INT = re.compile(r"^[+-]?\d+$")
_ID_WORDS = re.compile(r"(?:^|[^a-z])(id|number|num|no|key|code)(?:$|[^a-z])|(?:id|number|num)$", re.I)
_X = re.compile(r"^(x|lon|lng|long|longitude|easting|east|x_?coord(inate)?|point_?x|coord_?x|gis_?x|xcoord)$", re.I)
_Y = re.compile(r"^(y|lat|latitude|northing|north|y_?coord(inate)?|point_?y|coord_?y|gis_?y|ycoord)$", re.I)
_REGION_COL = re.compile(r"^(state|province|prov|st|state_?code|region|jurisdiction_?state|site_?state)$", re.I)


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
        ("status", r"status|state", "string"),  # only when no column's values read like permit states
        ("permit_type", r"type|category|kind", "string"),
        ("permit_class", r"class", "string"),
        ("work_class", r"work|code", "string"),
        ("applied_date", r"appl|creat|submit|filed|open|receiv|start", "date datetime"),
        ("issued_date", r"issu", "date datetime"),
        ("completed_date", r"complet|final|close|finish", "date datetime"),
        ("expires_date", r"expir", "date datetime"),
        ("applicant", r"applicant|owner", "string"),
        ("contractor", r"contractor|builder", "string"),
        ("estimated_cost", r"cost|valu|amount", "number integer"),
        ("floor_area_sqft", r"sq\.?\s*f|square", "number integer"),
        ("housing_units", r"units|housing|dwelling", "integer"),
        ("address", r"address|addr|location|site|strasse|straße|adress", "string"),
        ("community", r"community|neighbo|district|ward", "string"),
        ("summary", r"desc|scope|narrative|comment|work", "text string"),
    )
)


def _rule(g: ColumnGuess, with_type: bool) -> dict[str, Any]:
    rule: dict[str, Any] = {"column": g.column}
    if with_type and g.type != "string":
        rule["type"] = g.type
    if g.formats:
        rule["formats"] = list(g.formats)
    if g.strip:
        rule["strip"] = g.strip
    return rule


def _line(field: str, g: ColumnGuess, n: int, with_type: bool, why: str = "") -> str:
    note = "; ".join(x for x in (why, g.note) if x)
    return f"  {field}: {json.dumps(_rule(g, with_type), ensure_ascii=False)}  # {g.filled}/{n} filled" + (
        f"; {note}" if note else "")


def _record_fields(guesses: list[ColumnGuess], used: set[str], n: int) -> list[str]:
    lines, names = [], {"record_id", "latitude", "longitude"}
    for g in guesses:
        if g.column in used or not g.filled:
            continue
        field = snake(g.column)
        while field in names:
            field += "_2"
        names.add(field)
        lines.append(_line(field, g, n, True))
    return lines


def _address_parts(free: list[ColumnGuess]) -> list[ColumnGuess]:
    """House number and street columns, when the export splits the address."""
    free = [g for g in free if not in_block(g.column)]
    house = next((g for g in free if re.search(r"house|civic|street.?n(o|um)|number", g.column, re.I)
                  and not _ID_WORDS.search(g.column.replace("number", ""))), None)
    street = next((g for g in free if re.search(r"street|road|st.?name", g.column, re.I) and g is not house), None)
    return [house, street] if house and street else []


def _permit_fields(guesses: list[ColumnGuess], cells: dict[str, list[str]], used: set[str], n: int,
                   jurisdiction: str, unsure: list[str]) -> tuple[list[str], list[str]]:
    """Field lines (status, address and dates by what the columns hold; the rest by name), and the
    long-text columns left over (to drop)."""
    lines = [f"  jurisdiction: {{value: {_q(jurisdiction)}}}  # the issuing jurisdiction: check it"]
    free = [g for g in guesses if g.column not in used and g.filled]
    chosen: dict[str, tuple[ColumnGuess, str]] = {}
    if (st := pick_status(free, cells)) is not None:
        chosen["status"] = (st, "its values read like permit states")
    if (ad := pick_address([g for g in free if g is not st], cells)) is not None:
        chosen["address"] = (ad, "its values look like street addresses")
    for name, g in pick_dates([g for g in free if g not in (st, ad)]).items():
        named = name != "applied_date" or re.search(DATE_WORDS["applied_date"], g.column, re.I)
        chosen[name] = (g, "a date column named so" if named else "no column named as an application date: "
                        "the most filled date column, check it")
    taken = {id(g) for g, _ in chosen.values()}
    free = [g for g in free if id(g) not in taken]
    for field, rx, types in PERMIT_GUESSES:
        if field in chosen:
            continue
        if field.endswith("_date") or field in ("status", "address"):
            ok = [g for g in free if not in_block(g.column)]
        elif field == "contractor":  # a block's name column is the contractor's name
            ok = [g for g in free if not in_block(g.column) or re.search(r"name|company|business", g.column, re.I)]
        else:
            ok = [g for g in free if not in_block(g.column)]
        fits = [g for g in sorted(ok, key=lambda g: g.type != "text") if g.type in types]
        pick = next((g for alt in rx.split("|") for g in fits if re.search(alt, g.column, re.I)), None)
        if pick is not None:
            free.remove(pick)
            chosen[field] = (pick, "")
    for field, _rx, _types in PERMIT_GUESSES:
        if field in chosen:
            g, why = chosen[field]
            lines.append(_line(field, g, n, False, why))
        elif field in ("status", "permit_type"):
            lines.append(f"  {field}: {{value: \"unknown\"}}  # no column found: map one, or state it")
        elif field == "address" and (parts := _address_parts(free)):
            lines.append(f"  address: {json.dumps({'columns': [g.column for g in parts]})}  # joined with a space")
            free = [g for g in free if g not in parts]
        elif field in ("applied_date", "address"):
            lines.append(f"  {field}: {_q('CHOOSE the ' + field + ' column')}  # required: no column found")
            unsure.append(f"no {field} column found (required for kind permit): name it under fields.{field}")
    details = [g for g in free if g.type != "text" and g.longest <= 200]  # a details line holds 500 characters
    if details:
        lines.append("details:  # more facts, one 'Label: value' line each in the summary chunk")
        lines += [f"  {_q(g.column)}: {json.dumps(_rule(g, False), ensure_ascii=False)}" if g.formats or g.strip
                  else f"  {_q(g.column)}: {_q(g.column)}" for g in details]
    return lines, [g.column for g in free if g not in details]


@dataclass
class Draft:
    """A drafted mapping: its YAML text, what the sniffing is unsure of (warnings), and read problems."""

    text: str
    warnings: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)


def _numbers(values: list[str]) -> list[float] | None:
    out = []
    for v in values:
        if v.strip():
            try:
                out.append(float(v))
            except ValueError:
                return None
    return out


def _coordinates(guesses: list[ColumnGuess], cells: dict[str, list[str]]) -> tuple[ColumnGuess, ColumnGuess] | None:
    """The x/y (or longitude/latitude) columns, by name; else by range (one column within ±90, one within ±180)."""
    num = [g for g in guesses if g.type in ("number", "integer") and g.filled]
    x = next((g for g in num if _X.match(g.column.strip())), None)
    y = next((g for g in num if _Y.match(g.column.strip())), None)
    if x and y:
        return x, y
    lat = next((g for g in num if re.search(r"lat", g.column, re.I)), None)
    lon = next((g for g in num if re.search(r"lon|lng", g.column, re.I)), None)
    return (lon, lat) if lat and lon else None


def _region_column(guesses: list[ColumnGuess], cells: dict[str, list[str]]) -> tuple[str, Region] | None:
    """A state/province column whose one dominant value (80% of rows) names a known area."""
    for g in guesses:
        if not _REGION_COL.match(g.column.strip()) or in_block(g.column):
            continue
        vals = [v.strip() for v in cells[g.column] if v.strip()]
        if not vals:
            continue
        top = max(set(vals), key=vals.count)
        if vals.count(top) >= 0.8 * len(vals) and (box := region_of(top)) is not None:
            return f"column {g.column!r} = {top}", box
    return None


def draft_mapping(path: Path, sample: int = 1000, dataset: str | None = None, kind: str = "record",
                  delimiter: str | None = None, encoding: str | None = None, region: Region | None = None) -> Draft:
    """The draft mapping for ``path`` (csv, jsonl or json by suffix); :class:`Unreadable` when it cannot be read.

    CSV: encoding and delimiter sniffed from the head of the file unless given (:mod:`.sniff`).
    """
    fmt = {".jsonl": "jsonl", ".json": "json"}.get(path.suffix.lower(), "csv")
    warnings: list[str] = []
    problems: list[str] = []
    if fmt == "csv":
        got = read_sample(path, sample, delimiter, encoding)
        rows, header = got.rows, got.header
        warnings += got.notes
        enc, delim = got.encoding, got.delimiter
    else:
        raw, _refs, header, rejects = read_rows(path, path.parent, fmt)
        problems = [f"{r.record_ref or ''}: {r.reason}".lstrip(": ") for r in rejects]
        rows = raw[:sample]
        enc, delim = "utf-8", ","
        if not rows:
            raise Unreadable(f"{path}: no records read ({problems[0] if problems else 'empty'}); "
                             f"fix: give a {fmt} export with records")
    cells = {c: ["" if r.get(c) is None else str(r.get(c)) for r in rows] for c in header}
    guesses = [guess_column(c, cells[c]) for c in header]
    if not any(g.filled for g in guesses):
        raise Unreadable(f"{path}: every sampled cell is empty; fix: export the rows with their values")
    # id: present in every sampled row; unique first, then id-like names, then the most distinct values
    full = [g for g in guesses if g.filled == len(rows) and g.type not in ("date", "datetime", "text", "boolean")]
    full.sort(key=lambda g: (not g.unique, not _ID_WORDS.search(g.column), in_block(g.column), -g.distinct,
                             header.index(g.column)))
    ids = [g for g in full if g.unique]
    id_col = full[0].column if full else next(g.column for g in guesses if g.filled)
    if not ids:
        warnings.append(f"no column is present and unique in every sampled row: id {id_col!r} will reject repeats")
    xy = _coordinates(guesses, cells)
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
    ]
    if delim != ",":
        lines.append(f"delimiter: {_q(delim)}")
    if enc.replace("_", "-").lower() not in ("utf-8", "utf8"):
        lines.append(f"encoding: {_q(enc)}")
    lines += [
        f"id: {_q(id_col)}" + (f"  # candidates (present and unique in the sample): {', '.join(g.column for g in ids[:5])}"
                               if ids else "  # no column is present and unique in the sample: check this one"),
        "fields:",
    ]
    point = _point_column(guesses, cells) if xy is None else None
    used = {id_col} | ({xy[0].column, xy[1].column} if xy else set()) | ({point[0]} if point else set())
    leftover: list[str] = []
    if kind == "permit":
        fields, leftover = _permit_fields(guesses, cells, used, len(rows), label.title(), warnings)
        lines += fields
    else:
        fields = _record_fields(guesses, used, len(rows))
        if not fields:
            lines[-1] = "fields: {}  # no column but the id has a value in the sample"
        lines += fields
    if xy:
        coords = _coordinates_lines(xy, cells, guesses, region, warnings)
        lines += coords
        if coords[0].startswith("#"):
            leftover += [xy[0].column, xy[1].column]
    if point:
        coords = _point_lines(*point, cells, guesses, region, warnings)
        lines += coords
        if coords[0].startswith("#"):
            leftover.append(point[0])
    nulls = sorted({v.strip() for vals in cells.values() for v in vals if v.strip().lower() in NULL_TOKENS})
    if nulls:
        lines.append(f"empty_values: {json.dumps([''] + nulls, ensure_ascii=False)}  # cells that mean no value")
    dropped = [g.column for g in guesses if not g.filled and g.column not in used] + leftover
    lines.append(f"drop: {json.dumps(dropped, ensure_ascii=False)}  # empty in every sampled row, or long text not mapped")
    if kind == "record":
        lines.append(f"view: {{label: {_q(label.capitalize())}}}")
    warnings += [f"column {g.column!r}: {g.note}" for g in guesses if g.note]
    warnings += mojibake_warnings([(f"row {i + 2}", r) for i, r in enumerate(rows)])
    return Draft("\n".join(lines) + "\n", warnings, problems)


def _point_column(guesses: list[ColumnGuess], cells: dict[str, list[str]]) -> tuple[str, list[tuple[float, float]]] | None:
    """The first column whose filled cells (nine in ten at least) read as points
    (:func:`~codex_pipeline.sources.mapping.points.parse_point`), with the points read."""
    for g in guesses:
        if not g.filled:
            continue
        pts = []
        for v in (v.strip() for v in cells[g.column] if v.strip()):
            with contextlib.suppress(ValueError):
                if (p := parse_point(v)) is not None:
                    pts.append(p)
        if len(pts) >= 0.9 * g.filled:
            return g.column, pts
    return None


def _point_lines(column: str, pts: list[tuple[float, float]], cells: dict[str, list[str]], guesses: list[ColumnGuess],
                 region: Region | None, warnings: list[str]) -> list[str]:
    """``coordinates: {point: …}``: no ``crs`` when every point reads as longitude / latitude, else the one
    system that places them (:func:`~codex_pipeline.sources.mapping.crs_guess.guess_crs`), else a comment."""
    if all(-180 <= x <= 180 and -90 <= y <= 90 for x, y in pts):
        return [f"coordinates: {{point: {_q(column)}}}  # points as longitude / latitude (WGS 84)"]
    g = _placement(pts, cells, guesses, region)
    if g.crs is not None:
        return [f"coordinates: {{point: {_q(column)}, crs: {_q(g.crs)}}}  # {g.why}"]
    warnings.append(f"coordinates in {column!r}: {g.why}")
    return [f"# coordinates: {{point: {_q(column)}, crs: \"EPSG:?\"}}  # {g.why}; the column is dropped until then"]


def _placement(pts: list[tuple[float, float]], cells: dict[str, list[str]], guesses: list[ColumnGuess],
               region: Region | None) -> CrsGuess:
    """The system that places ``pts`` inside ``region``, else inside the area of a state/province column."""
    source = "the --region box"
    if region is None and (found := _region_column(guesses, cells)) is not None:
        source, region = f"the area of {found[0]}", found[1]
    return guess_crs(pts, region, source)


def _coordinates_lines(xy: tuple[ColumnGuess, ColumnGuess], cells: dict[str, list[str]], guesses: list[ColumnGuess],
                       region: Region | None, warnings: list[str]) -> list[str]:
    x, y = xy
    pts = [(float(a), float(b)) for a, b in zip(cells[x.column], cells[y.column]) if a.strip() and b.strip()
           and _numbers([a, b]) is not None]
    if pts and all(abs(a) <= 90 for a, _ in pts) and any(90 < abs(b) <= 180 for _, b in pts):
        warnings.append(f"columns {x.column!r}/{y.column!r}: the first holds latitudes and the second longitudes "
                        "(the names say otherwise): mapped as x = longitude")
        x, y = y, x
        pts = [(b, a) for a, b in pts]
    g = _placement(pts, cells, guesses, region)
    if g.crs is not None:
        return [f"coordinates: {{x: {_q(x.column)}, y: {_q(y.column)}, crs: {_q(g.crs)}}}  # {g.why}"]
    warnings.append(f"coordinates {x.column!r}/{y.column!r}: {g.why}")
    return [f"# coordinates: {{x: {_q(x.column)}, y: {_q(y.column)}, crs: \"EPSG:?\"}}  # {g.why}; "
            "x/y are dropped until then"]
