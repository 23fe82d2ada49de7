"""``permit_signals``: building permits, native JSON Lines or the City of Calgary CSV export.

Two landing formats share one record schema:

- ``*.jsonl``: the native schema below (:data:`PERMIT_RULES`), with LLM- or
  clerk-extracted ``scope_sections`` and ``conditions``.
- ``*.csv``: the City of Calgary open-data export (36 columns), mapped onto the native
  schema by the mapping file ``mappings/calgary_building_permits.yaml`` (no Calgary code
  here); its short ``description`` such as ``SFD,FIREPLACE,GARAGE,DECK,PORCH,`` lists
  scope items, which become one scope section each, with the mapping's codes expanded
  (``SFD`` → "Single-family dwelling").

Any other export is mapped the same way into a dataset of its own
(``sources/mapping/kinds.py``, registered from its mapping file by the registry).

Canonical text: the envelope (one ``Label: value`` line per present field, the list
of scope sections, then the summary), then one block per scope section, then one
block per condition. Each block names its permit so it reads on its own, and each is
a block of the document: ``envelope``, ``scope`` (key: 1-based position; meta:
``title``, ``code``), ``condition`` (key: condition id or position; meta:
``condition_id``, ``category``, ``status``).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult, Reject
from codex_pipeline.sources.mapping.reader import (
    RowMapper,
    Target,
    check_crs,
    field_columns,
    mapped_reader,
    name_columns,
    scope_items,
)
from codex_pipeline.sources.mapping.schema import MappingError, SourceMapping, load_mapping
from codex_pipeline.sources.records import Field, RawRecord, RecordSchema, read_json_lines
from codex_pipeline.sources.structured import (
    KEY_RULE,
    LATITUDE_RULE,
    LONGITUDE_RULE,
    NON_NEGATIVE,
    RecordRules,
    Rendering,
    build_documents,
    clean_text,
    fmt_money,
    fmt_number,
    fmt_scalar,
    is_blank,
    join_blocks,
    load_records,
    one_line,
    one_line_text,
    unique_key,
)

DATASET = "permit_signals"
PERMIT_NUMBER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

_DETAILS_RULE = ("labels and values are one-line strings (max 120 / 500 characters)", lambda d: all(
    isinstance(k, str) and isinstance(v, str) and 0 < len(k) <= 120 and 0 < len(v) <= 500 and "\n" not in k + v
    for k, v in d.items()))

SCOPE_SCHEMA = RecordSchema(
    f"{DATASET}.scope_section",
    "title",
    (
        Field("title", "string", True, "Scope heading, e.g. \"Floor 1 addition\", \"Mechanical — HVAC\".", one_line(200)),
        Field("code", "string", False, "Abbreviation as filed (Calgary `description` item), e.g. `BSMT-DEV`.", one_line(40)),
        Field("text", "string", False, "What the scope covers; may be long (split at 1,500 tokens)."),
    ),
)

CONDITION_SCHEMA = RecordSchema(
    f"{DATASET}.condition",
    "condition_id",
    (
        Field("condition_id", "string", False, "Stable id of the condition (e.g. `C-3`); give it for all conditions of a permit or for none.", KEY_RULE),
        Field("text", "string", True, "The condition as issued, e.g. \"Subject to ADA variance approval.\""),
        Field("category", "string", False, "Kind of condition, e.g. `accessibility`, `fire`, `zoning`.", one_line(100)),
        Field("status", "string", False, "`open`, `satisfied`, `waived`, … as tracked by the jurisdiction.", one_line(60)),
    ),
)

PERMIT_SCHEMA = RecordSchema(
    DATASET,
    "permit_number",
    (
        Field("permit_number", "string", True, "Permit number; the record id.", ("permit number: letter/digit first, then letters, digits, . _ - (max 64)", lambda v: bool(PERMIT_NUMBER_RE.match(v)))),
        Field("jurisdiction", "string", True, "Issuing jurisdiction, e.g. \"City of Calgary, AB\".", one_line(120)),
        Field("status", "string", True, "Current status as reported, e.g. `Issued Permit`, `Completed`.", one_line(80)),
        Field("permit_type", "string", True, "Permit type, e.g. `Residential Improvement Project`.", one_line(120)),
        Field("permit_class", "string", False, "Permit class, e.g. `1106 - Single Family House`.", one_line(160)),
        Field("work_class", "string", False, "Work class: `New`, `Addition`, `Alteration`, `Demolition`, …", one_line(80)),
        Field("applied_date", "date", True, "Date the application was filed."),
        Field("issued_date", "date", False, "Date the permit was issued (not before `applied_date`)."),
        Field("completed_date", "date", False, "Date work was completed / final inspection passed."),
        Field("expires_date", "date", False, "Date the permit expires if work has not started."),
        Field("applicant", "string", False, "Applicant name.", one_line(200)),
        Field("contractor", "string", False, "Contractor name.", one_line(200)),
        Field("estimated_cost", "number", False, "Estimated project cost in the jurisdiction's currency.", NON_NEGATIVE),
        Field("floor_area_sqft", "number", False, "Total floor area, square feet.", NON_NEGATIVE),
        Field("housing_units", "integer", False, "Housing units created.", NON_NEGATIVE),
        Field("details", "object", False, "Further labelled facts of the export (a mapping's `details:`), e.g. `{\"Project name\": \"Graham Hill ES\"}`; one `Label: value` line each.", _DETAILS_RULE),
        Field("address", "string", True, "Site address.", one_line(300)),
        Field("community", "string", False, "Community / neighborhood.", one_line(120)),
        Field("latitude", "number", False, "Latitude (WGS 84); given together with longitude.", LATITUDE_RULE),
        Field("longitude", "number", False, "Longitude (WGS 84); given together with latitude.", LONGITUDE_RULE),
        Field("description", "string", False, "Short description as filed (Calgary: the `description` cell).", one_line(2000)),
        Field("summary", "string", False, "Narrative summary of the permit (may span paragraphs)."),
        Field("scope_sections", "list[object]", False, "Scope sections in reading order (item fields below); section ids `scope.{position}`."),
        Field("conditions", "list[object]", False, "Conditions of the permit (item fields below); section ids `condition.{condition_id}` or `condition.{position}`.", unique_key("condition_id")),
    ),
)


def _dates_ordered(d: Mapping[str, Any]) -> bool:
    dates = [dt.date.fromisoformat(d[k]) for k in ("applied_date", "issued_date", "completed_date")
             if not is_blank(d.get(k))]
    return dates == sorted(dates)


def _condition_ids_all_or_none(d: Mapping[str, Any]) -> bool:
    ids = [not is_blank(c.get("condition_id")) for c in d.get("conditions") or []]
    return all(ids) or not any(ids)


PERMIT_RULES = RecordRules(
    PERMIT_SCHEMA,
    nested=(("scope_sections", SCOPE_SCHEMA), ("conditions", CONDITION_SCHEMA)),
    checks=(
        ("applied_date <= issued_date <= completed_date", _dates_ordered),
        ("latitude and longitude are given together", lambda d: is_blank(d.get("latitude")) == is_blank(d.get("longitude"))),
        ("condition_id given for all conditions or for none", _condition_ids_all_or_none),
    ),
)

# ---------------------------------------------------------------------------------------
# Exports mapped onto the permit schema (the City of Calgary CSV is one such mapping)
# ---------------------------------------------------------------------------------------

MAPPINGS_DIR = Path(__file__).parent / "mappings"
CALGARY_MAPPING_FILE = MAPPINGS_DIR / "calgary_building_permits.yaml"
_NOT_MAPPED = {"permit_number", "scope_sections", "conditions", "details"}  # the id, and what scope:/conditions:/details: build
_REQUIRED = [f.name for f in PERMIT_SCHEMA.fields if f.required and f.name != "permit_number"]


def permit_targets() -> dict[str, Target]:
    """The permit fields a mapping may fill from columns, with their types."""
    return {f.name: Target(f.type, multiline=f.name == "summary", rule=f.rule)
            for f in PERMIT_SCHEMA.fields if f.name not in _NOT_MAPPED}


def check_permit_mapping(m: SourceMapping, path: str) -> None:
    """Kind rules of a permit mapping; :class:`MappingError` names the key and the fix."""
    targets = permit_targets()
    for name in m.fields:
        if name not in targets:
            hint = " (the id column is id:)" if name == "permit_number" else ""
            raise MappingError(f"mapping {path}: key 'fields.{name}': not a permit field{hint}; "
                               f"fix: use one of {', '.join(targets)}, or put it under details:")
        if m.fields[name].type is not None and m.fields[name].type != targets[name].type:
            raise MappingError(f"mapping {path}: key 'fields.{name}.type': a permit's {name} is {targets[name].type}; "
                               "fix: remove type:")
    for name in _REQUIRED:
        if name not in m.fields:
            raise MappingError(f"mapping {path}: key 'fields.{name}' is required for kind permit; "
                               f"fix: map it to a column ({name}: <column>) or give a constant ({name}: {{value: …}})")
    if m.coordinates is not None and ({"latitude", "longitude"} & set(m.fields)):
        raise MappingError(f"mapping {path}: key 'coordinates': latitude/longitude are also under fields:; fix: keep one")
    if m.coordinates is not None and (why := check_crs(m.coordinates.crs)):
        raise MappingError(f"mapping {path}: key 'coordinates.crs': {why}; fix: an EPSG code such as EPSG:3857")


def permit_builder(m: SourceMapping) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Row -> native permit record: fields, then ``details``, scope sections and conditions."""
    mapper = RowMapper(m, permit_targets(), "permit_number")
    text = Target("string")

    def build(row: Mapping[str, Any]) -> dict[str, Any]:
        rec = {"permit_number": None} | mapper.record(row)
        details = {label: v for label, rule in m.details.items() if (v := mapper.value(row, label, rule, text)) is not None}
        if details:
            rec["details"] = details
        if m.scope is not None:
            cell = mapper.cell(row, m.scope.column)
            lead, items = scope_items(one_line_text(cell) if m.scope.mode != "bullets" and cell else cell, m.scope)
            if items:
                rec["scope_sections"] = items
            summary = m.fields.get("summary")
            if m.scope.mode == "bullets" and items and summary is not None and summary.column == m.scope.column:
                rec.pop("summary", None)
                if lead:
                    rec["summary"] = lead
        if m.conditions is not None:
            cell = mapper.cell(row, m.conditions.column)
            parts = [clean_text(p) for p in str(cell).split(m.conditions.separator) if p.strip()] if cell else []
            if parts:
                rec["conditions"] = [{"text": p} for p in parts]
        return rec

    return build


