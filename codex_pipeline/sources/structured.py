"""Record datasets: shared ingest machinery, and the three structured-only datasets.

Codex's record datasets (events, permits, OSHA cases, the structured records and AIS
positions) all land as typed records and all follow the same path:

1. read JSON Lines (or CSV where the format is naturally flat) into raw records,
2. validate them against a :class:`RecordRules` (a pandera :class:`RecordSchema`,
   schemas for nested objects, and record-level checks that span several fields),
3. render each valid record into a deterministic *canonical text*, which is the
   ``SourceDocument.text`` every chunk offset indexes into.

Renderers of multi-part records return a :class:`Rendering`: the text plus one
:class:`~codex_pipeline.core.documents.Block` per part (envelope, scope section,
citation, …). The blocks go on the document (``SourceDocument.blocks``, persisted in
``raw.blocks``), so a chunker cuts exactly at those spans without rendering again.

The structured-only datasets (``urban_signal_grid``, ``lehd_flows``,
``poi_intelligence``) render as a Markdown key-value view (``- **field**: value``
lines in schema order, null and empty fields omitted). Each one only declares its
schema here; they share the loader and the ``record_view`` chunker.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import Block, LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.records import (
    Field,
    RawRecord,
    RecordSchema,
    dedupe_by,
    read_csv_rows,
    read_day,
    read_json_lines,
    short_repr,
)

# ---------------------------------------------------------------------------------------
# Field rules shared by the record schemas
# ---------------------------------------------------------------------------------------

RECORD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")  # nested ids that end up in section ids

RECORD_ID_RULE = ("record id: letter/digit first, then letters, digits, . _ : - (max 128)",
                  lambda v: bool(RECORD_ID_RE.match(v)))
KEY_RULE = ("key: letter/digit first, then letters, digits, _ - (max 64)", lambda v: bool(KEY_RE.match(v)))
LATITUDE_RULE = ("between -90 and 90", lambda v: -90 <= v <= 90)
LONGITUDE_RULE = ("between -180 and 180", lambda v: -180 <= v <= 180)
NON_NEGATIVE = (">= 0", lambda v: v >= 0)
HTTP_URL_RULE = ("http(s) URL", lambda v: v.startswith(("http://", "https://")) and " " not in v)


def one_line(max_chars: int) -> tuple[str, Callable[[Any], bool]]:
    """A rule for short header values: one line, at most ``max_chars`` characters."""
    return (f"one non-blank line, at most {max_chars} characters",
            lambda v: bool(v.strip()) and len(v) <= max_chars and "\n" not in v)


def one_of(*values: str) -> tuple[str, Callable[[Any], bool]]:
    """A rule: the value is one of ``values``."""
    return ("one of " + ", ".join(values), lambda v: v in values)


def unique_key(key: str) -> tuple[str, Callable[[Any], bool]]:
    """List-of-objects rule: the ``key`` values present are unique."""

    def check(items: list[dict[str, Any]]) -> bool:
        keys = [i.get(key) for i in items if i.get(key) not in (None, "")]
        return len(keys) == len(set(map(str, keys)))

    return (f"{key} values unique", check)


def has_timezone(v: str) -> bool:
    """The ISO 8601 date-time ``v`` carries a UTC offset (``Z`` counts); ValueError when it is not ISO 8601."""
    return dt.datetime.fromisoformat(v).tzinfo is not None


TZ_RULE = ("ISO 8601 with a UTC offset (e.g. 2026-11-24T03:12:00+00:00 or …Z)", has_timezone)

Check = tuple[str, Callable[[Mapping[str, Any]], bool]]


@dataclass(frozen=True)
class RecordRules:
    """A dataset's whole input contract: record schema, nested-object schemas, record checks."""

    schema: RecordSchema
    nested: tuple[tuple[str, RecordSchema], ...] = ()  # (list-of-objects field, its item schema)
    checks: tuple[Check, ...] = ()  # rules spanning several fields of one record

    def validate(self, records: list[RawRecord]) -> tuple[list[RawRecord], list[Reject]]:
        """Valid records in input order, and one reject per bad record with every reason."""
        valid, rejects = self.schema.validate(records)
        problems: dict[int, list[str]] = {}
        for name, sub in self.nested:
            flat: list[RawRecord] = []
            owner: list[int] = []
            for i, r in enumerate(valid):
                for j, obj in enumerate(r.data.get(name) or []):
                    flat.append(RawRecord(r.source_file, f"{name}[{j}]", obj))
                    owner.append(i)
            ok, bad = sub.validate(flat)
            ok_ids = {id(r) for r in ok}
            bad_idx = [k for k, r in enumerate(flat) if id(r) not in ok_ids]
            for k, rej in zip(bad_idx, bad):
                problems.setdefault(owner[k], []).append(f"{flat[k].ref}: {rej.reason}")
        for i, r in enumerate(valid):
            if i in problems:
                continue
            for name, pred in self.checks:
                try:
                    passed = bool(pred(r.data))
                except Exception:  # noqa: BLE001 - a crashing check is a failed check
                    passed = False
                if not passed:
                    problems.setdefault(i, []).append(f"record check fails: {name}")
        keep = []
        for i, r in enumerate(valid):
            if i not in problems:
                keep.append(r)
                continue
            rid = r.data.get(self.schema.id_field)
            ref = r.ref + (f", {self.schema.id_field}={rid!r}" if isinstance(rid, (str, int)) else "")
            rejects.append(Reject(r.source_file, "; ".join(problems[i]), ref, excerpt=short_repr(r.data, 300)))
        return keep, rejects

    def markdown_tables(self) -> str:
        """Field tables for the docs: the record, then each nested object."""
        out = [self.schema.markdown_table()]
        for name, sub in self.nested:
            out.append(f"\nEach item of `{name}`:\n\n{sub.markdown_table()}")
        return "\n".join(out)


