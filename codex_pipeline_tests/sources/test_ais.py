"""ais_positions source: MarineCadastre CSV and JSON Lines, position ids, rejects; never chunked."""

from __future__ import annotations

from pathlib import Path

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.ais import AIS_POSITIONS, MARINECADASTRE_COLUMNS, load_ais_day, position_id
from codex_pipeline_tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "datasets" / "ais_positions.md"


def test_fixture_positions_land_with_typed_fields_and_rejects() -> None:
    res = load_ais_day(FIXTURES / "ais_positions")
    assert [d.record_id for d in res.documents] == [
        "257123450-20261124T023240Z", "257123450-20261124T024240Z", "257123450-20261124T025240Z", "367554120-20261125T130200Z"]
    p = res.documents[0].payload
    assert p["mmsi"] == 257123450 and p["lat"] == 48.3502 and p["heading"] == 71 and p["vessel_name"] == "NORDIC CRANE"
    assert res.documents[0].doc_id == "urn:aprs:ais_positions:257123450-20261124T023240Z"
    assert res.documents[0].text.startswith("## AIS position 257123450-20261124T023240Z — NORDIC CRANE\n- **mmsi**: 257123450\n")
    reasons = sorted(r.reason for r in res.rejects)
    assert reasons == ["duplicate record id '257123450-20261124T024240Z' (first at positions.csv row 3)",
                       "field 'lat' fails 'between -90 and 90' (got 95.1032)"]


def test_position_id_is_utc() -> None:
    assert position_id({"mmsi": 1, "base_datetime": "2026-11-24T03:12:40"}) == "1-20261124T031240Z"
    assert position_id({"mmsi": 1, "base_datetime": "2026-11-23T19:12:40-08:00"}) == "1-20261124T031240Z"


def test_csv_header_is_the_marinecadastre_layout(tmp_path: Path) -> None:
    assert list(MARINECADASTRE_COLUMNS) == "MMSI,BaseDateTime,LAT,LON,SOG,COG,Heading,VesselName,IMO,CallSign,VesselType,Status,Length,Width,Draft,Cargo,TransceiverClass".split(",")
    day = tmp_path / "d"
    day.mkdir()
    (day / "p.csv").write_text("mmsi,lat\n1,2\n")
    (rej,) = load_ais_day(day).rejects
    assert "CSV header does not match the schema" in rej.reason


def test_not_chunked_and_documented() -> None:
    assert get_dataset("ais_positions").chunker is None and not get_dataset("ais_positions").chunked
    text = DOC.read_text()
    assert AIS_POSITIONS.rules.markdown_tables() in text
    assert "one row equals one record" in text and "no `[ais_positions, chunks]` asset" in text
