"""`[ds, propositions]` → `[ds, proposition_embeddings]` through real Dagster materializations.

The loopback server answers both chat (propositions) and embeddings; it records
every request, so "0 chat calls" is measured, not assumed.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.proposition_assets import CONTRACT_CHECK, PropositionSettings, build_proposition_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings, OpenAIConnectionSettings
from codex_pipeline.propositions.base import ChunkInput, Extraction, ExtractResult, ExtractStats, Statement
from codex_pipeline.propositions.table import QUARANTINE_TABLE, TABLE
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI

DS = "osha_safety"
DAY = "2026-11-24"
CHAT_MODEL = "gpt-4o-mini"


def _land(wh: Warehouse, edit: tuple[str, str] | None = None) -> None:
    dest = wh.landing_dir(DS, dt.date.fromisoformat(DAY))
    dest.mkdir(parents=True, exist_ok=True)
    text = (FIXTURES / DS / "cases.jsonl").read_text()
    if edit:
        assert edit[0] in text
        text = text.replace(edit[0], edit[1])
    (dest / "cases.jsonl").write_text(text)


def _run(wh: Warehouse, server: LoopbackOpenAI, props: PropositionSettings) -> dg.ExecuteInProcessResult:
    """Every asset of the dataset; vectors from a second loopback server, so ``server`` sees only chat calls."""
    spec = get_dataset(DS)
    assert _EMBEDDINGS is not None
    return dg.materialize(
        build_dataset_assets(spec) + build_proposition_assets(spec),
        partition_key=DAY,
        resources={
            "warehouse": CodexWarehouse(data_dir=str(wh.root)),
            "embedding": EmbeddingSettings(kind="openai", openai_dimensions=32, openai=_loopback(_EMBEDDINGS)),
            "propositions": props,
        },
        raise_on_error=False,
    )


def _meta(result: dg.ExecuteInProcessResult, table: str = TABLE) -> dict[str, object]:
    (mat,) = result.asset_materializations_for_node(f"{DS}__{table}")
    return {k: v.value for k, v in mat.metadata.items()}


def _loopback(server: LoopbackOpenAI, **kw: object) -> OpenAIConnectionSettings:
    return OpenAIConnectionSettings(base_url=server.base_url, backoff_base_s=0.01, max_backoff_s=0.05, timeout_s=5.0, **kw)


def _openai(server: LoopbackOpenAI, max_concurrency: int = 4, **kw: object) -> PropositionSettings:
    return PropositionSettings(kind="openai", openai=_loopback(server, max_concurrency=max_concurrency), **kw)


def _chat_requests(server: LoopbackOpenAI) -> list[dict[str, object]]:
    return [json.loads(r.inputs[0]) for r in server.requests if r.model == CHAT_MODEL]


_EMBEDDINGS: LoopbackOpenAI | None = None


@pytest.fixture
def server(chat_server: LoopbackOpenAI) -> Iterator[LoopbackOpenAI]:
    global _EMBEDDINGS
    with LoopbackOpenAI(api_key=chat_server.api_key) as emb:
        _EMBEDDINGS = emb
        yield chat_server
        _EMBEDDINGS = None


def test_offline_propositions_view_joins_parent_chunks(warehouse: Warehouse, server: LoopbackOpenAI) -> None:
    _land(warehouse)
    first = _run(warehouse, server, PropositionSettings())
    assert first.success
    (check,) = [c for c in first.get_asset_check_evaluations() if c.check_name == CONTRACT_CHECK]
    assert check.passed
    m = _meta(first)
    assert m["extractor"] == "offline" and m["extracted"] == m["chunks"] > 0 and m["reused"] == 0
    assert m["propositions"] > m["chunks"] and m["unaligned"] == 0 and m["cost_cap_reached"] is False
    assert _meta(first, "proposition_embeddings")["embedded"] == m["propositions"]
    con = connect_catalog(warehouse)
    try:
        rows = con.execute(
            f"SELECT p.proposition_id, p.text, p.spans, c.chunk_id, c.chunk_type, r.canonical_text "
            f"FROM codex.{DS}_propositions p JOIN codex.{DS}_chunks c ON c.chunk_id = p.parent_chunk_id "
            f"JOIN codex.{DS}_raw r ON r.doc_id = p.doc_id ORDER BY p.proposition_id"
        ).fetchall()
        vectors = con.execute(f"SELECT count(*) FROM codex.{DS}_proposition_embeddings").fetchall()[0][0]
    finally:
        con.close()
    assert len(rows) == m["propositions"] == vectors
    for _pid, text, spans, _cid, _type, canonical in rows:  # exact spans, read back through DuckDB
        assert " ".join(canonical[s["start"]:s["end"]] for s in spans) == text

    again = _meta(_run(warehouse, server, PropositionSettings()))
    assert again["reused"] == again["chunks"] and again["extracted"] == 0


@pytest.mark.slow  # three Dagster runs of the day against the loopback chat server
def test_cached_rerun_makes_zero_chat_calls_and_an_edit_re_extracts_one_chunk(
    warehouse: Warehouse, server: LoopbackOpenAI
) -> None:
    _land(warehouse)
    m = _meta(_run(warehouse, server, _openai(server)))
    assert m["extracted"] == m["chunks"] > 1 and m["requests"] >= 1 and m["cost_usd"] > 0
    first_ids = set(warehouse.read(DS, TABLE, dt.date.fromisoformat(DAY)).column("proposition_id").to_pylist())

    server.reset()
    m = _meta(_run(warehouse, server, _openai(server)))
    assert _chat_requests(server) == [] and m["requests"] == 0 and m["reused"] == m["chunks"]

    server.reset()
    _land(warehouse, ("had no evaluation on record since 2021.", "had no evaluation on record since 2020."))
    m = _meta(_run(warehouse, server, _openai(server)))
    sent = [c["text"] for req in _chat_requests(server) for c in req["chunks"]]
    assert len(sent) == 1 and "since 2020" in sent[0]
    assert m["extracted"] == 1 and m["reused"] == m["chunks"] - 1
    assert set(warehouse.read(DS, TABLE, dt.date.fromisoformat(DAY)).column("proposition_id").to_pylist()) == first_ids


def test_cost_cap_stops_the_partition_cleanly_and_says_so(warehouse: Warehouse, server: LoopbackOpenAI) -> None:
    _land(warehouse)
    result = _run(warehouse, server, _openai(server, max_usd_per_partition=0.0))
    assert result.success  # stopped, not failed
    m = _meta(result)
    assert m["cost_cap_reached"] is True and m["requests"] == 0 and _chat_requests(server) == []
    assert m["deferred"] == m["chunks"] and m["propositions"] == 0
    assert "cost cap reached" in str(m["cost_cap_message"]) and "raise max_usd_per_run" in str(m["cost_cap_message"])


def test_bad_model_output_becomes_rejects_not_a_failed_run(warehouse: Warehouse, server: LoopbackOpenAI) -> None:
    _land(warehouse)
    server.push("refusal")
    result = _run(warehouse, server, _openai(server, openai_max_batch_chunks=1, max_concurrency=1))
    assert result.success
    m = _meta(result)
    assert m["rejected"] == 1 and m["extracted"] == m["chunks"] - 1
    con = connect_catalog(warehouse)
    try:
        (row,) = con.execute(f"SELECT stage, record_ref, reason FROM codex.{DS}_rejects WHERE stage = 'propositions'").fetchall()
    finally:
        con.close()
    assert row[1].startswith("urn:aprs:chunk:") and "model refused" in row[2]


class _ShiftedSpans:
    """An extractor whose 'exact' statements point one character off: what the contract must catch."""

    name, version, prompt_version = "offline", "broken", "none"

    def extract(self, chunks: list[ChunkInput], budget: object = None) -> ExtractResult:
        out = [Extraction(c.chunk_id, [Statement(c.text[:20], ((c.sources[0][0] + 1, c.sources[0][0] + 21),), 1.0)]) for c in chunks]
        return ExtractResult(out, ExtractStats())


def test_contract_check_blocks_a_broken_partition(
    warehouse: Warehouse, server: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    _land(warehouse)
    monkeypatch.setattr(PropositionSettings, "build", lambda self: _ShiftedSpans())
    result = _run(warehouse, server, PropositionSettings())
    (check,) = [c for c in result.get_asset_check_evaluations() if c.check_name == CONTRACT_CHECK]
    assert not check.passed and "spans_valid" in check.metadata["failed_checks"].value
    day = dt.date.fromisoformat(DAY)
    assert not warehouse.partition_path(DS, TABLE, day).exists()
    assert warehouse.partition_path(DS, QUARANTINE_TABLE, day).exists()
    assert result.asset_materializations_for_node(f"{DS}__proposition_embeddings") == []  # blocked downstream


def test_sample_landing_is_untouched(tmp_path: Path) -> None:
    """Guard: the tests land copies, never edit the shipped fixture."""
    copy = tmp_path / "c.jsonl"
    shutil.copy(FIXTURES / DS / "cases.jsonl", copy)
    assert "since 2021." in copy.read_text()


def test_retriever_and_cli_search_propositions_with_parent_context(
    warehouse: Warehouse, server: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    from codex_pipeline.cli import main
    from codex_pipeline.embeddings.openai_client import OpenAIEmbedder
    from codex_pipeline.retrieval import Retriever
    from codex_pipeline.transport import OpenAIConnection

    _land(warehouse)
    assert _run(warehouse, server, PropositionSettings()).success
    assert _EMBEDDINGS is not None
    embedder = OpenAIEmbedder(dimensions=32, connection=OpenAIConnection(server.api_key or "", _EMBEDDINGS.base_url))
    target = "Eleven operators in the frozen storage area had no evaluation on record since 2021."
    for mode in ("hybrid", "vector", "bm25"):
        hits = Retriever(warehouse.root, embedder=embedder).search_propositions(target, k=3, mode=mode)
        top = hits[0]
        assert top.text == target, (mode, [h.text for h in hits])  # vector: the loopback vector of the exact text
        assert top.evidence_text == (target,) and top.parent_chunk_type == "osha_citation"
        assert target in top.parent_text and top.parent_chunk_id.startswith("urn:aprs:chunk:")
    assert main(["--data-dir", str(warehouse.root), "search", "--units", "propositions", "--mode", "bm25",
                 "--no-refresh", "-k", "1", "frozen storage evaluation"]) == 0
    out = capsys.readouterr().out
    assert "proposition_id=urn:aprs:chunk:" in out and "parent (osha_" in out and "evidence: [" in out
