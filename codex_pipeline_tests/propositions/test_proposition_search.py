"""Propositions are searched through the dataset's search index, by the chunk ranking, with its filters.

The sample OSHA cases are written with the library steps (raw, chunks, chunk vectors,
offline propositions, their vectors); the Retriever builds the index itself. Vectors
come from the deterministic fake embedder (a statement's own text is its nearest vector).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

import codex_pipeline
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.embeddings import Embedder, embed_partition
from codex_pipeline.pipeline.proposition_embeddings_step import embed_propositions_day
from codex_pipeline.propositions import make_extractor
from codex_pipeline.propositions.step import extract_day
from codex_pipeline.propositions.table import TABLE
from codex_pipeline.retrieval import Filters, Retriever, index_root, read_manifest
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder

SAMPLE = Path(codex_pipeline.__file__).parent / "sample_landing"
DS = "osha_safety"
DAY = dt.date(2026, 11, 25)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return FakeEmbedder()


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Warehouse:
    wh = Warehouse(tmp_path_factory.mktemp("props") / "data")
    spec = get_dataset(DS)
    loaded = spec.load_day(SAMPLE / DS / DAY.isoformat())
    raw = steps.ingest(spec, DAY, loaded.documents, loaded.rejects).table
    chunks = steps.chunk(spec, DAY, steps.documents_from_raw(raw)).table
    emb = embed_partition(chunks, embedder).table
    wh.write(raw, DS, "raw", DAY)
    wh.write(chunks, DS, "chunks", DAY)
    wh.write(emb.append_column("partition_date", pa.array([DAY] * emb.num_rows, pa.date32())), DS, "embeddings", DAY)
    wh.write(extract_day(wh, DS, DAY, make_extractor("offline")).table, DS, TABLE, DAY)
    embed_propositions_day(wh, DS, DAY, embedder)
    return wh


@pytest.fixture(scope="module")
def retriever(wh: Warehouse, embedder: Embedder) -> Retriever:
    return Retriever(wh.root, embedder=embedder)


def test_propositions_are_a_collection_of_the_one_index(wh: Warehouse, retriever: Retriever) -> None:
    manifest = read_manifest(index_root(wh, DS))
    props = wh.read(DS, TABLE, DAY)
    assert manifest is not None and manifest.propositions == props.num_rows == manifest.proposition_vectors
    index = retriever.index(DS)
    assert index.propositions is not None and len(index.propositions) == props.num_rows
    assert (index_root(wh, DS) / manifest.version / "propositions" / "bm25").is_dir()


def test_a_proposition_is_found_with_its_spans_and_parent(wh: Warehouse, retriever: Retriever) -> None:
    props = wh.read(DS, TABLE, DAY).to_pylist()
    target = max(props, key=lambda p: len(p["text"]))
    canonical = {r["doc_id"]: r["canonical_text"] for r in wh.read(DS, "raw", DAY).to_pylist()}
    for mode in ("bm25", "vector", "hybrid"):
        (top, *_) = retriever.search_propositions(target["text"], k=3, mode=mode)
        assert top.proposition_id == target["proposition_id"], mode
        assert top.parent_chunk_id == target["parent_chunk_id"] and top.parent_text
        text = canonical[top.doc_id]
        assert " ".join(text[s:e] for s, e in top.spans) == top.text == " ".join(top.evidence_text)


def test_metadata_and_type_filters_apply_to_the_parent_chunk(retriever: Retriever) -> None:
    index = retriever.index(DS)
    chunk_meta = {r["chunk_id"]: json.loads(r["metadata"] or "{}") for r in map(index.row, range(len(index)))}
    everything = retriever.search_propositions("serious violation employees", k=30, mode="bm25")
    repeat = retriever.search_propositions("serious violation employees", k=30, mode="bm25",
                                           filters=Filters.of(metadata={"violation_type": "repeat"}))
    assert repeat and len(repeat) < len(everything)
    assert all(chunk_meta[h.parent_chunk_id].get("violation_type") == "repeat" for h in repeat)
    hybrid = retriever.search_propositions("serious violation employees", k=10,
                                           filters=Filters.of(metadata={"violation_type": "repeat"}))
    assert hybrid and {h.proposition_id for h in hybrid} <= {h.proposition_id for h in repeat} | {
        h.proposition_id for h in retriever.search_propositions("serious violation employees", k=200, mode="vector",
                                                                filters=Filters.of(metadata={"violation_type": "repeat"}))}
    typed = retriever.search_propositions("violation", k=30, mode="bm25", filters=Filters.of(chunk_types=["osha_citation"]))
    assert typed and all(h.parent_chunk_type == "osha_citation" for h in typed)


def test_an_identifier_is_searched_whole_among_propositions(wh: Warehouse, retriever: Retriever) -> None:
    import re

    texts = [p["text"] for p in wh.read(DS, TABLE, DAY).to_pylist()]
    cited = sorted({m for t in texts for m in re.findall(r"\b19\d\d\.\d+\([a-z]\)(?:\(\d+\))?", t)})
    assert cited
    for citation in cited[:5]:
        (top, *_) = retriever.search_propositions(citation, k=1)
        assert citation in top.text, (citation, top.text)
