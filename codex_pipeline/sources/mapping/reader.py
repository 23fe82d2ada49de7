"""An export's rows through a mapping: header check, then one typed record per row.

Cells that do not convert (a date no format reads, a number with words in it) stay
strings, so the kind's schema rejects the row naming the field, its column and the rule
with the value (``field 'applied_date' (column 'Created Date') fails 'required date'
(got '13/45/2025')``). Rules only the mapping knows (vocabulary, coordinates) reject
the row here, naming the row, the column and the rule.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.csv_rows import read_csv_file
from codex_pipeline.sources.files import read_text
from codex_pipeline.sources.mapping.blocks import block_value
from codex_pipeline.sources.mapping.epochs import parse_when
from codex_pipeline.sources.mapping.features import NOTES, RowHooks, RowProblem
from codex_pipeline.sources.mapping.points import parse_point
from codex_pipeline.sources.mapping.schema import Coordinates, FieldRule, ScopeRule, SourceMapping
from codex_pipeline.sources.records import TYPE_CHECKS, RawRecord, read_json_lines, short_repr
from codex_pipeline.sources.structured import clean_text, coerce_cell, one_line_text
from codex_pipeline.sources.tally import count_filtered, count_rows

Rows = tuple[list[dict[str, Any]], list[str], list[str], list[Reject]]  # rows, refs, header, rejects
_ID_CLEAN = re.compile(r"[^A-Za-z0-9._-]+")
_COMPACT_ITEM_RE = re.compile(r"^[A-Za-z][A-Za-z0-9/&+-]{0,23}$")
SUFFIXES = {"csv": ".csv", "jsonl": ".jsonl", "json": ".json"}


def read_rows(path: Path, day_dir: Path, fmt: str, delimiter: str = ",", encoding: str = "utf-8") -> Rows:
    """The export's rows (dicts keyed by column), their refs, the header, and rejects (rows and whole files).

    Each file's row count goes to the raw step's tally (:func:`~codex_pipeline.sources.tally.count_rows`).
    """
    rel = path.relative_to(day_dir).as_posix()
    if fmt == "csv":
        got = read_csv_file(path, day_dir, delimiter, encoding)
        count_rows(rel, got.rows_read)
        return got.rows, got.refs, got.header, got.rejects
    if fmt == "jsonl":
        recs, rejects = read_json_lines(path, day_dir)
        return [r.data for r in recs], [r.ref for r in recs], _keys(r.data for r in recs), rejects
    text = read_text(path, day_dir)
    if isinstance(text, Reject):
        return [], [], [], [text]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [], [], [Reject(rel, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]
    if not isinstance(data, list):
        return [], [], [], [Reject(rel, f"expected a JSON array of objects, got {type(data).__name__}")]
    rows, refs, rejects = [], [], []
    for i, obj in enumerate(data):
        if isinstance(obj, dict):
            rows.append(obj)
            refs.append(f"item {i}")
        else:
            rejects.append(Reject(rel, f"expected a JSON object, got {type(obj).__name__}", f"item {i}", short_repr(obj, 300)))
    count_rows(rel, len(data))
    return rows, refs, _keys(rows), rejects


def _keys(rows: Any) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    return list(seen)


def lookup(row: Mapping[str, Any], column: str) -> Any:
    """``a.b`` reads ``row["a"]["b"]`` (JSON exports with nested objects, e.g. ``location.latitude``)."""
    v: Any = row
    for part in column.split("."):
        if not isinstance(v, Mapping):
            return None
        v = v.get(part)
    return v


def header_problem(mapping: SourceMapping, header: Sequence[str]) -> str | None:
    """Why the header does not fit the mapping (missing / unexpected columns named), or None.

    JSON records leave out null keys, so for ``jsonl`` / ``json`` only unexpected keys count,
    and a nested path (``location.latitude``) accounts for its top-level key.
    """
    wanted = mapping.columns()
    have = set(header)
    padded = {h.strip(): h for h in header if h != h.strip()}
    json_like = mapping.format != "csv"
    tops = set(wanted) | ({c.split(".", 1)[0] for c in wanted} if json_like else set())
    missing = [] if json_like else [c for c in wanted if c not in have]
    unexpected = [c for c in header if c not in tops] if mapping.unexpected_columns == "reject" else []
    if not missing and not unexpected:
        return None
    why = []
    if missing:
        why.append(f"missing column(s) {', '.join(map(repr, missing))}")
    if unexpected:
        why.append(f"unexpected column(s) {', '.join(map(repr, unexpected))}")
    hint = " (map them or list them under drop: in the mapping)"
    if any(c in padded for c in missing):
        hint = (" (the header pads names with spaces: " + ", ".join(repr(padded[c]) for c in missing if c in padded)
                + "; write the names so in the mapping, spaces included)")
    if mapping.format == "csv" and len(header) == 1:
        other = next((d for d in (",", ";", "\t", "|") if d != mapping.delimiter and d in header[0]), None)
        hint = f" (the header looks {other!r}-delimited: set delimiter: {json.dumps(other)} in the mapping)" if other else hint
    return f"not a {mapping.title} export: " + "; ".join(why) + hint


@dataclass(frozen=True)
class Target:
    """What a kind expects of one field: its type, whether it keeps line breaks, and its schema rule."""

    type: str
    multiline: bool = False
    rule: tuple[str, Callable[[Any], bool]] | None = None  # the schema Field's rule: (name, predicate)

    def problem(self, v: Any) -> str | None:
        """The check a converted value fails (the type, else the rule), or None: what an optional field notes."""
        if not TYPE_CHECKS[self.type](v):
            return self.type
        try:
            ok = self.rule is None or self.rule[1](v)
        except Exception:  # noqa: BLE001 - a crashing rule is a failed rule, as in validation
            ok = False
        return None if ok else self.rule[0] if self.rule else None


@lru_cache(maxsize=16)
def _transformer(crs: str) -> Any:
    from pyproj import Transformer  # on first use: PROJ's database is not needed to import the definitions

    return Transformer.from_crs(crs, "EPSG:4326", always_xy=True)


_CRS_RE = re.compile(r"^(?:(?:EPSG|ESRI|IGNF|OGC):[A-Za-z0-9_.]+|WGS84)$", re.I)


def check_crs(crs: str, with_proj: bool = False) -> str | None:
    """None when ``crs`` is a CRS code (``EPSG:3857``), else why not.

    Loading a mapping checks the code's form only: importing pyproj would add a tenth of a
    second to every Dagster process. ``with_proj`` asks PROJ itself (``codex sources check``
    does; a code PROJ does not know rejects every row of a landing day, naming it).
    """
    if not _CRS_RE.match(crs):
        return f"{crs!r} is not a CRS code"
    if not with_proj:
        return None
    from pyproj.exceptions import CRSError

    try:
        _transformer(crs)
    except CRSError as exc:
        return str(exc).splitlines()[0]
    return None


_PLAIN_KEYS = frozenset({"column", "type", "formats", "strip", "decimal", "timezone"})
"""The keys of a field rule :meth:`RowMapper._field_reader` reads on its fast path (they only shape :func:`convert`)."""


class RowMapper:
    """One export row -> one record of the kind's fields (``targets``: field -> :class:`Target`)."""

    def __init__(self, mapping: SourceMapping, targets: Mapping[str, Target], id_field: str) -> None:
        self.m = mapping
        self.targets = targets
        self.id_field = id_field
        self.empty = {v.strip() for v in mapping.empty_values}
        # per-mapping constants, made once: each vocabulary case-folded, each field's reader
        self._folded = {id(r): {k.casefold(): out for k, out in r.vocabulary.items()}
                        for r in (*mapping.fields.values(), *mapping.details.values()) if r.vocabulary is not None}
        self._plan = [(name, rule, targets[name], self._field_reader(name, rule, targets[name]))
                      for name, rule in mapping.fields.items()]

    def _field_reader(self, name: str, rule: FieldRule, target: Target) -> Callable[[Mapping[str, Any]], Any]:
        """``row -> value`` for one field: a fast path for a plain cell (a rule setting no key but
        :data:`_PLAIN_KEYS`, a string cell), :meth:`value` for anything else. Both give the same value.
        A key added to :class:`FieldRule` later takes the :meth:`value` path until it is listed there."""
        col = rule.column
        if not col or not rule.model_fields_set <= _PLAIN_KEYS:
            return lambda row: self.value(row, name, rule, target)
        empty = self.empty
        if target.type in ("string", "text") and not target.multiline:
            def text(s: str) -> Any:
                return " ".join(s.split()) or None  # one_line_text
        elif target.type in ("string", "text"):
            def text(s: str) -> Any:
                return clean_text(s) or None
        elif target.type in ("integer", "number", "boolean") and not rule.strip and rule.decimal == ".":
            kind = target.type

            def text(s: str) -> Any:
                return coerce_cell(s, kind)  # what convert does with a plain cell of these types
        else:
            def text(s: str) -> Any:
                return convert(s, target, rule.formats, rule.strip, rule.decimal, rule.timezone)

        def read(row: Mapping[str, Any]) -> Any:
            v = row.get(col)
            if v.__class__ is not str:
                return self.value(row, name, rule, target)
            return None if v.strip() in empty else text(v)

        return read

    def cell(self, row: Mapping[str, Any], column: str) -> Any:
        """The cell (``a.b``: nested, :func:`lookup`); None for one of ``empty_values`` or an empty list / object."""
        v = row.get(column) if column in row else lookup(row, column)
        if isinstance(v, str):
            return None if v.strip() in self.empty else v
        if isinstance(v, (dict, list)) and not v:
            return None
        return v

    def _raw(self, row: Mapping[str, Any], rule: FieldRule) -> Any:
        if rule.value is not None:
            return rule.value
        if rule.column:
            return self.cell(row, rule.column)
        parts = [one_line_text(str(p)) for p in (self.cell(row, c) for c in rule.columns) if p is not None]
        return rule.join.join(p for p in parts if p) or None

    def value(self, row: Mapping[str, Any], name: str, rule: FieldRule, target: Target) -> Any:
        """One field's value from ``row``, converted to ``target``'s type; None when the source is empty.

        A ``separator`` (or a JSON list) gives parts, each through the vocabulary: a
        ``list[string]`` target keeps them, any other joins them with ``"; "``. A value
        outside a vocabulary with ``unknown: reject`` raises :class:`RowProblem`.
        """
        if rule.block is not None:
            return block_value(rule.block, lambda c: self.cell(row, c), target.type)
        raw = self._raw(row, rule)
        if raw is None:
            return None
        if rule.separator is not None or isinstance(raw, list):
            parts = raw if isinstance(raw, list) else str(raw).split(rule.separator)
            items = [one_line_text(str(p)) for p in parts if str(p).strip()]
            items = [self._vocab(row, name, rule, p) for p in items]
            if target.type == "list[string]":
                return items or None
            raw = "; ".join(items) if items else None
            if raw is None:
                return None
        elif rule.vocabulary is not None:
            raw = self._vocab(row, name, rule, one_line_text(str(raw)))
        return convert(raw, target, rule.formats, rule.strip, rule.decimal, rule.timezone)

    def _vocab(self, row: Mapping[str, Any], name: str, rule: FieldRule, v: str) -> str:
        if rule.vocabulary is None:
            return v
        folded = self._folded.get(id(rule)) or {k.casefold(): out for k, out in rule.vocabulary.items()}
        if v.casefold() in folded:
            return folded[v.casefold()]
        if rule.unknown == "reject":
            col = rule.column or "+".join(rule.columns)
            raise RowProblem(f"column {col!r}: {v!r} is not in fields.{name}.vocabulary "
                             "(add it there, or set unknown: keep)")
        return v

    def coordinates(self, row: Mapping[str, Any], c: Coordinates) -> tuple[Any, Any]:
        """(latitude, longitude) in WGS 84, (None, None) when both cells are empty.

        :class:`RowProblem` when the cells are not two numbers or PROJ does not know the CRS.
        """
        if c.point is not None:
            cell = self.cell(row, c.point)
            try:
                xy = None if cell is None else parse_point(cell)
            except ValueError as exc:
                raise RowProblem(f"column {c.point!r}: {short_repr(cell)} is {exc} (coordinates.point)") from None
            if xy is None:
                return None, None
            fx, fy = xy
        else:
            x, y = self.cell(row, str(c.x)), self.cell(row, str(c.y))
            if x is None and y is None:
                return None, None
            try:
                fx, fy = float(x), float(y)
            except (TypeError, ValueError):
                raise RowProblem(f"columns {c.x!r}/{c.y!r}: ({short_repr(x)}, {short_repr(y)}) are not two numbers "
                                 "(coordinates)") from None
        if c.crs.upper() in ("EPSG:4326", "WGS84"):
            return fy, fx
        if why := check_crs(c.crs, with_proj=True):
            raise RowProblem(f"coordinates.crs: {why} (fix the mapping: an EPSG code such as EPSG:3857)")
        lon, lat = _transformer(c.crs).transform(fx, fy)
        return round(lat, 7), round(lon, 7)

    def record(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The row as a record: id (cleaned when ``id_clean``), mapped fields, coordinates; empty ones left out.

        A missing required field is left for the schema to name; :class:`RowProblem` when a
        vocabulary or the coordinates refuse the row.
        """
        rid = convert(self.cell(row, self.m.id), Target("string"), ())
        if rid is not None and self.m.id_clean:
            rid = _ID_CLEAN.sub("-", rid).strip("-") or None
        rec: dict[str, Any] = {self.id_field: rid}
        notes: list[tuple[str, str]] = []
        for name, rule, target, read in self._plan:
            try:
                v = read(row)
            except RowProblem as exc:
                if not rule.optional:
                    raise
                notes.append((f"optional field {name!r}: {exc}; nulled, the row kept", short_repr(self._raw(row, rule))))
                continue
            if v is not None and rule.optional and (check := target.problem(v)) is not None:
                col = "+".join(rule.source_columns())
                notes.append((f"optional field {name!r} (column {col!r}) fails '{check}' (got {short_repr(v)}); "
                              "nulled, the row kept", short_repr(v)))
                continue
            if v is not None:
                rec[name] = v
        if notes:
            rec[NOTES] = notes
        if self.m.coordinates is not None:
            lat, lon = self.coordinates(row, self.m.coordinates)
            if lat is not None:
                rec["latitude"], rec["longitude"] = lat, lon
        if rec[self.id_field] is None:
            del rec[self.id_field]
        return rec


def convert(v: Any, target: Target, formats: Sequence[str], strip: str = "", decimal: str = ".",
            timezone: str | None = None) -> Any:
    """A cell as the target's type; a cell that does not convert stays as it is (the schema names it).

    Dates: each strptime format in turn; the format ``iso`` reads any ISO 8601 date or
    date-time (``2023-05-01T14:32:00Z``) and keeps its date. No formats: ISO dates, with a
    midnight time at most. ``strip``: characters removed before a number converts (``$,``);
    ``decimal``: the decimal mark (``,`` in many European exports). Date-times are written
    ISO 8601; one without an offset gets ``timezone``'s (else it stays naive, and a rule that
    wants an offset rejects it).
    """
    if v is None:
        return None
    if isinstance(v, bool) or (isinstance(v, (int, float)) and target.type in ("integer", "number")):
        return v
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, sort_keys=True)
    s = str(v)
    if target.type in ("integer", "number"):
        s = s.translate({ord(c): None for c in strip}).replace(decimal, ".") if strip or decimal != "." else s
    if target.type == "datetime":
        return _datetime(s.strip(), formats, timezone)
    if target.type == "date" and formats:
        return _date(s.strip(), tuple(formats), timezone)
    if target.type in ("string", "text", "list[string]"):
        return (clean_text(s) if target.multiline else one_line_text(s)) or None
    return coerce_cell(s, target.type)


@lru_cache(maxsize=1 << 16)
def _date(s: str, formats: tuple[str, ...], timezone: str | None) -> str:
    """``s`` as an ISO date by the first format that reads it, else ``s``: cached, as an export's dates repeat."""
    for fmt in formats:
        try:
            day = parse_when(s, fmt, timezone)
        except ValueError:
            continue
        return day.date().isoformat()
    return s


