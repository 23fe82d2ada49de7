"""`docs` and `email_threads` through real Dagster: Parquet rows, DuckDB views, the contract check, rejects."""

from __future__ import annotations

import datetime as dt
import json

from codex_pipeline.core.contract import SEED_FIELDS
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, SAMPLE_LANDING, land, materialize_dataset

SAMPLE = SAMPLE_LANDING


def _verify_rows(warehouse: Warehouse, dataset: str, day: dt.date) -> list[dict]:
    chunks = warehouse.read(dataset, "chunks", day).to_pylist()
    raw = {r["doc_id"]: r["canonical_text"] for r in warehouse.read(dataset, "raw", day).to_pylist()}
    assert chunks and set(raw) == {c["doc_id"] for c in chunks}
    for c in chunks:
        assert set(SEED_FIELDS) <= set(c)
        assert c["token_count"] == count_tokens(c["chunk_text"]) <= 1500
        anchor = json.loads(c["evidence_anchor"])
        spans = anchor.get("spans") or [anchor["char_span"]]
        text = raw[c["doc_id"]]
        assert "".join(text[s:e] for s, e in spans) == c["chunk_text"]
        assert c["dataset"] == dataset and c["partition_date"] == day
        assert json.loads(c["metadata"])
    return chunks


def test_docs_partition(warehouse: Warehouse) -> None:
    day_s = "2026-11-24"
    landing = land(warehouse, "docs", day_s, SAMPLE / "docs" / day_s)
    land(warehouse, "docs", day_s, FIXTURES / "docs" / "big-table.md")
    (landing / "bad.md").write_text("---\ntitle: [broken\n---\n# Body\n")
    result = materialize_dataset(warehouse, "docs", day_s)
    assert result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {"chunk_contract", "current_chunk_ids_unique", "chunk_addresses"}
    assert all(e.passed for e in evaluations.values())

    day = dt.date.fromisoformat(day_s)
    chunks = _verify_rows(warehouse, "docs", day)
    assert {c["doc_id"] for c in chunks} == {
        "urn:aprs:docs:getting-started.md", "urn:aprs:docs:guides/pagination.mdx", "urn:aprs:docs:big-table.md",
    }
    assert {c["chunk_type"] for c in chunks} == {"doc_section"}
    gs = next(c for c in chunks if c["doc_id"] == "urn:aprs:docs:getting-started.md")
    meta = json.loads(gs["metadata"])
    assert meta["front_matter"]["tags"] == ["api", "quickstart"]
    assert ["Getting started", "Rate limits"] in meta["header_paths"]
    table_parts = [c for c in chunks if c["doc_id"].endswith("big-table.md") and ".part." in c["section_id"]]
    assert any("spans" in json.loads(c["evidence_anchor"]) for c in table_parts)  # header-repeating pieces

    con = connect_catalog(warehouse)
    try:
        n = con.execute("SELECT count(*) FROM codex.docs_chunks WHERE partition_date = ?", [day]).fetchall()
        rejects = dict(con.execute("SELECT source_file, reason FROM codex.docs_rejects").fetchall())
        headers = con.execute(
            "SELECT json_extract(metadata, '$.headers') FROM codex.docs_chunks "
            "WHERE section_id = 'pagination.part.1' OR section_id = 'preamble'"
        ).fetchall()
    finally:
        con.close()
    assert n == [(len(chunks),)]
    assert rejects["notes.txt"].startswith("unsupported file type")
    assert rejects["bad.md"].startswith("invalid YAML front matter")
    assert headers


def test_email_threads_partition(warehouse: Warehouse) -> None:
    day_s = "2026-11-25"
    land(warehouse, "email_threads", day_s, SAMPLE / "email_threads" / day_s)
    land(warehouse, "email_threads", day_s, FIXTURES / "email_threads")
    result = materialize_dataset(warehouse, "email_threads", day_s)
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    assert evaluations and all(e.passed for e in evaluations)

    day = dt.date.fromisoformat(day_s)
    chunks = _verify_rows(warehouse, "email_threads", day)
    parents = {c["chunk_id"]: c for c in chunks if c["chunk_type"] == "email_thread"}
    windows = [c for c in chunks if c["chunk_type"] == "email_window"]
    assert len(parents) == 5 and windows
    assert all(w["parent_chunk_id"] in parents for w in windows)
    for p in parents.values():
        kids = json.loads(p["metadata"])["child_chunk_ids"]
        assert kids == [w["chunk_id"] for w in windows if w["parent_chunk_id"] == p["chunk_id"]]

    con = connect_catalog(warehouse)
    try:
        # the seed's parent-child SQL, as written, against this dataset
        hit = next(w for w in windows if "export failed" in w["chunk_text"])
        parent_text = con.execute(
            """
            WITH hit AS (
            SELECT chunk_id, doc_id, parent_chunk_id, chunk_text
            FROM codex.email_threads_chunks
            WHERE chunk_id = $hit_chunk_id
            )
            SELECT parent.chunk_text
            FROM hit
            JOIN codex.email_threads_chunks parent
            ON parent.chunk_id = hit.parent_chunk_id;
            """,
            {"hit_chunk_id": hit["chunk_id"]},
        ).fetchall()
        rejects = con.execute("SELECT source_file, record_ref, reason FROM codex.email_threads_rejects").fetchall()
    finally:
        con.close()
    assert parent_text[0][0].startswith("Thread: Nightly export failed at publish stage\n")
    reasons = sorted(r for _, _, r in rejects)
    assert len(rejects) == 8
    assert any(r.startswith("duplicate Message-ID <20261125082000.export-2@riverton.example>: identical") for r in reasons)
    assert any(r.startswith("duplicate Message-ID <dup@example.org> with different content") for r in reasons)
    assert "missing From header" in reasons


def test_ids_identical_across_runs(warehouse: Warehouse) -> None:
    for dataset, src in (("docs", SAMPLE / "docs" / "2026-11-25"), ("email_threads", SAMPLE / "email_threads" / "2026-11-24")):
        land(warehouse, dataset, "2026-11-25", src)
        day = dt.date(2026, 11, 25)
        assert materialize_dataset(warehouse, dataset, "2026-11-25").success
        first = warehouse.read(dataset, "chunks", day).select(["chunk_id", "chunk_text"]).to_pylist()
        assert materialize_dataset(warehouse, dataset, "2026-11-25").success
        assert warehouse.read(dataset, "chunks", day).select(["chunk_id", "chunk_text"]).to_pylist() == first
