"""Mapping files: validation with one-line errors, header checks, row rejects, each record kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
from codex_pipeline.sources.mapping.reader import scope_items
from codex_pipeline.sources.mapping.schema import MappingError, ScopeRule, parse_mapping
from codex_pipeline.sources.permits import MAPPINGS_DIR, calgary_mapping, check_permit_mapping

PERMIT = """codex_mapping: 1
dataset: town_permits
kind: permit
title: Town permit
id: Permit No
fields:
  jurisdiction: {value: "Town of Example"}
  status: {column: Status, vocabulary: {I: Issued, F: Final}, unknown: reject}
  permit_type: Type
  applied_date: {column: Applied, formats: ["%m/%d/%Y", "%Y-%m-%d"]}
  address: {columns: [No, Street], join: " "}
  applicant: {column: Owners, separator: ";"}
  summary: Work
details:
  Parcel: Parcel
scope: {column: Work, separator: "*", mode: bullets}
conditions: {column: Conditions, separator: "|"}
coordinates: {x: E, y: N, crs: "EPSG:3857"}
empty_values: ["", "N/A"]
drop: [Internal]
"""
HEADER = "Permit No,Status,Type,Applied,No,Street,Owners,Work,Parcel,Conditions,E,N,Internal"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def day(tmp_path: Path, name: str, text: str) -> Path:
    d = tmp_path / "day"
    write(d, name, text)
    return d


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("kind: permit", "kind: permits"),
         "key 'kind': Input should be 'permit', 'event' or 'record'; fix: use one of the values named"),
        (lambda t: t.replace("title: Town permit", "title: Town permit\ncolour: blue"),
         "key 'colour': Extra inputs are not permitted; fix: remove it or fix its spelling"),
        (lambda t: t.replace("id: Permit No\n", ""), "key 'id': Field required; fix: add it"),
        (lambda t: t.replace("  permit_type: Type\n", ""),
         "key 'fields.permit_type' is required for kind permit; fix: map it to a column"),
        (lambda t: t.replace("  summary: Work", "  sumary: Work"), "key 'fields.sumary': not a permit field"),
        (lambda t: t.replace("applied_date: {column: Applied,", "applied_date: {value: x, column: Applied,"),
         "key 'fields.applied_date': Value error, give exactly one of column, columns, value, block (got column, value)"),
        (lambda t: t.replace('"EPSG:3857"', '"web mercator"'), "key 'coordinates.crs': 'web mercator' is not a CRS code"),
        (lambda t: t.replace('"%m/%d/%Y", ', '"mm/dd/yyyy", '), "key 'fields.applied_date.formats': 'mm/dd/yyyy' has no % directive"),
        (lambda t: t.replace("fields:", "fields: ["), "not valid YAML at line"),
        (lambda t: t.replace("dataset: town_permits", "dataset: Town Permits"), "key 'dataset': String should match pattern"),
    ],
)
def test_an_invalid_mapping_fails_in_one_line_naming_the_key_and_the_fix(tmp_path: Path, edit, message: str) -> None:
    path = write(tmp_path, "m.yaml", edit(PERMIT))
    with pytest.raises(MappingError) as err:
        load_mapped_dataset(path)
    text = str(err.value)
    assert "\n" not in text and re.match(rf"mapping {re.escape(str(path))}(, line \d+)?: ", text) and message in text, text


def test_a_header_that_does_not_match_rejects_the_file_naming_the_columns(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", PERMIT))
    bad_header = HEADER.replace(",Parcel", "").replace("Internal", "Internal,Extra")
    res = md.load_day(day(tmp_path, "p.csv", bad_header + "\nA-1,I,New,01/02/2026,1,Main St,X,Y,C,1,1,z,q\n"))
    assert res.documents == []
    (rej,) = res.rejects
    assert rej.source_file == "p.csv"
    assert rej.reason == ("not a Town permit export: missing column(s) 'Parcel'; unexpected column(s) 'Extra' "
                          "(map them or list them under drop: in the mapping)")


def test_rows_map_onto_a_permit_and_bad_rows_are_rejected_naming_row_column_rule(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", PERMIT))
    rows = [
        'A-1,I,New,01/02/2026,12,Main  St,"Ann ; Bo",Renovate the house.*New deck*New porch,P-7,Fence required|Inspect,'
        "-13706475.5986,6401134.8813,secret",
        "A-2,X,New,01/02/2026,14,Main St,Cy,Roof,N/A,,,,",  # status not in the vocabulary
        "A-3,F,New,2026-13-45,16,Main St,Di,Roof,,,,,",  # a date no format reads
        "A-4,F,New,2026-01-03,N/A,,Ed,Roof,,,abc,1,",  # no address, coordinates not numbers
    ]
    res = md.load_day(day(tmp_path, "p.csv", "\n".join([HEADER, *rows]) + "\n"))
    (doc,) = res.documents
    assert doc.doc_id == "urn:aprs:town_permits:A-1"
    p = doc.payload
    assert p["status"] == "Issued" and p["applied_date"] == "2026-01-02" and p["address"] == "12 Main St"
    assert p["applicant"] == "Ann; Bo" and p["details"] == {"Parcel": "P-7"}
    assert p["summary"] == "Renovate the house."  # the lead; the bullets are scope sections
    assert [s["text"] for s in p["scope_sections"]] == ["New deck", "New porch"]
    assert [c["text"] for c in p["conditions"]] == ["Fence required", "Inspect"]
    assert (p["latitude"], p["longitude"]) == (49.7386374, -123.1273652)  # Web Mercator -> WGS 84
    assert "secret" not in doc.text and "Parcel: P-7" in doc.text
    reasons = {r.record_ref: r.reason for r in res.rejects}
    assert reasons["row 3, Permit No='A-2'"] == "column 'Status': 'X' is not in fields.status.vocabulary (add it there, or set unknown: keep)"
    assert reasons["row 4, permit_number='A-3'"] == "field 'applied_date' (column 'Applied') fails 'required date' (got '2026-13-45')"
    assert reasons["row 5, Permit No='A-4'"] == "columns 'E'/'N': ('abc', '1') are not two numbers (coordinates)"


def test_json_array_and_json_lines_exports(tmp_path: Path) -> None:
    text = PERMIT.replace("title: Town permit", "title: Town permit\nformat: json")
    md = load_mapped_dataset(write(tmp_path, "m.yaml", text))
    row = dict(zip(HEADER.split(","), ["A-1", "F", "New", "01/02/2026", 3, "Elm St", ["Ann", "Bo"], "Roof", None, None,
                                        None, None, None]))
    res = md.load_day(day(tmp_path, "p.json", json.dumps([row, 7])))
    assert [d.record_id for d in res.documents] == ["A-1"]
    assert res.documents[0].payload["applicant"] == "Ann; Bo" and res.documents[0].payload["address"] == "3 Elm St"
    assert [(r.record_ref, r.reason) for r in res.rejects] == [("item 1", "expected a JSON object, got int")]


RECORD = """codex_mapping: 1
dataset: street_trees
kind: record
title: street tree inventory
format: jsonl
id: tree_id
fields:
  species: species
  planted: {column: planted, type: date, formats: ["%d.%m.%Y"]}
  height_m: {column: height, type: number}
  stewards: {column: stewards, separator: "|", type: "list[string]"}