# ---------------------------------------------------------------------------------------
# CSV rows -> typed records
# ---------------------------------------------------------------------------------------

_INT_RE = re.compile(r"^[+-]?\d+$")
_DATE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ]00:00(?::00(?:\.0+)?)?)?$")
_TRUE, _FALSE = {"true", "yes", "y", "1", "t"}, {"false", "no", "n", "0", "f"}


def coerce_cell(value: str | None, type_: str) -> Any:
    """A CSV cell as the field's type; a cell that does not convert stays a string.

    Keeping the raw string (instead of dropping it) lets the schema reject the record
    with the offending value in the reason.
    """
    if value is None:
        return None
    s = value.strip()
    if s == "":
        return None
    if type_ == "integer" and _INT_RE.match(s):
        return int(s)
    if type_ == "number":
        if _INT_RE.match(s):
            return int(s)
        try:
            f = float(s)
        except ValueError:
            return s
        return f if math.isfinite(f) else s
    if type_ == "date":
        m = _DATE_RE.match(s)
        return m.group(1) if m else s
    if type_ == "boolean":
        low = s.lower()
        return True if low in _TRUE else False if low in _FALSE else s
    return s


def csv_reader(
    fields: Sequence[Field], columns: Mapping[str, str] | None = None
) -> Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]:
    """A reader for flat CSV: ``columns`` maps header names to field names (default: same)."""
    columns = dict(columns) if columns else {f.name: f.name for f in fields}
    by_name = {f.name: f for f in fields}
    required = [c for c, f in columns.items() if by_name[f].required]

    def read(path: Path, day_dir: Path) -> tuple[list[RawRecord], list[Reject]]:
        rel = path.relative_to(day_dir).as_posix()
        rows, refs, rejects = read_csv_rows(path, day_dir)
        if not rows:
            return [], rejects
        header = set(rows[0])
        missing = [c for c in required if c not in header]
        unknown = sorted(header - set(columns))
        if missing or unknown:
            why = []
            if missing:
                why.append(f"missing required column(s) {', '.join(map(repr, missing))}")
            if unknown:
                why.append(f"unknown column(s) {', '.join(map(repr, unknown))}")
            return [], rejects + [Reject(rel, f"CSV header does not match the schema (all {len(rows)} row(s) of the file "
                                              "rejected): " + "; ".join(why), rows=len(rows))]
        records = [
            RawRecord(rel, ref, {f: coerce_cell(row.get(c), by_name[f].type) for c, f in columns.items()})
            for row, ref in zip(rows, refs)
        ]
        return records, rejects

    return read


