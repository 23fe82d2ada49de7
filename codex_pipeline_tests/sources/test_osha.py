"""osha_safety source: case + nested citation schema, record checks, canonical text, docs in sync."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from codex_pipeline.sources.osha import CASE_RULES, load_osha_day, render_case
from codex_pipeline.sources.records import RawRecord
from codex_pipeline_tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "datasets" / "osha_safety.md"
FIX = FIXTURES / "osha_safety"


def fixture_records() -> list[dict]:
    return [json.loads(x) for x in (FIX / "cases.jsonl").read_text().splitlines()]


def write_day(tmp_path: Path, records: list[dict]) -> Path:
    day = tmp_path / "2026-11-24"
    day.mkdir(exist_ok=True)
    (day / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return day


def test_fixture_lands_valid_cases_and_rejects_nested_problems() -> None:
    res = load_osha_day(FIX)
    assert [d.doc_id for d in res.documents] == ["urn:aprs:osha_safety:1786033", "urn:aprs:osha_safety:1787405"]
    assert res.documents[0].title == "OSHA inspection 1786033 — Cascade Cold Storage Inc."
    for doc in res.documents:
        r = render_case(doc.payload)
        assert (doc.text, doc.blocks) == (r.text, r.parts)  # the citation spans travel with the text
    (rej,) = res.rejects
    assert rej.record_ref == "line 3, inspection_id='1788820'"
    assert "citations[0]: field 'standard' fails 'required string' (got null)" in rej.reason
    assert "field 'violation_type' fails 'one of serious" in rej.reason


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda c: c["citations"][1].update(citation_id="01001"), "field 'citations' fails 'citation_id values unique'"),
        (lambda c: c["citations"][0].update(citation_id="1-1"), "citations[0]: field 'citation_id' fails '5 digits"),
        (lambda c: c["citations"][0].update(issuance_date="2026-01-01"), "record check fails: open_date <= close_conference_date"),
        (lambda c: c.update(close_conference_date="2026-07-01", case_closed_date="2026-06-01"), "record check fails"),
        (lambda c: c.update(site_state="Wash."), "field 'site_state' fails 'two capital letters'"),
        (lambda c: c.update(inspection_id=1786033), "field 'inspection_id' fails 'required string'"),
        (lambda c: c["citations"][0].update(initial_penalty=-5), "citations[0]: field 'initial_penalty' fails '>= 0'"),
        (lambda c: c.pop("citations"), "field 'citations' fails 'required list[object]'"),
    ],
)
def test_each_rule_rejects_with_its_reason(tmp_path: Path, mutate, reason: str) -> None:
    good = fixture_records()[0]
    bad = copy.deepcopy(good)
    bad["inspection_id"] = "1799999"
    mutate(bad)
    res = load_osha_day(write_day(tmp_path, [good, bad]))
    assert [d.record_id for d in res.documents] == ["1786033"]
    (rej,) = res.rejects
    assert reason in rej.reason, rej.reason


def test_canonical_text_has_one_block_per_citation() -> None:
    case = fixture_records()[1]
    r = render_case(case)
    assert [(p.kind, p.key) for p in r.parts] == [("envelope", ""), ("citation", "01001"), ("citation", "01002"),
                                                 ("citation", "01003A"), ("citation", "01003B")]
    assert r.text[r.parts[3].start:].startswith(
        "OSHA inspection 1787405 — citation 01003A: repeat violation of 29 CFR 1910.212(a)(1)\nIssued: 2026-11-21")
    assert "Total penalty: initial $80,655.00" in r.text[: r.parts[0].end]
    assert r.parts[1].meta == {"citation_id": "01001", "standard": case["citations"][0]["standard"],
                               "violation_type": case["citations"][0]["violation_type"]}


def test_docs_carry_the_schema_and_a_valid_example() -> None:
    text = DOC.read_text()
    assert CASE_RULES.markdown_tables() in text
    example = json.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])
    valid, rejects = CASE_RULES.validate([RawRecord("doc", "ex", example)])
    assert valid and not rejects
    assert render_case(example).text == text.split("```text\n", 1)[1].split("\n```", 1)[0]
