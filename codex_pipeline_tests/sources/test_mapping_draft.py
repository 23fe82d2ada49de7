"""``codex sources init`` on damaged and odd exports: right, or it says it is unsure; ``check``'s warnings."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.cli.app import main
from codex_pipeline.sources.mapping.check import check_file
from codex_pipeline.sources.mapping.draft import draft_mapping, guess_column
from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
from codex_pipeline.sources.mapping.sniff import sniff_encoding

BURLINGTON = "-73.3,44.4,-73.1,44.6"


def _csv(rows: list[list[str]], delimiter: str = ",") -> str:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _init(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> tuple[int, str, str]:
    rc = main(["sources", "init", str(path), *args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _check(capsys: pytest.CaptureFixture[str], path: Path, draft: str, tmp: Path, *args: str) -> dict:
    m = tmp / "draft.yaml"
    m.write_text(draft, encoding="utf-8")
    main(["sources", "check", str(path), "--mapping", str(m), "--json", *args])
    return json.loads(capsys.readouterr().out)


def test_semicolon_latin1_drafts_its_delimiter_and_encoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "genehmigungen.csv"
    rows = [["Nr", "Straße", "Status", "Eingang"]] + [[f"B{i}", f"{i} Hauptstraße", "genehmigt", f"0{i}.03.2023"]
                                                       for i in range(1, 8)]
    path.write_bytes(_csv(rows, ";").encode("latin-1"))
    rc, out, _ = _init(capsys, path, "--dataset", "genehmigungen")
    data = yaml.safe_load(out)
    assert rc == 0 and data["delimiter"] == ";" and data["encoding"] == "cp1252"
    assert data["fields"]["stra_e"] == {"column": "Straße"}
    assert data["fields"]["eingang"] == {"column": "Eingang", "type": "date", "formats": ["%d.%m.%Y"]}
    report = _check(capsys, path, out, tmp_path)
    assert (report["rows"], report["would_land"], report["warnings"]) == (7, 7, [])


def test_utf16_with_a_bom_is_read_in_utf16(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "u16.csv"
    path.write_text(_csv([["id", "name"], ["1", "Ünal"], ["2", "Zoë"]]), encoding="utf-16")
    rc, out, _ = _init(capsys, path, "--dataset", "u16")
    assert rc == 0 and yaml.safe_load(out)["encoding"] == "utf-16"
    assert _check(capsys, path, out, tmp_path)["would_land"] == 2
    assert sniff_encoding("id,n\n1,a\n".encode("utf-16-le")) == "utf-16-le"  # no mark: from where the NULs fall


@pytest.mark.parametrize(("content", "says"), [
    (b"", "empty file"),
    (b"\n\n  \n", "empty file"),
    (b"id,name,status\n", "a header and no data rows"),
    (b"\x00\x01\x02\x03\x00\x00\xff\x00" * 100, "not a text file"),
])
def test_a_file_init_cannot_read_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        content: bytes, says: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    rc, out, err = _init(capsys, path)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert str(path) in err and says in err and "fix:" in err


def _vermont(tmp: Path, state: bool) -> Path:
    from pyproj import Transformer

    utm = Transformer.from_crs("EPSG:4326", "EPSG:32618", always_xy=True)
    rows = [["Permit", "Status", "Address", "Applied", "X", "Y"] + (["State"] if state else [])]
    for i in range(30):
        x, y = utm.transform(-73.21 + i * 0.001, 44.47 + i * 0.0005)
        rows.append([f"P{i}", "ISSUED", f"{i + 1} CHURCH ST", "2024/05/01", f"{x:.2f}", f"{y:.2f}"] + (["VT"] if state else []))
    path = tmp / "burlington.csv"
    path.write_text(_csv(rows))
    return path


def test_utm_18n_vermont_points_without_a_region_ask_for_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vermont(tmp_path, state=False)
    rc, out, err = _init(capsys, path, "--kind", "permit")
    data = yaml.safe_load(out)
    assert rc == 0 and "coordinates" not in data and {"X", "Y"} <= set(data["drop"])
    assert "give --region" in err and "EPSG:3857" in err  # web-Mercator is one of the places, not the answer
    rc, out, err = _init(capsys, path, "--kind", "permit", f"--region={BURLINGTON}")
    data = yaml.safe_load(out)
    assert data["coordinates"] == {"x": "X", "y": "Y", "crs": "EPSG:32618"}
    f = data["fields"]
    assert (f["status"]["column"], f["address"]["column"], f["applied_date"]["formats"]) == ("Status", "Address", ["%Y/%m/%d"])
    report = _check(capsys, path, out, tmp_path, f"--region={BURLINGTON}")
    assert report["would_land"] == 30 and report["warnings"] == []
    lat, lon = report["first_rows"][0]["record"]["latitude"], report["first_rows"][0]["record"]["longitude"]
    assert abs(lat - 44.47) < 1e-4 and abs(lon + 73.21) < 1e-4


def test_check_warns_when_utm_points_are_labelled_web_mercator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vermont(tmp_path, state=False)
    rc, out, _ = _init(capsys, path, "--kind", "permit", f"--region={BURLINGTON}")
    wrong = out.replace('crs: "EPSG:32618"', 'crs: "EPSG:3857"')
    report = _check(capsys, path, wrong, tmp_path)
    assert report["would_land"] == 30 and len(report["warnings"]) == 1
    assert report["warnings"][0].startswith("coordinates.crs EPSG:3857 puts the points at 40.")
    assert "other system(s) place the same x/y plausibly elsewhere" in report["warnings"][0]
    text = "\n".join(_check(capsys, path, wrong, tmp_path, f"--region={BURLINGTON}")["warnings"])
    assert "30 of 30 point(s) outside the region" in text and "EPSG:32618 WGS 84 / UTM zone 18N → 44.4" in text
    assert _check(capsys, path, out, tmp_path)["warnings"] == []  # the right one: no warning


def test_a_state_column_is_the_region(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _init(capsys, _vermont(tmp_path, state=True), "--kind", "permit")
    assert yaml.safe_load(out)["coordinates"]["crs"] == "EPSG:32618"


def test_permit_fields_come_from_what_columns_hold_not_contractor_blocks(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cranes.csv"
    rows = [["PERMIT_NO", "CONTRACTOR_1_ADDRESS", "CONTRACTOR_1_STATE", "CONTRACTOR_1_TYPE", "CONTRACTOR_1_NAME",
             "STATUS", "LOCATION", "INDATE", "ISSUE_DATE", "VALUATION"]]
    for i in range(20):
        rows.append([f"CR{i}", f"{i + 5} MAIN ST", "NY", "GC", f"ACME {i}", ["ISSUED", "CLOSED", "APPROVED"][i % 3],
                     f"{i + 100} PINE ST", f"{i + 1:02d}-Jan-2024", f"2024-02-{i + 1:02d} 10:30:00", f"${i + 1},000.00"])
    path.write_text(_csv(rows))
    rc, out, _ = _init(capsys, path, "--kind", "permit", "--dataset", "cranes")
    f = yaml.safe_load(out)["fields"]
    assert (f["status"]["column"], f["address"]["column"]) == ("STATUS", "LOCATION")
    assert f["applied_date"] == {"column": "INDATE", "formats": ["%d-%b-%Y"]}
    assert f["issued_date"] == {"column": "ISSUE_DATE", "formats": ["%Y-%m-%d %H:%M:%S"]}
    assert f["estimated_cost"] == {"column": "VALUATION", "strip": "$,"}
    assert f["contractor"] == {"column": "CONTRACTOR_1_NAME"}
    report = _check(capsys, path, out, tmp_path)
    assert report["would_land"] == 20 and report["first_rows"][0]["record"]["estimated_cost"] == 1000


def test_value_profiles() -> None:
    assert guess_column("Cost", ["$20,000.00", "$5.50", ""]).strip == "$,"
    assert guess_column("Zip", ["05401", "05402"]).type == "string"
    assert guess_column("Flag", ["Y", "N", "Y"]).type == "boolean"
    assert guess_column("When", ["2024-01-02T03:04:05Z", "2024-01-03T03:04:05Z"]).formats == ("%Y-%m-%dT%H:%M:%SZ",)
    mixed = guess_column("When", ["2024/01/02", "15-Mar-2023", "2024/02/03"])
    assert mixed.type == "date" and set(mixed.formats) == {"%Y/%m/%d", "%d-%b-%Y"}
    epoch = guess_column("Created", ["1704067200000", "1704153600000"])  # a date by its name and values
    assert epoch.type == "datetime" and epoch.formats == ("epoch_ms",) and "2024-01-01 00:00 UTC" in epoch.note
    assert guess_column("issued_at", ["1704067200", "1704153600"]).formats == ("epoch_s",)
    parcel = guess_column("Parcel", ["1704067200000", "1704153600000"])  # epoch-like values, not a date's name
    assert parcel.type == "integer" and "epoch milliseconds" in parcel.note and "formats: [epoch_ms]" in parcel.note


def test_check_warns_on_implausible_values_without_changing_counts(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "odd.csv"
    rows = [["id", "name", "day", "lat", "lon"]]
    rows += [[str(i), "Café" if i else "CafÃ©", f"2024-03-{i + 1:02d}", "44.47", "-73.21"] for i in range(20)]
    rows += [["20", "x", "2924-03-01", "0", "0"], ["21", "y", "2024-03-02", "48.85", "2.35"]]
    path.write_text(_csv(rows))
    rc, out, _ = _init(capsys, path, "--dataset", "odd")
    report = _check(capsys, path, out, tmp_path, f"--region={BURLINGTON}")
    assert (report["rows"], report["would_land"], report["rejected"]) == (22, 22, 0)
    text = "\n".join(report["warnings"])
    assert "1 point(s) at 0,0" in text and "row 23" in text  # Paris: outside the region and far from the median
    assert "date(s) far outside the file's range" in text and "2924-03-01" in text
    assert "look like UTF-8 read in another encoding" in text and "row 2" in text


_NAMES = st.text(string.ascii_letters, min_size=1, max_size=8)


@st.composite
def _tables(draw: st.DrawFn) -> list[list[str]]:
    n = draw(st.integers(2, 25))
    kinds = draw(st.lists(st.sampled_from(["int", "num", "money", "date", "dmy", "bool", "code", "word"]),
                          min_size=1, max_size=6))
    cols: list[list[str]] = [[f"K{i}" for i in range(n)]]
    for k in kinds:
        gen = {"int": st.integers(-10**6, 10**6).map(str), "num": st.floats(-1e6, 1e6).map(lambda f: f"{f:.3f}"),
               "money": st.integers(0, 10**7).map(lambda v: f"${v:,}.00"),
               "date": st.dates().map(lambda d: d.strftime("%Y/%m/%d")),
               "dmy": st.dates().map(lambda d: d.strftime("%d-%b-%Y")), "bool": st.sampled_from(["yes", "no"]),
               "code": st.integers(0, 9999).map(lambda v: f"0{v}"), "word": _NAMES}[k]
        cols.append([draw(st.one_of(gen, st.just(""))) for _ in range(n)])
    header = ["key"] + [f"c{i}" for i in range(len(kinds))]
    return [header] + [list(r) for r in zip(*cols)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=_tables())
def test_any_typed_table_drafts_a_mapping_that_check_lands_entirely(tmp_path: Path, table: list[list[str]]) -> None:
    path = tmp_path / "gen.csv"
    path.write_text(_csv(table))
    draft = draft_mapping(path, dataset="gen")
    m = tmp_path / "gen.yaml"
    m.write_text(draft.text)
    report = check_file(load_mapped_dataset(m), path, 0)
    assert report.file_rejects == [] and report.rejects == [] and report.landed == len(table) - 1


def test_a_big_file_drafts_from_its_head_and_flags_are_obeyed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_pipeline.sources.mapping import sniff

    monkeypatch.setattr(sniff, "HEAD_BYTES", 300)  # as a file over HEAD_BYTES (64 MiB and more) is read
    path = tmp_path / "big.tsv"
    path.write_text("id\tnote\n" + "".join(f"{i}\tline {i}\n" for i in range(1000)))
    rc, out, _ = _init(capsys, path, "--delimiter", "\\t", "--sample", "5")
    data = yaml.safe_load(out)
    assert rc == 0 and data["delimiter"] == "\t" and data["id"] == "id" and "(5 sampled rows)" in out


def test_utf8_read_as_latin1_is_a_check_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cafes.csv"
    path.write_text(_csv([["id", "name"], ["1", "Café Zoë"], ["2", "Crème"]]), encoding="utf-8")
    rc, out, err = _init(capsys, path, "--encoding", "latin-1", "--dataset", "cafes")
    assert "look like UTF-8 read in another encoding" in err  # init says so too
    report = _check(capsys, path, out, tmp_path)
    assert report["would_land"] == 2 and "look like UTF-8 read in another encoding" in report["warnings"][0]


def test_a_file_without_a_header_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nohead.csv"
    path.write_text("1,2024-01-02,3.5\n2,2024-01-03,4.5\n")
    rc, _, err = _init(capsys, path)
    assert rc == 0 and "the first line looks like data" in err


def test_null_words_are_empty_values_not_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nulls.csv"
    path.write_text(_csv([["id", "applied", "lat", "lon"], ["1", "2024-01-02", "44.47", "-73.21"],
                          ["2", "N/A", "NULL", "NULL"], ["3", "2024-01-04", "44.48", "-73.2"]]))
    rc, out, _ = _init(capsys, path, "--dataset", "nulls")
    data = yaml.safe_load(out)
    assert data["empty_values"] == ["", "N/A", "NULL"] and data["fields"]["applied"]["type"] == "date"
    assert data["coordinates"]["crs"] == "EPSG:4326"
    assert _check(capsys, path, out, tmp_path)["would_land"] == 3


def test_latitudes_under_an_x_name_are_swapped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "swapped.csv"
    path.write_text(_csv([["id", "x", "y"], ["1", "47.61", "-122.33"], ["2", "47.62", "-122.3"]]))
    rc, out, err = _init(capsys, path)
    assert yaml.safe_load(out)["coordinates"] == {"x": "y", "y": "x", "crs": "EPSG:4326"} and "holds latitudes" in err


_STATUS = ["Issued", "Approved", "Closed", "Finaled", "In Review", "Expired", "Permit Issued", "Application Accepted"]
_STREETS = ["MAIN ST", "PINE AVE", "OAK RD", "SHELBURNE RD", "RAINIER AVE S", "15TH AVE NE"]
_DATE_FORMS = ["%Y-%m-%d", "%m/%d/%Y", "%Y/%m/%d %H:%M:%S", "%d-%b-%Y", "%Y-%m-%dT%H:%M:%S.000", "%m/%d/%Y %I:%M:%S %p"]


@st.composite
def _permit_tables(draw: st.DrawFn) -> tuple[list[list[str]], dict[str, str]]:
    """A permit export with contractor blocks, its own status/address/dates, columns in any order."""
    n = draw(st.integers(5, 30))
    form = draw(st.sampled_from(_DATE_FORMS))
    blocks = draw(st.integers(1, 3))
    names = {"status": draw(st.sampled_from(["STATUS", "Current Status", "statuscurrent", "Permit State"])),
             "address": draw(st.sampled_from(["SITE_ADDRESS", "Address", "Location", "originaladdress"])),
             "applied_date": draw(st.sampled_from(["INDATE", "Applied Date", "APPLICATION_DATE", "Date Received"]))}
    cols: dict[str, list[str]] = {"PERMIT_NO": [f"BP-{i:04d}" for i in range(n)]}
    for k in range(1, blocks + 1):
        cols[f"CONTRACTOR_{k}_ADDRESS"] = [f"{draw(st.integers(1, 999))} {draw(st.sampled_from(_STREETS))}" for _ in range(n)]
        cols[f"CONTRACTOR_{k}_STATE"] = [draw(st.sampled_from(["NY", "VT", "Active"])) for _ in range(n)]
        cols[f"CONTRACTOR_{k}_TYPE"] = [draw(st.sampled_from(["GC", "ELEC"])) for _ in range(n)]
    cols[names["status"]] = [draw(st.sampled_from(_STATUS)) for _ in range(n)]
    cols[names["address"]] = [f"{draw(st.integers(1, 9999))} {draw(st.sampled_from(_STREETS))}" for _ in range(n)]
    cols[names["applied_date"]] = [draw(st.dates(min_value=dt.date(1990, 1, 1))).strftime(form) for _ in range(n)]
    order = draw(st.permutations(list(cols)))
    return [list(order)] + [[cols[c][i] for c in order] for i in range(n)], names


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_permit_tables())
def test_permit_fields_are_found_by_content_in_any_column_order(tmp_path: Path, case: tuple[list[list[str]], dict[str, str]]
                                                               ) -> None:
    table, names = case
    path = tmp_path / "permits.csv"
    path.write_text(_csv(table))
    draft = draft_mapping(path, dataset="gen_permits", kind="permit")
    fields = yaml.safe_load(draft.text)["fields"]
    assert {f: fields[f]["column"] for f in names} == names
    m = tmp_path / "permits.yaml"
    m.write_text(draft.text)
    report = check_file(load_mapped_dataset(m), path, 0)
    assert report.file_rejects == [] and report.rejects == [] and report.landed == len(table) - 1


@pytest.mark.parametrize("cells", [["POINT (-73.21 44.47)", "POINT (-73.2 44.48)"], ["(44.47, -73.21)", "(44.48, -73.2)"]])
def test_a_point_column_without_x_y_is_mapped_as_a_point(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         cells: list[str]) -> None:
    path = tmp_path / "wkt.csv"
    path.write_text(_csv([["id", "location"], ["1", cells[0]], ["2", cells[1]]]))
    rc, out, _ = _init(capsys, path)
    assert rc == 0 and yaml.safe_load(out)["coordinates"] == {"point": "location"}
    m = tmp_path / "wkt.yaml"
    m.write_text(out)
    report = check_file(load_mapped_dataset(m), path, 2)
    assert report.landed == 2 and report.rejects == []
    assert all(abs(o.record["latitude"] - 44.47) < 0.02 and abs(o.record["longitude"] + 73.2) < 0.02
               for o in report.first_rows if o.record)
