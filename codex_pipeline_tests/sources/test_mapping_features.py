"""Mapping features users' exports need: repeated blocks, duplicates last / merge, filters, point
columns, epoch dates, optional fields. Pure parts here; the raw step's accounting through real
Dagster is in ``codex_pipeline_tests/defs/test_mapping_features_assets.py``."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codex_pipeline.sources.mapping.check import check_file
from codex_pipeline.sources.mapping.duplicates import order_value, settle
from codex_pipeline.sources.mapping.epochs import parse_when
from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
from codex_pipeline.sources.mapping.points import parse_point
from codex_pipeline.sources.mapping.schema import DuplicatesRule, MappingError, OrderRule, parse_mapping
from codex_pipeline.sources.records import RawRecord
from codex_pipeline.sources.tally import counting_rows

HEAD = """codex_mapping: 1
dataset: street_permits
kind: record
title: street use permit
id: Permit
"""


def _dataset(tmp_path: Path, body: str):  # type: ignore[no-untyped-def]
    p = tmp_path / "m.yaml"
    p.write_text(HEAD + body)
    return load_mapped_dataset(p)


def _load(tmp_path: Path, body: str, files: dict[str, str]):  # type: ignore[no-untyped-def]
    md = _dataset(tmp_path, body)
    d = tmp_path / "day"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    with counting_rows() as tally:
        res = md.load_day(d)
    return res, tally


# -- block: ------------------------------------------------------------------------------------

BLOCK = """fields:
  contractors:
    block: {pattern: "CONTRACTOR_{n}_{part}", first: 1, last: 3, parts: [NAME, TYPE]}
"""
BLOCK_HEADER = "Permit," + ",".join(f"CONTRACTOR_{n}_{p}" for n in (1, 2, 3) for p in ("NAME", "TYPE"))


def test_repeated_blocks_become_one_list_of_objects_skipping_empty_blocks(tmp_path: Path) -> None:
    res, _ = _load(tmp_path, BLOCK, {"p.csv": BLOCK_HEADER + "\nP-1,Acme,General,,,Bolt Ltd, Electrical \nP-2,,,,,,\n"})
    docs = {d.record_id: d.payload for d in res.documents}
    assert docs["P-1"]["contractors"] == [{"name": "Acme", "type": "General"}, {"name": "Bolt Ltd", "type": "Electrical"}]
    assert "contractors" not in docs["P-2"] and not res.rejects


def test_a_block_names_every_column_so_a_missing_one_rejects_the_file(tmp_path: Path) -> None:
    md = _dataset(tmp_path, BLOCK)
    assert md.mapping.columns()[1:] == BLOCK_HEADER.split(",")[1:]
    res, _ = _load(tmp_path, BLOCK, {"p.csv": BLOCK_HEADER.rsplit(",", 1)[0] + "\nP-1,a,b,c,d,e\n"})
    assert "missing column(s) 'CONTRACTOR_3_TYPE'" in res.rejects[0].reason


def test_a_block_into_a_permit_string_field_joins_its_blocks() -> None:
    from codex_pipeline.sources.mapping.blocks import block_value
    from codex_pipeline.sources.mapping.schema import BlockRule

    rule = BlockRule(pattern="C{n}_{part}", last=2, parts={"name": "N", "city": "CITY"})
    row = {"C1_N": "Acme", "C1_CITY": "Calgary", "C2_N": "Bolt", "C2_CITY": None}
    assert block_value(rule, row.get, "string") == "Acme, Calgary; Bolt"
    assert block_value(rule, row.get, "list[string]") == ["Acme, Calgary", "Bolt"]
    assert block_value(rule, {}.get, "list[object]") is None


@pytest.mark.parametrize(("block", "message"), [
    ('{pattern: "C_{part}", last: 2, parts: [A]}', "needs both {n} and {part}"),
    ('{pattern: "C_{n}_{part}", first: 3, last: 2, parts: [A]}', "last (2) is before first (3)"),
    ('{pattern: "C_{n}_{part}", last: 2, parts: []}', "block parts is empty"),
])
def test_a_bad_block_fails_the_mapping_in_one_line(block: str, message: str) -> None:
    with pytest.raises(MappingError, match=r"key 'fields.c.block'.*" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("{", r"\{").replace("}", r"\}")):
        parse_mapping(HEAD + f"fields:\n  c: {{block: {block}}}\n", "m.yaml")


# -- duplicates: ---------------------------------------------------------------------------------

DUPS = """fields:
  status: Status
  address: Address
  note: Note
