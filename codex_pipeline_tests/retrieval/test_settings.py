"""Retrieval settings are a value (issue 38, item 3): handed to a Retriever, never patched into a module."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import codex_pipeline
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.embeddings import embed_partition
from codex_pipeline.retrieval import RetrievalSettings, Retriever, build_search_index, index_root
from codex_pipeline.retrieval import settings as settings_module
from codex_pipeline.retrieval.ranking import lexical_weight
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder

DATASET = "permit_signals"
DAY = dt.date(2026, 11, 25)
QUERY = "foundation inspection required before framing"


def test_the_settings_are_one_frozen_value_with_todays_defaults() -> None:
    assert DEFAULT == RetrievalSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.vector_weight = 1.0  # type: ignore[misc]
    assert [n for n in vars(settings_module) if n.isupper()] == ["DEFAULT"]  # no module constant to patch
    assert (DEFAULT.vector_weight, DEFAULT.lexical_query_weight, DEFAULT.neighbour_ranks, DEFAULT.widen_top_margin,
            DEFAULT.unit_vector_weight, DEFAULT.coverage_boost) == (3.0, 2.0, 3, 0.05, 0.0, 2.0)


def test_a_query_naming_a_code_weighs_bm25_as_the_settings_handed_in_say() -> None:
    assert lexical_weight("permit BP2026-0001") == DEFAULT.lexical_query_weight == 2.0
    assert lexical_weight("when does the pool open") == DEFAULT.bm25_weight == 1.0
    plain = dataclasses.replace(DEFAULT, lexical_query_weight=1.0)
    assert lexical_weight("permit BP2026-0001", plain) == 1.0


@pytest.fixture(scope="module")
def permits(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """The sample permits' search index, fake vectors (the quick lane)."""
    spec = get_dataset(DATASET)
    loaded = spec.load_day(Path(codex_pipeline.__file__).parent / "sample_landing" / DATASET / DAY.isoformat())
    raw = steps.ingest(spec, DAY, loaded.documents, loaded.rejects).table
    chunks = steps.chunk(spec, DAY, steps.documents_from_raw(raw)).table
    emb = embed_partition(chunks, FakeEmbedder()).table
    emb = emb.append_column("partition_date", pa.array([DAY] * emb.num_rows, pa.date32()))
    wh = Warehouse(tmp_path_factory.mktemp("settings") / "data")
    build_search_index(index_root(wh, DATASET), DATASET, chunks, raw, emb)
    return wh


def test_a_retriever_searches_with_the_settings_it_is_handed(permits: Warehouse) -> None:
    retriever = Retriever(permits.root, [DATASET], embedder=FakeEmbedder(), rebuild=False)
    assert retriever.settings is DEFAULT
    before = retriever.search(QUERY, k=5)
    assert before and any(h.context.before or h.context.after for h in before)

    narrow = retriever.with_settings(dataclasses.replace(DEFAULT, context_tokens_per_side=4, bm25_weight=2.0,
                                                         vector_weight=2 * DEFAULT.vector_weight))
    got = narrow.search(QUERY, k=5)
    assert [h.chunk_id for h in got] == [h.chunk_id for h in before]  # both weights doubled: order kept, scores not
    assert [h.score for h in got] != [h.score for h in before]
    assert all(count_tokens(h.context.before) <= 4 and count_tokens(h.context.after) <= 4 for h in got)
    assert narrow.index(DATASET) is retriever.index(DATASET)  # the open index is shared, not reopened

    assert retriever.settings is DEFAULT  # the retriever it came from is unchanged
    assert retriever.search(QUERY, k=5) == before
