"""Structured record sources: schemas, CSV coercion, nested / record checks, key-value views, docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_pipeline.core.documents import Block
from codex_pipeline.sources.records import Field, RawRecord, RecordSchema
from codex_pipeline.sources.structured import (
    STRUCTURED_DATASETS,
    RecordRules,
    build_documents,
    coerce_cell,
    fmt_view_value,
    join_blocks,
    load_lehd_flows_day,
    load_poi_intelligence_day,
    load_urban_signal_grid_day,
)
from codex_pipeline_tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "datasets" / "structured_records.md"


def write(tmp_path: Path, name: str, content: str) -> Path:
    day = tmp_path / "2026-11-24"
    day.mkdir(exist_ok=True)
    (day / name).write_text(content)
    return day


def test_fixture_day_lands_valid_records_and_rejects_the_bad_one_with_reasons() -> None:
    res = load_urban_signal_grid_day(FIXTURES / "urban_signal_grid")
    assert [d.record_id for d in res.documents] == ["usg-tac-8928d54a3b7ffff-2026-11-25", "usg-tac-8928d548a63ffff-2026-11-25"]
    assert res.documents[0].doc_id == "urn:aprs:urban_signal_grid:usg-tac-8928d54a3b7ffff-2026-11-25"
    assert res.documents[0].payload["cell_id"] == "8928d54a3b7ffff"
    (rej,) = res.rejects
    assert rej.source_file == "grid_signals.jsonl" and rej.record_ref == "line 3, signal_id='usg-tac-bad-2026-11-25'"
    assert "field 'cell_id' fails 'H3 index: 15 lowercase hex digits'" in rej.reason


def test_lehd_csv_is_typed_and_band_sums_are_checked() -> None:
    res = load_lehd_flows_day(FIXTURES / "lehd_flows")
    assert len(res.documents) == 2
    p = res.documents[0].payload
    assert isinstance(p["year"], int) and isinstance(p["total_jobs"], int) and isinstance(p["straight_line_km"], float)
    assert p["createdate"] == "2024-08-23"
    (rej,) = res.rejects
    assert rej.record_ref.startswith("row 4, flow_id=") and "age bands SA01+SA02+SA03 sum to total_jobs" in rej.reason


def test_poi_outsized_and_invalid_records() -> None:
    res = load_poi_intelligence_day(FIXTURES / "poi_intelligence")
    assert [d.record_id for d in res.documents] == ["poi-tac-000077", "poi-tac-003315"]
    (rej,) = res.rejects
    assert "'rating' fails 'between 0 and 5' (got 7.2)" in rej.reason and "'website' fails 'http(s) URL'" in rej.reason


def test_csv_is_refused_for_datasets_with_list_fields(tmp_path: Path) -> None:
    day = write(tmp_path, "cells.csv", "signal_id,city\nx,Tacoma\n")
    res = load_urban_signal_grid_day(day)
    assert res.documents == [] and "unsupported file type '.csv'" in res.rejects[0].reason


def test_csv_header_must_match_the_schema(tmp_path: Path) -> None:
    day = write(tmp_path, "od.csv", "flow_id,year,color\nf1,2022,red\n")
    res = load_lehd_flows_day(day)
    (rej,) = res.rejects
    assert rej.source_file == "od.csv" and "missing required column(s)" in rej.reason and "unknown column(s) 'color'" in rej.reason


def test_bad_json_lines_and_duplicates_are_rejected(tmp_path: Path) -> None:
    good = json.loads((FIXTURES / "urban_signal_grid" / "grid_signals.jsonl").read_text().splitlines()[0])
    day = write(tmp_path, "g.jsonl", "\n".join([json.dumps(good), "{not json", "[1, 2]", json.dumps(good)]) + "\n")
    res = load_urban_signal_grid_day(day)
    assert len(res.documents) == 1
    reasons = sorted(r.reason.split(":")[0] for r in res.rejects)
    assert reasons == ["duplicate record id 'usg-tac-8928d54a3b7ffff-2026-11-25' (first at g.jsonl line 1)",
                       "expected a JSON object, got list", "invalid JSON"]


@pytest.mark.parametrize(
    ("cell", "type_", "expected"),
    [("12", "integer", 12), (" 12 ", "integer", 12), ("12.0", "integer", "12.0"), ("3.5", "number", 3.5),
     ("7", "number", 7), ("nan", "number", "nan"), ("approx 14k", "number", "approx 14k"), ("", "string", None),
     ("2013-07-08T00:00:00.000", "date", "2013-07-08"), ("2013-07-08", "date", "2013-07-08"),
     ("2013-07-08T10:00:00", "date", "2013-07-08T10:00:00"), ("yes", "boolean", True), ("0", "boolean", False)],
)
def test_coerce_cell(cell: str, type_: str, expected) -> None:
    assert coerce_cell(cell, type_) == expected


def test_nested_object_problems_name_the_item_and_field() -> None:
    item = RecordSchema("t.item", "k", (Field("k", "string"), Field("n", "integer", False)))
    rules = RecordRules(
        RecordSchema("t", "id", (Field("id", "string"), Field("items", "list[object]"))),
        nested=(("items", item),),
        checks=(("at most two items", lambda d: len(d["items"]) <= 2),),
    )
    recs = [RawRecord("f.jsonl", "line 1", {"id": "a", "items": [{"k": "x"}, {"k": "y", "n": "two"}]}),
            RawRecord("f.jsonl", "line 2", {"id": "b", "items": [{"k": "x"}] * 3}),
            RawRecord("f.jsonl", "line 3", {"id": "c", "items": [{"k": "x", "n": 2}]})]
    valid, rejects = rules.validate(recs)
    assert [r.data["id"] for r in valid] == ["c"]
    assert [(r.record_ref, r.reason) for r in rejects] == [
        ("line 1, id='a'", "items[1]: field 'n' fails 'integer' (got 'two')"),
        ("line 2, id='b'", "record check fails: at most two items"),
    ]


def test_view_values() -> None:
    assert fmt_view_value([{"b": 2, "a": "x"}, {"a": "y"}]) == "\n  - a: x; b: 2\n  - a: y"
    assert fmt_view_value({"z": 1, "a": True}) == "a: true; z: 1"
    assert fmt_view_value("one\n\ntwo") == "one\n\n  two"
    assert fmt_view_value(0.1) == "0.1" and fmt_view_value(["a", "b"]) == "a; b"


def test_join_blocks_records_spans_and_refuses_outer_whitespace() -> None:
    r = join_blocks([("a", "", "first", {}), ("b", "1", "second\nline", {"k": 1})])
    assert r.text == "first\n\nsecond\nline"
    assert [(p.kind, r.text[p.start:p.end]) for p in r.parts] == [("a", "first"), ("b", "second\nline")]
    assert r.parts[1] == Block("b", 7, 18, "1", {"k": 1})
    with pytest.raises(ValueError):
        join_blocks([("a", "", " padded", {})])


def test_build_documents_puts_a_renderings_parts_on_the_document_and_a_view_has_none() -> None:
    records = [("r1", RawRecord("f.jsonl", "line 1", {"id": "r1", "body": "text"}))]
    (doc,) = build_documents("t", records, lambda d: join_blocks([("head", "", d["id"], {}), ("body", "", d["body"], {})]),
                             lambda d: None).documents
    assert doc.text == "r1\n\ntext" and [(b.kind, b.start, b.end) for b in doc.blocks] == [("head", 0, 2), ("body", 4, 8)]
    (view,) = build_documents("t", records, lambda d: f"## {d['id']}", lambda d: None).documents
    assert view.text == "## r1" and view.blocks == ()


def test_docs_carry_every_field_table() -> None:
    text = DOC.read_text()
    for ds in STRUCTURED_DATASETS:
        assert ds.rules.markdown_tables() in text, f"docs out of date for {ds.name}"
    assert "record.part.2" in text


@pytest.mark.parametrize("ds", STRUCTURED_DATASETS, ids=lambda d: d.name)
def test_docs_example_record_is_valid_and_renders_as_documented(ds) -> None:
    text = DOC.read_text()
    section = text.split(f"## `{ds.name}`", 1)[1].split("\n## `", 1)[0]
    example = json.loads(section.split("```json\n", 1)[1].split("\n```", 1)[0])
    valid, rejects = ds.rules.validate([RawRecord("doc", "example", example)])
    assert valid and not rejects
    view = section.split("```markdown\n", 1)[1].split("\n```", 1)[0]
    assert ds.render(example) == view
