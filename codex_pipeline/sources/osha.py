"""``osha_safety``: OSHA enforcement cases, one JSON Lines record per inspection.

A case carries its citations as nested objects (one per citation item, as in OSHA's
inspection / violation tables). Canonical text: the case envelope and summary, then
one block per citation that names the inspection, the standard and the penalty, so a
citation retrieved alone is still complete (citations are independently enforceable).
Each part is a block of the document: ``envelope``, then ``citation`` (key: the
citation id; meta: ``citation_id``, ``standard``, ``violation_type``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult
from codex_pipeline.sources.records import Field, RecordSchema, read_json_lines
from codex_pipeline.sources.structured import (
    NON_NEGATIVE,
    RecordRules,
    Rendering,
    build_documents,
    clean_text,
    fmt_money,
    is_blank,
    join_blocks,
    load_records,
    one_line,
    one_line_text,
    one_of,
    unique_key,
)

DATASET = "osha_safety"
VIOLATION_TYPES = ("serious", "willful", "repeat", "other-than-serious", "failure-to-abate", "unclassified")
INSPECTION_TYPES = ("accident", "complaint", "referral", "planned", "follow-up", "monitoring",
                    "fatality/catastrophe", "unprogrammed related", "other")

CITATION_SCHEMA = RecordSchema(
    f"{DATASET}.citation",
    "citation_id",
    (
        Field("citation_id", "string", True, "Citation number, item and optional group as OSHA writes them: `01001`, `01002A`. Section id `citation.{citation_id}`.", ("5 digits + optional group letter, e.g. 01001 or 01002A", lambda v: bool(re.match(r"^\d{5}[A-Z]?$", v)))),
        Field("standard", "string", True, "Standard cited, e.g. `29 CFR 1926.501(b)(13)`.", one_line(120)),
        Field("violation_type", "string", True, "One of " + ", ".join(VIOLATION_TYPES) + ".", one_of(*VIOLATION_TYPES)),
        Field("issuance_date", "date", True, "Date the citation was issued (not before the inspection opened)."),
        Field("abatement_due_date", "date", False, "Date the hazard must be abated by (not before issuance)."),
        Field("initial_penalty", "number", True, "Penalty proposed at issuance, USD.", NON_NEGATIVE),
        Field("current_penalty", "number", False, "Penalty after settlement / contest, USD.", NON_NEGATIVE),
        Field("gravity", "integer", False, "Gravity rating 1–10.", ("between 1 and 10", lambda v: 1 <= v <= 10)),
        Field("employees_exposed", "integer", False, "Employees exposed to the hazard.", NON_NEGATIVE),
        Field("abatement_status", "string", False, "E.g. `abated`, `pending`, `contested`.", one_line(60)),
        Field("description", "string", True, "The alleged violation as written in the citation."),
    ),
)

CASE_SCHEMA = RecordSchema(
    DATASET,
    "inspection_id",
    (
        Field("inspection_id", "string", True, "OSHA inspection (activity) number; the record id.", ("6 to 12 digits", lambda v: bool(re.match(r"^\d{6,12}$", v)))),
        Field("establishment_name", "string", True, "Employer / establishment inspected.", one_line(200)),
        Field("site_address", "string", True, "Street address of the inspected site.", one_line(200)),
        Field("site_city", "string", True, "City of the site.", one_line(120)),
        Field("site_state", "string", True, "Two-letter state code.", ("two capital letters", lambda v: bool(re.match(r"^[A-Z]{2}$", v)))),
        Field("site_zip", "string", False, "ZIP or ZIP+4.", ("ZIP or ZIP+4", lambda v: bool(re.match(r"^\d{5}(-\d{4})?$", v)))),
        Field("naics_code", "string", False, "6-digit NAICS code of the establishment.", ("6 digits", lambda v: bool(re.match(r"^\d{6}$", v)))),
        Field("naics_title", "string", False, "NAICS title.", one_line(200)),
        Field("inspection_type", "string", True, "One of " + ", ".join(INSPECTION_TYPES) + ".", one_of(*INSPECTION_TYPES)),
        Field("inspection_scope", "string", False, "`complete`, `partial`, `records` or `no inspection`.", one_of("complete", "partial", "records", "no inspection")),
        Field("ownership", "string", False, "`private`, `local government`, `state government` or `federal`.", one_of("private", "local government", "state government", "federal")),
        Field("union_status", "string", False, "`union` or `non-union`.", one_of("union", "non-union")),
        Field("employees_covered", "integer", False, "Employees covered by the inspection.", NON_NEGATIVE),
        Field("open_date", "date", True, "Date the inspection opened."),
        Field("close_conference_date", "date", False, "Date of the closing conference."),
        Field("case_closed_date", "date", False, "Date the case was closed."),
        Field("summary", "string", False, "Narrative of the case (accident summary, complaint, findings)."),
        Field("citations", "list[object]", True, "Citations in issue order (item fields below); may be empty when no violation was found.", unique_key("citation_id")),
    ),
)


def _dates_ordered(d: Mapping[str, Any]) -> bool:
    seq = [dt.date.fromisoformat(d[k]) for k in ("open_date", "close_conference_date", "case_closed_date") if not is_blank(d.get(k))]
    if seq != sorted(seq):
        return False
    opened = dt.date.fromisoformat(d["open_date"])
    for c in d["citations"]:
        issued = dt.date.fromisoformat(c["issuance_date"])
        if issued < opened:
            return False
        if not is_blank(c.get("abatement_due_date")) and dt.date.fromisoformat(c["abatement_due_date"]) < issued:
            return False
    return True


CASE_RULES = RecordRules(
    CASE_SCHEMA,
    nested=(("citations", CITATION_SCHEMA),),
    checks=(("open_date <= close_conference_date <= case_closed_date, and each citation issued after opening and abated after issuance", _dates_ordered),),
)


def _penalty_line(c: Mapping[str, Any]) -> str:
    line = f"Penalty: initial {fmt_money(c['initial_penalty'])}"
    if not is_blank(c.get("current_penalty")):
        line += f"; current {fmt_money(c['current_penalty'])}"
    return line


def render_case(case: Mapping[str, Any]) -> Rendering:
    """Case envelope + summary (``envelope`` part), then one ``citation`` part per citation."""
    iid = case["inspection_id"]
    site = f"{one_line_text(case['site_address'])}, {one_line_text(case['site_city'])}, {case['site_state']}"
    if not is_blank(case.get("site_zip")):
        site += f" {case['site_zip']}"
    lines = [f"OSHA inspection {iid} — {one_line_text(case['establishment_name'])}", f"Site: {site}"]
    if not is_blank(case.get("naics_code")):
        naics = case["naics_code"]
        if not is_blank(case.get("naics_title")):
            naics += f" ({one_line_text(case['naics_title'])})"
        lines.append(f"NAICS: {naics}")
    for key, label in (("inspection_type", "Inspection type"), ("inspection_scope", "Inspection scope"),
                       ("ownership", "Ownership"), ("union_status", "Union status"),
                       ("employees_covered", "Employees covered"), ("open_date", "Opened"),
                       ("close_conference_date", "Closing conference"), ("case_closed_date", "Case closed")):
        if not is_blank(case.get(key)):
            lines.append(f"{label}: {case[key]}")
    citations = case["citations"]
    if citations:
        lines.append(f"Citations ({len(citations)}): " + "; ".join(
            f"{c['citation_id']} {c['violation_type']} {one_line_text(c['standard'])}" for c in citations))
        initial = sum(c["initial_penalty"] for c in citations)
        total = f"Total penalty: initial {fmt_money(initial)}"
        if all(not is_blank(c.get("current_penalty")) for c in citations):
            total += f"; current {fmt_money(sum(c['current_penalty'] for c in citations))}"
        lines.append(total)
    else:
        lines.append("Citations: none")
    envelope = "\n".join(lines)
    if not is_blank(case.get("summary")) and clean_text(case["summary"]):
        envelope += "\n\nSummary:\n" + clean_text(case["summary"])
    blocks: list[tuple[str, str, str, dict[str, Any]]] = [("envelope", "", envelope, {})]
    for c in citations:
        cid = c["citation_id"]
        head = [f"OSHA inspection {iid} — citation {cid}: {c['violation_type']} violation of {one_line_text(c['standard'])}"]
        issued = f"Issued: {c['issuance_date']}"
        if not is_blank(c.get("abatement_due_date")):
            issued += f"; abatement due {c['abatement_due_date']}"
        if not is_blank(c.get("abatement_status")):
            issued += f" ({one_line_text(c['abatement_status'])})"
        head += [issued, _penalty_line(c)]
        extra = [f"{label}: {c[key]}" for key, label in (("gravity", "Gravity"), ("employees_exposed", "Employees exposed"))
                 if not is_blank(c.get(key))]
        if extra:
            head.append("; ".join(extra))
        body = clean_text(c["description"])
        text = "\n".join(head) + ("\n" + body if body else "")
        meta = {"citation_id": cid, "standard": c["standard"], "violation_type": c["violation_type"]}
        blocks.append(("citation", cid, text, meta))
    return join_blocks(blocks)


def case_title(case: Mapping[str, Any]) -> str:
    """``OSHA inspection {inspection_id} — {establishment name}``: the document title."""
    return f"OSHA inspection {case['inspection_id']} — {one_line_text(case['establishment_name'])}"


def load_osha_day(day_dir: Path) -> LoadResult:
    """Validated OSHA cases of one landing day (``*.jsonl``), one document per inspection."""
    records, rejects = load_records(day_dir, CASE_RULES, {".jsonl": read_json_lines})
    out = build_documents(DATASET, records, render_case, case_title)
    out.rejects[:0] = rejects
    return out