def _datetime(s: str, formats: Sequence[str], timezone: str | None) -> str:
    return _datetime_cached(s, tuple(formats), timezone)


@lru_cache(maxsize=1 << 16)
def _datetime_cached(s: str, formats: tuple[str, ...], timezone: str | None) -> str:
    for fmt in formats or ("iso",):
        try:
            when = parse_when(s, fmt, timezone)
        except ValueError:
            continue
        if when.tzinfo is None and timezone:
            from zoneinfo import ZoneInfo

            when = when.replace(tzinfo=ZoneInfo(timezone))
        return when.isoformat()
    return s


def scope_items(cell: str | None, rule: ScopeRule) -> tuple[str | None, list[dict[str, str]]]:
    """(lead text, scope sections) of one cell, per the rule's mode (see :class:`ScopeRule`)."""
    if cell is None or not cell.strip():
        return cell, []
    codes = _upper_codes(rule)
    if rule.mode == "bullets":
        lead, *rest = cell.split(rule.separator)
        items = [clean_text(p) for p in rest if p.strip()]
        return (clean_text(lead) or None), [{"title": short_title(i), "text": i} for i in items]
    items = [i.strip() for i in cell.split(rule.separator) if i.strip()]
    if rule.mode == "code_list":
        known = all(i.upper() in codes for i in items)
        sep = rule.separator
        compact = sep in cell and f"{sep} " not in cell and all(_COMPACT_ITEM_RE.match(i) for i in items)
        if not items or not (known or compact):
            return cell, []
    out = []
    for item in items:
        name = codes.get(item.upper())
        out.append({"title": name, "code": item} if name else {"title": one_line_text(item)})
    return cell, out