duplicates: {mode: %s, order: {column: Seq, type: integer}%s}
"""
DUP_CSV = ("Permit,Status,Address,Note,Seq\n"
           "P-1,open,1 Main St,first,1\n"
           "P-2,open,9 Elm St,,1\n"
           "P-1,closed,3 Main St,,3\n"
           "P-1,review,2 Main St,middle,2\n")


def test_last_wins_by_the_order_column_and_the_others_count_as_merged(tmp_path: Path) -> None:
    res, tally = _load(tmp_path, DUPS % ("last", ""), {"a.csv": DUP_CSV})
    docs = {d.record_id: d.payload for d in res.documents}
    assert docs["P-1"] == {"record_id": "P-1", "status": "closed", "address": "3 Main St"}
    assert not res.rejects and tally["a.csv"] == 4 and tally.merged == {"a.csv": 2}


def test_merge_keeps_later_values_fills_gaps_and_unions(tmp_path: Path) -> None:
    res, tally = _load(tmp_path, DUPS % ("merge", ", union: [address]"), {"a.csv": DUP_CSV})
    p1 = next(d.payload for d in res.documents if d.record_id == "P-1")
    assert p1 == {"record_id": "P-1", "status": "closed", "address": "1 Main St; 2 Main St; 3 Main St", "note": "middle"}
    assert tally.merged == {"a.csv": 2}


def test_ties_go_by_file_order_across_files(tmp_path: Path) -> None:
    body = DUPS.replace(", order: {column: Seq, type: integer}", "").replace("  note: Note\n", "  note: Note\ndrop: [Seq]\n")
    res, tally = _load(tmp_path, body % ("last", ""), {
        "a.csv": "Permit,Status,Address,Note,Seq\nP-1,open,1 Main St,,\n",
        "b.csv": "Permit,Status,Address,Note,Seq\nP-1,closed,1 Main St,,\n"})
    (doc,) = res.documents
    assert doc.payload["status"] == "closed" and doc.source_file == "b.csv" and tally.merged == {"a.csv": 1}


def test_reject_mode_stays_the_default(tmp_path: Path) -> None:
    res, tally = _load(tmp_path, "fields:\n  status: Status\n", {"a.csv": "Permit,Status\nP-1,open\nP-1,closed\n"})
    assert [d.payload["status"] for d in res.documents] == ["open"]
    assert res.rejects[0].reason.startswith("duplicate record id 'P-1'") and not tally.merged


def test_a_bad_order_value_rejects_its_row_naming_the_column(tmp_path: Path) -> None:
    res, _ = _load(tmp_path, DUPS % ("last", ""), {"a.csv": DUP_CSV.replace("P-2,open,9 Elm St,,1", "P-2,open,9 Elm St,,x")})
    (rej,) = res.rejects
    assert rej.record_ref.startswith("row 3") and "column 'Seq'" in rej.reason and "(duplicates.order)" in rej.reason


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("duplicates: {order: {column: Seq}}", "order and union need mode: last or merge"),
    ("duplicates: {mode: last, union: [status]}", "union needs mode: merge"),
    ("duplicates: {mode: merge, union: [nope]}", "duplicates.union names 'nope'"),
    ("duplicates: {mode: newest}", "Input should be 'reject', 'last' or 'merge'"),
])
def test_bad_duplicates_fail_the_mapping(yaml_text: str, message: str) -> None:
    with pytest.raises(MappingError, match=message.replace("(", r"\(")):
        parse_mapping(HEAD + "fields:\n  status: Status\n" + yaml_text + "\n", "m.yaml")


@given(st.lists(st.tuples(st.sampled_from("ABC"), st.one_of(st.none(), st.integers(0, 3)), st.sampled_from("xy")),
                max_size=12), st.sampled_from(["last", "merge"]))
def test_settle_keeps_one_record_per_id_and_counts_every_other_as_merged(
        rows: list[tuple[str, int | None, str]], mode: str) -> None:
    recs = [RawRecord(f"{f}.csv", f"row {i}", {"record_id": k, "v": str(i)}, o) for i, (k, o, f) in enumerate(rows)]
    out = settle(recs, DuplicatesRule(mode=mode), lambda r: r.data["record_id"])  # type: ignore[arg-type]
    assert sorted(r.data["record_id"] for r in out.kept) == sorted({k for k, _, _ in rows})
    assert len(out.kept) + sum(out.merged.values()) == len(rows) and not out.rejects
    for r in out.kept:  # the winner is the highest order (None lowest), ties by position
        group = [(o is not None, o or 0, i) for i, (k, o, _) in enumerate(rows) if k == r.data["record_id"]]
        assert r.data["v"] == str(max(group)[2])


def test_order_values() -> None:
    assert order_value(OrderRule(column="d", type="date", formats=("%d/%m/%Y",)), "03/02/2024") == dt.date(2024, 2, 3)
    assert order_value(OrderRule(column="d", type="datetime", formats=("epoch_ms",)), "0") == dt.datetime(1970, 1, 1)
    assert order_value(OrderRule(column="d"), "  ") is None
    with pytest.raises(ValueError, match="'abc' is not a number"):
        order_value(OrderRule(column="d", type="number"), "abc")


# -- filters: ------------------------------------------------------------------------------------

FILTERS = """fields:
  status: Status