coordinates: {x: x, y: y}
view: {label: Street tree, title: species}
"""


def test_a_record_mapping_renders_the_key_value_view(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", RECORD))
    lines = [{"tree_id": "T-1", "species": "Acer  rubrum", "planted": "03.04.2019", "height": "7.5", "stewards": "A | B",
              "x": -122.3, "y": 47.6},
             {"tree_id": "T-2", "species": "Oak", "planted": "n/a", "height": 3, "stewards": "", "x": None, "y": None}]
    res = md.load_day(day(tmp_path, "t.jsonl", "\n".join(json.dumps(x) for x in lines)))
    (doc,) = res.documents
    assert doc.text == ("## Street tree T-1 — Acer rubrum\n- **record_id**: T-1\n- **species**: Acer rubrum\n- **planted**: 2019-04-03\n"
                        "- **height_m**: 7.5\n- **stewards**: A; B\n- **latitude**: 47.6\n- **longitude**: -122.3")
    (rej,) = res.rejects
    assert rej.reason == "field 'planted' (column 'planted') fails 'date' (got 'n/a')" and rej.record_ref.startswith("line 2")


def test_calgary_is_a_mapping_file() -> None:
    calgary = calgary_mapping()
    assert calgary.dataset == "permit_signals" and calgary.id == "permitnum"
    check_permit_mapping(calgary, "calgary")
    assert len(calgary.columns()) == 36  # every column of the export is mapped or dropped


@pytest.mark.parametrize("path", sorted(MAPPINGS_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_mappings_load(path: Path) -> None:
    md = load_mapped_dataset(path)
    assert md.mapping.kind == "permit" and len(md.digest) == 8


def test_scope_modes() -> None:
    assert scope_items("Lead*A*B", ScopeRule(column="c", separator="*", mode="bullets")) == (
        "Lead", [{"title": "A", "text": "A"}, {"title": "B", "text": "B"}])
    assert scope_items("a, b", ScopeRule(column="c", mode="items", codes={"A": "Alpha"}))[1] == [
        {"title": "Alpha", "code": "a"}, {"title": "b"}]
    assert scope_items("Some prose, with commas", ScopeRule(column="c", mode="code_list"))[1] == []


def test_the_digest_follows_the_content_not_the_comments(tmp_path: Path) -> None:
    a = load_mapped_dataset(write(tmp_path, "a.yaml", PERMIT))
    b = load_mapped_dataset(write(tmp_path, "b.yaml", "# a comment\n" + PERMIT))
    c = load_mapped_dataset(write(tmp_path, "c.yaml", PERMIT.replace("N/A", "NA")))
    assert a.digest == b.digest != c.digest
    assert parse_mapping(PERMIT, "x").columns()[0] == "Permit No"


NESTED = """codex_mapping: 1
dataset: city_events
kind: record
title: city event feed
format: json
id: event id
id_clean: true
fields:
  name: name
  starts: {column: starts_at, type: date, formats: [iso]}
  fee: {column: fee, type: number, strip: "$,"}
  place: location.name
