"""``permit_signals``: building permits, native JSON Lines or the City of Calgary CSV export.

Two landing formats share one record schema:

- ``*.jsonl``: the native schema below (:data:`PERMIT_RULES`), with LLM- or
  clerk-extracted ``scope_sections`` and ``conditions``.
- ``*.csv``: the City of Calgary open-data export (36 columns). Each row is mapped
  onto the native schema (:func:`calgary_record`); its short ``description`` such as
  ``SFD,FIREPLACE,GARAGE,DECK,PORCH,`` lists scope items, which become one scope
  section each, with known abbreviations expanded (``SFD`` → "Single-family dwelling").

Canonical text: the envelope (one ``Label: value`` line per present field, the list
of scope sections, then the summary), then one block per scope section, then one
block per condition. Each block names its permit so it reads on its own, and each is
a block of the document: ``envelope``, ``scope`` (key: 1-based position; meta:
``title``, ``code``), ``condition`` (key: condition id or position; meta:
``condition_id``, ``category``, ``status``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult, Reject
from codex_pipeline.sources.records import Field, RawRecord, RecordSchema, read_csv_rows, read_json_lines
from codex_pipeline.sources.structured import (
    KEY_RULE,
    LATITUDE_RULE,
    LONGITUDE_RULE,
    NON_NEGATIVE,
    RecordRules,
    Rendering,
    build_documents,
    clean_text,
    coerce_cell,
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
# Calgary CSV
# ---------------------------------------------------------------------------------------

CALGARY_JURISDICTION = "City of Calgary, AB"

# Calgary column -> native field (the remaining columns are derived or geometry, see docs)
CALGARY_COLUMNS: dict[str, str] = {
    "permitnum": "permit_number",
    "statuscurrent": "status",
    "permittype": "permit_type",
    "permitclass": "permit_class",
    "workclass": "work_class",
    "applieddate": "applied_date",
    "issueddate": "issued_date",
    "completeddate": "completed_date",
    "applicantname": "applicant",
    "contractorname": "contractor",
    "estprojectcost": "estimated_cost",
    "totalsqft": "floor_area_sqft",
    "housingunits": "housing_units",
    "originaladdress": "address",
    "communityname": "community",
    "latitude": "latitude",
    "longitude": "longitude",
    "description": "description",
}
CALGARY_REQUIRED_COLUMNS = ("permitnum", "statuscurrent", "permittype", "applieddate", "originaladdress", "description")

# Scope abbreviations of Calgary descriptions (matched case-insensitively)
SCOPE_CODES: dict[str, str] = {
    "SFD": "Single-family dwelling",
    "SEMI-D": "Semi-detached dwelling",
    "BSMT-DEV": "Basement development",
    "BASEMENT DEV": "Basement development",
    "SSUITE": "Secondary suite",
    "SECONDARY SUITE": "Secondary suite",
    "ADU": "Additional dwelling unit",
    "ADDITIONAL DWELLING UNIT": "Additional dwelling unit",
    "GARAGE": "Garage",
    "DECK": "Deck",
    "PORCH": "Porch",
    "FIREPLACE": "Fireplace",
    "CARPORT": "Carport",
    "ADDITION": "Addition",
    "IMPROVEMENTS": "Improvements",
    "RETAINING WALL": "Retaining wall",
    "HOT TUB": "Hot tub",
    "PRIVATE SWIMMING POOL": "Private swimming pool",
    "ACCESSORY BUILDING": "Accessory building",
    "INTERIOR ALTERATIONS": "Interior alterations",
    "INTERIOR ALTERATION": "Interior alterations",
}
_COMPACT_ITEM_RE = re.compile(r"^[A-Za-z][A-Za-z0-9/&+-]{0,23}$")


def calgary_scope_items(description: str | None) -> list[dict[str, str]]:
    """Scope sections from a Calgary ``description`` when it is a list of scope items.

    It is a list when every comma-separated item is a known abbreviation, or when it
    has the compact code-list shape of the export (``SFD,DECK,PORCH,SSuite``: commas
    without spaces, single-word items). Free prose ("Interior alterations and a change
    of use for a new tenant, …") is not cut at its commas: it stays the permit's
    description, in the summary.
    """
    if description is None or is_blank(description):
        return []
    items = [i.strip() for i in description.split(",") if i.strip()]
    known = all(i.upper() in SCOPE_CODES for i in items)
    compact = "," in description and ", " not in description and all(_COMPACT_ITEM_RE.match(i) for i in items)
    if not items or not (known or compact):
        return []
    out = []
    for item in items:
        name = SCOPE_CODES.get(item.upper())
        out.append({"title": name, "code": item} if name else {"title": item})
    return out


def calgary_record(row: Mapping[str, str | None]) -> dict[str, Any]:
    """One Calgary CSV row as a native permit record (cells converted to the field types)."""
    types = {f.name: f.type for f in PERMIT_SCHEMA.fields}
    rec: dict[str, Any] = {"permit_number": None, "jurisdiction": CALGARY_JURISDICTION}
    for col, name in CALGARY_COLUMNS.items():
        value = coerce_cell(row.get(col), types[name])
        if isinstance(value, str) and types[name] == "string":
            value = one_line_text(value)
        if value is not None:
            rec[name] = value
    scope = calgary_scope_items(rec.get("description"))
    if scope:
        rec["scope_sections"] = scope
    return rec


def read_calgary_csv(path: Path, day_dir: Path) -> tuple[list[RawRecord], list[Reject]]:
    rel = path.relative_to(day_dir).as_posix()
    rows, refs, rejects = read_csv_rows(path, day_dir)
    if not rows:
        return [], rejects
    missing = [c for c in CALGARY_REQUIRED_COLUMNS if c not in rows[0]]
    if missing:
        return [], rejects + [Reject(rel, f"not a Calgary permit export: missing column(s) {', '.join(map(repr, missing))}")]
    return [RawRecord(rel, ref, calgary_record(row)) for row, ref in zip(rows, refs)], rejects


def _name_columns(rejects: list[Reject]) -> list[Reject]:
    """Reasons of CSV rows name the Calgary column next to the native field."""
    out = []
    for r in rejects:
        reason = r.reason
        if r.source_file.lower().endswith(".csv"):
            for col, name in CALGARY_COLUMNS.items():
                reason = reason.replace(f"field {name!r}", f"field {name!r} (column {col!r})")
        out.append(Reject(r.source_file, reason, r.record_ref, r.excerpt, r.stage))
    return out


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
    return f"Permit {p['permit_number']} — {one_line_text(p['address'])}"


def load_permits_day(day_dir: Path) -> LoadResult:
    """Native ``*.jsonl`` and Calgary ``*.csv`` permits of one landing day."""
    records, rejects = load_records(day_dir, PERMIT_RULES, {".jsonl": read_json_lines, ".csv": read_calgary_csv})
    out = build_documents(DATASET, records, render_permit, permit_title)
    out.rejects[:0] = _name_columns(rejects)
    return out
