"""permit_signals chunks: permit_summary → permit_scope_section / condition, native and Calgary."""

from __future__ import annotations

import copy
import csv
import shutil
from collections import Counter
from pathlib import Path

import pytest

from codex_pipeline.chunkers.permits import chunk_permit
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.permits import DATASET, load_permits_day, permit_title, render_permit
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
from codex_pipeline_tests.conftest import CORPORA, FIXTURES, needs_corpus

CALGARY = CORPORA / "permits" / "calgary_building_permits.csv"

SMALL = {
    "permit_number": "PRT-1",
    "jurisdiction": "City of Tacoma, WA",
    "status": "Issued",
    "permit_type": "Residential Addition/Alteration",
    "applied_date": "2026-09-30",
    "issued_date": "2026-11-24",
    "address": "3408 N 27th St",
    "estimated_cost": 186500,
    "summary": "Rear addition.",
    "scope_sections": [{"title": "Floor 1 addition", "text": "Bedroom and bath."}, {"title": "Deck", "code": "DECK"}],
    "conditions": [
        {"condition_id": "C-1", "text": "Subject to ADA variance approval.", "category": "accessibility"},
        {"condition_id": "C-2", "text": "Footing inspection before concrete."},
    ],
}
SMALL_SUMMARY = """Permit PRT-1 — City of Tacoma, WA
Status: Issued
Permit type: Residential Addition/Alteration
Applied: 2026-09-30
Issued: 2026-11-24
Estimated cost: $186,500.00
Address: 3408 N 27th St
Scope sections (2): Floor 1 addition; Deck [DECK]
Conditions: 2

Summary:
Rear addition."""


def permit_doc(rec: dict) -> SourceDocument:
    """The reader's document for an (unvalidated) record: canonical text, payload and blocks."""
    (doc,) = build_documents(DATASET, [(rec["permit_number"], RawRecord("t.jsonl", "line 1", rec))], render_permit,
                             permit_title).documents
    return doc


def tree(rows: list[dict]) -> list[tuple]:
    by_id = {r["chunk_id"]: r["section_id"] for r in rows}
    return [(r["section_id"], r["chunk_type"], by_id.get(r["parent_chunk_id"]), r["chunk_text"]) for r in rows]


def test_golden_small_permit_tree() -> None:
    doc = permit_doc(SMALL)
    table = chunk_docs(DATASET, [doc])
    assert tree(table.to_pylist()) == [
        ("summary", "permit_summary", None, SMALL_SUMMARY),
        ("scope.1", "permit_scope_section", "summary", "Permit PRT-1 — scope 1 of 2: Floor 1 addition\nBedroom and bath."),
        ("scope.2", "permit_scope_section", "summary", "Permit PRT-1 — scope 2 of 2: Deck [DECK]"),
        ("condition.C-1", "condition", "summary", "Permit PRT-1 — condition C-1 (accessibility)\nSubject to ADA variance approval."),
        ("condition.C-2", "condition", "summary", "Permit PRT-1 — condition C-2\nFooting inspection before concrete."),
    ]
    rows = table.to_pylist()
    assert rows[0]["doc_id"] == "urn:aprs:permit_signals:PRT-1"
    assert rows[1]["chunk_id"] == make_chunk_id("urn:aprs:permit_signals:PRT-1", "scope.1")
    assert all(r["parent_chunk_id"] == make_chunk_id(rows[0]["doc_id"], "summary") for r in rows[1:])
    assert doc.text == "\n\n".join(r["chunk_text"] for r in rows)  # nothing else in the canonical text
    assert_chunk_properties(table, [doc])


def test_conditions_without_ids_use_positions_and_ids_follow_condition_ids() -> None:
    rec = copy.deepcopy(SMALL)
    for c in rec["conditions"]:
        del c["condition_id"]
    drafts = chunk_permit(permit_doc(rec))
    conds = [d for d in drafts if d.chunk_type == "condition"]
    assert [d.section_id for d in conds] == ["condition.1", "condition.2"]
    assert conds[0].text.startswith("Permit PRT-1 — condition 1 of 2 (accessibility)\n")
    # explicit ids keep each condition's chunk id when conditions are reordered
    flipped = copy.deepcopy(SMALL)
    flipped["conditions"].reverse()
    by_section = {d.section_id: d.text for d in chunk_permit(permit_doc(flipped))}
    assert by_section["condition.C-1"] == "Permit PRT-1 — condition C-1 (accessibility)\nSubject to ADA variance approval."