def load_permit_mapping(path: Path) -> SourceMapping:
    """A permit mapping file, checked; :class:`MappingError` when it is another kind or breaks the permit rules."""
    m = load_mapping(path)
    if m.kind != "permit":
        raise MappingError(f"mapping {path}: key 'kind': {m.kind!r} where a permit mapping is expected; fix: kind: permit")
    check_permit_mapping(m, str(path))
    return m


@functools.cache
def calgary_mapping() -> SourceMapping:
    """The Calgary CSV mapping, read on first use (never at import: importing reads no file)."""
    return load_permit_mapping(CALGARY_MAPPING_FILE)


def calgary_scope_items(description: str | None) -> list[dict[str, str]]:
    """Scope sections of a Calgary ``description`` (the mapping's ``scope:``, mode ``code_list``).

    It is a list when every comma-separated item is a known abbreviation, or when it
    has the compact code-list shape of the export (``SFD,DECK,PORCH,SSuite``). Free
    prose ("Interior alterations and a change of use for a new tenant, …") is not cut
    at its commas: it stays the permit's description, in the summary.
    """
    scope = calgary_mapping().scope
    assert scope is not None
    return scope_items(description, scope)[1]


def calgary_record(row: Mapping[str, str | None]) -> dict[str, Any]:
    """One Calgary CSV row as a native permit record (through ``calgary_building_permits.yaml``)."""
    return permit_builder(calgary_mapping())(row)


