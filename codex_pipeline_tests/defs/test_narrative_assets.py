"""`narrative` through real Dagster: Parquet rows, DuckDB views, the blocking contract check."""

from __future__ import annotations

import datetime as dt
import json

import dagster as dg

from codex_pipeline.core.contract import SEED_FIELDS
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAY = "2026-11-24"


def test_partition_lands_in_parquet_and_duckdb(warehouse: Warehouse) -> None:
    landing = land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    (landing / "broken.txt").write_bytes(b"\xff\xfe not utf-8")
    (landing / "nothing.html").write_text("<html><body><script>x()</script></body></html>")
    result = materialize_dataset(warehouse, "narrative", DAY)
    assert result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    evaluation, unique, addresses = (evaluations[n] for n in ("chunk_contract", "current_chunk_ids_unique", "chunk_addresses"))
    assert addresses.passed and addresses.check_name == "chunk_addresses"
    assert evaluation.passed and evaluation.check_name == "chunk_contract"
    assert unique.passed and unique.check_name == "current_chunk_ids_unique"

    day = dt.date.fromisoformat(DAY)
    chunks = warehouse.read("narrative", "chunks", day).to_pylist()
    assert {c["doc_id"] for c in chunks} == {
        "urn:aprs:narrative:storm-drain-notice.html",
        "urn:aprs:narrative:council-recess-statement.txt",
    }
    raw = {r["doc_id"]: r["canonical_text"] for r in warehouse.read("narrative", "raw", day).to_pylist()}
    for c in chunks:
        assert set(SEED_FIELDS) <= set(c)
        anchor = json.loads(c["evidence_anchor"])
        start, end = anchor["char_span"]
        assert raw[c["doc_id"]][start:end] == c["chunk_text"]
        assert c["token_count"] == count_tokens(c["chunk_text"])
        assert c["chunk_type"] == "narrative_window" and c["section_id"] == f"window.{c['seq_index']}"
    html_chunk = next(c for c in chunks if c["doc_id"].endswith(".html"))
    assert json.loads(html_chunk["evidence_anchor"])["xpath"].startswith("/html[1]/")

    mats = result.asset_materializations_for_node("narrative__chunks")
    meta = mats[0].metadata
    assert meta["chunks"].value == len(chunks) and meta["documents"].value == 2
    assert meta["chunks_by_type"].value == {"narrative_window": len(chunks)}
    assert {"tokens_p50", "tokens_p95", "tokens_max", "preview", "rejects"} <= set(meta)

    con = connect_catalog(warehouse)
    try:
        assert con.execute("SELECT count(*) FROM codex.narrative_chunks").fetchall() == [(len(chunks),)]
        rejects = dict(con.execute("SELECT source_file, reason FROM codex.narrative_rejects").fetchall())
    finally:
        con.close()
    assert rejects["broken.txt"].startswith("invalid UTF-8 at byte 0")
    assert rejects["nothing.html"].startswith("empty document")


def test_ids_identical_across_runs(warehouse: Warehouse) -> None:
    land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    day = dt.date.fromisoformat(DAY)
    assert materialize_dataset(warehouse, "narrative", DAY).success
    first = warehouse.read("narrative", "chunks", day).select(["chunk_id", "chunk_text"]).to_pylist()
    assert materialize_dataset(warehouse, "narrative", DAY).success
    second = warehouse.read("narrative", "chunks", day).select(["chunk_id", "chunk_text"]).to_pylist()
    assert first == second


def _lying_chunker(doc, limits=None):  # claims one token too many: the contract must catch it
    return [ChunkDraft("all", "narrative_window", doc.text, ((0, len(doc.text)),), count_tokens(doc.text) + 1)]


def test_contract_failure_blocks_and_quarantines(warehouse: Warehouse) -> None:
    spec = DatasetSpec("badset", "a dataset whose chunker lies", get_dataset("narrative").load_day, _lying_chunker, "0.1")
    land(warehouse, "badset", DAY, FIXTURES / "narrative")
    result = dg.materialize(
        build_dataset_assets(spec),
        partition_key=DAY,
        resources={"warehouse": CodexWarehouse(data_dir=str(warehouse.root)), "embedding": EmbeddingSettings()},
        raise_on_error=False,
    )
    # the failed contract fails the chunks step, so the warning checks over the published file do not run
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == "chunk_contract"
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["failed_checks"].value == ["token_count_exact_cl100k"]
    day = dt.date.fromisoformat(DAY)
    assert not warehouse.partition_path("badset", "chunks", day).exists()
    assert warehouse.read("badset", "quarantine", day).num_rows == 2
    # the blocking check kept the bad partition away from embeddings
    assert not result.asset_materializations_for_node("badset__embeddings")
    assert not warehouse.partitions("badset", "embeddings")