coordinates: {x: location.lon, y: location.lat}
unexpected_columns: reject
"""


def test_json_exports_with_nested_objects_absent_keys_iso_dates_money_and_messy_ids(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", NESTED))
    items = [
        {"event id": "2026/EV 001", "name": "Market", "starts_at": "2026-11-24T17:30:00-08:00", "fee": "$1,250.50",
         "location": {"name": "Pier 3", "lat": 47.6, "lon": -122.3}},
        {"event id": "EV-2", "name": "Parade"},  # keys left out of a JSON record are nulls, not missing columns
    ]
    res = md.load_day(day(tmp_path, "e.json", json.dumps(items)))
    assert res.rejects == []
    first, second = res.documents
    assert first.record_id == "2026-EV-001"
    assert first.payload | {} == {"record_id": "2026-EV-001", "name": "Market", "starts": "2026-11-24", "fee": 1250.5,
                                  "place": "Pier 3", "latitude": 47.6, "longitude": -122.3}
    assert second.payload == {"record_id": "EV-2", "name": "Parade"}
    res = md.load_day(day(tmp_path, "e.json", json.dumps([items[1] | {"extra": 1}])))
    assert [r.reason for r in res.rejects] == [
        "not a city event feed export: unexpected column(s) 'extra' (map them or list them under drop: in the mapping)"]


def test_semicolon_csv_in_cp1252(tmp_path: Path) -> None:
    text = RECORD.replace("format: jsonl", 'format: csv\ndelimiter: ";"\nencoding: cp1252').replace(
        "coordinates: {x: x, y: y}\n", "").replace("type: number}", 'type: number, strip: ".", decimal: ","}')
    md = load_mapped_dataset(write(tmp_path, "m.yaml", text))
    d = tmp_path / "day"
    d.mkdir()
    (d / "t.csv").write_bytes("tree_id;species;planted;height;stewards\nT-1;Érable;03.04.2019;7,5;A\n".encode("cp1252"))
    res = md.load_day(d)
    (doc,) = res.documents
    assert doc.payload["species"] == "Érable" and doc.payload["planted"] == "2019-04-03"
    assert doc.payload["height_m"] == 7.5
    (d / "t.csv").write_bytes(b"tree_id,species\nT-1,x\n")
    assert md.load_day(d).rejects[0].reason.endswith("(the header looks ','-delimited: set delimiter: \",\" in the mapping)")


EVENTS = """codex_mapping: 1
dataset: road_closures
kind: event
title: road closure feed
id: Closure ID
fields:
  event_type: {value: road_closure}
  title: Title
  occurred_at: {column: Start, formats: ["%m/%d/%Y %I:%M %p"], timezone: America/Vancouver}
  ended_at: {column: End, formats: ["%m/%d/%Y %I:%M %p"], timezone: America/Vancouver}
  severity: {column: Impact, vocabulary: {Minor: low, Major: high}, unknown: reject}
  location_name: Street
  source: {value: "City of Example traffic"}
  tags: {column: Tags, separator: ";"}
  description: Details
