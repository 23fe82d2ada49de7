"""The embeddings step without Dagster: every chunk gets a vector, and a rerun costs no model call."""

import datetime as dt

import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import run_chunks_day, run_embeddings, run_raw_day
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.pipeline.helpers import HashEmbedder, ListLog, land_sample

DAYS = [dt.date(2026, 11, 24), dt.date(2026, 11, 25)]
NARRATIVE = get_dataset("narrative")


@pytest.fixture
def chunked(warehouse: Warehouse) -> Warehouse:
    for day in DAYS:
        land_sample(warehouse, "narrative", day.isoformat())
        run_raw_day(NARRATIVE, warehouse, day)
        assert run_chunks_day(NARRATIVE, warehouse, day).published
    return warehouse


def test_every_chunk_gets_a_vector_and_a_rerun_reuses_them_all(chunked: Warehouse) -> None:
    embedder, log = HashEmbedder(), ListLog()
    first = run_embeddings(NARRATIVE, chunked, DAYS, embedder, log)
    chunks = sum(chunked.read("narrative", "chunks", d).num_rows for d in DAYS)
    assert first.totals.inputs == chunks and first.totals.embedded + first.totals.reused == chunks
    assert (first.model, first.version, first.dimensions) == ("pipeline-test-hash", "sha256-8d-v1", 8)
    assert set(first.by_partition) == {d.isoformat() for d in DAYS} and len(log.at("info")) == len(DAYS)
    assert all(chunked.read("narrative", "embeddings", d).num_rows == chunked.read("narrative", "chunks", d).num_rows
               for d in DAYS)
    sent = embedder.texts
    again = run_embeddings(NARRATIVE, chunked, DAYS, embedder)
    assert embedder.texts == sent  # nothing changed: no text goes to the model again
    assert again.totals.reused == chunks and again.totals.embedded == 0 and again.totals.requests == 0
    assert again.totals.evidence_units == first.totals.evidence_units == again.totals.evidence_units_reused


def test_a_day_without_published_chunks_cannot_be_embedded(warehouse: Warehouse) -> None:
    land_sample(warehouse, "narrative", DAYS[0].isoformat())
    run_raw_day(NARRATIVE, warehouse, DAYS[0])
    with pytest.raises(FileNotFoundError, match="no contract-checked chunks to embed"):
        run_embeddings(NARRATIVE, warehouse, DAYS[:1], HashEmbedder())