def mapped_permit_reader(m: SourceMapping) -> Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]:
    """A landing-file reader making native permit records of an export through ``m`` (see :func:`mapped_reader`)."""
    return mapped_reader(m, permit_builder(m))


# ---------------------------------------------------------------------------------------
# Canonical text
# ---------------------------------------------------------------------------------------


def condition_key(condition: Mapping[str, Any], position: int) -> str:
    """The condition's own id when given, else its 1-based position."""
    cid = condition.get("condition_id")
    return str(cid) if not is_blank(cid) else str(position)


def _scope_label(s: Mapping[str, Any]) -> str:
    label = one_line_text(s["title"])
    return label + (f" [{one_line_text(s['code'])}]" if not is_blank(s.get("code")) else "")


def render_permit(p: Mapping[str, Any]) -> Rendering:
    """Envelope + summary (``envelope`` part), then ``scope`` and ``condition`` parts."""
    pn = p["permit_number"]
    lines = [f"Permit {pn} — {one_line_text(p['jurisdiction'])}", f"Status: {one_line_text(p['status'])}",
             f"Permit type: {one_line_text(p['permit_type'])}"]
    for key, label in (("permit_class", "Permit class"), ("work_class", "Work class"), ("applied_date", "Applied"),
                       ("issued_date", "Issued"), ("completed_date", "Completed"), ("expires_date", "Expires"),
                       ("applicant", "Applicant"), ("contractor", "Contractor")):
        if not is_blank(p.get(key)):
            lines.append(f"{label}: {one_line_text(str(p[key]))}")
    if not is_blank(p.get("estimated_cost")):
        lines.append(f"Estimated cost: {fmt_money(p['estimated_cost'])}")
    if not is_blank(p.get("floor_area_sqft")):
        lines.append(f"Floor area: {fmt_number(p['floor_area_sqft'])} sq ft")
    if not is_blank(p.get("housing_units")):
        lines.append(f"Housing units: {p['housing_units']}")
    for label, value in (p.get("details") or {}).items():
        lines.append(f"{one_line_text(label)}: {one_line_text(value)}")
    address = one_line_text(p["address"])
    if not is_blank(p.get("community")):
        address += f" ({one_line_text(p['community'])})"
    lines.append(f"Address: {address}")
    if not is_blank(p.get("latitude")):
        lines.append(f"Coordinates: {fmt_scalar(p['latitude'])}, {fmt_scalar(p['longitude'])}")
    if not is_blank(p.get("description")):
        lines.append(f"Description as filed: {one_line_text(p['description'])}")
    scopes = p.get("scope_sections") or []
    conditions = p.get("conditions") or []
    if scopes:
        lines.append(f"Scope sections ({len(scopes)}): " + "; ".join(_scope_label(s) for s in scopes))
    if conditions:
        lines.append(f"Conditions: {len(conditions)}")
    envelope = "\n".join(lines)
    if not is_blank(p.get("summary")) and clean_text(p["summary"]):
        envelope += "\n\nSummary:\n" + clean_text(p["summary"])
    blocks: list[tuple[str, str, str, dict[str, Any]]] = [("envelope", "", envelope, {})]
    for k, s in enumerate(scopes, 1):
        head = f"Permit {pn} — scope {k} of {len(scopes)}: {_scope_label(s)}"
        body = clean_text(s["text"]) if not is_blank(s.get("text")) else ""
        meta = {"title": one_line_text(s["title"])} | ({"code": s["code"]} if not is_blank(s.get("code")) else {})
        blocks.append(("scope", str(k), head + ("\n" + body if body else ""), meta))
    for k, c in enumerate(conditions, 1):
        key = condition_key(c, k)
        head = f"Permit {pn} — condition {key}" if not is_blank(c.get("condition_id")) else f"Permit {pn} — condition {k} of {len(conditions)}"
        tags = [one_line_text(c[f]) for f in ("category", "status") if not is_blank(c.get(f))]
        head += f" ({'; '.join(tags)})" if tags else ""
        meta = {"condition_id": key} | {f: c[f] for f in ("category", "status") if not is_blank(c.get(f))}
        body = clean_text(c["text"])
        blocks.append(("condition", key, head + ("\n" + body if body else ""), meta))
    return join_blocks(blocks)


def permit_title(p: Mapping[str, Any]) -> str:
    """``Permit {permit_number} — {address}``: the document title."""
    return f"Permit {p['permit_number']} — {one_line_text(p['address'])}"


def load_permits_day(day_dir: Path) -> LoadResult:
    """Native ``*.jsonl`` and Calgary ``*.csv`` (``calgary_building_permits.yaml``) permits of one landing day."""
    calgary = calgary_mapping()
    readers = {".jsonl": read_json_lines, ".csv": mapped_permit_reader(calgary)}
    records, rejects = load_records(day_dir, PERMIT_RULES, readers)
    out = build_documents(DATASET, records, render_permit, permit_title)
    columns = field_columns(calgary, "permit_number")
    out.rejects[:0] = [name_columns([r], columns)[0] if r.source_file.lower().endswith(".csv") else r for r in rejects]
    return out