filters:
  - {column: Kind, in: [Building, "Trade "], ignore_case: true}
  - {column: Status, not_in: [cancelled]}
  - {column: Permit, regex: "^P-"}
drop: [Kind]
"""


def test_filters_leave_rows_out_counted_as_filtered_not_rejected(tmp_path: Path) -> None:
    csv = ("Permit,Status,Kind\nP-1,open,building\nP-2,open,Demolition\nP-3,cancelled,Trade\nX-4,open,Trade\n"
           "P-5,open,TRADE\n")
    res, tally = _load(tmp_path, FILTERS, {"a.csv": csv})
    assert [d.record_id for d in res.documents] == ["P-1", "P-5"]
    assert not res.rejects and tally.filtered == {"a.csv": 3} and tally["a.csv"] == 5


@pytest.mark.parametrize(("rule", "message"), [
    ("{column: K}", "give exactly one of equals, in, not_in, regex (got none)"),
    ("{column: K, equals: a, in: [b]}", "(got equals, in)"),
    ("{column: K, regex: '('}", "does not compile"),
])
def test_a_bad_filter_fails_the_mapping(rule: str, message: str) -> None:
    with pytest.raises(MappingError, match=r"key 'filters.0'.*" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_mapping(HEAD + f"fields:\n  status: Status\nfilters: [{rule}]\n", "m.yaml")


# -- coordinates.point ---------------------------------------------------------------------------

@pytest.mark.parametrize(("cell", "xy"), [
    ("POINT (-113.93 51.12)", (-113.93, 51.12)),
    ("point(-113.93 51.12)", (-113.93, 51.12)),
    ("POINT Z (1 2 3)", (1.0, 2.0)),
    ("(51.12, -113.93)", (-113.93, 51.12)),
    ('{"type": "Point", "coordinates": [-113.93, 51.12]}', (-113.93, 51.12)),
    ("{'type': 'Point', 'coordinates': [-113.93417287574859, 51.12736095642616]}", (-113.93417287574859, 51.12736095642616)),
    ({"type": "Point", "coordinates": [1, 2]}, (1.0, 2.0)),
    ("POINT EMPTY", None),
])
def test_the_three_point_shapes(cell: object, xy: tuple[float, float] | None) -> None:
    assert parse_point(cell) == xy


@pytest.mark.parametrize("cell", ["POINT (1)", "POINT (1 2", "LINESTRING (1 2, 3 4)", "(1; 2)", "51.1 -113.9",
                                  '{"type": "MultiPoint", "coordinates": [[1, 2]]}', '{"type": "Point"}',
                                  '{"type": "Point", "coordinates": ["1", 2]}', "POINT (nan 1)", "{broken", "(1e999, 2)"])
def test_anything_else_is_not_a_point(cell: str) -> None:
    with pytest.raises(ValueError):
        parse_point(cell)


@given(st.floats(-180, 180), st.floats(-90, 90))
def test_points_round_trip(lon: float, lat: float) -> None:
    for cell in (f"POINT ({lon!r} {lat!r})", f"({lat!r}, {lon!r})", json.dumps({"type": "Point", "coordinates": [lon, lat]})):
        got = parse_point(cell)
        assert got is not None and math.isclose(got[0], lon) and math.isclose(got[1], lat)


def test_a_point_column_fills_latitude_longitude_and_a_bad_point_rejects_the_row(tmp_path: Path) -> None:
    body = "fields:\n  status: Status\ncoordinates: {point: Location}\n"
    csv = 'Permit,Status,Location\nP-1,open,"(51.05, -114.07)"\nP-2,open,POINT (-114.1 51.2)\nP-3,open,\nP-4,open,51 N\n'
    res, _ = _load(tmp_path, body, {"a.csv": csv})
    docs = {d.record_id: d.payload for d in res.documents}
    assert (docs["P-1"]["latitude"], docs["P-1"]["longitude"]) == (51.05, -114.07)
    assert (docs["P-2"]["latitude"], docs["P-2"]["longitude"]) == (51.2, -114.1) and "latitude" not in docs["P-3"]
    (rej,) = res.rejects
    assert rej.record_ref.startswith("row 5") and rej.reason.startswith("column 'Location': '51 N' is not a point")


def test_point_and_x_y_are_exclusive() -> None:
    with pytest.raises(MappingError, match="give either point or x and y"):
        parse_mapping(HEAD + "coordinates: {point: P, x: X, y: Y}\n", "m.yaml")
    with pytest.raises(MappingError, match="give x and y"):
        parse_mapping(HEAD + "coordinates: {x: X}\n", "m.yaml")


# -- epoch formats ---------------------------------------------------------------------------------

def test_epoch_seconds_and_milliseconds(tmp_path: Path) -> None:
    body = """fields:
  applied: {column: A, type: date, formats: [epoch_ms]}
  seen: {column: S, type: datetime, formats: [epoch_s], timezone: America/Edmonton}
