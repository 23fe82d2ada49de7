"""A small real corpus for retrieval tests: sample permits and OSHA cases, real MiniLM vectors.

Built with the library steps (ingest → chunk → embed), not Dagster, once per test
session: the embedder is the real local model, so "vector search misses it" is a
fact about all-MiniLM-L6-v2, not about a stand-in. ``embedder`` is declared a
real-model fixture: every test that uses it (through ``sample_tables``, ``indexed``,
``retriever``) is in the slow lane; a module that tests index mechanics rather than
semantics overrides ``embedder`` with the fake (``codex_pipeline_tests/fakes.py``) and
stays in the quick lane.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import codex_pipeline
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.embeddings import Embedder, embed_partition, make_embedder
from codex_pipeline.retrieval import Retriever, build_search_index, index_root
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import real_model_fixture

SAMPLE = Path(codex_pipeline.__file__).parent / "sample_landing"
DAY = dt.date(2026, 11, 25)
DATASETS = ("permit_signals", "osha_safety")


@dataclass
class Tables:
    raw: pa.Table
    chunks: pa.Table
    embeddings: pa.Table

    def canonical(self) -> dict[str, str]:
        return dict(zip(self.raw.column("doc_id").to_pylist(), self.raw.column("canonical_text").to_pylist()))


@pytest.fixture(scope="session")
@real_model_fixture
def embedder() -> Embedder:
    return make_embedder("local")


@pytest.fixture(scope="session")
def sample_tables(embedder: Embedder) -> dict[str, Tables]:
    out = {}
    for name in DATASETS:
        spec = get_dataset(name)
        loaded = spec.load_day(SAMPLE / name / DAY.isoformat())
        raw = steps.ingest(spec, DAY, loaded.documents, loaded.rejects).table
        chunks = steps.chunk(spec, DAY, steps.documents_from_raw(raw)).table
        emb = embed_partition(chunks, embedder).table
        emb = emb.append_column("partition_date", pa.array([DAY] * emb.num_rows, pa.date32()))
        out[name] = Tables(raw, chunks, emb)
    return out


@pytest.fixture(scope="session")
def indexed(tmp_path_factory: pytest.TempPathFactory, sample_tables: dict[str, Tables]) -> Warehouse:
    """A data dir holding only the two search indexes (no document index: nothing is filtered as retracted)."""
    wh = Warehouse(tmp_path_factory.mktemp("search") / "data")
    for name, t in sample_tables.items():
        build_search_index(index_root(wh, name), name, t.chunks, t.raw, t.embeddings)
    return wh


@pytest.fixture(scope="session")
def retriever(indexed: Warehouse, embedder: Embedder) -> Retriever:
    return Retriever(indexed.root, embedder=embedder)
