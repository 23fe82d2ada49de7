"""Embeddings through Dagster against the loopback OpenAI server: reuse is counted.

The real `openai` client talks HTTP to a server the test starts; the server counts
every request and input, so "0 requests" is measured, not assumed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator

import dagster as dg
import numpy as np
import pytest

from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline.datasets.sample_data import sample_root
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings, OpenAIConnectionSettings
from codex_pipeline.pipeline.embeddings_day import checkpoint_for
from codex_pipeline.retrieval.context import anchor_spans
from codex_pipeline.retrieval.units import chunk_units
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI, vectors_for

SAMPLE = sample_root()

DAY = "2026-11-24"
KEY = "sk-loopback-dagster-test"
DIMS = 64


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackOpenAI]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackOpenAI(api_key=KEY) as srv:
        yield srv


def settings(server: LoopbackOpenAI, max_batch_inputs: int = 2048, **connection: object) -> EmbeddingSettings:
    return EmbeddingSettings(
        kind="openai", openai_dimensions=DIMS, openai_max_batch_inputs=max_batch_inputs,
        openai=OpenAIConnectionSettings(base_url=server.base_url, backoff_base_s=0.01, max_backoff_s=0.05, timeout_s=5.0,
                                      **connection),
    )


def run(wh: Warehouse, spec: DatasetSpec, embedding: EmbeddingSettings) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        build_dataset_assets(spec),
        partition_key=DAY,
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": embedding},
        raise_on_error=False,
    )


def meta(result: dg.ExecuteInProcessResult, spec: DatasetSpec) -> dict[str, object]:
    (mat,) = result.asset_materializations_for_node(f"{spec.name}__embeddings")
    return {k: v.value for k, v in mat.metadata.items()}


def chunk_texts(wh: Warehouse) -> set[str]:
    return set(wh.read("narrative", "chunks", dt.date.fromisoformat(DAY)).column("chunk_text").to_pylist())


def model_inputs(wh: Warehouse) -> dict[str, list[str]]:
    """What the model is given for each chunk: its text, or its evidence units' texts when it has several."""
    day = dt.date.fromisoformat(DAY)
    raw = {r["doc_id"]: r["canonical_text"] for r in wh.read("narrative", "raw", day).to_pylist()}
    out = {}
    for c in wh.read("narrative", "chunks", day).to_pylist():
        units = chunk_units(raw[c["doc_id"]], anchor_spans(c["evidence_anchor"]), c["metadata"])
        out[c["chunk_id"]] = units.texts if units.embedded else [c["chunk_text"]]
    return out


def all_inputs(wh: Warehouse) -> set[str]:
    return {t for texts in model_inputs(wh).values() for t in texts}


def test_reuse_costs_zero_requests(warehouse: Warehouse, server: LoopbackOpenAI) -> None:
    spec = get_dataset("narrative")
    landing = land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    first = run(warehouse, spec, settings(server))
    assert first.success
    m = meta(first, spec)
    assert m["embedded"] == m["inputs"] > 0 and m["reused"] == 0 and m["requests"] == server.request_count >= 1
    assert m["embedding_model"] == "text-embedding-3-large" and f"dims={DIMS}" in m["embedding_version"]

    server.reset()  # 1. unchanged partition, rerun
    m = meta(run(warehouse, spec, settings(server)), spec)
    assert server.request_count == 0 and m["requests"] == 0 and m["reused"] == m["inputs"]

    bumped = dataclasses.replace(spec, chunker_revision="1.1")  # 2. new chunking_version, same text
    m = meta(run(warehouse, bumped, settings(server)), bumped)
    assert server.request_count == 0 and m["reused"] == m["inputs"]

    before, inputs_before = chunk_texts(warehouse), all_inputs(warehouse)  # 3. one record edited
    doc = landing / "council-recess-statement.txt"
    doc.write_text(doc.read_text().replace("December 16", "December 18"))
    m = meta(run(warehouse, spec, settings(server)), spec)
    changed = chunk_texts(warehouse) - before
    new_inputs = all_inputs(warehouse) - inputs_before  # only its changed chunks, or their changed units, are sent
    assert changed and new_inputs and sorted(server.served_inputs()) == sorted(new_inputs)
    assert m["embedded"] == len(changed) and m["reused"] == m["inputs"] - len(changed)

    day = dt.date.fromisoformat(DAY)  # vectors are the server's, one per chunk, and DuckDB reports them
    emb = warehouse.read("narrative", "embeddings", day)
    chunks = warehouse.read("narrative", "chunks", day)
    assert emb.column("chunk_id").to_pylist() == chunks.column("chunk_id").to_pylist()
    got = np.array(emb.column("vector").to_pylist(), dtype=np.float32)
    inputs = model_inputs(warehouse)
    expected = []
    for cid in chunks.column("chunk_id").to_pylist():  # a chunk of several units: the length-weighted mean of theirs
        texts = inputs[cid]
        mean = (vectors_for(texts, DIMS).astype(np.float64) * np.array([len(t) for t in texts])[:, None]).sum(axis=0)
        expected.append(mean / np.linalg.norm(mean))
    assert any(len(t) > 1 for t in inputs.values())  # (chunks of one unit: test_search_dagster)
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=1e-5, atol=1e-6)
    con = connect_catalog(warehouse)
    try:
        rows = con.execute(
            "SELECT count(*), count(DISTINCT embedding_version), min(embedding_model) FROM codex.narrative_chunks"
        ).fetchall()
    finally:
        con.close()
    assert rows == [(chunks.num_rows, 1, "text-embedding-3-large")]


def test_failure_midway_keeps_finished_vectors(warehouse: Warehouse, server: LoopbackOpenAI) -> None:
    spec = get_dataset("narrative")
    land(warehouse, "narrative", DAY, SAMPLE / "narrative" / DAY)  # ~15 windows: several batches
    embedding = settings(server, max_batch_inputs=2, max_concurrency=1, max_retries=2)
    server.push(None, times=1)  # the first batch goes through ...
    server.fail_always("server_error", status=503)  # ... then the API stays down
    failed = run(warehouse, spec, embedding)
    assert not failed.success
    (failure,) = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
    message = str(failure.event_specific_data.error)
    assert "503" in message and "saved in" in message and KEY not in message
    day = dt.date.fromisoformat(DAY)
    assert not warehouse.partition_path("narrative", "embeddings", day).exists()
    assert checkpoint_for(warehouse, "narrative", day).rows() == 2  # the finished batch is on disk

    sent_before = set(server.served_inputs())
    server.reset()  # the API is back: the rerun sends only what is missing
    rerun = run(warehouse, spec, embedding)
    assert rerun.success
    total = len(chunk_texts(warehouse))
    distinct = len(all_inputs(warehouse))  # what the model is given: chunk texts and evidence units
    assert len(server.served_inputs()) == distinct - 2 and not (set(server.served_inputs()) & sent_before)
    m = meta(rerun, spec)
    assert m["recovered_from_checkpoint"] == 2 and m["inputs"] == total
    emb = warehouse.read("narrative", "embeddings", day)
    assert emb.num_rows == total and len(set(emb.column("chunk_id").to_pylist())) == total
    assert not checkpoint_for(warehouse, "narrative", day).files()  # cleared once written


def test_missing_key_is_a_clear_error(warehouse: Warehouse, server: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    result = run(warehouse, get_dataset("narrative"), settings(server))
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "OPENAI_API_KEY" in str(failure.event_specific_data.error)