"""
    res, _ = _load(tmp_path, body, {"a.csv": "Permit,A,S\nP-1,1700000000000,1700000000\nP-2,soon,1700000000.5\n"})
    (doc,) = res.documents
    assert doc.payload["applied"] == "2023-11-14" and doc.payload["seen"] == "2023-11-14T15:13:20-07:00"
    assert "field 'applied' (column 'A') fails 'date' (got 'soon')" in res.rejects[0].reason


def test_parse_when() -> None:
    assert parse_when("86400", "epoch_s") == dt.datetime(1970, 1, 2, tzinfo=dt.UTC)
    assert parse_when("-1000", "epoch_ms") == dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
    for bad in ("1e5", "12 34", "", "99999999999999999"):
        with pytest.raises(ValueError):
            parse_when(bad, "epoch_s")


# -- optional: -------------------------------------------------------------------------------------

OPTIONAL = """fields:
  status: Status
  cost: {column: Cost, type: number, optional: true}
  phase: {column: Phase, vocabulary: {A: Alpha}, unknown: reject, optional: true}
"""


def test_an_optional_bad_value_is_nulled_and_noted_the_row_lands(tmp_path: Path) -> None:
    res, tally = _load(tmp_path, OPTIONAL, {"a.csv": "Permit,Status,Cost,Phase\nP-1,open,12.5,A\nP-2,open,lots,Z\n"})
    docs = {d.record_id: d.payload for d in res.documents}
    assert docs["P-1"] == {"record_id": "P-1", "status": "open", "cost": 12.5, "phase": "Alpha"}
    assert docs["P-2"] == {"record_id": "P-2", "status": "open"}
    notes = sorted(res.rejects, key=lambda r: r.reason)
    assert [r.stage for r in notes] == ["note", "note"] and all(r.record_ref == "row 3" for r in notes)
    assert notes[0].reason == ("optional field 'cost' (column 'Cost') fails 'number' (got 'lots'); nulled, the row kept")
    assert notes[1].reason.startswith("optional field 'phase': column 'Phase': 'Z' is not in fields.phase.vocabulary")
    assert tally["a.csv"] == 2


def test_optional_on_a_required_field_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    p.write_text("""codex_mapping: 1
dataset: town_permits
kind: permit
title: Town permit
id: No
fields:
  jurisdiction: {value: Town}
  status: {column: Status, optional: true}
  permit_type: Type
  applied_date: Applied
  address: Address