# ---------------------------------------------------------------------------------------
# Canonical text: renderings with part spans, and the Markdown key-value view
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendering:
    """A record's canonical text and its parts, as blocks in text order.

    Each part is a :class:`Block` ``text[start:end]`` without outer whitespace: its
    ``kind`` ("envelope", "scope", "condition", "citation", "header", "description", …),
    ``key`` (stable inside the record: scope position, condition id, citation id) and
    ``meta`` (small JSON values the chunker copies into chunk metadata).
    """

    text: str
    parts: tuple[Block, ...]

    def part(self, kind: str) -> Block | None:
        """The first part of ``kind``, or None."""
        return next((p for p in self.parts if p.kind == kind), None)


def join_blocks(blocks: Sequence[tuple[str, str, str, Mapping[str, Any]]], sep: str = "\n\n") -> Rendering:
    """Join ``(kind, key, text, meta)`` blocks with ``sep`` and record each block's span."""
    texts: list[str] = []
    parts: list[Block] = []
    pos = 0
    for kind, key, text, meta in blocks:
        if not text or text != text.strip():
            raise ValueError(f"block {kind}:{key} is empty or has outer whitespace")
        if texts:
            texts.append(sep)
            pos += len(sep)
        parts.append(Block(kind, pos, pos + len(text), key, dict(meta)))
        texts.append(text)
        pos += len(text)
    return Rendering("".join(texts), tuple(parts))


