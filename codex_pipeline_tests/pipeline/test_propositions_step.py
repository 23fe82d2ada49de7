"""The propositions and proposition-embeddings steps without Dagster: published, reused, or kept aside."""

import datetime as dt

import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import run_chunks_day, run_proposition_embeddings, run_propositions, run_raw_day
from codex_pipeline.propositions import make_extractor
from codex_pipeline.propositions.base import ChunkInput, Extraction, ExtractResult, ExtractStats, Statement
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, QUARANTINE_TABLE, TABLE
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.pipeline.helpers import HashEmbedder, ListLog, land_sample

DAY = dt.date(2026, 11, 24)
OSHA = get_dataset("osha_safety")


@pytest.fixture
def chunked(warehouse: Warehouse) -> Warehouse:
    land_sample(warehouse, OSHA.name, DAY.isoformat())
    run_raw_day(OSHA, warehouse, DAY)
    assert run_chunks_day(OSHA, warehouse, DAY).published
    return warehouse


def test_propositions_are_published_then_reused_and_embedded_once(chunked: Warehouse) -> None:
    done = run_propositions(OSHA, chunked, [DAY], make_extractor("offline"), "test")
    chunks = chunked.read(OSHA.name, "chunks", DAY).num_rows
    assert done.passed and done.failures == () and done.errors == () and done.stopped == ()
    assert done.totals["chunks"] == chunks and done.totals["extracted"] == chunks and done.totals["propositions"] > 0
    assert done.by_partition == {DAY.isoformat(): done.totals} and done.days == (DAY,)
    assert done.extractor == "offline" and done.extractor_config == {"extractor": "offline"}  # no describe(): its name
    assert chunked.read(OSHA.name, TABLE, DAY).num_rows == done.totals["propositions"]
    assert f"{OSHA.name}_{TABLE}" in done.views_created

    again = run_propositions(OSHA, chunked, [DAY], make_extractor("offline"), "test")
    assert again.totals["reused"] == chunks and again.totals["extracted"] == 0

    embedder = HashEmbedder()
    vectors = run_proposition_embeddings(OSHA, chunked, [DAY], embedder)
    assert vectors.totals["inputs"] == vectors.totals["embedded"] == done.totals["propositions"]
    assert (vectors.model, vectors.version) == (embedder.model, embedder.version)
    assert f"{OSHA.name}_{EMBEDDINGS_TABLE}" in vectors.views_created
    sent = embedder.texts
    assert run_proposition_embeddings(OSHA, chunked, [DAY], embedder).totals["reused"] == done.totals["propositions"]
    assert embedder.texts == sent  # nothing changed: no text goes to the model again


class _ShiftedSpans:
    """An extractor whose 'exact' statements point one character off: what the contract must catch."""

    name, version, prompt_version = "offline", "broken", "none"

    def extract(self, chunks: list[ChunkInput], budget: object = None) -> ExtractResult:
        out = [Extraction(c.chunk_id, [Statement(c.text[:20], ((c.sources[0][0] + 1, c.sources[0][0] + 21),), 1.0)])
               for c in chunks]
        return ExtractResult(out, ExtractStats())


def test_a_day_that_breaks_the_contract_is_kept_aside_and_never_embedded(chunked: Warehouse) -> None:
    log = ListLog()
    done = run_propositions(OSHA, chunked, [DAY], _ShiftedSpans(), "test", log=log)
    assert not done.passed and "spans_valid" in done.failed_checks
    assert {f["partition"] for f in done.failures} == {DAY.isoformat()}
    assert done.errors == tuple(log.at("error")) and len(done.errors) == 1 and done.errors[0] in done.warnings
    assert not chunked.partition_path(OSHA.name, TABLE, DAY).exists()
    assert chunked.partition_path(OSHA.name, QUARANTINE_TABLE, DAY).exists()
    with pytest.raises(FileNotFoundError, match="no contract-checked propositions to embed"):
        run_proposition_embeddings(OSHA, chunked, [DAY], HashEmbedder())
