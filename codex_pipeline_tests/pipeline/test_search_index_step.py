"""The search-index step without Dagster: built from the current corpus, left alone when nothing changed."""

import datetime as dt

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import run_chunks_day, run_embeddings, run_raw_day, run_search_index
from codex_pipeline.retrieval import index_root, read_manifest
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.pipeline.helpers import HashEmbedder, ListLog, land_sample

DAY = dt.date(2026, 11, 24)
NARRATIVE = get_dataset("narrative")


def _chunked(wh: Warehouse) -> int:
    land_sample(wh, NARRATIVE.name, DAY.isoformat())
    run_raw_day(NARRATIVE, wh, DAY)
    assert run_chunks_day(NARRATIVE, wh, DAY).published
    return wh.read(NARRATIVE.name, "chunks", DAY).num_rows


def test_the_index_is_built_once_and_a_rerun_with_the_same_inputs_writes_nothing(warehouse: Warehouse) -> None:
    chunks, embedder = _chunked(warehouse), HashEmbedder()
    run_embeddings(NARRATIVE, warehouse, [DAY], embedder)
    done = run_search_index(NARRATIVE, warehouse, embedder)
    assert done.rebuilt and done.manifest.chunks == done.manifest.vectors == chunks and done.warnings == ()
    assert done.path == index_root(warehouse, NARRATIVE.name) / done.manifest.version and done.path.is_dir()
    assert read_manifest(index_root(warehouse, NARRATIVE.name)) == done.manifest
    log = ListLog()
    again = run_search_index(NARRATIVE, warehouse, embedder, log)
    assert not again.rebuilt and again.manifest.version == done.manifest.version
    assert log.at("info") == [f"narrative: inputs unchanged since index version {done.manifest.version}"]


def test_chunks_without_vectors_are_indexed_for_bm25_and_said_so(warehouse: Warehouse) -> None:
    chunks, log = _chunked(warehouse), ListLog()
    done = run_search_index(NARRATIVE, warehouse, HashEmbedder(), log)
    assert done.rebuilt and done.manifest.chunks == done.manifest.missing_vectors == chunks
    assert done.warnings == tuple(log.at("warning")) and "found by BM25 only" in done.warnings[0]
