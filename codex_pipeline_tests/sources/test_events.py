"""events_timeline source: schema, rejects with reasons, canonical text, docs in sync."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_pipeline.sources.events import EVENT_RULES, load_events_day, render_event
from codex_pipeline_tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "datasets" / "events_timeline.md"
FIX = FIXTURES / "events_timeline"


def fixture_records() -> list[dict]:
    return [json.loads(x) for x in (FIX / "events.jsonl").read_text().splitlines()]


def write_day(tmp_path: Path, records: list) -> Path:
    day = tmp_path / "2026-11-24"
    day.mkdir(exist_ok=True)
    (day / "events.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return day


def test_fixture_lands_valid_events_and_rejects_the_bad_one() -> None:
    res = load_events_day(FIX)
    assert [d.record_id for d in res.documents] == ["EVT-20261124-0007", "EVT-20261124-0015", "EVT-20261124-0030"]
    doc = res.documents[0]
    assert doc.doc_id == "urn:aprs:events_timeline:EVT-20261124-0007"
    assert doc.payload == fixture_records()[0]
    assert doc.title.startswith("NORDIC CRANE goes dark")
    assert doc.text == render_event(doc.payload).text
    assert doc.blocks == render_event(doc.payload).parts  # header / description spans travel with the text
    assert [b.kind for b in doc.blocks] == ["header", "description"]
    (rej,) = res.rejects
    assert rej.record_ref == "line 4, event_id='EVT-20261125-0014'" and rej.stage == "ingest"
    assert "field 'occurred_at' fails 'ISO 8601 with a UTC offset" in rej.reason
    assert "field 'severity' fails 'one of info, low, medium, high, critical' (got 'routine')" in rej.reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"ended_at": "2026-11-24T01:00:00Z"}, "record check fails: ended_at is not before occurred_at"),
        ({"latitude": 48.1, "longitude": None}, "record check fails: latitude and longitude are given together"),
        ({"event_id": "bad id"}, "field 'event_id' fails 'record id"),
        ({"event_type": "Dark Event"}, "field 'event_type' fails 'snake_case'"),
        ({"title": "two\nlines"}, "field 'title' fails 'one non-blank line"),
        ({"confidence": 1.5}, "field 'confidence' fails 'between 0 and 1'"),
        ({"tags": "ais_gap"}, "field 'tags' fails 'list[string]'"),
        ({"colour": "red"}, "unknown field(s) 'colour'"),
        ({"source": None}, "field 'source' fails 'required string'"),
    ],
)
def test_each_rule_rejects_with_its_reason(tmp_path: Path, change: dict, reason: str) -> None:
    good = fixture_records()[1]
    bad = {**good, **change, "event_id": change.get("event_id", "EVT-BAD")}
    res = load_events_day(write_day(tmp_path, [good, bad]))
    assert [d.record_id for d in res.documents] == [good["event_id"]]
    (rej,) = res.rejects
    assert reason in rej.reason and rej.record_ref.startswith("line 2")


def test_canonical_text_parts() -> None:
    rec = fixture_records()[0]
    r = render_event(rec)
    header, desc = r.part("header"), r.part("description")
    assert header.start == 0 and r.text[header.end:desc.start] == "\n\n" and desc.end == len(r.text)
    assert r.text[desc.start:] == rec["description"].strip()
    assert r.text.splitlines()[1:4] == ["Type: dark_event", "Occurred: 2026-11-24T03:12:40Z to 2026-11-24T09:47:05Z (6 h 34 min)",
                                       "Severity: high"]
    no_desc = render_event({k: v for k, v in rec.items() if k != "description"})
    assert [p.kind for p in no_desc.parts] == ["header"]


def test_duplicate_event_ids_are_rejected(tmp_path: Path) -> None:
    rec = fixture_records()[1]
    res = load_events_day(write_day(tmp_path, [rec, rec]))
    assert len(res.documents) == 1 and res.rejects[0].reason.startswith("duplicate record id 'EVT-20261124-0015'")


def test_docs_carry_the_schema_and_a_valid_example() -> None:
    text = DOC.read_text()
    assert EVENT_RULES.markdown_tables() in text
    example = json.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])
    rendered = text.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert render_event(example).text == rendered