def clean_text(s: str) -> str:
    """Multi-line free text: newlines normalized, trailing spaces and outer blank lines removed."""
    lines = [ln.rstrip() for ln in s.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip()


def one_line_text(s: str) -> str:
    """Header values: whitespace runs collapsed to one space."""
    return " ".join(s.split())


def is_blank(v: Any) -> bool:
    """No value: None, ``""``, an empty list or object, or a float NaN."""
    return v is None or v == "" or v == [] or v == {} or (isinstance(v, float) and math.isnan(v))


def fmt_scalar(v: Any) -> str:
    """A value as the view writes it: ``true``/``false``, a float's ``repr``, :func:`clean_text` of a string."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return clean_text(v)
    return str(v)


def fmt_money(v: float | int) -> str:
    """``$1,234.50``: thousands separators, always two decimals."""
    return f"${v:,.2f}"


def fmt_number(v: float | int) -> str:
    """Thousands separators; integral floats without a trailing ``.0``."""
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,}"
    return f"{int(v):,}"


def _fmt_object(obj: Mapping[str, Any], order: Sequence[str] | None) -> str:
    keys = list(order or ()) + sorted(k for k in obj if not order or k not in order)
    return "; ".join(f"{k}: {one_line_text(fmt_scalar(obj[k]))}" for k in keys if k in obj and not is_blank(obj[k]))


def fmt_view_value(v: Any, order: Sequence[str] | None = None) -> str:
    """A value of the key-value view. Lists of objects become indented sub-bullets;
    object keys are sorted (JSON key order is not part of the data), multi-line text
    continues on lines indented by two spaces."""
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return "".join(f"\n  - {_fmt_object(x, order)}" for x in v)
    if isinstance(v, list):
        return "; ".join(one_line_text(fmt_scalar(x)) for x in v)
    if isinstance(v, dict):
        return _fmt_object(v, order)
    text = fmt_scalar(v)
    return "\n".join(ln if i == 0 or not ln else "  " + ln for i, ln in enumerate(text.split("\n")))


def render_kv_view(heading: str, record: Mapping[str, Any], fields: Sequence[Field],
                   nested_order: Mapping[str, Sequence[str]] | None = None) -> str:
    """``## heading`` then ``- **field**: value`` for each non-blank field, in schema order."""
    lines = [f"## {one_line_text(heading)}"]
    for f in fields:
        v = record.get(f.name)
        if is_blank(v):
            continue
        lines.append(f"- **{f.name}**: {fmt_view_value(v, (nested_order or {}).get(f.name))}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Loading a landing day of records
# ---------------------------------------------------------------------------------------


def load_records(
    day_dir: Path,
    rules: RecordRules,
    readers: Mapping[str, Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]],
    record_id: Callable[[Mapping[str, Any]], str] | None = None,
) -> tuple[list[tuple[str, RawRecord]], list[Reject]]:
    """Read, validate and de-duplicate a day: ``[(record id, record)]`` plus every reject."""
    raw, rejects = read_day(day_dir, dict(readers))
    valid, bad = rules.validate(raw)
    rid = record_id or (lambda d: str(d[rules.schema.id_field]))
    keep, dups = dedupe_by(valid, lambda r: rid(r.data), "record id")
    return [(rid(r.data), r) for r in keep], rejects + bad + dups


def build_documents(
    dataset: str,
    records: Iterable[tuple[str, RawRecord]],
    render: Callable[[Mapping[str, Any]], Rendering | str],
    title: Callable[[Mapping[str, Any]], str | None],
) -> LoadResult:
    """One :class:`SourceDocument` per record; a record that fails to render is rejected.

    A :class:`Rendering` puts its parts on the document as blocks; a plain string (the
    key-value view) is the whole text with no blocks.
    """
    out = LoadResult()
    for rid, r in records:
        try:
            rendered = render(r.data)
        except Exception as exc:  # noqa: BLE001 - one bad record must not sink the day
            out.rejects.append(Reject(r.source_file, f"cannot render record: {type(exc).__name__}: {exc}", r.ref))
            continue
        text, blocks = (rendered.text, rendered.parts) if isinstance(rendered, Rendering) else (rendered, ())
        out.documents.append(
            SourceDocument(
                doc_id=make_doc_id(dataset, rid),
                record_id=rid,
                text=text,
                source_file=r.source_file,
                title=title(r.data),
                payload=dict(r.data),
                blocks=blocks,
            )
        )
    return out


@dataclass(frozen=True)
class StructuredDataset:
    """A flat-ish record dataset rendered as a Markdown key-value view.

    The schema's field order is the view's field order. CSV is accepted when every
    field is a scalar (or ``csv_columns`` maps a foreign header onto the fields).
    """

    name: str
    label: str  # heading word(s) of the view, e.g. "Point of interest"
    rules: RecordRules
    title_field: str | None = None
    csv_columns: Mapping[str, str] | None = None  # CSV header -> field name
    record_id: Callable[[Mapping[str, Any]], str] | None = None  # default: the id field

    @property
    def schema(self) -> RecordSchema:
        """The record schema of :attr:`rules`."""
        return self.rules.schema

    def rid(self, record: Mapping[str, Any]) -> str:
        """The record's id: ``record_id(record)`` when set, else its id field as a string."""
        return self.record_id(record) if self.record_id else str(record[self.schema.id_field])

    def heading(self, record: Mapping[str, Any]) -> str:
        """``{label} {id}``, then ``— {title}`` when the title field has a value: the view's heading and the title."""
        head = f"{self.label} {self.rid(record)}"
        if self.title_field and not is_blank(record.get(self.title_field)):
            head += f" — {one_line_text(fmt_scalar(record[self.title_field]))}"
        return head

    def render(self, record: Mapping[str, Any]) -> str:
        """The record's key-value view (:func:`render_kv_view`), nested objects' keys in their schema's order."""
        order = {name: [f.name for f in sub.fields] for name, sub in self.rules.nested}
        return render_kv_view(self.heading(record), record, self.schema.fields, order)

    def readers(self) -> dict[str, Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]]:
        """Readers by file suffix: ``.jsonl``; ``.csv`` too when all fields are scalars or ``csv_columns`` is set."""
        readers: dict[str, Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]] = {".jsonl": read_json_lines}
        flat = all(not f.type.startswith(("list", "object")) for f in self.schema.fields)
        if flat or self.csv_columns:
            readers[".csv"] = csv_reader(self.schema.fields, self.csv_columns)
        return readers

    def load_day(self, day_dir: Path) -> LoadResult:
        """A landing day's valid records, de-duplicated by id, one document each; every reject."""
        records, rejects = load_records(day_dir, self.rules, self.readers(), self.rid)
        out = build_documents(self.name, records, self.render, self.heading)
        out.rejects[:0] = rejects
        return out


