"""``codex sources check`` / ``init``: a mapping tried on an export before anything lands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from codex_pipeline.cli.app import main
from codex_pipeline.sources.mapping.draft import guess_column
from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
from codex_pipeline.sources.permits import MAPPINGS_DIR

SAMPLE = Path(__file__).resolve().parents[2] / "codex_pipeline" / "sample_landing"
SQUAMISH = SAMPLE / "squamish_permits" / "2026-11-24" / "squamish_permits.csv"
SEATTLE = SAMPLE / "seattle_preapplications" / "2026-11-24" / "seattle_preapplications.csv"


def test_check_shows_the_first_rows_and_every_reject_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["sources", "check", str(SQUAMISH), "--mapping", str(MAPPINGS_DIR / "squamish_permits.yaml"),
               "--rows", "3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert (out["rows"], out["would_land"], out["rejected"], out["file_rejects"]) == (4, 3, 1, [])
    assert out["rejects"] == [{"ref": "row 4, permit_number='BP900103'",
                               "reason": "field 'address' (column 'House+Street') fails 'required string' (got null)"}]
    first, second, third = out["first_rows"]
    assert first["ref"] == "row 2" and first["record"]["applicant"] == "SAMPLE ANN S; SAMPLE BO D"
    assert first["text"].startswith("Permit BP900101 — District of Squamish, BC\nStatus: In progress\n")
    assert third["reject"] == out["rejects"][0]["reason"] and third["record"] is None


def test_check_text_report_and_a_file_the_mapping_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["sources", "check", str(SEATTLE), "-m", str(MAPPINGS_DIR / "seattle_preapplications.yaml"), "--rows", "1"])
    text = capsys.readouterr().out
    assert rc == 0 and "rows: 5 read, 4 would land, 1 rejected" in text and "row 2: lands as\n  Permit 009101-26PA" in text
    rc = main(["sources", "check", str(SEATTLE), "-m", str(MAPPINGS_DIR / "squamish_permits.yaml")])
    text = capsys.readouterr().out
    assert rc == 1
    assert "FILE REJECTED: not a Squamish building permit export: missing column(s) 'Folder_Number'" in text


def test_an_invalid_mapping_is_one_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((MAPPINGS_DIR / "squamish_permits.yaml").read_text().replace("kind: permit", "kind: permit\nidd: x"))
    assert main(["sources", "check", str(SQUAMISH), "--mapping", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"codex sources: mapping {bad}, line 6: key 'idd': Extra inputs are not permitted; fix: remove it or fix its spelling\n"


def test_init_drafts_a_mapping_that_loads_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sources", "init", str(SQUAMISH), "--dataset", "squamish_draft"]) == 0
    draft = capsys.readouterr().out
    data = yaml.safe_load(draft)
    assert data["dataset"] == "squamish_draft" and data["kind"] == "record" and data["id"] == "Folder_Number"
    assert data["fields"]["application_date"] == {"column": "Application_Date", "type": "date",
                                                  "formats": ["%Y/%m/%d %H:%M:%S+00"]}
    assert data["fields"]["construction_value"]["type"] == "integer"
    assert data["coordinates"] == {"x": "X", "y": "Y", "crs": "EPSG:3857"}
    path = tmp_path / "draft.yaml"
    path.write_text(draft)
    load_mapped_dataset(path)  # loads as it is
    assert main(["sources", "check", str(SQUAMISH), "--mapping", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["file_rejects"] == [] and out["would_land"] == 4 and out["rejected"] == 0


def test_init_drops_empty_columns_and_keeps_codes_as_strings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sources", "init", str(SEATTLE)]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    assert data["drop"] == ["Column 1", "Column 2"] and data["id"] == "Record Number"
    assert data["fields"]["description"]["type"] == "text"
    assert guess_column("Folio", ["0012", "0100", ""]).type == "string"  # digits, but a code: never a number
    assert guess_column("Score", ["12", "100"]).type == "integer"


def test_init_kind_permit_matches_columns_to_permit_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sources", "init", str(SQUAMISH), "--kind", "permit", "--dataset", "squamish_draft"]) == 0
    draft = capsys.readouterr().out
    data = yaml.safe_load(draft)
    assert data["kind"] == "permit"
    f = data["fields"]
    assert (f["status"], f["permit_type"], f["estimated_cost"], f["housing_units"]) == (
        {"column": "Status"}, {"column": "Folder_Type"}, {"column": "Construction_Value"}, {"column": "Units_Created"})
    assert f["applied_date"] == {"column": "Application_Date", "formats": ["%Y/%m/%d %H:%M:%S+00"]}
    assert f["address"] == {"columns": ["House", "Street"]}  # a split address is joined
    assert data["details"]["Folio"] == "Folio"
    path = tmp_path / "draft.yaml"
    path.write_text(draft)
    assert main(["sources", "check", str(SQUAMISH), "--mapping", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["would_land"], out["rejected"]) == (3, 1)  # the row without an address, as with the shipped mapping


def test_check_asks_proj_about_the_crs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((MAPPINGS_DIR / "squamish_permits.yaml").read_text().replace('"EPSG:3857"', '"EPSG:999999"'))
    assert main(["sources", "check", str(SQUAMISH), "--mapping", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"codex sources: mapping {bad}: key 'coordinates.crs': ") and err.count("\n") == 1


@pytest.mark.parametrize("name", ["seattle_preapplications", "squamish_permits"])
def test_page_writes_a_dataset_page_whose_header_matches_the_registry(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from codex_pipeline.datasets.registry import get_dataset
    from codex_pipeline.sources.mapping.schema import load_mapping
    from codex_pipeline_tests.datasets.test_dataset_docs import header, version

    path = MAPPINGS_DIR / f"{name}.yaml"
    assert main(["sources", "page", str(path)]) == 0
    page = capsys.readouterr().out
    assert page.startswith(f"# `{name}`\n")
    rows = header(page)
    spec = get_dataset(name)
    assert (version(rows["chunker_revision"]), version(rows["source_version"])) == (spec.chunker_revision, spec.source_version)
    table = page.split("## Columns", 1)[1]
    assert all(f"`{c.replace('|', chr(92) + '|')}`" in table for c in load_mapping(path).columns())
    assert all(line.count("|") - line.count("\\|") == 4 for line in table.splitlines() if line.startswith("| "))


def test_a_duplicate_key_is_an_error_naming_both_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "dup.yaml"
    text = (MAPPINGS_DIR / "squamish_permits.yaml").read_text()
    bad.write_text(text.replace("kind: permit", "kind: permit\nkind: record"))
    line = text.splitlines().index("kind: permit") + 1
    assert main(["sources", "check", str(SQUAMISH), "--mapping", str(bad)]) == 2
    assert capsys.readouterr().err == (f"codex sources: mapping {bad}, line {line + 1}: key 'kind' is given twice "
                                       f"(lines {line} and {line + 1}); fix: keep one of them (YAML would silently "
                                       "use the last)\n")


def test_a_bad_mapping_in_the_folder_is_the_users_error_not_a_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "mappings"
    folder.mkdir()
    (folder / "m.yaml").write_text((MAPPINGS_DIR / "squamish_permits.yaml").read_text()
                                   .replace("dataset: squamish_permits", "dataset: squamish_permits_b")
                                   .replace("kind: permit", "kind: permits"))
    monkeypatch.setenv("CODEX_MAPPINGS_DIR", str(folder))
    assert main(["--data-dir", str(tmp_path / "data"), "materialize", "2026-11-24"]) == 2
    err = capsys.readouterr().err
    assert "a bug in codex" not in err and err.count("\n") == 1
    assert f"mapping {folder / 'm.yaml'}, line " in err and "key 'kind': Input should be" in err and "fix:" in err