def test_oversized_scope_section_becomes_sibling_parts_under_the_summary() -> None:
    rec = copy.deepcopy(SMALL)
    rec["scope_sections"][0]["text"] = "\n\n".join(
        f"Level {i} framing: " + "joists at 16 in. on center with blocking, " * 60 for i in range(6))
    doc = permit_doc(rec)
    drafts = chunk_permit(doc)
    parts = [d for d in drafts if d.section_id.startswith("scope.1")]
    assert len(parts) >= 2
    assert [d.section_id for d in parts] == [f"scope.1.part.{k}" for k in range(1, len(parts) + 1)]
    assert {d.parent_section_id for d in parts} == {"summary"}
    assert all(d.token_count <= MAX_CHUNK_TOKENS for d in parts)
    assert_chunk_properties(chunk_docs(DATASET, [doc]), [doc])


def test_golden_calgary_row_tree() -> None:
    docs = load_permits_day(FIXTURES / DATASET).documents
    doc = next(d for d in docs if d.record_id == "BP2026-21904")
    assert doc.doc_id == "urn:aprs:permit_signals:BP2026-21904"
    drafts = chunk_permit(doc)
    assert [(d.section_id, d.chunk_type.value, d.parent_section_id) for d in drafts] == [
        ("summary", "permit_summary", None),
        ("scope.1", "permit_scope_section", "summary"),
        ("scope.2", "permit_scope_section", "summary"),
        ("scope.3", "permit_scope_section", "summary"),
        ("scope.4", "permit_scope_section", "summary"),
        ("scope.5", "permit_scope_section", "summary"),
    ]
    assert [d.text for d in drafts[1:]] == [
        "Permit BP2026-21904 — scope 1 of 5: Single-family dwelling [SFD]",
        "Permit BP2026-21904 — scope 2 of 5: Basement development [BSMT-DEV]",
        "Permit BP2026-21904 — scope 3 of 5: Garage [GARAGE]",
        "Permit BP2026-21904 — scope 4 of 5: Deck [DECK]",
        "Permit BP2026-21904 — scope 5 of 5: Porch [PORCH]",
    ]
    assert drafts[0].text == """Permit BP2026-21904 — City of Calgary, AB
Status: Issued Permit
Permit type: Single Construction Permit
Permit class: 1106 - Single Family House
Work class: New
Applied: 2026-10-02
Issued: 2026-11-24
Applicant: RIVERSTONE HOMES LTD
Contractor: RIVERSTONE HOMES LTD
Estimated cost: $298,410.55
Floor area: 2,104 sq ft
Housing units: 1
Address: 142 CORNERBROOK RD NE (CORNERSTONE)
Coordinates: 51.15432, -113.94611
Description as filed: SFD,BSMT-DEV,GARAGE,DECK,PORCH,
Scope sections (5): Single-family dwelling [SFD]; Basement development [BSMT-DEV]; Garage [GARAGE]; Deck [DECK]; Porch [PORCH]"""
    prose = next(d for d in docs if d.record_id == "BP2026-22103")
    assert [d.section_id for d in chunk_permit(prose)] == ["summary"]  # prose stays in the summary


def test_sample_days_and_fixture_hold_the_properties(tmp_path: Path) -> None:
    for day_dir in [SAMPLE / DATASET / d for d in ("2026-11-24", "2026-11-25", "2026-11-26")] + [FIXTURES / DATASET]:
        docs = load_permits_day(day_dir).documents
        table = chunk_docs(DATASET, docs)
        assert_chunk_properties(table, docs)
        assert set(table.column("chunk_type").to_pylist()) <= {"permit_summary", "permit_scope_section", "condition"}
        assert_order_independent(DATASET, day_dir, tmp_path / day_dir.name)
        assert_same_chunks_after_raw(DATASET, docs)
        assert_old_raw_is_refused(DATASET, docs)


def test_sample_permits_have_multi_section_trees_with_conditions() -> None:
    docs = load_permits_day(SAMPLE / DATASET / "2026-11-24").documents
    drafts = chunk_permit(next(d for d in docs if d.record_id == "PRCNC2026-0412"))
    kinds = Counter(d.chunk_type.value for d in drafts)
    assert kinds == {"permit_summary": 1, "permit_scope_section": 6, "condition": 5}
    assert [d.section_id for d in drafts if d.chunk_type == "condition"] == [f"condition.C-{k}" for k in range(1, 6)]