_CODES: dict[int, tuple[ScopeRule, dict[str, str]]] = {}


def _upper_codes(rule: ScopeRule) -> dict[str, str]:
    """The rule's codes keyed upper-case, made once per rule (a rule is a mapping constant)."""
    got = _CODES.get(id(rule))
    if got is None or got[0] is not rule:
        got = _CODES[id(rule)] = (rule, {k.upper(): v for k, v in rule.codes.items()})
    return got[1]


def short_title(text: str, limit: int = 80) -> str:
    """A scope title from its text: the first line, cut at a word under ``limit`` characters."""
    line = one_line_text(text)
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    return (cut or line[:limit]) + " …"


def field_columns(mapping: SourceMapping, id_field: str) -> dict[str, str]:
    """Target field -> the column(s) it comes from, for reject reasons."""
    out = {id_field: mapping.id} | {name: "+".join(rule.source_columns()) for name, rule in mapping.fields.items() if rule.value is None}
    if mapping.coordinates is not None:
        c = mapping.coordinates
        out |= {"latitude": c.point or str(c.y), "longitude": c.point or str(c.x)}
    return out


def name_columns(rejects: Sequence[Reject], columns: Mapping[str, str]) -> list[Reject]:
    """Reject reasons name the export's column next to the field: ``field 'x' (column 'y')``, and the fix when
    the value says what it is (a ``$`` amount wants ``strip:``, a date in another order wants ``formats:``)."""
    out = []
    for r in rejects:
        reason = r.reason
        fixes = []
        for name, col in columns.items():
            reason = reason.replace(f"field {name!r} fails", f"field {name!r} (column {col!r}) fails")
            fixes += _value_fixes(reason, name)
        if fixes:
            reason += "; fix: " + ", ".join(dict.fromkeys(fixes))
        out.append(dataclasses.replace(r, reason=reason))
    return out