# ---------------------------------------------------------------------------------------
# urban_signal_grid: daily signals per H3 grid cell
# ---------------------------------------------------------------------------------------

_H3_RE = re.compile(r"^[0-9a-f]{15}$")
_INT_NN = NON_NEGATIVE

URBAN_SIGNAL_GRID = StructuredDataset(
    name="urban_signal_grid",
    label="Urban signal grid cell-day",
    title_field="neighborhood",
    rules=RecordRules(
        RecordSchema(
            "urban_signal_grid",
            "signal_id",
            (
                Field("signal_id", "string", True, "Record id: city, H3 cell and day, e.g. `usg-sea-8928d54a3b7ffff-2026-11-24`.", RECORD_ID_RULE),
                Field("city", "string", True, "City the grid belongs to.", one_line(120)),
                Field("cell_id", "string", True, "H3 cell index (15 lowercase hex digits).", ("H3 index: 15 lowercase hex digits", lambda v: bool(_H3_RE.match(v)))),
                Field("h3_resolution", "integer", True, "H3 resolution of the cell (0–15).", ("between 0 and 15", lambda v: 0 <= v <= 15)),
                Field("observed_date", "date", True, "Local calendar day the signals cover."),
                Field("neighborhood", "string", False, "Neighborhood the cell centroid falls in.", one_line(200)),
                Field("land_use", "string", False, "Dominant zoning / land use of the cell.", one_line(120)),
                Field("centroid_lat", "number", True, "Cell centroid latitude (WGS 84).", LATITUDE_RULE),
                Field("centroid_lon", "number", True, "Cell centroid longitude (WGS 84).", LONGITUDE_RULE),
                Field("population_est", "integer", False, "Estimated residents in the cell.", _INT_NN),
                Field("pedestrian_count", "integer", False, "Pedestrians counted by sensors over the day.", _INT_NN),
                Field("vehicle_count", "integer", False, "Vehicles counted over the day.", _INT_NN),
                Field("transit_boardings", "integer", False, "Bus / rail boardings at stops in the cell.", _INT_NN),
                Field("bike_share_trips", "integer", False, "Bike- and scooter-share trips starting in the cell.", _INT_NN),
                Field("service_requests_311", "integer", False, "311 service requests opened in the cell that day.", _INT_NN),
                Field("top_311_categories", "list[string]", False, "Most frequent 311 categories, most frequent first."),
                Field("active_permits", "integer", False, "Building permits active in the cell.", _INT_NN),
                Field("noise_db_p50", "number", False, "Median sound level, dBA.", ("between 0 and 140", lambda v: 0 <= v <= 140)),
                Field("noise_db_p95", "number", False, "95th percentile sound level, dBA.", ("between 0 and 140", lambda v: 0 <= v <= 140)),
                Field("pm25_ugm3", "number", False, "Daily mean PM2.5, µg/m³.", _INT_NN),
                Field("mobility_index", "number", False, "Activity vs. the cell's 8-week baseline (100 = baseline).", _INT_NN),
                Field("anomaly_flags", "list[string]", False, "Detector flags raised for the cell-day."),
                Field("analyst_note", "string", False, "Free-text note from the analyst on duty."),
            ),
        ),
        checks=(
            ("noise_db_p95 >= noise_db_p50",
             lambda d: is_blank(d.get("noise_db_p50")) or is_blank(d.get("noise_db_p95")) or d["noise_db_p95"] >= d["noise_db_p50"]),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# lehd_flows: LODES origin-destination job flows between census blocks
# ---------------------------------------------------------------------------------------

_BLOCK_RE = re.compile(r"^\d{15}$")
_BLOCK_RULE = ("15-digit census block GEOID", lambda v: bool(_BLOCK_RE.match(v)))


def _bands_sum(*names: str) -> Callable[[Mapping[str, Any]], bool]:
    def check(d: Mapping[str, Any]) -> bool:
        vals = [d.get(n) for n in names]
        return any(v is None for v in vals) or sum(v for v in vals if v is not None) == d["total_jobs"]

    return check


LEHD_FLOWS = StructuredDataset(
    name="lehd_flows",
    label="LODES job flow",
    rules=RecordRules(
        RecordSchema(
            "lehd_flows",
            "flow_id",
            (
                Field("flow_id", "string", True, "Record id: `{state}-{year}-{job_type}-{w_geocode}-{h_geocode}`.", RECORD_ID_RULE),
                Field("lodes_version", "string", True, "LODES release, e.g. `LODES8`.", one_of("LODES7", "LODES8")),
                Field("year", "integer", True, "Reference year of the jobs.", ("between 2002 and 2030", lambda v: 2002 <= v <= 2030)),
                Field("state", "string", True, "Two-letter lowercase state postal code of the OD file.", ("two lowercase letters", lambda v: bool(re.match(r"^[a-z]{2}$", v)))),
                Field("job_type", "string", True, "LODES job type `JT00`–`JT05` (JT00 = all jobs).", one_of("JT00", "JT01", "JT02", "JT03", "JT04", "JT05")),
                Field("w_geocode", "string", True, "Workplace census block GEOID.", _BLOCK_RULE),
                Field("h_geocode", "string", True, "Residence census block GEOID.", _BLOCK_RULE),
                Field("w_place", "string", False, "Workplace tract / place name.", one_line(200)),
                Field("h_place", "string", False, "Residence tract / place name.", one_line(200)),
                Field("total_jobs", "integer", True, "S000: total jobs on this flow.", _INT_NN),
                Field("jobs_age_29_or_younger", "integer", False, "SA01: workers aged 29 or younger.", _INT_NN),
                Field("jobs_age_30_to_54", "integer", False, "SA02: workers aged 30 to 54.", _INT_NN),
                Field("jobs_age_55_or_older", "integer", False, "SA03: workers aged 55 or older.", _INT_NN),
                Field("jobs_earning_1250_or_less", "integer", False, "SE01: earnings $1,250/month or less.", _INT_NN),
                Field("jobs_earning_1251_to_3333", "integer", False, "SE02: earnings $1,251–$3,333/month.", _INT_NN),
                Field("jobs_earning_over_3333", "integer", False, "SE03: earnings over $3,333/month.", _INT_NN),
                Field("jobs_goods_producing", "integer", False, "SI01: goods-producing industry jobs.", _INT_NN),
                Field("jobs_trade_transport_utilities", "integer", False, "SI02: trade, transportation and utilities jobs.", _INT_NN),
                Field("jobs_all_other_services", "integer", False, "SI03: all other services jobs.", _INT_NN),
                Field("straight_line_km", "number", False, "Distance between the two block centroids, km.", _INT_NN),
                Field("createdate", "date", False, "Date the LODES file was created."),
            ),
        ),
        checks=(
            ("age bands SA01+SA02+SA03 sum to total_jobs",
             _bands_sum("jobs_age_29_or_younger", "jobs_age_30_to_54", "jobs_age_55_or_older")),
            ("earnings bands SE01+SE02+SE03 sum to total_jobs",
             _bands_sum("jobs_earning_1250_or_less", "jobs_earning_1251_to_3333", "jobs_earning_over_3333")),
            ("industry bands SI01+SI02+SI03 sum to total_jobs",
             _bands_sum("jobs_goods_producing", "jobs_trade_transport_utilities", "jobs_all_other_services")),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# poi_intelligence: points of interest with observed activity
# ---------------------------------------------------------------------------------------

POI_INTELLIGENCE = StructuredDataset(
    name="poi_intelligence",
    label="Point of interest",
    title_field="name",
    rules=RecordRules(
        RecordSchema(
            "poi_intelligence",
            "poi_id",
            (
                Field("poi_id", "string", True, "Record id of the place, e.g. `poi-sea-000412`.", RECORD_ID_RULE),
                Field("name", "string", True, "Display name.", one_line(200)),
                Field("category", "string", True, "Top-level category (snake_case), e.g. `healthcare`.", ("snake_case", lambda v: bool(re.match(r"^[a-z][a-z0-9_]*$", v)))),
                Field("subcategory", "string", False, "Finer category, e.g. `hospital`.", one_line(120)),
                Field("brand", "string", False, "Chain or operator brand.", one_line(120)),
                Field("operator", "string", False, "Legal operator of the place.", one_line(200)),
                Field("address", "string", True, "Street address.", one_line(200)),
                Field("city", "string", True, "City.", one_line(120)),
                Field("region", "string", False, "State / province code.", one_line(40)),
                Field("postal_code", "string", False, "Postal code.", one_line(20)),
                Field("latitude", "number", True, "Latitude (WGS 84).", LATITUDE_RULE),
                Field("longitude", "number", True, "Longitude (WGS 84).", LONGITUDE_RULE),
                Field("phone", "string", False, "Public phone number.", one_line(40)),
                Field("website", "string", False, "Website URL.", HTTP_URL_RULE),
                Field("opening_hours", "string", False, "Opening hours in OpenStreetMap `opening_hours` syntax.", one_line(300)),
                Field("open_status", "string", False, "Operating status.", one_of("open", "temporarily_closed", "permanently_closed")),
                Field("first_seen", "date", False, "First day the place was observed."),
                Field("last_verified", "date", True, "Last day the listing was verified."),
                Field("visits_30d", "integer", False, "Estimated visits over the last 30 days.", _INT_NN),
                Field("median_dwell_min", "number", False, "Median visit length, minutes.", _INT_NN),
                Field("rating", "number", False, "Mean public rating, 0–5.", ("between 0 and 5", lambda v: 0 <= v <= 5)),
                Field("review_count", "integer", False, "Number of public ratings.", _INT_NN),
                Field("amenities", "list[string]", False, "Amenities and services on site."),
                Field("tags", "list[string]", False, "Free tags."),
                Field("source_refs", "list[string]", False, "Upstream references, e.g. `osm:way/123`."),
                Field("description", "string", False, "Free-text description; may be long (the view is then split)."),
            ),
        ),
        checks=(
            ("first_seen not after last_verified",
             lambda d: is_blank(d.get("first_seen")) or d["first_seen"] <= d["last_verified"]),
        ),
    ),
)

STRUCTURED_DATASETS: tuple[StructuredDataset, ...] = (URBAN_SIGNAL_GRID, LEHD_FLOWS, POI_INTELLIGENCE)


def load_urban_signal_grid_day(day_dir: Path) -> LoadResult:
    """The registry's day loader for ``urban_signal_grid``."""
    return URBAN_SIGNAL_GRID.load_day(day_dir)


def load_lehd_flows_day(day_dir: Path) -> LoadResult:
    """The registry's day loader for ``lehd_flows``."""
    return LEHD_FLOWS.load_day(day_dir)


def load_poi_intelligence_day(day_dir: Path) -> LoadResult:
    """The registry's day loader for ``poi_intelligence``."""
    return POI_INTELLIGENCE.load_day(day_dir)