@needs_corpus(CALGARY)
def test_real_calgary_csv_every_row_chunks_within_contract_or_is_rejected(tmp_path: Path) -> None:
    day = tmp_path / "2026-11-24"
    day.mkdir()
    shutil.copy(CALGARY, day / CALGARY.name)  # a copy: a link leaving the day folder is a reject
    res = load_permits_day(day)
    rows = sum(1 for _ in CALGARY.open(encoding="utf-8")) - 1  # no cell of this export spans lines
    row_rejects = [r for r in res.rejects if r.record_ref and r.record_ref.startswith("row ")]
    assert len(res.documents) + len(row_rejects) == rows == 5000
    assert len(row_rejects) == len(res.rejects), "no file-level reject"
    assert all(r.reason for r in res.rejects)
    table = chunk_docs(DATASET, res.documents)
    report = validate_chunks(table, {d.doc_id: d.text for d in res.documents})
    assert report.passed, report.failures
    assert max(table.column("token_count").to_pylist()) <= MAX_CHUNK_TOKENS
    assert len(set(table.column("doc_id").to_pylist())) == len(res.documents)
    types = Counter(table.column("chunk_type").to_pylist())
    assert types["permit_summary"] == len(res.documents) and types["permit_scope_section"] > 0


# ----------------------------------------------------------------------------- mapped exports (issue 28)

PERMITS = CORPORA / "permits"
MAPPED = {"seattle_preapplications": "seattle_sdci_preapplications.csv", "squamish_permits": "squamish_bc_building_permits.csv"}


def assert_permit_tree(table, docs) -> None:
    """The seed's permit rules: one summary root per permit, scope sections and conditions its direct
    children (conditions never under a scope), verbatim offsets, the token cap."""
    assert_chunk_properties(table, docs)
    rows = table.to_pylist()
    by_id = {r["chunk_id"]: r for r in rows}
    for r in rows:
        parent = by_id.get(r["parent_chunk_id"]) if r["parent_chunk_id"] else None
        if r["chunk_type"] == "permit_summary" and "part" not in r["section_id"]:
            assert parent is None and r["section_id"] == "summary"
        elif r["chunk_type"] in ("permit_scope_section", "condition"):
            assert parent is not None and parent["section_id"] == "summary", r["section_id"]
    assert Counter(r["chunk_type"] for r in rows if r["section_id"] == "summary")["permit_summary"] == len(docs)
    assert max(table.column("token_count").to_pylist()) <= MAX_CHUNK_TOKENS


@pytest.mark.parametrize("dataset", sorted(MAPPED))
def test_mapped_sample_days_hold_the_permit_rules(dataset: str, tmp_path: Path) -> None:
    day = SAMPLE / dataset / "2026-11-24"
    res = get_dataset(dataset).load_day(day)
    assert res.documents and all(r.record_ref and r.record_ref.startswith("row ") for r in res.rejects)
    table = chunk_docs(dataset, res.documents)
    assert_permit_tree(table, res.documents)
    assert_order_independent(dataset, day, tmp_path)
    assert_same_chunks_after_raw(dataset, res.documents)


def test_seattle_bullets_become_scope_children_under_the_summary() -> None:
    docs = get_dataset("seattle_preapplications").load_day(SAMPLE / "seattle_preapplications" / "2026-11-24").documents
    doc = next(d for d in docs if d.record_id == "009103-26PA")
    drafts = chunk_permit(doc)
    assert [(d.section_id, d.parent_section_id) for d in drafts] == [
        ("summary", None), ("scope.1", "summary"), ("scope.2", "summary"), ("scope.3", "summary")]
    assert drafts[1].text.endswith("\nMilling and overlaying the asphalt pavement and sealing cracks.")
    assert "Project name: Demo Way Repaving" in drafts[0].text


@needs_corpus(PERMITS)
@pytest.mark.parametrize("dataset", sorted(MAPPED))
def test_real_mapped_exports_every_row_chunks_within_contract_or_is_rejected(dataset: str, tmp_path: Path) -> None:
    src = PERMITS / MAPPED[dataset]
    day = tmp_path / "2026-11-24"
    day.mkdir()
    shutil.copy(src, day / src.name)
    res = get_dataset(dataset).load_day(day)
    with src.open(encoding="utf-8-sig", newline="") as f:
        rows = sum(1 for _ in csv.DictReader(f))
    assert all(r.record_ref and r.record_ref.startswith("row ") and r.reason for r in res.rejects), "no file-level reject"
    assert len(res.documents) + len(res.rejects) == rows
    assert len(res.documents) >= 0.98 * rows
    table = chunk_docs(dataset, res.documents)
    report = validate_chunks(table, {d.doc_id: d.text for d in res.documents})
    assert report.passed, report.failures
    assert_permit_tree(table, res.documents)