_FAILS = re.compile(r"field '(?P<name>\w+)' \(column [^)]*\) fails '(?P<check>[^']*)' \(got '(?P<got>[^']*)'\)")
_DAYFIRST = re.compile(r"^\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}")


def _value_fixes(reason: str, name: str) -> list[str]:
    """The mapping keys that would read the values ``reason`` quotes for field ``name``."""
    fixes = []
    for m in _FAILS.finditer(reason):
        if m["name"] != name:
            continue
        got, check = m["got"].strip(), m["check"]
        if check.endswith(("number", "integer")) and re.fullmatch(r"[$€£¥]?\s*-?[\d,.\s]+\s*[$€£¥]?", got):
            chars = "".join(dict.fromkeys(c for c in got if c in "$€£¥, "))
            fixes.append(f"strip: {json.dumps(chars)} under fields.{name}")
        elif check.endswith(("date", "datetime")) and _DAYFIRST.match(got):
            fixes.append(f"formats: ['%m/%d/%Y'] (or '%d/%m/%Y', as the export writes dates) under fields.{name}")
    return fixes


Build = Callable[[Mapping[str, Any]], dict[str, Any]]


def mapped_reader(mapping: SourceMapping, build: Build) -> Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]:
    """A landing-file reader: header check, then ``build(row)`` per row; a refused row is a reject."""

    hooks = RowHooks(mapping)

    def read(path: Path, day_dir: Path) -> tuple[list[RawRecord], list[Reject]]:
        rel = path.relative_to(day_dir).as_posix()
        rows, refs, header, rejects = read_rows(path, day_dir, mapping.format, mapping.delimiter, mapping.encoding)
        if not rows:
            return [], rejects
        problem = header_problem(mapping, header)
        if problem:
            every = f" (all {len(rows)} rows of the file rejected with it)" if len(rows) > 1 else ""
            return [], rejects + [Reject(rel, problem + every, rows=len(rows))]
        records, filtered = build_records(mapping, build, hooks, rel, rows, refs, rejects)
        count_filtered(rel, filtered)
        return records, rejects

    return read


def build_records(mapping: SourceMapping, build: Build, hooks: RowHooks, rel: str, rows: Sequence[Mapping[str, Any]],
                  refs: Sequence[str], rejects: list[Reject]) -> tuple[list[RawRecord], int]:
    """``build(row)`` per row as a record of file ``rel``, and how many rows the filters left out.

    A row the mapping refuses, and an optional field's note, are appended to ``rejects``.
    """
    records = []
    filtered = 0
    for row, ref in zip(rows, refs):
        if hooks.skip(row):
            filtered += 1
            continue
        try:
            data = build(row)
            records.append(RawRecord(rel, ref, data, hooks.order(row)))
            rejects += hooks.notes(data, rel, ref)
        except RowProblem as exc:
            rid = row.get(mapping.id)
            rejects.append(Reject(rel, str(exc), ref + (f", {mapping.id}={rid!r}" if isinstance(rid, str) else ""),
                                  short_repr(row, 300)))
    return records, filtered
