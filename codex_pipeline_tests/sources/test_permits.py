"""permit_signals source: native schema with nested objects, the Calgary CSV mapping, docs in sync."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from codex_pipeline.sources.permits import (
    PERMIT_RULES,
    calgary_record,
    calgary_scope_items,
    load_permits_day,
    render_permit,
)
from codex_pipeline.sources.records import RawRecord
from codex_pipeline_tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "datasets" / "permit_signals.md"
FIX = FIXTURES / "permit_signals"
CALGARY_HEADER = (FIX / "calgary.csv").read_text().splitlines()[0]


def native() -> list[dict]:
    return [json.loads(x) for x in (FIX / "permits.jsonl").read_text().splitlines()]


def write_day(tmp_path: Path, files: dict[str, str]) -> Path:
    day = tmp_path / "2026-11-24"
    day.mkdir(exist_ok=True)
    for name, content in files.items():
        (day / name).write_text(content)
    return day


def test_fixture_day_reads_both_formats_and_rejects_bad_records() -> None:
    res = load_permits_day(FIX)
    ids = [d.record_id for d in res.documents]
    assert ids == ["BP2026-21904", "BP2026-22103", "BP2026-22201", "PRDEM2026-0093", "PRRES2026-1187"]
    assert all(d.doc_id == f"urn:aprs:permit_signals:{d.record_id}" for d in res.documents)
    for doc in res.documents:
        r = render_permit(doc.payload)
        assert (doc.text, doc.blocks) == (r.text, r.parts)  # the scope / condition spans travel with the text
    reasons = {(r.source_file, r.record_ref): r.reason for r in res.rejects}
    assert reasons == {
        ("calgary.csv", "row 5, permit_number='BP2026-22230'"):
            "field 'applied_date' (column 'applieddate') fails 'required date' (got '2026-11-31')",
        ("permits.jsonl", "line 3, permit_number='PRRES2026-1204'"):
            "scope_sections[0]: field 'title' fails 'required string' (got null)",
    }


def test_calgary_row_maps_onto_the_native_schema() -> None:
    row = dict(zip(CALGARY_HEADER.split(","), [""] * 36))
    row.update(permitnum="BP2013-09623", statuscurrent="Completed", applieddate="2013-07-08T00:00:00.000",
               issueddate="2013-07-23T00:00:00.000", completeddate="", permittype="Single Construction Permit",
               permitclass="1106 - Single Family House", workclass="New", description="SFD,FIREPLACE,GARAGE,DECK,PORCH,",
               applicantname="VANITY  HOMES", contractorname="", housingunits="1", estprojectcost="246089.8", totalsqft="1678",
               originaladdress="248 SADDLELAKE DR NE", communityname="SADDLE RIDGE", latitude="51.12736095642616",
               longitude="-113.93417287574859")
    assert calgary_record(row) == {
        "permit_number": "BP2013-09623", "jurisdiction": "City of Calgary, AB", "status": "Completed",
        "permit_type": "Single Construction Permit", "permit_class": "1106 - Single Family House", "work_class": "New",
        "applied_date": "2013-07-08", "issued_date": "2013-07-23", "applicant": "VANITY HOMES", "estimated_cost": 246089.8,
        "floor_area_sqft": 1678, "housing_units": 1, "address": "248 SADDLELAKE DR NE", "community": "SADDLE RIDGE",
        "latitude": 51.12736095642616, "longitude": -113.93417287574859, "description": "SFD,FIREPLACE,GARAGE,DECK,PORCH,",
        "scope_sections": [{"title": "Single-family dwelling", "code": "SFD"}, {"title": "Fireplace", "code": "FIREPLACE"},
                           {"title": "Garage", "code": "GARAGE"}, {"title": "Deck", "code": "DECK"},
                           {"title": "Porch", "code": "PORCH"}],
    }


@pytest.mark.parametrize(
    ("description", "titles"),
    [
        ("SFD,FIREPLACE,GARAGE,DECK,PORCH,", ["Single-family dwelling", "Fireplace", "Garage", "Deck", "Porch"]),
        ("SEMI-D,BSMT-DEV,PORCH,SSuite", ["Semi-detached dwelling", "Basement development", "Porch", "Secondary suite"]),
        ("SFD,GARAGE,CARPORT2,PORCH,", ["Single-family dwelling", "Garage", "CARPORT2", "Porch"]),  # unknown code kept
        ("Addition, Deck, Improvements", ["Addition", "Deck", "Improvements"]),
        ("Secondary Suite", ["Secondary suite"]),
        ("Interior alterations and a change of use for a new tenant, Saffron Lane Bakery, located on the main floor.", []),
        ("A new, two storey, 4 unit rowhouse, Part 9, Group C occupancy", []),
        ("Rockyview General Hospital Units 47, 48, 57, 58, 59 Med Room Upgrades", []),
        ("", []),
        (None, []),
    ],
)
def test_calgary_description_scope_items(description, titles) -> None:
    assert [s["title"] for s in calgary_scope_items(description)] == titles


def test_bad_calgary_rows_are_rejected_with_the_column(tmp_path: Path) -> None:
    rows = (FIX / "calgary.csv").read_text().splitlines()
    bad_cost = rows[1].replace("298410.55", "approx 300k")
    short = "BP2026-1,Issued Permit"
    extra = rows[2] + ",surplus"
    day = write_day(tmp_path, {"c.csv": "\n".join([rows[0], bad_cost, short, extra, rows[3]]) + "\n"})
    res = load_permits_day(day)
    assert [d.record_id for d in res.documents] == ["BP2026-22201"]
    reasons = sorted(r.reason for r in res.rejects)
    assert "field 'estimated_cost' (column 'estprojectcost') fails 'number' (got 'approx 300k')" in reasons
    # a short row is refused as read (it used to land its missing cells as nulls), a long one too
    assert [r.record_ref for r in res.rejects if "cell(s)" in r.reason] == ["row 3", "row 4"]
    assert any(r.startswith("2 cell(s), the header has 36: 34 cell(s) missing; fix:") for r in reasons)
    assert any(r.startswith("37 cell(s), the header has 36: 1 cell(s) beyond the header; fix:") for r in reasons)


def test_csv_without_the_calgary_columns_is_rejected_as_a_file(tmp_path: Path) -> None:
    res = load_permits_day(write_day(tmp_path, {"other.csv": "permit,status\nX-1,Issued\n"}))
    (rej,) = res.rejects
    assert rej.source_file == "other.csv" and rej.reason.startswith("not a Calgary permit export: missing column(s) 'permitnum'")


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda p: p.update(issued_date="2026-01-01"), "record check fails: applied_date <= issued_date <= completed_date"),
        (lambda p: p["conditions"][0].update(condition_id="C-1"), "record check fails: condition_id given for all conditions or for none"),
        (lambda p: p.update(conditions=[{"condition_id": "C 1", "text": "x"}]), "conditions[0]: field 'condition_id' fails 'key"),
        (lambda p: p.update(conditions=[{"condition_id": "C1", "text": "x"}, {"condition_id": "C1", "text": "y"}]),
         "field 'conditions' fails 'condition_id values unique'"),
        (lambda p: p["scope_sections"][0].update(notes="x"), "scope_sections[0]: unknown field(s) 'notes'"),
        (lambda p: p.update(estimated_cost="186,500"), "field 'estimated_cost' fails 'number'"),
        (lambda p: p.update(permit_number="PR 1"), "field 'permit_number' fails 'permit number"),
    ],
)
def test_native_rules(tmp_path: Path, mutate, reason: str) -> None:
    good = native()[1]  # PRRES2026-1187: two scopes, conditions without ids
    bad = copy.deepcopy(good)
    bad["permit_number"] = "PRX-1"
    mutate(bad)
    res = load_permits_day(write_day(tmp_path, {"p.jsonl": json.dumps(good) + "\n" + json.dumps(bad) + "\n"}))
    assert [d.record_id for d in res.documents] == ["PRRES2026-1187"]
    (rej,) = res.rejects
    assert reason in rej.reason, rej.reason


def test_canonical_text_blocks() -> None:
    p = native()[0]
    r = render_permit(p)
    assert [(x.kind, x.key) for x in r.parts] == [("envelope", ""), ("scope", "1"), ("condition", "D-1")]
    assert r.text[r.parts[2].start:r.parts[2].end].startswith("Permit PRDEM2026-0093 — condition D-1 (environmental; open)\n")
    assert r.parts[2].meta == {"condition_id": "D-1", "category": "environmental", "status": "open"}


def test_docs_carry_the_schema_and_a_valid_example() -> None:
    text = DOC.read_text()
    assert PERMIT_RULES.markdown_tables() in text
    example = json.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])
    valid, rejects = PERMIT_RULES.validate([RawRecord("doc", "ex", example)])
    assert valid and not rejects
    assert render_permit(example).text == text.split("```text\n", 1)[1].split("\n```", 1)[0]
