"""osha_safety chunks: osha_case_summary → one osha_citation per citation."""

from __future__ import annotations

import copy
from pathlib import Path

from codex_pipeline.chunkers.osha import chunk_osha_case
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.sources.osha import DATASET, case_title, load_osha_day, render_case
from codex_pipeline.sources.records import RawRecord
from codex_pipeline.sources.structured import build_documents
from codex_pipeline_tests.chunkers.test_record_view import (
    SAMPLE,
    assert_chunk_properties,
    assert_old_raw_is_refused,
    assert_order_independent,
    assert_same_chunks_after_raw,
    chunk_docs,
)
from codex_pipeline_tests.conftest import FIXTURES

SMALL = {
    "inspection_id": "1700001",
    "establishment_name": "Ridgeline Roofing LLC",
    "site_address": "4410 S 56th St",
    "site_city": "Tacoma",
    "site_state": "WA",
    "inspection_type": "accident",
    "open_date": "2026-06-03",
    "summary": "A roofer fell 19 ft from an eave.",
    "citations": [
        {"citation_id": "01001", "standard": "29 CFR 1926.501(b)(13)", "violation_type": "serious",
         "issuance_date": "2026-11-20", "initial_penalty": 16131, "description": "No fall protection at the eave."},
        {"citation_id": "01002", "standard": "29 CFR 1926.1053(b)(1)", "violation_type": "serious",
         "issuance_date": "2026-11-20", "abatement_due_date": "2026-12-03", "initial_penalty": 11522.5,
         "current_penalty": 8000, "employees_exposed": 3, "description": "Ladder did not extend 3 ft above the landing."},
    ],
}


def case_doc(rec: dict) -> SourceDocument:
    """The reader's document for an (unvalidated) record: canonical text, payload and blocks."""
    (doc,) = build_documents(DATASET, [(rec["inspection_id"], RawRecord("t.jsonl", "line 1", rec))], render_case,
                             case_title).documents
    return doc


def test_golden_small_case_tree() -> None:
    doc = case_doc(SMALL)
    table = chunk_docs(DATASET, [doc])
    rows = table.to_pylist()
    root = make_chunk_id("urn:aprs:osha_safety:1700001", "summary")
    assert [(r["section_id"], r["chunk_type"], r["parent_chunk_id"]) for r in rows] == [
        ("summary", "osha_case_summary", None),
        ("citation.01001", "osha_citation", root),
        ("citation.01002", "osha_citation", root),
    ]
    assert rows[0]["chunk_text"] == """OSHA inspection 1700001 — Ridgeline Roofing LLC
Site: 4410 S 56th St, Tacoma, WA
Inspection type: accident
Opened: 2026-06-03
Citations (2): 01001 serious 29 CFR 1926.501(b)(13); 01002 serious 29 CFR 1926.1053(b)(1)
Total penalty: initial $27,653.50

Summary:
A roofer fell 19 ft from an eave."""
    assert rows[1]["chunk_text"] == (
        "OSHA inspection 1700001 — citation 01001: serious violation of 29 CFR 1926.501(b)(13)\n"
        "Issued: 2026-11-20\n"
        "Penalty: initial $16,131.00\n"
        "No fall protection at the eave."
    )
    assert rows[2]["chunk_text"] == (
        "OSHA inspection 1700001 — citation 01002: serious violation of 29 CFR 1926.1053(b)(1)\n"
        "Issued: 2026-11-20; abatement due 2026-12-03\n"
        "Penalty: initial $11,522.50; current $8,000.00\n"
        "Employees exposed: 3\n"
        "Ladder did not extend 3 ft above the landing."
    )
    assert doc.text == "\n\n".join(r["chunk_text"] for r in rows)
    assert_chunk_properties(table, [doc])


def test_citation_ids_are_stable_when_citations_are_reordered() -> None:
    flipped = copy.deepcopy(SMALL)
    flipped["citations"].reverse()
    a = {d.section_id: d.text.splitlines()[0] for d in chunk_osha_case(case_doc(SMALL))}
    b = {d.section_id: d.text.splitlines()[0] for d in chunk_osha_case(case_doc(flipped))}
    assert {k: v for k, v in a.items() if k != "summary"} == {k: v for k, v in b.items() if k != "summary"}


def test_case_without_citations_is_only_its_summary() -> None:
    rec = dict(SMALL, citations=[])
    (d,) = chunk_osha_case(case_doc(rec))
    assert d.section_id == "summary" and "Citations: none" in d.text


def test_oversized_citation_is_split_into_sibling_parts() -> None:
    rec = copy.deepcopy(SMALL)
    rec["citations"][0]["description"] = "\n\n".join(
        f"Instance {i}: employees worked at the eave without guardrails, nets or personal fall arrest; " * 25 for i in range(6))
    doc = case_doc(rec)
    ids = [d.section_id for d in chunk_osha_case(doc)]
    parts = [s for s in ids if s.startswith("citation.01001")]
    assert len(parts) >= 2 and parts == [f"citation.01001.part.{k}" for k in range(1, len(parts) + 1)]
    table = chunk_docs(DATASET, [doc])
    assert max(table.column("token_count").to_pylist()) <= MAX_CHUNK_TOKENS
    assert_chunk_properties(table, [doc])


def test_sample_days_and_fixture_hold_the_properties(tmp_path: Path) -> None:
    for day_dir in [SAMPLE / DATASET / d for d in ("2026-11-24", "2026-11-25", "2026-11-26")] + [FIXTURES / DATASET]:
        docs = load_osha_day(day_dir).documents
        table = chunk_docs(DATASET, docs)
        assert_chunk_properties(table, docs)
        summaries = [r for r in table.to_pylist() if r["chunk_type"] == "osha_case_summary"]
        assert len(summaries) == len(docs)
        assert_order_independent(DATASET, day_dir, tmp_path / day_dir.name)
        assert_same_chunks_after_raw(DATASET, docs)
        assert_old_raw_is_refused(DATASET, docs)


def test_sample_multi_citation_case_with_grouped_items() -> None:
    docs = load_osha_day(SAMPLE / DATASET / "2026-11-25").documents
    drafts = chunk_osha_case(next(d for d in docs if d.record_id == "1787405"))
    assert [d.section_id for d in drafts] == ["summary", "citation.01001", "citation.01002", "citation.01003A", "citation.01003B"]
    assert all(d.parent_section_id == "summary" for d in drafts[1:])