""")
    with pytest.raises(MappingError, match="fields.status.optional': kind permit requires status"):
        load_mapped_dataset(p)


# -- codex sources check ---------------------------------------------------------------------------

def test_check_reports_merged_filtered_and_notes(tmp_path: Path) -> None:
    body = (DUPS % ("last", "")).replace("  note: Note\n", "  note: Note\n  cost: {column: Cost, type: number, optional: true}\n"
                                         ) + "filters: [{column: Status, not_in: [void]}]\n"
    f = tmp_path / "x.csv"
    f.write_text("Permit,Status,Address,Note,Seq,Cost\nP-1,open,1 Main,,1,5\nP-1,closed,1 Main,,2,five\n"
                 "P-2,void,2 Main,,1,\nP-3,open,,,1,\n")
    report = check_file(_dataset(tmp_path, body), f).as_json()
    assert (report["rows"], report["would_land"], report["rejected"], report["merged"], report["filtered"]) == (4, 2, 0, 1, 1)
    assert report["notes"] == [{"ref": "row 3", "note": "optional field 'cost' (column 'Cost') fails 'number' "
                                                        "(got 'five'); nulled, the row kept"}]
    assert report["first_rows"][0]["reject"].startswith("merged into a later row")


def test_check_text_report_and_the_dataset_page_name_the_features(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from codex_pipeline.cli.app import main
    from codex_pipeline.sources.mapping.page import render_page

    body = (DUPS % ("merge", ", union: [address]")) + "filters: [{column: Status, not_in: [void]}]\n"
    md = _dataset(tmp_path, body)
    f = tmp_path / "x.csv"
    f.write_text("Permit,Status,Address,Note,Seq\nP-1,open,1 Main,,1\nP-1,closed,2 Main,,2\nP-2,void,3 Main,,1\n")
    assert main(["sources", "check", str(f), "-m", str(md.path)]) == 0
    text = capsys.readouterr().out
    assert "rows: 3 read, 1 would land, 0 rejected, 1 merged, 1 filtered" in text
    assert "row 2: merged into a later row" in text
    page = render_page(md.mapping, md.path, "r1", "1+abc")
    assert "| `Status` | filter |" in page and "| `Permit` | duplicates | merge: latest by `Seq`, union of address |" in page
    blocks = render_page(_dataset(tmp_path, BLOCK).mapping, md.path, "r1", "1+abc")
    assert "| `CONTRACTOR_{n}_{part}` | `contractors` | blocks 1–3, one object (name, type) per block with a value" in blocks


def test_an_optional_value_that_breaks_the_kinds_rule_is_noted_too(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    p.write_text("""codex_mapping: 1
dataset: town_permits
kind: permit
title: Town permit
id: No
fields:
  jurisdiction: {value: Town}
  status: Status
  permit_type: {value: Building}
  applied_date: Applied
  address: Address
  estimated_cost: {column: Cost, strip: "$,", optional: true}
""")
    md = load_mapped_dataset(p)
    d = tmp_path / "day"
    d.mkdir()
    (d / "a.csv").write_text("No,Status,Applied,Address,Cost\nBP-1,Issued,2026-01-02,1 Main St,\"$1,250\"\n"
                             "BP-2,Issued,2026-01-03,2 Main St,-5\nBP-3,Issued,2026-01-04,3 Main St,call us\n")
    res = md.load_day(d)
    docs = {x.record_id: x.payload for x in res.documents}
    assert docs["BP-1"]["estimated_cost"] == 1250 and "estimated_cost" not in docs["BP-2"] and len(docs) == 3
    notes = {r.record_ref: r.reason for r in res.rejects}
    assert set(notes) == {"row 3", "row 4"} and all(r.stage == "note" for r in res.rejects)
    assert notes["row 3"] == "optional field 'estimated_cost' (column 'Cost') fails '>= 0' (got -5); nulled, the row kept"
    assert "fails 'number' (got 'call us')" in notes["row 4"]