"""


def test_an_event_mapping_reads_local_times_into_the_event_schema(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", EVENTS))
    csv_text = ("Closure ID,Title,Start,End,Impact,Street,Tags,Details\n"
                "RC-1,Water main repair,11/24/2026 09:30 PM,11/25/2026 06:00 AM,Major,Main St,water; night,"
                "\"Both lanes closed.\n\nDetour via 2nd Ave.\"\n"
                "RC-2,Paving,11/24/2026 08:00 AM,11/24/2026 07:00 AM,Minor,Elm St,,\n")
    res = md.load_day(day(tmp_path, "c.csv", csv_text))
    (doc,) = res.documents
    assert doc.doc_id == "urn:aprs:road_closures:RC-1"
    assert doc.payload["occurred_at"] == "2026-11-24T21:30:00-08:00" and doc.payload["severity"] == "high"
    assert doc.payload["tags"] == ["water", "night"]
    assert doc.text.endswith("Source: City of Example traffic\nTags: water; night\n\nBoth lanes closed.\n\nDetour via 2nd Ave.")
    assert [r.reason for r in res.rejects] == ["record check fails: ended_at is not before occurred_at"]
    with pytest.raises(MappingError, match="key 'fields.occurred_at': Value error, unknown time zone 'Mars/Base'"):
        load_mapped_dataset(write(tmp_path, "b.yaml", EVENTS.replace("America/Vancouver}\n  ended", "Mars/Base}\n  ended")))
    with pytest.raises(MappingError, match="key 'fields.source' is required for kind event"):
        load_mapped_dataset(write(tmp_path, "c.yaml", EVENTS.replace('  source: {value: "City of Example traffic"}\n', "")))


def test_a_crs_proj_does_not_know_rejects_rows_naming_it(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", PERMIT.replace('"EPSG:3857"', '"EPSG:999999"')))  # well formed
    row = "A-1,I,New,01/02/2026,12,Main St,Ann,Roof,P-7,,-13706475.5986,6401134.8813,x"
    (rej,) = md.load_day(day(tmp_path, "p.csv", f"{HEADER}\n{row}\n")).rejects
    assert rej.record_ref == "row 2, Permit No='A-1'"
    assert rej.reason.startswith("coordinates.crs: ") and "fix the mapping" in rej.reason


CRANES = """codex_mapping: 1
dataset: cranes
kind: record
title: crane permit
id: ID
fields:
  cost: {column: COST, type: number}
  applied: {column: INDATE, type: date}
"""


def test_rejects_say_which_mapping_key_reads_the_value(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", CRANES))
    res = md.load_day(day(tmp_path, "c.csv", 'ID,COST,INDATE\nC-1,"$20,000.00",2026-11-20\nC-2,15,11/20/2026\n'))
    reasons = {r.record_ref: r.reason for r in res.rejects}
    assert reasons["row 2, record_id='C-1'"].endswith("; fix: strip: \"$,\" under fields.cost")
    assert reasons["row 3, record_id='C-2'"].endswith("; fix: formats: ['%m/%d/%Y'] (or '%d/%m/%Y', as the export "
                                                      "writes dates) under fields.applied")


def test_a_padded_header_name_is_pointed_out(tmp_path: Path) -> None:
    md = load_mapped_dataset(write(tmp_path, "m.yaml", CRANES))
    res = md.load_day(day(tmp_path, "c.csv", "ID, COST ,INDATE\nC-1,1,2026-11-20\nC-2,2,2026-11-21\n"))
    (rej,) = res.rejects
    assert rej.rows == 2 and rej.reason == (
        "not a crane permit export: missing column(s) 'COST'; unexpected column(s) ' COST ' (the header pads names "
        "with spaces: ' COST '; write the names so in the mapping, spaces included) (all 2 rows of the file rejected "
        "with it)")
