"""`Retriever` keeps its indexes current without any CLI code, and says when it cannot.

Days are landed with the library steps (ingest → chunk → embed → write), never with the
search-index step: the index is stale until a Retriever notices. Vectors come from the
deterministic fake embedder: what is tested is when the index is rebuilt, not MiniLM.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.embeddings import Embedder, embed_partition
from codex_pipeline.retrieval import IndexBusy, Retriever, index_root, read_manifest
from codex_pipeline.retrieval.corpus import build_lock, update_dataset_index
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder

DS = "narrative"
D1, D2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
LIBRARY = "The library board approved the budget for the new reading room. Opening hours extend to nine. " * 4
QUOKKA = "The quokka underpass on Elm Street stays closed until March while inspectors replace two bearings. " * 3


def land_day(wh: Warehouse, embedder: Embedder, day: dt.date, files: dict[str, str]) -> None:
    """Raw, chunks and embeddings of one day, as the pipeline writes them (no search index step)."""
    spec = get_dataset(DS)
    folder = wh.landing_dir(DS, day)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    loaded = spec.load_day(folder)
    raw = steps.ingest(spec, day, loaded.documents, loaded.rejects).table
    chunks = steps.chunk(spec, day, steps.documents_from_raw(raw)).table
    emb = embed_partition(chunks, embedder).table
    wh.write(raw, DS, "raw", day)
    wh.write(chunks, DS, "chunks", day)
    wh.write(emb.append_column("partition_date", pa.array([day] * emb.num_rows, pa.date32())), DS, "embeddings", day)


@pytest.fixture
def embedder() -> Embedder:
    return FakeEmbedder()


@pytest.fixture
def wh(tmp_path: Path, embedder: Embedder) -> Warehouse:
    wh = Warehouse(tmp_path / "data")
    land_day(wh, embedder, D1, {"library.txt": LIBRARY})
    return wh


def test_a_new_day_is_found_without_rebuilding_by_hand(wh: Warehouse, embedder: Embedder) -> None:
    retriever = Retriever(wh.root, embedder=embedder)  # no index yet: the Retriever builds it
    assert retriever.datasets == [DS]
    first = read_manifest(index_root(wh, DS))
    assert first is not None and first.chunks > 0
    assert retriever.search("quokka underpass", k=3, mode="bm25") == []

    land_day(wh, embedder, D2, {"bridge.txt": QUOKKA})
    for mode in ("bm25", "vector", "hybrid"):
        hits = retriever.search("quokka underpass bearings", k=3, mode=mode)
        assert hits and hits[0].doc_id.endswith("bridge.txt") and hits[0].partition_date == D2, mode
        assert hits.warnings == ()
    second = read_manifest(index_root(wh, DS))
    assert second is not None and second.version != first.version and second.terms_reused == first.chunks

    again = Retriever(wh.root, embedder=embedder)  # nothing changed since: nothing is rebuilt
    assert again.search("reading room", k=1, mode="bm25")
    assert read_manifest(index_root(wh, DS)) == second


def test_while_another_process_builds_the_live_index_answers_with_a_warning(wh: Warehouse, embedder: Embedder) -> None:
    retriever = Retriever(wh.root, embedder=embedder)
    live = read_manifest(index_root(wh, DS))
    assert live is not None
    land_day(wh, embedder, D2, {"bridge.txt": QUOKKA})
    with build_lock(index_root(wh, DS)):  # a Dagster run writing the next version, as another process would
        with pytest.raises(IndexBusy):
            update_dataset_index(wh, DS, embedder.model, embedder.version, wait=False)
        stale = retriever.search("reading room budget", k=3, mode="bm25")
        assert stale and stale[0].doc_id.endswith("library.txt")
        assert len(stale.warnings) == 1 and live.version in stale.warnings[0] and "another process" in stale.warnings[0]
        assert retriever.search("quokka underpass", k=3, mode="bm25") == []  # the last good version knows no quokka
    hits = retriever.search("quokka underpass", k=3, mode="bm25")  # the lock is free: rebuilt, and found
    assert hits and hits[0].doc_id.endswith("bridge.txt") and hits.warnings == ()


def test_rebuild_false_searches_the_index_as_it_is(wh: Warehouse, embedder: Embedder) -> None:
    Retriever(wh.root, embedder=embedder)
    land_day(wh, embedder, D2, {"bridge.txt": QUOKKA})
    frozen = Retriever(wh.root, embedder=embedder, rebuild=False)
    assert frozen.search("quokka underpass", k=3, mode="bm25") == []


def test_a_removed_index_is_built_again(wh: Warehouse, embedder: Embedder) -> None:
    import shutil

    retriever = Retriever(wh.root, embedder=embedder)
    shutil.rmtree(index_root(wh, DS))
    hits = retriever.search("reading room budget", k=1, mode="bm25")
    assert hits and read_manifest(index_root(wh, DS)) is not None
